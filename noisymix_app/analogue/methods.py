"""The analogue tested on what it was not fitted to (issues 51, 57): the paper's eight CIFAR-10-C methods on
the difficulty-matched Digits-C and Digits-P, ``noisymix analogue --results DIR [--update-readme]``.

The difficulty-matched sets were fitted to the Baseline only (``fit_c``, ``fit_p``), on the fit's own models,
so the Baseline is left out of every test here.  What the
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
* **the order's two tests as one family** (issue 63, goal 3): the -C and -P Spearman p-values adjusted by
  Holm together, the finding's words from the adjusted p by one rule (``_order_words``), and the methods
  whose rank differs from the paper's named.

NoisyMix against AugMix and the paper's claims about the other methods are decided once, in the main job's
report, on every run of the recipe pooled (``noisymix_app.reproduce.pool``, issue 63, goal 1): this report
restates none of them.

This is a test of the analogue, never a target: no strength, recipe or seed is chosen from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from fullscale.vocabulary import CATEGORIES, CORRUPTIONS, P_COLUMNS
from noisymix_app.analogue.figure import _order_cell
from noisymix_app.reproduce.plans import EIGHT_METHODS
from noisymix_app.reproduce.words import join, label, signed
from noisymix_infra.io import read_json_object, replace_marked
from noisymix_infra.stats import holm, kendall_tau_b, rank_correlation, spearman

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


def family_validity(gains: list[dict]) -> dict:
    """Per CIFAR-10-C family (issue 65, goal 4): the unfitted methods' mean gain over the Baseline on the family's
    corruptions, ours against the paper's, as rank agreement (Spearman with its exact one-sided permutation p, Holm
    over the four families) and the slope of ours on the paper's through the origin: where the analogue is an
    instrument for a method's gain, and where it is not."""
    out = {}
    for family, members in CATEGORIES.items():
        index = [CORRUPTIONS.index(c) for c in members]
        ours = [float(np.mean([g["ours"][i] for i in index])) for g in gains]
        paper = [round(float(np.mean([g["paper"][i] for i in index])), 2) for g in gains]
        test = order_test(ours, paper)["spearman"]
        out[family] = {"spearman": test["value"], "p": test["p"], "slope": slope_through_origin(ours, paper),
                       "ours": [round(v, 2) for v in ours], "paper": paper}
    adjusted = holm({f: v["p"] for f, v in out.items() if v["p"] is not None})
    for family, entry in out.items():
        entry["p_adjusted"] = adjusted.get(family)
    return out


def _family_words(families: dict) -> str:
    """The per-family validity in one sentence, its words from the Holm-adjusted p by the order's rule."""
    if not families:
        return ""
    ranks = [f"{f} ({signed(v['spearman'], 2)}, p {v['p_adjusted']:.3f}, slope {v['slope']:.2f})" for f, v in
             families.items() if v.get("p_adjusted") is not None and v["p_adjusted"] < 0.05 and v["spearman"] > 0]
    not_ = [f"{f} ({'undefined' if v['spearman'] is None else signed(v['spearman'], 2)}"
            + ("" if v.get("p_adjusted") is None else f", p {v['p_adjusted']:.3f}") + ")" for f, v in families.items()
            if not (v.get("p_adjusted") is not None and v["p_adjusted"] < 0.05 and v["spearman"] > 0)]
    return (" Per corruption family (Spearman of the methods' gains over the Baseline, exact p after Holm over the "
            "four families, slope of ours on the paper's): they rank as the paper's on " + (join(ranks) if ranks else
                                                                                            "no family")
            + (f"; not reliably on {join(not_)}" if not_ else "") + ".")


def analogue_summary(runs: dict[str, dict[str, np.ndarray]], seeds: Sequence[int], *, seed: int = 0,
                     draws: int = BOOTSTRAP) -> dict:
    """Everything the analogue's test reports, as data (``render_markdown`` words it, ``finding`` says it)."""
    from noisymix_figures.paper import method_columns

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
                           "mean_flip": runs[m]["per_perturbation"].mean(1).round(PER_SEED_DECIMALS).tolist(),
                           # per corruption and per CIFAR-10-C family: where a method's gain lies (issue 65)
                           "per_corruption": {c: runs[m]["per_corruption"][:, i].round(PER_SEED_DECIMALS).tolist()
                                              for i, c in enumerate(CORRUPTIONS)},
                           "per_family": {f: runs[m]["per_corruption"][:, [CORRUPTIONS.index(c) for c in members]]
                                          .mean(1).round(PER_SEED_DECIMALS).tolist()
                                          for f, members in CATEGORIES.items()}}}
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
        # places from the best (accuracy: highest first; flips: lowest), ties sharing the mean place
        sign = -1.0 if key == "c" else 1.0
        places = [_average_ranks(sign * np.array(v, float)) for v in
                  ([float(runs[m][field].mean()) for m in unfitted], np.round(reference, 1))]
        found["misordered"] = {m: {"ours": float(r), "paper": float(q)}
                               for m, r, q in zip(unfitted, *places, strict=True) if r != q}
        order[key] = found
    adjusted = holm({k: v["spearman"]["p"] for k, v in order.items() if v["spearman"]["p"] is not None})
    for key, found in order.items():
        found["spearman"]["p_adjusted"] = adjusted.get(key)
    base = paper["baseline"]
    # differences of printed one-decimal cells, rounded back to that precision: as float differences two equal
    # gains (11.4 and 11.4) ranked apart and broke the paper's tie (issue 63, goal 5)
    paper_drop = np.array([base["clean"] - base["per_corruption"][c] for c in CORRUPTIONS]).round(1)
    gains = []
    for m in unfitted:
        paper_gain = np.array([paper[m]["per_corruption"][c] - base["per_corruption"][c] for c in CORRUPTIONS]).round(1)
        gains.append({"method": m, "slope": slope_through_origin(_gain(runs, m), paper_gain),
                      "rank_correlation": rank_correlation(_gain(runs, m), paper_gain),
                      "share_of_drop": rank_correlation(_share(runs, m), paper_gain / paper_drop),
                      "ours": _gain(runs, m).round(4).tolist(), "paper": paper_gain.round(4).tolist()})
    summary = {"methods": methods, "unfitted": unfitted, "seeds": list(seeds), "table": table, "order": order,
               "gains": gains, "families": family_validity(gains), "bootstrap": {"draws": draws, "seed": seed}}
    summary["finding"] = finding(summary)
    return summary


# ----------------------------------------------------------------------------- words

def _order_words(entry: dict, benchmark: str, n: int) -> str:
    """One rule (issue 63, goal 3): *orders* where the Holm-adjusted exact p of the two benchmarks' family is
    below 5 % and rho is positive, else *does not reliably order*; the misordered methods named either way."""
    rho, p, q = entry["spearman"]["value"], entry["spearman"]["p"], entry["spearman"].get("p_adjusted")
    if p is None:
        return f"gives no order of the {n} to compare with {benchmark}'s (a constant side)"
    stats = f"Spearman {signed(rho, 2)}, exact permutation p = {p:.3f}, {q:.3f} after Holm over the two benchmarks"
    wrong = entry.get("misordered") or {}
    where = ("" if not wrong else "; ranked otherwise than the paper's: " + join(
        [f"{label(m)} ({r['ours']:g} against {r['paper']:g})" for m, r in wrong.items()]) + " (places from the best)")
    verb = "orders" if q < 0.05 and rho > 0 else "does not reliably order"
    return f"{verb} the {n} methods it was not fitted to as {benchmark} does ({stats}{where})"


def finding(summary: dict) -> str:
    """The analogue's test in plain words, from the numbers alone (issue 57, goal 6): what it supports (the
    order, by the exact permutation test of the unfitted methods) and what it does not (effect sizes,
    per-corruption profiles), naming the methods where it disagrees."""
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
    return text + sizes + profile + _family_words(summary.get("families") or {})


def _pm(entry: dict) -> str:
    hw = entry["half_width"]
    return f"{entry['mean']:.1f}" + ("" if hw is None else f" ± {hw:.1f}")


def render_markdown(summary: dict, *, plan_line: str = "") -> str:
    """The analogue's test as Markdown: the finding, the eight-method table, the order test of the unfitted
    methods, the gains."""
    n = len(summary["unfitted"])
    lines = [f"**{summary['finding']}**", ""]
    if plan_line:
        lines += [plan_line, ""]
    lines += [f"Ours: mean ± 95 % t-interval over {len(summary['seeds'])} seeds (%); the paper's: CIFAR-10 ResNet-18 "
              "(tab:results_cifar10, tab:results_cifar_p). The sets were fitted to the Baseline alone, on the fit's "
              "own models and held-out digits (its profile out of sample: docs/reproduce-summary.md); every other row "
              "was not fitted.", "",
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
    if summary.get("families"):  # issue 65, goal 4: where the analogue is an instrument, family by family
        lines += ["", "**Per CIFAR-10-C family**, the unfitted methods' mean gain over the Baseline on its "
                  "corruptions, ours against the paper's:", "", "| family | Spearman | exact p | after Holm | slope |",
                  "|---|---:|---:|---:|---:|"]
        lines += [f"| {f} | {'n/a' if v['spearman'] is None else signed(v['spearman'], 2)} | "
                  f"{'—' if v['p'] is None else format(v['p'], '.3f')} | "
                  f"{'—' if v.get('p_adjusted') is None else format(v['p_adjusted'], '.3f')} | "
                  f"{signed(v['slope'], 2)} |"
                  for f, v in summary["families"].items()]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------- the files, the command (the figure: figure.py)

def _plan_of(results: Path) -> tuple[dict, str, dict]:
    log = read_json_object(Path(results) / "reproduce.json", "the record of `noisymix reproduce --plan "
                           f"{PLAN}` (its --out)", ("plan",))
    plan = log["plan"]
    if not isinstance(plan, dict) or "baseline" not in plan.get("methods", ()):
        raise ValueError(f"{Path(results) / 'reproduce.json'}: no plan with the Baseline among its methods")
    return plan, str(log.get("plan_name", "custom")), log


def write_report(results: Path, *, draws: int = BOOTSTRAP) -> dict:
    """Compute the analogue's test from a finished job and write ``results/analogue/analogue.{json,md}`` and
    ``analogue_methods.png``, all or none; returns the record.  Any plan's folder may be reported on; its plan is
    named as it is (only the ``analogue-methods`` plan's goes into the README: ``update_docs``)."""
    from noisymix_app.analogue.figure import figure, png
    from noisymix_app.analogue.severities import markdown
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
    folder_summary = Path(results) / "summary.json"  # the sets the runs read (the screen binds to them: issue 64)
    summary["sets"] = (read_json_object(folder_summary, "the job's summary").get("sets")
                       if folder_summary.is_file() else None)
    recipe = ("the laptop recipe" if not differs
              else f"not the {PLAN} plan's protocol (differs in {', '.join(differs[:4])})")
    plan_line = (f"`noisymix reproduce --plan {name}`: {len(methods)} methods × {len(plan['seeds'])} seeds (seeds "
                 f"{', '.join(map(str, plan['seeds']))}), {plan['model']} width {plan['width']}, {plan['epochs']} "
                 "epochs, "
                 f"{recipe}; Digits-C and Digits-P ({plan['perturbed_limit']} sequences) at their difficulty-matched "
                 f"strengths" + ("" if wall is None else f"; {wall / 60:.1f} min wall as recorded (a measure of this "
                                                          "invocation, on cores it may have shared)") + ".")
    text = render_markdown(summary, plan_line=plan_line)
    text += "\n![ours against the paper's](figures/analogue_methods.png)\n"
    if plan["corruption_params"] == "digits-matched":
        from fullscale.corruptions.matched import matched_fit

        table = markdown(matched_fit())
        if table:
            text += "\n**The matched Digits-C per severity, in the fit** (`noisymix fit-analogue`).\n\n" + table
    out = Path(results) / "analogue"
    write_files({out / "analogue.json": summary, out / "analogue.md": text,
                 out / "analogue_methods.png": png(figure(summary))})
    return summary


README_BEGIN = "<!-- analogue-methods:begin -->"
README_END = "<!-- analogue-methods:end -->"


def readme_block(summary: dict) -> str:
    """The README's few generated lines: the finding and the figure (its time is the first-run block's figure, one
    number per fact: issue 63, goal 8)."""
    return (f"**{summary['finding']}** `noisymix reproduce --plan {PLAN} --out DIR` makes its runs; every table in "
            "[docs/analogue-methods-summary.md](docs/analogue-methods-summary.md) (the paper's claims about these "
            "methods are decided once, with every run of the recipe pooled, in the main job's report).\n\n"
            "![the analogue on the eight methods](docs/figures/analogue_methods.png)\n")


def update_docs(results: Path, root: Path | None = None) -> None:
    """Copy a finished report to ``docs/analogue-methods-summary.{md,json}`` and ``docs/figures/analogue_methods.png``
    and its lines into the README between the markers: only the ``analogue-methods`` plan's complete output (issue
    60: a 3-method, 2-seed, 1-epoch folder replaced them, still saying "the eight methods"); every input is read
    and checked before anything is written, and everything is written at once."""

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
    # issue 64, cause 1: a folder of evaluation files alone (no run's config, no weights) went into the README
    missing = [f"{m}-seed{s}" for m in summary["plan"]["methods"] for s in summary["plan"]["seeds"]
               if not all((Path(results) / "runs" / f"{m}-seed{s}" / f).is_file() for f in ("config.json", "final.pt"))]
    if missing:
        raise ValueError(f"{results}: run {missing[0]} has no config.json or final.pt: only runs that exist go into "
                         "the README and docs/")
    text, png = (source / "analogue.md").read_text(), (source / "analogue_methods.png").read_bytes()
    readme = replace_marked((root / "README.md").read_text(), README_BEGIN, README_END, readme_block(summary))
    files: dict = {}
    robust_c = Path(results) / "figures" / "robust_c.png"  # the figures step's: the eight methods beside the paper's
    if robust_c.is_file():
        files[root / "docs" / "figures" / "analogue_robust_c.png"] = robust_c.read_bytes()
        text += "\n![the eight methods' robust accuracy beside the paper's](figures/analogue_robust_c.png)\n"
    files.update({root / "docs" / "analogue-methods-summary.json": summary,
                  root / "docs" / "analogue-methods-summary.md": text,
                  root / "docs" / "figures" / "analogue_methods.png": png,
                  root / "README.md": readme})
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
