"""theory.json (the checks and their provenance, ``theory.results``), theory.md (the errata table a
reader can trust) and convergence.png."""

from __future__ import annotations

import io
import platform
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from noisymix_infra.io import write_bytes, write_json, write_text
from noisymix_infra.provenance import provenance
from theory.checks import SLOPE_TOLERANCE, Check
from theory.results import tally, tally_sentence, theory_record

__all__ = ["convergence_figure", "markdown", "write_report"]

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
        ["id", "term", "what is printed / wrong", "fix", "holds under", "as printed", "corrected"],
        "Each row: a printed statement that fails on exact computation, what is wrong, the fix (implemented "
        "and checked), and where it holds. Slopes are the fitted log-log slopes of the residual (expected "
        "in parentheses).",
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
        f"| {c.id} | {_cell(c.term)} | {_cell(c.extra['erratum'])} | {_cell(c.extra.get('fix', ''))} | "
        f"{_cell(where)} | {p_text} | {c_text} |"
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


def convergence_figure(checks: list[Check]) -> bytes:
    """Log-log |residual| against eps, one panel per id, with reference slopes 1, 2, 3; PNG bytes."""
    import matplotlib.pyplot as plt

    fig = convergence_fig(checks)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()


def _claimed_slope(group: list[Check]) -> tuple[float, float, float, list[float]] | None:
    """For a panel with a failing as-printed expansion: (the slope its printed remainder claims, the
    slowest measured slope, the failing residual's largest magnitude, its eps) — so that a claim like
    Proposition 1's o(eps^3), whose residual falls as eps^3 only, does not look like a pass next to
    the generic slope lines (issue 40)."""
    failing = [c for c in group if c.form == "as_printed" and c.verdict == "fails" and c.expected_slope is not None
               and c.residual_slope is not None and c.eps and c.residuals
               and c.residual_slope < c.expected_slope - 0.25]  # failing on its slope, not on a term
    if not failing:
        return None
    worst = min(failing, key=lambda c: c.residual_slope)
    top = max(abs(r) for r in worst.residuals if r is not None)
    return float(worst.expected_slope), float(worst.residual_slope), top, list(worst.eps)


def convergence_fig(checks: list[Check]):
    """The matplotlib figure of ``convergence_figure`` (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ids = list(dict.fromkeys(c.id for c in checks))
    cols = 4
    rows = (len(ids) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 4.2 * rows), squeeze=False)
    colors = {
        ("as_printed", "holds"): "tab:green",
        ("as_printed", "fails"): "tab:red",
        ("corrected", "holds"): "tab:blue",
        ("corrected", "fails"): "tab:orange",
    }
    used: set[tuple[str, str]] = set()
    for ax, key in zip(axes.flat, ids):
        drawn = set()
        group = [c for c in checks if c.id == key and c.eps is not None and c.residuals is not None]
        for c in group:
            eps = np.asarray(c.eps, dtype=float)
            res = np.asarray([np.nan if r is None else r for r in c.residuals], dtype=float)
            signature = (c.form, tuple(np.round(res, 20)))
            if signature in drawn:
                continue
            drawn.add(signature)
            mag = np.abs(res)
            ok = mag > 0
            color = colors[(c.form, c.verdict)]
            used.add((c.form, c.verdict))
            label = f"{c.form.replace('_', ' ')}, {c.verdict}"
            if (c.form, c.verdict) == ("as_printed", "fails"):
                ax.loglog(eps[ok], mag[ok], color=color, label=label, **FAILING_STYLE)
            else:
                ax.loglog(eps[ok], mag[ok], "-", color=color, alpha=0.75, lw=1.2, zorder=2, label=label)
            negative = ok & (res < 0) if key == "thm3" else np.zeros_like(ok)
            if negative.any():
                ax.loglog(eps[negative], mag[negative], "x", color=color, ms=5)
        if group:
            e = np.asarray(group[0].eps, dtype=float)
            top = max(
                (
                    np.nanmax(np.abs(np.asarray([np.nan if r is None else r for r in c.residuals], float)))
                    for c in group
                ),
                default=1.0,
            )
            for order, style in ((1, ":"), (2, "--"), (3, "-.")):
                ref = top * (e / e[0]) ** order
                ax.loglog(e, ref, style, color="gray", lw=0.9)  # named by its style in the legend
        claimed = _claimed_slope(group)
        n_p = sum(c.form == "as_printed" and c.verdict == "fails" for c in checks if c.id == key)
        subtitle = f"{n_p} as-printed failing"
        if claimed is not None:  # the slope the printed remainder needs, drawn from the failing residual's top
            slope, measured, start, e0 = claimed
            e = np.asarray(e0, dtype=float)
            ax.loglog(e, start * (e / e[0]) ** slope, color="black", lw=2.2, ls=(0, (1, 1.5)), zorder=4)
            subtitle += f"\nclaimed slope {slope:g} (black dots), measured {measured:.1f}"
        ax.set_title(f"{TITLES.get(key, key)}\n{subtitle}", fontsize=10)
        ax.set_xlabel("eps", fontsize=10)
        ax.set_ylabel("|L(eps) - expansion(eps)|" if key != "thm3" else "|gap| (x: gap < 0)", fontsize=10)
        ax.tick_params(labelsize=9)
    for ax in list(axes.flat)[len(ids) :]:
        ax.axis("off")
    handles = [  # only the kinds of line drawn
        plt.Line2D([], [], color=v, label=f"{k[0].replace('_', ' ')}, {k[1]}",
                   **({k2: v2 for k2, v2 in FAILING_STYLE.items() if k2 != "zorder"}
                      if k == ("as_printed", "fails") else {}))
        for k, v in colors.items() if k in used
    ]
    handles += [
        plt.Line2D([], [], color="gray", ls=s, label=f"slope {o}")
        for o, s in ((1, ":"), (2, "--"), (3, "-."))
    ]
    handles.append(plt.Line2D([], [], color="black", lw=2.2, ls=(0, (1, 1.5)),
                              label="the slope a failing as-printed remainder claims\n(its residual must fall at least "
                                    "this fast)"))
    fig.legend(handles=handles, loc="lower right", fontsize=10, frameon=False, ncol=1)
    fig.suptitle("NoisyMix theory: residual of each expansion against the exact loss", fontsize=13)
    fig.tight_layout(rect=(0, 0.03, 1, 0.96))
    return fig


def write_report(
    out: Path, checks: list[Check], *, config: Any, timings: dict[str, float], seconds: float
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "theory.json", theory_record([c.to_json() for c in checks], provenance()))
    write_text(out / "theory.md", markdown(checks, config=config, timings=timings, seconds=seconds))
    write_bytes(out / "convergence.png", convergence_figure(checks))

