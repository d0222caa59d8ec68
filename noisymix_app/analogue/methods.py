"""The analogue tested on what it was not fitted to (issues 51, 57): the paper's eight CIFAR-10-C methods on
the difficulty-matched Digits-C and Digits-P, ``noisymix analogue --results DIR [--update-readme]``.

The difficulty-matched sets were fitted to the Baseline only (``fit_c``, ``fit_p``): on the fit's own models
the Baseline matches the paper by construction, so the Baseline is left out of every test here.  What the
analogue is for is the *other seven* methods, so this module asks, of the ``analogue-methods`` plan's runs
(the eight rows of ``tab:results_cifar10``, the laptop recipe, seeds no fit used), whether they behave there
as in the paper, and says what it finds as it is (``finding``):

* **their order** (issue 57, goal 6): our mean Digits-C accuracy against the paper's CIFAR-10-C column and our
  mean Digits-P flip probability against its CIFAR-10-P mFR, Spearman's rho and Kendall's tau-b over the
  seven, each with its exact permutation p-value (all 7! orders enumerated, ``order_test``,
  one-sided: agreement), and beside it the **seed-resampling range** of rho (the 2.5 and 97.5 percentiles
  of ``BOOTSTRAP`` resamples of the seeds, jointly for all methods: with 5 seeds there are only 126 distinct
  resamples and near-ties a resample can only break, so it is a range, not a confidence interval);
* **their effect sizes and profiles**: each method's per-corruption gain over the Baseline against the
  paper's (``tab:results_cifar10_c``): the slope of ours on the paper's through the origin (1: the paper's
  size), the rank correlation, and the rank correlation of the share of the Baseline's drop each recovers;
* **the paper's central comparison**, NoisyMix against AugMix, paired over seeds on both sets;
* **the paper's claims about Mixup, Manifold Mixup, CutMix and Puzzle Mix** (goal 2): the ``eight-method``
  family of ``figures/paper_claims.json``, decided by the same code as the main job's (the folder's
  ``summary.json``, ``noisymix_app.reproduce.summary``).

This is a test of the analogue, never a target: no strength, recipe or seed is chosen from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from fullscale.vocabulary import CORRUPTIONS, P_COLUMNS
from noisymix_app.reproduce.plans import EIGHT_METHODS
from noisymix_app.reproduce.words import interval_text, join, label, signed
from noisymix_infra.io import read_json_object
from noisymix_infra.stats import kendall_tau_b, rank_correlation, spearman

__all__ = ["BOOTSTRAP", "PER_SEED_DECIMALS", "PLAN", "analogue_summary", "bootstrap_interval", "finding",
           "kendall_rows", "load_runs", "order_test", "render_markdown", "slope_through_origin", "spearman_rows",
           "write_report"]

BOOTSTRAP = 2000
PLAN = "analogue-methods"  # the one plan this report is of
#: decimals of the per-seed values written (a reader's tolerance is half their last place: ``noisymix screen``)
PER_SEED_DECIMALS = 4


# ----------------------------------------------------------------------------- statistics
# (spearman, kendall_tau_b and rank_correlation, scipy's per pair of sequences: noisymix_infra.stats)

def _average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, ties sharing their mean rank (scipy's ``rankdata`` 'average'), batched:
    rank_i = #{j: a_j < a_i} + (#{j: a_j = a_i} + 1) / 2."""
    below = (a[..., None, :] < a[..., :, None]).sum(-1)
    equal = (a[..., None, :] == a[..., :, None]).sum(-1)
    return below + (equal + 1) / 2


def spearman_rows(rows: np.ndarray, paper: Sequence[float]) -> np.ndarray:
    """Spearman's rho of each row of ``rows`` (B x n) against ``paper`` (n): the Pearson correlation of
    their average ranks, as ``spearman`` per row; NaN for a constant row."""
    ranked = _average_ranks(np.asarray(rows, float))
    reference = _average_ranks(np.asarray(paper, float))
    x, y = ranked - ranked.mean(-1, keepdims=True), reference - reference.mean()
    scale = np.sqrt((x * x).sum(-1) * (y @ y))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, (x @ y) / np.where(scale > 0, scale, 1.0), np.nan)


def kendall_rows(rows: np.ndarray, paper: Sequence[float]) -> np.ndarray:
    """Kendall's tau-b of each row of ``rows`` (B x n) against ``paper``: sum over pairs of the product of
    their order signs over the square root of the untied pairs' counts on each side; NaN for a constant row."""
    rows, reference = np.asarray(rows, float), np.asarray(paper, float)
    ours = np.sign(rows[..., :, None] - rows[..., None, :])
    theirs = np.sign(reference[:, None] - reference[None, :])
    scale = np.sqrt(np.abs(ours).sum((-2, -1)) * np.abs(theirs).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, (ours * theirs).sum((-2, -1)) / np.where(scale > 0, scale, 1.0), np.nan)


#: the most values the exact permutation test enumerates (9! = 362,880 orders; the analogue has seven)
MOST_EXACT = 9


def order_test(ours: Sequence[float], paper: Sequence[float]) -> dict:
    """Spearman and Kendall of ``ours`` against ``paper`` with exact one-sided permutation p-values (every
    one of the n! pairings of the values enumerated, agreement the alternative: the share of pairings whose
    statistic is at least the observed one, ties within float rounding counted); None where a side is constant."""
    from itertools import permutations

    o, p = np.asarray(ours, float), np.asarray(paper, float)
    if not 2 <= len(o) <= MOST_EXACT or o.shape != p.shape:
        raise ValueError(f"the order test takes 2 to {MOST_EXACT} pairs of values, got {len(o)} and {len(p)}")
    pairings = o[np.array(list(permutations(range(len(o)))))]  # n! x n, the identity first
    out = {}
    for name, statistic, rows in (("spearman", spearman, spearman_rows), ("kendall", kendall_tau_b, kendall_rows)):
        value = statistic(o, p)
        if not math.isfinite(value):  # undefined (a constant side): None, never NaN, in the report's JSON
            out[name] = {"value": None, "p": None}
            continue
        null = rows(pairings, p)
        out[name] = {"value": value, "p": float(np.mean(null >= null[0] - 1e-12))}
    return out


def slope_through_origin(ours: Sequence[float], paper: Sequence[float]) -> float:
    """The least-squares slope of ours on the paper's through the origin, sum(o p) / sum(p^2): both are gains
    over the Baseline, zero at no effect, so the slope says how large ours are (1: the paper's size)."""
    o, p = np.asarray(ours, float), np.asarray(paper, float)
    if o.shape != p.shape or not (np.isfinite(o).all() and np.isfinite(p).all()):
        raise ValueError("a slope of two equal-length sequences of finite numbers")
    scale = float(p @ p)
    if scale == 0:
        raise ValueError("the paper's gains are all zero: no slope")
    return float(o @ p) / scale


def bootstrap_interval(per_seed: dict[str, np.ndarray], statistic: Callable[[dict[str, np.ndarray]], float], *,
                       draws: int = BOOTSTRAP, generator: torch.Generator,
                       batched: Callable[[dict[str, np.ndarray]], np.ndarray] | None = None,
                       ) -> tuple[float, float] | None:
    """The 2.5 and 97.5 percentiles of ``statistic`` over seed resamples: ``per_seed[method]`` has the seeds on
    axis 0 (the same seeds, in the same order, for every method); each draw takes the seed indices with
    replacement once for all methods.  Undefined draws (NaN) are left out; None when fewer than half are
    defined, or with fewer than 2 seeds.  ``batched``, where given, is ``statistic`` of every draw at once
    (each array with the draws on a new axis 0): the same values, without a Python call per draw."""
    counts = {len(v) for v in per_seed.values()}
    if len(counts) != 1:
        raise ValueError(f"every method needs the same seeds, got counts {sorted(counts)}")
    n = counts.pop()
    if n < 2:
        return None
    index = torch.randint(0, n, (draws, n), generator=generator).numpy()
    if batched is not None:
        values = np.asarray(batched({m: v[index] for m, v in per_seed.items()}), float)
    else:
        values = np.array([statistic({m: v[rows] for m, v in per_seed.items()}) for rows in index])
    values = values[np.isfinite(values)]
    if len(values) < draws / 2:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


# ----------------------------------------------------------------------------- our runs

def _read(path: Path, *numbers: str) -> dict:
    """The evaluation at ``path`` with a finite number at each dotted key of ``numbers``: else one line naming
    the file (issue 60: ``{"summary": null}`` was a traceback)."""
    return read_json_object(path, "an evaluation of noisymix", dict.fromkeys(numbers, "number"))


def load_runs(results: Path, methods: Sequence[str], seeds: Sequence[int], *, corrupted_suite: str = "digits-c",
              perturbed_suite: str = "digits-p") -> dict[str, dict[str, np.ndarray]]:
    """Our per-seed numbers, per method: ``clean`` (seeds,), ``per_corruption`` (seeds, 15) and
    ``per_perturbation`` (seeds, 10), in %, from ``results/runs/<method>-seed<s>/eval/*.json``; a missing or
    malformed record is one line naming it."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for method in methods:
        clean, per_c, per_p = [], [], []
        for seed in seeds:
            folder = Path(results) / "runs" / f"{method}-seed{seed}" / "eval"
            # every number each needs, at its dotted key (issue 60: ``{"summary": null}`` was a traceback)
            clean.append(100.0 * float(_read(folder / "clean.json", "summary.accuracy")["summary"]["accuracy"]))
            c = _read(folder / f"{corrupted_suite}.json", *(f"summary.per_corruption.{n}" for n in CORRUPTIONS))[
                "summary"]["per_corruption"]
            per_c.append([100.0 * float(c[name]) for name in CORRUPTIONS])
            p = _read(folder / f"{perturbed_suite}.json", *(f"results.{n}.flip_probability" for n in P_COLUMNS))[
                "results"]
            per_p.append([100.0 * float(p[n]["flip_probability"]) for n in P_COLUMNS])
        out[method] = {"clean": np.array(clean), "per_corruption": np.array(per_c),
                       "per_perturbation": np.array(per_p)}
    return out


# ----------------------------------------------------------------------------- the test

def _interval(values: np.ndarray) -> dict:
    from noisymix_infra.stats import interval

    found = interval([float(v) for v in values])
    return {"mean": found["mean"], "half_width": found["half_width"]}


def _gain(runs: dict, method: str) -> np.ndarray:
    """Our per-corruption gain over the Baseline, mean over seeds (paired by seed)."""
    return (runs[method]["per_corruption"] - runs["baseline"]["per_corruption"]).mean(0)


def _share(runs: dict, method: str) -> np.ndarray:
    """Our per-corruption share of the Baseline's drop that the method recovers: gain / drop."""
    drop = (runs["baseline"]["clean"][:, None] - runs["baseline"]["per_corruption"]).mean(0)
    return _gain(runs, method) / np.where(drop == 0, np.nan, drop)


def analogue_summary(runs: dict[str, dict[str, np.ndarray]], seeds: Sequence[int], *, seed: int = 0,
                     draws: int = BOOTSTRAP) -> dict:
    """Everything the analogue's test reports, as data (``render_markdown`` words it, ``finding`` says it)."""
    from noisymix_figures.paper import method_columns
    from noisymix_infra.stats import paired

    methods = list(runs)
    unfitted = [m for m in methods if m != "baseline"]
    if "baseline" not in methods or len(unfitted) < 3:
        raise ValueError(f"the analogue's test needs the Baseline and at least three other methods, got {methods}")
    paper = method_columns(methods)
    generator = torch.Generator().manual_seed(seed)
    table = [{"method": m, "row": paper[m]["row"], "fitted": m == "baseline",
              "clean": _interval(runs[m]["clean"]), "corrupted": _interval(runs[m]["per_corruption"].mean(1)),
              "mean_flip": _interval(runs[m]["per_perturbation"].mean(1)),
              "paper_clean": paper[m]["clean"], "paper_corrupted": paper[m]["corrupted"], "paper_mfr": paper[m]["mfr"],
              # per seed, aligned with ``seeds``: what `noisymix screen` pairs a new method with (issue 59)
              "per_seed": {"clean": runs[m]["clean"].round(PER_SEED_DECIMALS).tolist(),
                           "corrupted": runs[m]["per_corruption"].mean(1).round(PER_SEED_DECIMALS).tolist(),
                           "mean_flip": runs[m]["per_perturbation"].mean(1).round(PER_SEED_DECIMALS).tolist()}}
             for m in methods]
    order = {}
    for key, field, column in (("c", "per_corruption", "corrupted"), ("p", "per_perturbation", "mfr")):
        reference = [paper[m][column] for m in unfitted]
        found = order_test([float(runs[m][field].mean()) for m in unfitted], reference)
        found["spearman"]["seed_range"] = bootstrap_interval(
            {m: runs[m][field] for m in unfitted},
            lambda s, r=reference: spearman([float(s[m].mean()) for m in unfitted], r), draws=draws,
            generator=generator, batched=lambda s, r=reference: spearman_rows(
                np.stack([s[m].mean((-2, -1)) for m in unfitted], -1), r))
        order[key] = found
    base = paper["baseline"]
    paper_drop = np.array([base["clean"] - base["per_corruption"][c] for c in CORRUPTIONS])
    gains = []
    for m in unfitted:
        paper_gain = np.array([paper[m]["per_corruption"][c] - base["per_corruption"][c] for c in CORRUPTIONS])
        gains.append({"method": m, "slope": slope_through_origin(_gain(runs, m), paper_gain),
                      "rank_correlation": rank_correlation(_gain(runs, m), paper_gain),
                      "share_of_drop": rank_correlation(_share(runs, m), paper_gain / paper_drop),
                      "ours": _gain(runs, m).round(4).tolist(), "paper": paper_gain.round(4).tolist()})
    central = None
    if "noisymix" in runs and "augmix_jsd" in runs:
        by_seed = {k: {m: dict(zip(seeds, runs[m][f].mean(1), strict=True)) for m in ("noisymix", "augmix_jsd")}
                   for k, f in (("c", "per_corruption"), ("p", "per_perturbation"))}
        central = {"c": {"ours": paired(by_seed["c"]["noisymix"], by_seed["c"]["augmix_jsd"]),
                         "paper": round(paper["noisymix"]["corrupted"] - paper["augmix_jsd"]["corrupted"], 2)},
                   "p": {"ours": paired(by_seed["p"]["augmix_jsd"], by_seed["p"]["noisymix"]),
                         "paper": round(paper["augmix_jsd"]["mfr"] - paper["noisymix"]["mfr"], 2)}}
    summary = {"methods": methods, "unfitted": unfitted, "seeds": list(seeds), "table": table, "order": order,
               "gains": gains, "central": central, "bootstrap": {"draws": draws, "seed": seed}}
    summary["finding"] = finding(summary)
    return summary


# ----------------------------------------------------------------------------- words

def _order_words(entry: dict, benchmark: str, n: int) -> str:
    rho, p = entry["spearman"]["value"], entry["spearman"]["p"]
    if p is None:
        return f"gives no order of the {n} to compare with {benchmark}'s (a constant side)"
    stats = f"Spearman {signed(rho, 2)}, exact permutation p = {p:.3f}"
    if p < 0.05 and rho > 0:
        return f"orders the {n} methods it was not fitted to as {benchmark} does ({stats})"
    return f"does not reliably order the {n} methods it was not fitted to as {benchmark} does ({stats})"


def finding(summary: dict) -> str:
    """The analogue's test in plain words, from the numbers alone (issue 57, goal 6): what it supports (the
    order, by the exact permutation test of the unfitted methods) and what it does not (effect sizes,
    per-corruption profiles, NoisyMix against AugMix), naming the methods where it disagrees."""
    n = len(summary["unfitted"])
    c = _order_words(summary["order"]["c"], "CIFAR-10-C", n)
    p = _order_words(summary["order"]["p"], "CIFAR-10-P", n).replace(f" the {n} methods it was not fitted to", " them")
    text = f"The analogue {c}, and {p} in how often they flip."
    slopes = {g["method"]: g["slope"] for g in summary["gains"]}
    far = [f"{label(m)} {s:.2f}×".replace("-", "−") for m, s in slopes.items() if s > 1.5 or s < 0.5]
    sizes = (f" It does not reproduce their effect sizes: our gains are {np.median(list(slopes.values())):.1f} times "
             f"the paper's at the median, from {signed(min(slopes.values()))} to {signed(max(slopes.values()))}"
             + (f" ({join(far)})" if far else "") + ".") if far else (
        f" Our gains are {min(slopes.values()):.1f}–{max(slopes.values()):.1f} times the paper's.")
    reversed_ = [f"{label(g['method'])} ({signed(g['rank_correlation'], 2)})" for g in summary["gains"]
                 if g["rank_correlation"] is not None and g["rank_correlation"] < 0]
    shares = [g["share_of_drop"] for g in summary["gains"] if g["share_of_drop"] is not None]
    profile = ""
    if reversed_ or (shares and max(shares) < 0.5):
        profile = (" Nor does it reproduce where each method recovers: "
                   + (f"the per-corruption gains run against the paper's for {join(reversed_)}" if reversed_ else "")
                   + ("; " if reversed_ and shares else "")
                   + (f"the share of the Baseline's drop each recovers correlates with the paper's at "
                      f"{signed(min(shares), 2)} to {signed(max(shares), 2)}" if shares else "") + ".")
    central = ""
    if summary.get("central"):
        d, paper = summary["central"]["c"]["ours"], summary["central"]["c"]["paper"]
        lo, hi = ((d["mean"] - d["half_width"], d["mean"] + d["half_width"]) if d and d.get("half_width") is not None
                  else (-math.inf, math.inf))
        if lo <= 0 <= hi:
            central = (f" It does not separate NoisyMix from AugMix, the paper's central comparison: NoisyMix minus "
                       f"AugMix {interval_text(d)} points on Digits-C against the paper's {signed(paper)} on "
                       "CIFAR-10-C.")
        else:
            central = (f" NoisyMix minus AugMix, the paper's central comparison, is {interval_text(d)} points on "
                       f"Digits-C against the paper's {signed(paper)} on CIFAR-10-C.")
    return text + sizes + profile + central


def _pm(entry: dict) -> str:
    hw = entry["half_width"]
    return f"{entry['mean']:.1f}" + ("" if hw is None else f" ± {hw:.1f}")


def _order_cell(entry: dict) -> str:
    value, p = entry["value"], entry["p"]
    return "undefined" if p is None else f"{signed(value, 2)} (p = {p:.3f})"


def render_markdown(summary: dict, *, plan_line: str = "") -> str:
    """The analogue's test as Markdown: the finding, the eight-method table, the order test of the unfitted
    methods, the gains, the central comparison."""
    n = len(summary["unfitted"])
    lines = [f"**{summary['finding']}**", ""]
    if plan_line:
        lines += [plan_line, ""]
    lines += [f"Ours: mean ± 95 % t-interval over {len(summary['seeds'])} seeds (%); the paper's: CIFAR-10 ResNet-18 "
              "(tab:results_cifar10, tab:results_cifar_p). The sets were fitted to the Baseline alone (on the fit's "
              "own models, by construction); every other row was not fitted.", "",
              "| method | fitted? | clean | Digits-C | the paper's CIFAR-10-C | mean flip probability, Digits-P | "
              "the paper's CIFAR-10-P mFR |", "|---|---|---:|---:|---:|---:|---:|"]
    for row in summary["table"]:
        lines.append(f"| {row['row']} | {'fitted' if row['fitted'] else 'not fitted'} | {_pm(row['clean'])} | "
                     f"{_pm(row['corrupted'])} | {row['paper_corrupted']:.1f} | {_pm(row['mean_flip'])} | "
                     f"{row['paper_mfr']:.1f} |")
    order = summary["order"]

    def seed_range(entry: dict) -> str:
        found = entry["spearman"]["seed_range"]
        return "—" if found is None else f"{signed(found[0], 2)} to {signed(found[1], 2)}"

    lines += ["", f"**The order of the {n} methods the sets were not fitted to**, ours against the paper's: rank "
              f"correlations with their exact one-sided permutation p-values (all {math.factorial(n)} orders), and "
              f"the seed-resampling range of Spearman's rho ({summary['bootstrap']['draws']} resamples of the "
              f"{len(summary['seeds'])} seeds, 2.5–97.5 percentiles: how far the seeds move it, not a confidence "
              "interval).", "", "| benchmark | Spearman | Kendall | seed-resampling range of Spearman |",
              "|---|---|---|---|",
              f"| Digits-C mean accuracy vs CIFAR-10-C | {_order_cell(order['c']['spearman'])} | "
              f"{_order_cell(order['c']['kendall'])} | {seed_range(order['c'])} |",
              f"| Digits-P mean flip probability vs CIFAR-10-P mFR | {_order_cell(order['p']['spearman'])} | "
              f"{_order_cell(order['p']['kendall'])} | {seed_range(order['p'])} |", "",
              "**Each method's per-corruption gain over the Baseline against the paper's** (15 corruptions): the slope "
              "of ours on the paper's through the origin (1: the paper's size), the rank correlation, and the rank "
              "correlation of the share of the Baseline's drop each gain recovers:", "",
              "| method | slope | rank correlation | share-of-drop correlation |", "|---|---:|---:|---:|"]
    for g in summary["gains"]:
        cells = ["n/a" if g[k] is None else signed(g[k], 2) for k in ("rank_correlation", "share_of_drop")]
        lines.append(f"| {label(g['method'])} | {signed(g['slope'], 2)} | {cells[0]} | {cells[1]} |")
    central = summary.get("central")
    if central:
        lines += ["", "**NoisyMix against AugMix**, paired over seeds (points; NoisyMix better is positive): "
                  f"Digits-C {interval_text(central['c']['ours'])} (the paper's CIFAR-10-C "
                  f"{signed(central['c']['paper'])}); "
                  f"Digits-P flips {interval_text(central['p']['ours'])} (the paper's CIFAR-10-P mFR "
                  f"{signed(central['p']['paper'])})."]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- the figure, the files, the command

def figure(summary: dict):
    """Ours against the paper's, one point per method, with the line y = x (ours equal to the paper's): Digits-C
    mean accuracy against CIFAR-10-C (left) and Digits-P mean flip probability against CIFAR-10-P mFR (right),
    95 % t-intervals over seeds; the Baseline, the one row the sets were fitted to, drawn hollow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from noisymix_figures.methods import method_color, method_label

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.9))
    panels = (("corrupted", "paper_corrupted", "CIFAR-10-C accuracy, the paper's (%)", "Digits-C accuracy, ours (%)",
               "c"),
              ("mean_flip", "paper_mfr", "CIFAR-10-P mFR, the paper's (%)", "Digits-P mean flip probability, ours (%)",
               "p"))
    for ax, (ours, paper, xlabel, ylabel, key) in zip(axes, panels, strict=True):
        points = []
        for row in summary["table"]:
            colour = method_color(row["row"], "tab:blue")
            ax.errorbar(row[paper], row[ours]["mean"], yerr=row[ours]["half_width"] or 0.0, fmt="o", color=colour,
                        ms=7, mfc="white" if row["fitted"] else colour, capsize=3,
                        label=method_label(row["row"]) + (" (fitted)" if row["fitted"] else ""))
            points += [row[paper], row[ours]["mean"]]
        low, high = min(points), max(points)
        pad = 0.05 * (high - low or 1.0)
        ax.plot([low - pad, high + pad], [low - pad, high + pad], ls="--", color="grey", lw=1, label="y = x")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        rho = _order_cell(summary["order"][key]["spearman"])
        ax.set_title(f"the {len(summary['unfitted'])} unfitted: Spearman {rho}", fontsize=9)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, frameon=False, fontsize=8)
    fig.suptitle("The analogue on the paper's eight methods (one point per method; hollow: the fitted Baseline)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def _plan_of(results: Path) -> tuple[dict, str, dict]:
    log = read_json_object(Path(results) / "reproduce.json", "the record of `noisymix reproduce --plan "
                           f"{PLAN}` (its --out)", ("plan",))
    plan = log["plan"]
    if not isinstance(plan, dict) or "baseline" not in plan.get("methods", ()):
        raise ValueError(f"{Path(results) / 'reproduce.json'}: no plan with the Baseline among its methods")
    return plan, str(log.get("plan_name", "custom")), log


def _png(fig) -> bytes:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def write_report(results: Path, *, draws: int = BOOTSTRAP) -> dict:
    """Compute the analogue's test from a finished job and write ``results/analogue/analogue.{json,md}`` and
    ``analogue_methods.png``, all or none; returns the record.  Any plan's folder may be reported on; its plan is
    named as it is (only the ``analogue-methods`` plan's goes into the README: ``update_docs``)."""
    from noisymix_app.analogue.severities import markdown
    from noisymix_app.reproduce.headline import claims_table
    from noisymix_app.reproduce.plans import protocol_differences
    from noisymix_infra.io import write_files

    plan, name, log = _plan_of(results)
    methods = [m for m in plan["methods"] if m in plan.get("perturbed_methods", ())]
    runs = load_runs(results, methods, plan["seeds"], corrupted_suite=plan["corrupted_suite"],
                     perturbed_suite=plan["perturbed_suite"] or "digits-p")
    summary = analogue_summary(runs, plan["seeds"], draws=draws)
    wall = log.get("wall_seconds") or log.get("invocation_seconds")
    differs = protocol_differences(plan, PLAN)
    summary["plan"] = {"name": name, "protocol": PLAN if not differs else None, "differs": differs,
                       "methods": methods, "epochs": plan["epochs"], "width": plan["width"], "seeds": plan["seeds"],
                       "corruption_params": plan["corruption_params"],
                       "perturbation_params": plan.get("perturbation_params", "cifar"),
                       "perturbed_limit": plan["perturbed_limit"],
                       "wall_minutes": None if wall is None else round(wall / 60, 1)}
    folder_summary = Path(results) / "summary.json"
    claims = read_json_object(folder_summary, "the job's summary").get("claims") if folder_summary.is_file() else None
    summary["claims"] = claims or []
    recipe = ("the laptop recipe" if not differs
              else f"not the {PLAN} plan's protocol (differs in {', '.join(differs[:4])})")
    plan_line = (f"`noisymix reproduce --plan {name}`: {len(methods)} methods × {len(plan['seeds'])} seeds (seeds "
                 f"{', '.join(map(str, plan['seeds']))}), {plan['model']} width {plan['width']}, {plan['epochs']} "
                 "epochs, "
                 f"{recipe}; Digits-C and Digits-P ({plan['perturbed_limit']} sequences) at their difficulty-matched "
                 f"strengths" + ("" if wall is None else f"; {wall / 60:.1f} min wall") + ".")
    text = render_markdown(summary, plan_line=plan_line)
    if summary["claims"]:
        text += ("\n**The paper's claims about the other methods** (`figures/paper_claims.json`, the eight-method "
                 "family: one Holm family, decided as the main job's; the claims in detail: this folder's "
                 "`SUMMARY.md`):\n\n" + "\n".join(claims_table({"claims": summary["claims"]})) + "\n")
    text += "\n![ours against the paper's](figures/analogue_methods.png)\n"
    if plan["corruption_params"] == "digits-matched":
        from fullscale.corruptions.matched import matched_fit

        table = markdown(matched_fit())
        if table:
            text += "\n**The matched Digits-C per severity, in the fit** (`noisymix fit-analogue`).\n\n" + table
    out = Path(results) / "analogue"
    write_files({out / "analogue.json": summary, out / "analogue.md": text,
                 out / "analogue_methods.png": _png(figure(summary))})
    return summary


README_BEGIN = "<!-- analogue-methods:begin -->"
README_END = "<!-- analogue-methods:end -->"


def readme_block(summary: dict) -> str:
    """The README's few generated lines: the finding, the wall time, the figure."""
    minutes = summary.get("plan", {}).get("wall_minutes")
    return (f"**{summary['finding']}** `noisymix reproduce --plan {PLAN} --out DIR` ran it"
            + ("" if minutes is None else f" in {minutes} min wall on 2 CPU cores")
            + "; every table, and the paper's claims about Mixup, Manifold Mixup, CutMix and Puzzle Mix decided on "
            "these runs, in [docs/analogue-methods-summary.md](docs/analogue-methods-summary.md).\n\n"
            "![the analogue on the eight methods](docs/figures/analogue_methods.png)\n")


def update_docs(results: Path, root: Path | None = None) -> None:
    """Copy a finished report to ``docs/analogue-methods-summary.{md,json}`` and ``docs/figures/analogue_methods.png``
    and its lines into the README between the markers: only the ``analogue-methods`` plan's complete output (issue
    60: a 3-method, 2-seed, 1-epoch folder replaced them, still saying "the eight methods"); every input is read
    and checked before anything is written, and everything is written at once."""
    import re

    from noisymix_infra.io import write_files

    root = Path(root) if root else Path(__file__).resolve().parents[2]
    source = Path(results) / "analogue"
    summary = read_json_object(source / "analogue.json", "the analogue's report (`noisymix analogue --results DIR`)",
                               ("plan", "table", "finding"))
    differs = summary["plan"].get("differs")
    if differs is None or differs or [r["method"] for r in summary["table"]] != list(EIGHT_METHODS) \
            or len(summary.get("seeds") or []) < 5:
        raise ValueError(f"{results} is not the {PLAN} plan's complete output (its plan differs in "
                         f"{', '.join(differs or ['?'])}, or not the eight methods on at least 5 seeds): only that "
                         "plan's report goes into the README and docs/")
    text, png = (source / "analogue.md").read_text(), (source / "analogue_methods.png").read_bytes()
    readme = (root / "README.md").read_text()
    pattern = re.compile(re.escape(README_BEGIN) + r".*?" + re.escape(README_END), flags=re.S)
    if not pattern.search(readme):
        raise ValueError(f"README.md has no {README_BEGIN} ... {README_END} markers")
    files: dict = {}
    robust_c = Path(results) / "figures" / "robust_c.png"  # the figures step's: the eight methods beside the paper's
    if robust_c.is_file():
        files[root / "docs" / "figures" / "analogue_robust_c.png"] = robust_c.read_bytes()
        text += "\n![the eight methods' robust accuracy beside the paper's](figures/analogue_robust_c.png)\n"
    block = readme_block(summary)
    files.update({root / "docs" / "analogue-methods-summary.json": summary,
                  root / "docs" / "analogue-methods-summary.md": text,
                  root / "docs" / "figures" / "analogue_methods.png": png,
                  root / "README.md": pattern.sub(lambda _: f"{README_BEGIN}\n{block}{README_END}", readme)})
    write_files(files)


def add_arguments(parser) -> None:
    parser.add_argument("--results", required=True, help=f"the --out of `noisymix reproduce --plan {PLAN}` (its runs)")
    parser.add_argument("--update-readme", action="store_true",
                        help=f"also copy the report to docs/analogue-methods-summary.* and its lines into the README "
                             f"(the {PLAN} plan's complete output only)")
    parser.add_argument("--draws", type=int, default=BOOTSTRAP, help="seed resamples (default %(default)s)")


def run(args) -> int:
    if args.draws < 100:
        raise ValueError(f"--draws must be at least 100 for a 2.5-97.5 percentile range, got {args.draws}")
    summary = write_report(Path(args.results), draws=args.draws)
    if args.update_readme:
        update_docs(Path(args.results))
    print(summary["finding"])
    print(f"written to {Path(args.results) / 'analogue'}" + (" and docs/" if args.update_readme else ""))
    return 0
