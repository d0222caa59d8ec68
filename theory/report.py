"""theory.json (the checks and their provenance, ``theory.results``), theory.md (the errata table a
reader can trust) and convergence.png."""

from __future__ import annotations

import io
import platform
import re
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from noisymix_infra.io import write_bytes, write_json, write_text
from noisymix_infra.provenance import provenance
from theory.checks import SLOPE_TOLERANCE, Check
from theory.results import ERRATUM_KINDS, tally, tally_sentence, theory_record

__all__ = ["claim_label", "claim_of", "convergence_fig", "convergence_figure", "markdown", "write_report"]

TITLES = {
    "jsd": "JSD properties (Sec. 3.1)",
    "lemma1": "Lemma 1 (sm_aux)",
    "prop1": "Proposition 1 (prop_sm)",
    "thm1": "Theorem 1 (thm_implicitreg)",
    "lemma2": "Lemma 2 (sm_aux2)",
    "thm2": "Theorem 2 (thm_jsd)",
    "thm3": "Theorem 3 (thm_advbound)",
}

NOTES = {
    "prop1": "The eps and eps^2 terms, delta^2 z terms included, are right for any M, K and pi.",
    "thm1": "The eps^2 term E[grad p^T (sigma_mult xi_mult ⊙ e^mixup)] vanishes (xi zero-mean, independent "
    "of lambda and x_r): the exact loss keeps it and the coefficients still agree.",
    "lemma2": "Lemma 2 holds at eps = 1, by the symmetry f(lambda) = f(1 - lambda) of the JS integrand (not "
    "'analogously to Lemma 1': there are no labels); Beta(alpha, beta) and its symmetrisation give the same "
    "loss.",
    "thm2": "Right for pi = (1/2, 1/2), any K (the proof's 'K = 2' is not needed), with the same xi in both "
    "arguments as the paper's L^JSD; the sigma_mult xi_mult ⊙ e^mixup terms vanish in expectation.",
    "thm3": "Where S1 + E[1-lambda] L~_std >= 0 the printed bound holds; (eps^reg)^2 with E[1-lambda]^2 is "
    "a valid (weaker) constant: the derivation gives E[(1-lambda)^2] >= E[1-lambda]^2.",
}

METHOD = """\
## How the checks are exact

* **No Monte Carlo.** Every expectation is a finite sum over atoms: x_r over the n training inputs
  (probability 1/n, the empirical law D_x of the paper); lambda over the m-point Gauss–Jacobi rule
  of each Beta law (a probability law on (0, 1) whose first 2m - 1 moments are those of the Beta
  law, so every coefficient of the expansions — which involve E[1-lambda], E[(1-lambda)^2] — is
  the Beta one; tilde-D is the mixture of two such rules with weights a/(a+b), b/(a+b)); xi_add and
  xi_mult over atoms ±sqrt(D) L e_j of a factor L L^T = Sigma (zero mean, covariance exactly a
  generic, non-diagonal Sigma — the theorems assume nothing else about Q), independent of each
  other unless a check says "correlated". A(x_i), random in the paper, is one fixed realisation
  per training point (the training set Z_n holds such fixed pairs).
* **The exact loss** of the eps-family is evaluated with the core's `noisymix.noisy_mix` (the
  mixing operator M_{lambda,xi}) and `noisymix.js_divergence_from_logits` in float64, and its
  increment L(eps) - L(0) is summed atom by atom to avoid cancellation.
* **Two witnesses per coefficient.** Each printed coefficient is held against the Taylor
  coefficients of the exact loss in eps taken by nested forward-mode autograd
  (`torch.func.jvp`) — for Theorem 1 split along every atom's path into the h''-part (R2-type) and
  the (h' - y)-part (R3-type), so a wrong term is named — and, for small rational models, against
  sympy's exact coefficients (last table). grad p and grad^2 p come from `torch.func` (vmap of
  jacrev/hessian).
* **Orders.** The residual |L(eps) - expansion(eps)| is fitted in log-log on the small-eps end
  of the grid: the 4 smallest eps whose residual rises above the rounding floor (1e-15, or 1e-13
  of the largest increment) and keeps one sign — a pre-asymptotic sign change, where the eps^3
  and eps^4 terms cancel, would fake a low order (the figure shows the whole grid). A correct
  second-order expansion of a smooth loss has slope 3 (4 where odd moments vanish). A
  check holds when the slope is at least the expected one minus {tol} and every coefficient
  agrees with autograd to 1e-7 relative. Identities hold to 1e-10 relative (quadrature: 32 nodes).
  Theorem 3's inequality holds when the leading Taylor coefficient of the gap LHS - RHS is >= 0.
"""


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _slope(c: Check) -> str:
    if c.kind in ("identity", "property", "symbolic"):
        return "—" if c.residual_slope is None else f"{c.residual_slope:.2f} (identity)"
    exp = "—" if c.expected_slope is None else f"{c.expected_slope:g}"
    return f"{_fmt(c.residual_slope)} ({exp})"


def markdown(checks: list[Check], *, config: Any, timings: dict[str, float], seconds: float) -> str:
    """The human-readable report: summary, errata, what holds as printed and under which
    conditions, every check, the sympy witness, the method and the runtime."""
    by_id: dict[str, list[Check]] = defaultdict(list)
    for c in checks:
        by_id[c.id].append(c)
    lines = (
        _header(checks, config, seconds)
        + _errata(checks, by_id)
        + _verified_as_printed(by_id)
        + _conditions(by_id)
        + _all_checks(checks)
        + _sympy_witness([c for c in checks if c.kind == "symbolic"])
        + _method_and_runtime(timings, seconds)
    )
    return "\n".join(lines)


def _header(checks: list[Check], config: Any, seconds: float) -> list[str]:
    """Title, when and how the run was made, and the summary counts."""
    counts = tally(checks)
    return [
        "# NoisyMix theory, verified (`noisymix verify`)",
        "",
        f"Generated {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} on {platform.machine()} "
        f"(Python {platform.python_version()}); {len(checks)} checks in {seconds:.1f} s; eps grid: "
        f"{config.points} points from {config.eps_high:g} down to {config.eps_low:g}; seed {config.seed}.",
        "",
        f"**Summary.** {tally_sentence(counts)}",
        "",
    ]


def _table_head(title: str, columns: list[str], intro: str = "") -> list[str]:
    """A section's heading, its intro paragraph (where it has one) and the head of its table."""
    return [
        f"## {title}",
        "",
        *([intro, ""] if intro else []),
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]


def _errata(checks: list[Check], by_id: dict[str, list[Check]]) -> list[str]:
    """One row per printed statement that fails, with its fix; then the notes that are not errata."""
    lines = _table_head(
        "Errata",
        ["id", "term", "kind", "what is printed / wrong", "fix", "holds under", "as printed", "corrected"],
        "Each row: a printed statement that fails on exact computation, its kind of erratum ("
        + ", ".join(ERRATUM_KINDS) + "), what is wrong, the fix (implemented and checked), and where it "
        "holds. Slopes are the fitted log-log slopes of the residual (expected in parentheses).",
    )
    seen = set()
    for c in checks:
        if c.form != "as_printed" or "erratum" not in c.extra or (c.id, c.term) in seen:
            continue
        seen.add((c.id, c.term))
        lines.append(_erratum_row(c, [x for x in by_id[c.id] if x.term == c.term]))
    notes = [c for c in checks if "note" in c.extra and c.form == "as_printed"]
    if notes:
        lines += ["", "Not errata, but worth knowing:", ""]
        for c in notes:
            lines.append(
                f"* **{c.id}, {c.term}:** {c.extra['note']} (as printed: {c.verdict}; see the table below)."
            )
    others = [c for c in checks if c.term.startswith("other eps-family")]
    for c in others:
        lines.append(f"* **{c.id}, {c.term}:** {c.detail}")
    return lines


def _erratum_row(c: Check, group: list[Check]) -> str:
    """The errata table's row of ``c``: its verdicts as printed and corrected over ``group`` (the
    checks of the same id and term)."""
    as_p = [x for x in group if x.form == "as_printed"]
    corr = [x for x in group if x.form == "corrected"]
    fails = sum(x.verdict == "fails" for x in as_p)
    p_slopes = ", ".join(_fmt(x.residual_slope) for x in as_p if x.residual_slope is not None)
    c_slopes = ", ".join(_fmt(x.residual_slope) for x in corr if x.residual_slope is not None)
    p_text = f"fails on {fails}/{len(as_p)}" + (f" (slopes {p_slopes})" if p_slopes else "")
    c_ok = sum(x.verdict == "holds" for x in corr)
    c_text = (f"holds on {c_ok}/{len(corr)}" + (f" (slopes {c_slopes})" if c_slopes else "")) if corr else "—"
    where = corr[0].conditions if corr else c.conditions
    return (
        f"| {c.id} | {_cell(c.term)} | {c.extra.get('erratum_kind', '—')} | {_cell(c.extra['erratum'])} | "
        f"{_cell(c.extra.get('fix', ''))} | {_cell(where)} | {p_text} | {c_text} |"
    )


def _verified_as_printed(by_id: dict[str, list[Check]]) -> list[str]:
    """Per statement, the printed terms that hold, with the note on what that covers."""
    lines = ["", "## Verified as printed", ""]
    for key, group in by_id.items():
        right = list(
            dict.fromkeys(
                c.term
                for c in group
                if c.form == "as_printed" and c.verdict == "holds" and c.kind != "symbolic"
            )
        )
        if right:
            note = NOTES.get(key, "")
            lines.append(f"* **{TITLES.get(key, key)}:** " + ", ".join(right) + (f". {note}" if note else ""))
    return lines


def _conditions(by_id: dict[str, list[Check]]) -> list[str]:
    """Per statement, up to three sets of conditions under which its checks hold."""
    lines = ["", "## Conditions under which each statement holds (as verified)", ""]
    for key, group in by_id.items():
        conds = []
        for c in group:
            if c.verdict == "holds" and c.kind != "symbolic" and c.conditions not in conds:
                conds.append(c.conditions)
        lines.append(f"* **{TITLES.get(key, key)}:** " + " | ".join(conds[:3]))
    return lines


def _all_checks(checks: list[Check]) -> list[str]:
    """Every numerical check, one row each."""
    lines = ["", *_table_head("All checks", ["id", "term", "form", "model", "slope (expected)", "verdict", "detail"])]
    for c in checks:
        if c.kind == "symbolic":
            continue
        lines.append(
            f"| {c.id} | {_cell(c.term)} | {c.form} | {_cell(c.model)} | {_slope(c)} | **{c.verdict}** | "
            f"{_cell(c.detail)} |"
        )
    return lines


def _sympy_witness(symbolic: list[Check]) -> list[str]:
    """sympy's exact coefficients against our formulas, one row per witness."""
    lines = [
        "",
        *_table_head(
            "sympy witness",
            ["id", "term", "model", "coefficients (max rel. error)", "verdict", "detail"],
            "Exact (rational) models, laws and data; sympy's Taylor coefficients of the exact loss against our "
            "float64 formulas.",
        ),
    ]
    for c in symbolic:
        worst = max((v["rel_error"] for v in c.coefficients.values() if v["agrees"]), default=None)
        names = ", ".join(k for k, v in c.coefficients.items() if v["agrees"])
        lines.append(
            f"| {c.id} | {_cell(c.term)} | {_cell(c.model)} | {_cell(names) or 'symbolic identity'} "
            f"({_fmt(worst, 1) if worst is None else f'{worst:.1e}'}) | **{c.verdict}** | {_cell(c.detail)} "
            "|"
        )
    return lines


def _method_and_runtime(timings: dict[str, float], seconds: float) -> list[str]:
    """How the checks are exact, and the seconds each step took."""
    lines = ["", METHOD.replace("{tol}", str(SLOPE_TOLERANCE)), *_table_head("Runtime", ["step", "seconds"])]
    lines += [f"| {k} | {v:.2f} |" for k, v in timings.items()]
    lines += [f"| **total** | **{seconds:.2f}** |", ""]
    return lines


#: how the failing as-printed lines are drawn: on top of the others (a corrected line that holds has
#: nearly the same residual at small eps and hid them), dashed with dots, so they stay visible
FAILING_STYLE = {"ls": (0, (4, 1.5)), "marker": "o", "ms": 3, "lw": 1.6, "zorder": 4}
#: one line style per failing term of a panel (a panel has at most a few), all red: failing
_TERM_STYLES = ((0, (4, 1.5)), (0, (1, 1)), (0, (6, 2, 1, 2)), "-")
_TERM_MARKERS = ("o", "s", "^", "D")
#: the bands of the checks that hold: as printed, corrected
_BAND_COLORS = {"as_printed": "tab:green", "corrected": "tab:blue"}


def convergence_figure(checks: list[Check]) -> bytes:
    """Log-log |residual| against eps, one panel per statement (``convergence_fig``); PNG bytes."""
    import matplotlib.pyplot as plt

    fig = convergence_fig(checks)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()


def claim_of(c: Any) -> tuple[float, bool] | None:
    """What a check's printed remainder claims of its residual's log-log slope: (k, strict) for a
    slope > k (``o(eps^k)``: the residual falls faster than eps^k) or >= k (``O(eps^k)``); None for
    a check without an order (identities, properties, inequalities: their gap is not a remainder).
    Proposition 1 prints ``o(eps^3)`` (``claimed_remainder``): a slope above 3, not 4 (issue 48)."""
    get = (lambda key: c.get(key)) if isinstance(c, dict) else (lambda key: getattr(c, key, c.extra.get(key)))
    claimed = get("claimed_remainder") if isinstance(c, dict) else c.extra.get("claimed_remainder")
    if claimed:
        match = re.fullmatch(r"([oO])\(eps\^(\d+)\)", claimed)
        if match is None:
            raise ValueError(f"claimed_remainder {claimed!r}: expected o(eps^k) or O(eps^k)")
        return float(match.group(2)), match.group(1) == "o"
    if get("kind") != "expansion" or get("expected_slope") is None:
        return None
    return float(get("expected_slope")), False


def claim_label(claim: tuple[float, bool]) -> str:
    """A claim as its legend names it: "claim: slope > 3" (o(eps^3)) or "claim: slope >= 2" (O(eps^2))."""
    order, strict = claim
    return f"claim: slope {'>' if strict else '≥'} {order:g} ({'o' if strict else 'O'}(eps^{order:g}))"


def _magnitudes(c: Check) -> tuple[np.ndarray, np.ndarray]:
    eps = np.asarray(c.eps, dtype=float)
    res = np.abs(np.asarray([np.nan if r is None else r for r in c.residuals], dtype=float))
    return eps, np.where(res > 0, res, np.nan)


def _draw_band(ax, group: list[Check], color: str, label: str) -> None:
    """The checks that hold as one shaded band (smallest to largest |residual| at each eps) and its
    median line: dozens of lines that all hold cannot be told apart, and need not be."""
    eps = np.asarray(group[0].eps, dtype=float)
    stack = np.vstack([_magnitudes(c)[1] for c in group if len(c.eps) == len(eps)])
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high, mid = np.nanmin(stack, 0), np.nanmax(stack, 0), np.nanmedian(stack, 0)
    ok = np.isfinite(low) & np.isfinite(high)
    ax.fill_between(eps[ok], low[ok], high[ok], color=color, alpha=0.25, lw=0, zorder=1)
    ax.plot(eps[ok], mid[ok], "-", color=color, lw=1.4, zorder=2, label=label)


def _panel(ax, key: str, group: list[Check]) -> None:
    """One statement: the checks that hold as bands, each failing as-printed term as its own line,
    and the order each printed remainder claims as a bound (a black line from the largest residual)."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    for form in ("as_printed", "corrected"):
        holding = [c for c in group if c.form == form and c.verdict == "holds"]
        if holding:
            _draw_band(ax, holding, _BAND_COLORS[form],
                       f"{form.replace('_', ' ')}, holds: {len(holding)} check(s), range and median")
    failing = [c for c in group if c.verdict == "fails"]
    terms = list(dict.fromkeys((c.form, c.term) for c in failing))
    for k, (form, term) in enumerate(terms):
        members = [c for c in failing if (c.form, c.term) == (form, term)]
        worst = max(members, key=lambda c: np.nanmax(_magnitudes(c)[1]))
        eps, mag = _magnitudes(worst)
        slopes = ", ".join(f"{c.residual_slope:.1f}" for c in members if c.residual_slope is not None)
        label = (f"{form.replace('_', ' ')}, fails: {term} ({len(members)} check(s)"
                 + (f"; slope {slopes}" if slopes else "") + ")")
        ax.plot(eps, mag, color="tab:red" if form == "as_printed" else "tab:orange", label=label,
                **{**FAILING_STYLE, "ls": _TERM_STYLES[k % len(_TERM_STYLES)],
                   "marker": _TERM_MARKERS[k % len(_TERM_MARKERS)]})
        if key == "thm3":  # the gap's sign: x where it is negative (the bound violated)
            res = np.asarray([np.nan if r is None else r for r in worst.residuals], dtype=float)
            ax.plot(eps[res < 0], mag[res < 0], "x", color="black", ms=6, zorder=5)
    claims: dict[tuple[float, bool], list[Check]] = {}
    for c in group:
        if c.form == "as_printed" and claim_of(c) is not None:
            claims.setdefault(claim_of(c), []).append(c)
    for k, (claim, members) in enumerate(sorted(claims.items())):
        eps = np.asarray(members[0].eps, dtype=float)
        top = max(np.nanmax(_magnitudes(c)[1]) for c in members)
        bound = top * (eps / eps[0]) ** claim[0]
        style = ("--", "-.", ":")[k % 3]
        # a bound, not a slope to match: the claim needs the residual to fall at least this fast as eps shrinks
        ax.plot(eps, bound, style, color="black", lw=1.6, zorder=3, label=claim_label(claim))
    ax.set_xlabel("eps (log scale)", fontsize=9)
    ax.set_ylabel("|L(eps) - expansion(eps)|" if key != "thm3" else "|gap LHS - RHS| (x: gap < 0)", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=7, frameon=False)


def convergence_fig(checks: list[Check]):
    """The matplotlib figure of ``convergence_figure`` (the caller closes it): one panel per statement
    (small multiples), its legend at its right, outside the data; in each, the checks that hold as a
    band, every failing term as a line of its own, and each printed remainder's claim as a bound:
    o(eps^3) asks for a slope above 3, O(eps^2) for at least 2 (``claim_of``; issue 48)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from theory.results import tally

    ids = list(dict.fromkeys(c.id for c in checks))
    cols = 2
    rows = (len(ids) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(9.0 * cols, 3.5 * rows), squeeze=False, layout="constrained")
    for ax, key in zip(axes.flat, ids, strict=False):
        group = [c for c in checks if c.id == key and c.eps is not None and c.residuals is not None]
        _panel(ax, key, group)
        kinds = [kind for kind, k in tally([c for c in checks if c.id == key])["errata"]["kinds"].items()
                 if k["errata"]]
        n_fail = sum(c.form == "as_printed" and c.verdict == "fails" for c in checks if c.id == key)
        ax.set_title(f"{TITLES.get(key, key)}: {n_fail} as-printed check(s) fail"
                     + (f" ({', '.join(kinds)})" if kinds else ""), fontsize=10)
    for ax in list(axes.flat)[len(ids):]:
        ax.axis("off")
    fig.suptitle("NoisyMix theory: residual of each printed expansion against the exact loss, per statement; "
                 "the black lines bound what each printed remainder claims", fontsize=12)
    return fig


def write_report(
    out: Path, checks: list[Check], *, config: Any, timings: dict[str, float], seconds: float
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "theory.json", theory_record([c.to_json() for c in checks], provenance()))
    write_text(out / "theory.md", markdown(checks, config=config, timings=timings, seconds=seconds))
    write_bytes(out / "convergence.png", convergence_figure(checks))

