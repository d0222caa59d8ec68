"""The analogue tested on what it was not fitted to (issue 51): the paper's eight CIFAR-10-C methods on
the difficulty-matched Digits-C and Digits-P.

The difficulty-matched sets were fitted to the Baseline only (``noisymix_app.analogue.fit_c``,
``noisymix_app.analogue.fit_p``): its per-corruption drops and per-perturbation flip rates match the
paper's by construction.  What the analogue is for is the *other* methods, so this module asks, of the
``analogue-methods`` plan's runs (``noisymix_app.reproduce.plans``: the eight rows of ``tab:results_cifar10``,
five seeds, the laptop recipe), whether they behave there as in the paper:

* the eight methods' order: our mean corrupted accuracy against the paper's CIFAR-10-C column
  (``tab:results_cifar10``) and our mean flip probability against the paper's CIFAR-10-P mFR
  (``tab:results_cifar_p``), by Spearman's rho and Kendall's tau-b;
* each method's per-corruption gain over the Baseline against the paper's (``tab:results_cifar10_c``):
  the rank correlation, the slope of ours on the paper's through the origin (how large our gains are:
  1 is the paper's size), and the rank correlation of the *share of the Baseline's drop* each gain
  recovers (the gain profile with the Baseline's own drop profile, which the fit made equal, divided
  out).

Every interval is a seed bootstrap: the five seed indices resampled with replacement, jointly for all
methods (seed ``s`` of every method is one draw, as the main job pairs them), ``BOOTSTRAP`` draws from a
``torch.Generator``, the 2.5 and 97.5 percentiles.  This is a test of the analogue, never a target: no
strength, recipe or seed was chosen from it, and whatever it shows is said as it is (``finding``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from fullscale.vocabulary import CORRUPTIONS, METHOD_ROWS, P_COLUMNS
from noisymix_app.reproduce.plans import EIGHT_METHODS

__all__ = ["BOOTSTRAP", "analogue_summary", "bootstrap_interval", "finding", "kendall_tau_b", "load_runs",
           "paper_columns", "render_markdown", "slope_through_origin", "spearman"]

BOOTSTRAP = 2000
_ROW_OF = {method: row for row, method in METHOD_ROWS.items() if method}


# ----------------------------------------------------------------------------- statistics

def _ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks 1..n, ties given their average rank (as scipy.stats.rankdata's default)."""
    x = np.asarray(values, dtype=float)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    sorted_x = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _check_pair(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"need two equal-length sequences of at least 2 numbers, got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a rank correlation of values that are not finite numbers")
    return a, b


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho: Pearson's correlation of the (average-tie) ranks; NaN when either is constant."""
    a, b = _check_pair(x, y)
    ra, rb = _ranks(a) - (len(a) + 1) / 2, _ranks(b) - (len(b) + 1) / 2
    denominator = math.sqrt(float(ra @ ra) * float(rb @ rb))
    return float(ra @ rb) / denominator if denominator > 0 else math.nan


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b (ties in either sequence corrected for, as scipy.stats.kendalltau's default):
    (concordant - discordant) / sqrt((n0 - ties_x) (n0 - ties_y)) over the n0 = n (n - 1) / 2 pairs."""
    a, b = _check_pair(x, y)
    i, j = np.triu_indices(len(a), 1)
    sa, sb = np.sign(a[j] - a[i]), np.sign(b[j] - b[i])
    pairs_a, pairs_b = float(np.count_nonzero(sa)), float(np.count_nonzero(sb))
    denominator = math.sqrt(pairs_a * pairs_b)
    return float(np.sum(sa * sb)) / denominator if denominator > 0 else math.nan


def slope_through_origin(ours: Sequence[float], paper: Sequence[float]) -> float:
    """The least-squares slope of ours on the paper's through the origin, sum(o p) / sum(p^2): both
    are gains over the Baseline, zero at no effect, so the slope says how large ours are (1: the
    paper's size, 0.5: half)."""
    o, p = _check_pair(ours, paper)
    scale = float(p @ p)
    if scale == 0:
        raise ValueError("the paper's gains are all zero: no slope")
    return float(o @ p) / scale


def bootstrap_interval(per_seed: dict[str, np.ndarray], statistic: Callable[[dict[str, np.ndarray]], float], *,
                       draws: int = BOOTSTRAP, generator: torch.Generator) -> tuple[float, float] | None:
    """The 95 % percentile interval of ``statistic`` over seed resamples: ``per_seed[method]`` has the
    seeds on axis 0 (the same seeds, in the same order, for every method); each draw takes the seed
    indices with replacement once for all methods.  Draws where the statistic is undefined (NaN: a
    resample of one repeated seed can make a profile constant) are left out; None when fewer than
    half the draws are defined."""
    counts = {len(v) for v in per_seed.values()}
    if len(counts) != 1:
        raise ValueError(f"every method needs the same seeds, got counts {sorted(counts)}")
    n = counts.pop()
    if n < 2:
        return None
    index = torch.randint(0, n, (draws, n), generator=generator).numpy()
    values = np.array([statistic({m: v[rows] for m, v in per_seed.items()}) for rows in index])
    values = values[np.isfinite(values)]
    if len(values) < draws / 2:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


# ----------------------------------------------------------------------------- the paper's columns

def paper_columns(methods: Sequence[str] = EIGHT_METHODS) -> dict:
    """Per method, the paper's CIFAR-10 clean and CIFAR-10-C mean accuracy (``tab:results_cifar10``), its
    15 per-corruption accuracies (``tab:results_cifar10_c``), its ten flip probabilities and mFR
    (``tab:results_cifar_p``), all in %."""
    from noisymix_figures.paper import paper_number, paper_values

    values = paper_values()
    main = dict(values["tab:results_cifar10"]["rows"])
    per_c = dict(values["tab:results_cifar10_c"]["rows"])
    per_p = dict(values["tab:results_cifar_p"]["rows"])
    out = {}
    for method in methods:
        row = _ROW_OF[method]
        out[method] = {
            "row": row,
            "clean": float(paper_number(main[row][0])),
            "corrupted": float(paper_number(main[row][1])),
            "per_corruption": {c: float(paper_number(v)) for c, v in zip(CORRUPTIONS, per_c[row], strict=True)},
            "per_perturbation": {p: float(paper_number(v)) for p, v in zip(P_COLUMNS, per_p[row][:-1], strict=True)},
            "mfr": float(paper_number(per_p[row][-1])),
        }
    return out


# ----------------------------------------------------------------------------- our runs

def _read(path: Path, *numbers: str) -> dict:
    """The evaluation at ``path`` with a finite number at each dotted key of ``numbers``: else one line naming
    the file (issue 60: ``{"summary": null}`` was a traceback)."""
    from noisymix_infra.io import read_json_object

    return read_json_object(path, "an evaluation of noisymix", dict.fromkeys(numbers, "number"))


def load_runs(results: Path, methods: Sequence[str], seeds: Sequence[int], *, corrupted_suite: str = "digits-c",
              perturbed_suite: str = "digits-p") -> dict[str, dict[str, np.ndarray]]:
    """Our per-seed numbers, per method: ``clean`` (seeds,), ``per_corruption`` (seeds, 15) and
    ``per_perturbation`` (seeds, 10), in %, from ``results/runs/<method>-seed<s>/eval/*.json``."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for method in methods:
        clean, per_c, per_p = [], [], []
        for seed in seeds:
            folder = Path(results) / "runs" / f"{method}-seed{seed}" / "eval"
            clean.append(100.0 * float(_read(folder / "clean.json", "summary.accuracy")["summary"]["accuracy"]))
            c = _read(folder / f"{corrupted_suite}.json", *(f"summary.per_corruption.{n}" for n in CORRUPTIONS))[
                "summary"]["per_corruption"]
            missing = [name for name in CORRUPTIONS if name not in c]
            if missing:
                raise ValueError(f"{folder / (corrupted_suite + '.json')} lacks {', '.join(missing)}")
            per_c.append([100.0 * float(c[name]) for name in CORRUPTIONS])
            p = _read(folder / f"{perturbed_suite}.json", *(f"results.{n}.flip_probability" for n in P_COLUMNS))[
                "results"]
            missing = [name for name in P_COLUMNS if name not in p]
            if missing:
                raise ValueError(f"{folder / (perturbed_suite + '.json')} lacks {', '.join(missing)}")
            per_p.append([100.0 * float(p[name]["flip_probability"]) for name in P_COLUMNS])
        out[method] = {"clean": np.array(clean), "per_corruption": np.array(per_c),
                       "per_perturbation": np.array(per_p)}
    return out


# ----------------------------------------------------------------------------- the statistics of the issue

def _mean_corrupted(runs: dict[str, dict[str, np.ndarray]], method: str) -> float:
    return float(runs[method]["per_corruption"].mean())


def _mean_flip(runs: dict[str, dict[str, np.ndarray]], method: str) -> float:
    return float(runs[method]["per_perturbation"].mean())


def _gain(runs: dict, method: str) -> np.ndarray:
    """Our per-corruption gain over the Baseline, mean over seeds (paired by seed)."""
    return (runs[method]["per_corruption"] - runs["baseline"]["per_corruption"]).mean(0)


def _share(runs: dict, method: str) -> np.ndarray:
    """Our per-corruption share of the Baseline's drop that the method recovers: gain / drop."""
    drop = (runs["baseline"]["clean"][:, None] - runs["baseline"]["per_corruption"]).mean(0)
    return _gain(runs, method) / np.where(drop == 0, np.nan, drop)


def _nan_spearman(x: np.ndarray, y: np.ndarray) -> float:
    keep = np.isfinite(x) & np.isfinite(y)
    return spearman(x[keep], y[keep]) if keep.sum() >= 3 else math.nan


def _interval(values: np.ndarray) -> dict:
    from noisymix_infra.stats import interval

    found = interval([float(v) for v in values])
    return {"mean": found["mean"], "half_width": found["half_width"]}


def analogue_summary(runs: dict[str, dict[str, np.ndarray]], *, seed: int = 0, draws: int = BOOTSTRAP) -> dict:
    """Everything the analogue's test reports, as data (``render_markdown`` words it)."""
    methods = list(runs)
    if "baseline" not in methods or len(methods) < 3:
        raise ValueError(f"the analogue's test needs the Baseline and at least two other methods, got {methods}")
    paper = paper_columns(methods)
    generator = torch.Generator().manual_seed(seed)
    paper_c = np.array([paper[m]["corrupted"] for m in methods])
    paper_p = np.array([paper[m]["mfr"] for m in methods])

    def order(statistic: Callable, reference: np.ndarray, key: str) -> dict:
        field = "per_corruption" if key == "c" else "per_perturbation"
        sample = {m: runs[m][field] for m in methods}
        found = bootstrap_interval(
            sample, lambda s: statistic([float(s[m].mean()) for m in methods], reference),
            draws=draws, generator=generator)
        return {"value": statistic([_stat_of(runs, m, key) for m in methods], reference), "interval": found}

    table = []
    for m in methods:
        table.append({
            "method": m, "row": paper[m]["row"],
            "clean": _interval(runs[m]["clean"]),
            "corrupted": _interval(runs[m]["per_corruption"].mean(1)),
            "mean_flip": _interval(runs[m]["per_perturbation"].mean(1)),
            "paper_clean": paper[m]["clean"], "paper_corrupted": paper[m]["corrupted"], "paper_mfr": paper[m]["mfr"],
        })
    ranks = {
        "c": {"spearman": order(spearman, paper_c, "c"), "kendall": order(kendall_tau_b, paper_c, "c")},
        # flips: lower is better on both sides, so agreement is a positive correlation here too
        "p": {"spearman": order(spearman, paper_p, "p"), "kendall": order(kendall_tau_b, paper_p, "p")},
    }
    paper_base = paper["baseline"]
    paper_drop = np.array([paper_base["clean"] - paper_base["per_corruption"][c] for c in CORRUPTIONS])
    gains = []
    for m in methods:
        if m == "baseline":
            continue
        paper_gain = np.array([paper[m]["per_corruption"][c] - paper_base["per_corruption"][c] for c in CORRUPTIONS])
        paper_share = paper_gain / paper_drop
        sample = {k: runs[k]["per_corruption"] for k in ("baseline", m)}
        clean_sample = {k: np.concatenate([runs[k]["per_corruption"], runs[k]["clean"][:, None]], axis=1)
                        for k in ("baseline", m)}

        def resampled(s: dict, m: str = m) -> dict:
            return {"baseline": {"per_corruption": s["baseline"][:, :-1], "clean": s["baseline"][:, -1]},
                    m: {"per_corruption": s[m][:, :-1], "clean": s[m][:, -1]}}

        gains.append({
            "method": m,
            "rank_correlation": {"value": _nan_spearman(_gain(runs, m), paper_gain),
                                 "interval": bootstrap_interval(
                                     sample, lambda s, pg=paper_gain, m=m: _nan_spearman(
                                         (s[m] - s["baseline"]).mean(0), pg), draws=draws, generator=generator)},
            "slope": {"value": slope_through_origin(_gain(runs, m), paper_gain),
                      "interval": bootstrap_interval(
                          sample, lambda s, pg=paper_gain, m=m: slope_through_origin(
                              (s[m] - s["baseline"]).mean(0), pg), draws=draws, generator=generator)},
            "share_of_drop": {"value": _nan_spearman(_share(runs, m), paper_share),
                              "interval": bootstrap_interval(
                                  clean_sample, lambda s, ps=paper_share, m=m: _nan_spearman(
                                      _share(resampled(s, m), m), ps), draws=draws, generator=generator)},
            "ours": [float(v) for v in _gain(runs, m)], "paper": [float(v) for v in paper_gain],
        })
    # issue 51: enough sequences that each method's mean flip probability has a 95 % interval (its full
    # width over seeds) of at most a quarter of the Baseline's mean flip probability
    base_flip = next(r["mean_flip"]["mean"] for r in table if r["method"] == "baseline")
    precision = {r["method"]: (None if r["mean_flip"]["half_width"] is None or base_flip <= 0
                               else 2 * r["mean_flip"]["half_width"] / base_flip) for r in table}
    summary = {"methods": methods, "seeds": len(runs["baseline"]["clean"]), "table": table, "order": ranks,
               "flip_precision": {"width_over_baseline": precision, "aim": 0.25,
                                  "met": all(v is not None and v <= 0.25 for v in precision.values())},
               "gains": gains, "bootstrap": {"draws": draws, "seed": seed}}
    summary["finding"] = finding(summary)
    return summary


def _stat_of(runs: dict, method: str, key: str) -> float:
    return _mean_corrupted(runs, method) if key == "c" else _mean_flip(runs, method)


# ----------------------------------------------------------------------------- words

def _agreement(entry: dict, benchmark: str) -> str:
    value, found = entry["value"], entry["interval"]
    low = found[0] if found else -1.0
    if low >= 0.8:
        return f"orders the eight methods as {benchmark} does"
    if low > 0:
        return f"orders the eight methods partly as {benchmark} does"
    if value > 0:
        return f"does not order the eight methods reliably as {benchmark} does"
    return f"does not order the eight methods as {benchmark} does"


def finding(summary: dict) -> str:
    """The analogue's test in one plain sentence, from the numbers alone: the order of the methods on
    -C and on -P (by the lower end of Spearman's interval: at least 0.8 "as", above 0 "partly as",
    else "not reliably" or "not"), and the size of the gains (the median slope over the methods)."""
    slopes = [g["slope"]["value"] for g in summary["gains"]]
    size = float(np.median(slopes))
    c = _agreement(summary["order"]["c"]["spearman"], "CIFAR-10-C")
    p = _agreement(summary["order"]["p"]["spearman"], "CIFAR-10-P").replace("the eight methods ", "them ")
    if size < 0.9:
        sized = f"gains about {size:.1f} times the paper's (median slope over the seven methods)"
    elif size > 1.1:
        sized = f"gains about {size:.1f} times the paper's (median slope over the seven methods)"
    else:
        sized = "gains about the paper's size"
    return f"The analogue {c}, with {sized}, and {p} in how often they flip."


def _signed(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:+.{digits}f}"


def _cell(entry: dict, digits: int = 2) -> str:
    found = entry["interval"]
    if found is None:
        return f"{_signed(entry['value'], digits)} (no interval)"
    return f"{_signed(entry['value'], digits)} [{_signed(found[0], digits)}, {_signed(found[1], digits)}]"


def _pm(entry: dict) -> str:
    hw = entry["half_width"]
    return f"{entry['mean']:.1f}" + ("" if hw is None else f" ± {hw:.1f}")


def rows_of(summary: dict) -> dict[str, str]:
    """The paper's row name of each method in the summary."""
    return {r["method"]: r["row"] for r in summary["table"]}


def render_markdown(summary: dict, *, plan_line: str = "") -> str:
    """The analogue's test as Markdown: the finding, the eight-method table, the order agreement and the
    per-method gain profiles."""
    lines = [f"**{summary['finding']}**", ""]
    if plan_line:
        lines += [plan_line, ""]
    lines += ["The difficulty-matched Digits-C and Digits-P were fitted to the Baseline only (fitted); every "
              "other row is not fitted: this is a test of the analogue, not a target.", "",
              f"Ours: mean ± 95 % t-interval over {summary['seeds']} seeds (%); the paper's: CIFAR-10 ResNet-18 "
              "(tab:results_cifar10, tab:results_cifar_p).", "",
              "| method | fitted? | clean | Digits-C | the paper's CIFAR-10-C | mean flip probability, Digits-P "
              "| the paper's CIFAR-10-P mFR |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for row in summary["table"]:
        lines.append(f"| {row['row']} | {'fitted' if row['method'] == 'baseline' else 'not fitted'} | "
                     f"{_pm(row['clean'])} | {_pm(row['corrupted'])} | {row['paper_corrupted']:.1f} | "
                     f"{_pm(row['mean_flip'])} | {row['paper_mfr']:.1f} |")
    precision = summary["flip_precision"]
    widest = max(precision["width_over_baseline"].items(), key=lambda kv: -1 if kv[1] is None else kv[1])
    lines += ["", f"The mean flip probability's 95 % interval (its full width) is at most "
              f"{widest[1]:.2f} of the Baseline's mean flip probability ({rows_of(summary)[widest[0]]}; aim "
              f"≤ {precision['aim']}: {'met' if precision['met'] else 'not met'})."
              if widest[1] is not None else "", ""]
    order = summary["order"]
    lines += ["", "Agreement of the eight methods' order with the paper's (seed-bootstrap 95 % intervals, "
              f"{summary['bootstrap']['draws']} draws):", "",
              "| benchmark | Spearman | Kendall |", "|---|---|---|",
              f"| Digits-C mean accuracy vs CIFAR-10-C | {_cell(order['c']['spearman'])} | "
              f"{_cell(order['c']['kendall'])} |",
              f"| Digits-P mean flip probability vs CIFAR-10-P mFR | {_cell(order['p']['spearman'])} | "
              f"{_cell(order['p']['kendall'])} |",
              "", "Each method's per-corruption gain over the Baseline against the paper's (15 corruptions): "
              "the rank correlation, the slope of ours on the paper's through the origin (1: the paper's size), "
              "and the rank correlation of the share of the Baseline's drop each gain recovers:", "",
              "| method | rank correlation | slope | share-of-drop correlation |", "|---|---|---|---|"]
    rows = {r["method"]: r["row"] for r in summary["table"]}
    for g in summary["gains"]:
        lines.append(f"| {rows[g['method']]} | {_cell(g['rank_correlation'])} | {_cell(g['slope'])} | "
                     f"{_cell(g['share_of_drop'])} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- the figure, the files, the command

def figure(summary: dict):
    """Ours against the paper's, one point per method: Digits-C mean accuracy against CIFAR-10-C
    (left) and Digits-P mean flip probability against CIFAR-10-P mFR (right), 95 % t-intervals over
    seeds; the Baseline, the one row the analogue was fitted to, drawn hollow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from noisymix_figures.methods import method_color, method_label

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.9))
    panels = (("corrupted", "paper_corrupted", "CIFAR-10-C accuracy, the paper's (%)", "Digits-C accuracy, ours (%)",
               summary["order"]["c"]["spearman"]),
              ("mean_flip", "paper_mfr", "CIFAR-10-P mFR, the paper's (%)", "Digits-P mean flip probability, ours (%)",
               summary["order"]["p"]["spearman"]))
    for ax, (ours, paper, xlabel, ylabel, rho) in zip(axes, panels, strict=True):
        for row in summary["table"]:
            fitted = row["method"] == "baseline"
            colour = method_color(row["row"], "tab:blue")
            hw = row[ours]["half_width"] or 0.0
            # one colour and one name per method, named once in the legend: text labels beside the points
            # collided where two methods lie close (AugMix and NoisyMix on Digits-P)
            ax.errorbar(row[paper], row[ours]["mean"], yerr=hw, fmt="o", color=colour, ms=7,
                        mfc="white" if fitted else colour, capsize=3,
                        label=method_label(row["row"]) + (" (fitted)" if fitted else ""))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(f"Spearman {_cell(rho)}", fontsize=9)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False, fontsize=8)
    fig.suptitle("The analogue on the paper's eight methods (one point per method; hollow: the fitted Baseline)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def _plan_of(results: Path) -> tuple[dict, str, float | None]:
    from noisymix_infra.io import read_json

    log_path = Path(results) / "reproduce.json"
    if not log_path.is_file():
        raise ValueError(f"{results} holds no reproduce.json: give the --out of `noisymix reproduce --plan "
                         "analogue-methods`")
    log = read_json(log_path)
    plan = log.get("plan") if isinstance(log, dict) else None
    if not isinstance(plan, dict) or "baseline" not in plan.get("methods", ()):
        raise ValueError(f"{log_path}: no plan with the Baseline among its methods")
    return plan, str(log.get("plan_name", "custom")), log.get("invocation_seconds")


def write_report(results: Path, *, draws: int = BOOTSTRAP) -> dict:
    """Compute the analogue's test from a finished ``analogue-methods`` job and write
    ``results/analogue/analogue.{json,md}`` and ``analogue_methods.png``; returns the record."""
    from noisymix_infra.io import write_json, write_text

    plan, name, seconds = _plan_of(results)
    methods = [m for m in plan["methods"] if m in plan.get("perturbed_methods", ())]
    runs = load_runs(results, methods, plan["seeds"], corrupted_suite=plan["corrupted_suite"],
                     perturbed_suite=plan["perturbed_suite"] or "digits-p")
    summary = analogue_summary(runs, draws=draws)
    minutes = None if seconds is None else round(seconds / 60, 1)
    summary["plan"] = {"name": name, "epochs": plan["epochs"], "width": plan["width"], "seeds": plan["seeds"],
                       "corruption_params": plan["corruption_params"],
                       "perturbation_params": plan.get("perturbation_params", "cifar"),
                       "perturbed_limit": plan["perturbed_limit"], "wall_minutes": minutes}
    plan_line = (f"`noisymix reproduce --plan {name}`: {len(methods)} methods × {len(plan['seeds'])} seeds, "
                 f"{plan['model']} width {plan['width']}, {plan['epochs']} epochs, the laptop recipe; Digits-C and "
                 f"Digits-P ({plan['perturbed_limit']} sequences) at their difficulty-matched strengths"
                 + ("" if minutes is None else f"; {minutes} min wall") + ".")
    out = Path(results) / "analogue"
    out.mkdir(parents=True, exist_ok=True)
    text = render_markdown(summary, plan_line=plan_line)
    text += "\n![ours against the paper's](figures/analogue_methods.png)\n"
    from noisymix_app.analogue.severities import SEVERITIES_FILE, markdown

    if SEVERITIES_FILE.is_file():  # issue 51, goal 3: what one strength per corruption does to each severity
        from noisymix_infra.io import read_json

        text += "\n**The matched Digits-C per severity** (`noisymix fit-analogue --kind severities`).\n\n"
        text += markdown(read_json(SEVERITIES_FILE))
    fig = figure(summary)
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    from noisymix_infra.io import write_bytes

    write_bytes(out / "analogue_methods.png", buffer.getvalue())
    write_text(out / "analogue.md", text)
    write_json(out / "analogue.json", summary)
    return summary


README_BEGIN = "<!-- analogue-methods:begin -->"
README_END = "<!-- analogue-methods:end -->"


def readme_block(summary: dict) -> str:
    """The README's few generated lines: the finding, the order agreements, the wall time, the figure."""
    order = summary["order"]
    minutes = summary.get("plan", {}).get("wall_minutes")
    return (f"**{summary['finding']}** Spearman's rho of the eight methods' order, ours against the paper's: "
            f"{_cell(order['c']['spearman'])} on Digits-C against CIFAR-10-C, {_cell(order['p']['spearman'])} "
            f"on Digits-P against CIFAR-10-P (seed-bootstrap 95 % intervals; the Baseline fitted, the other seven "
            f"not). `noisymix reproduce --plan analogue-methods --out DIR` ran it"
            + ("" if minutes is None else f" in {minutes} min wall on 2 CPU cores")
            + "; every table in [docs/analogue-methods-summary.md](docs/analogue-methods-summary.md).\n\n"
            "![the analogue on the eight methods](docs/figures/analogue_methods.png)\n")


def update_docs(results: Path, root: Path | None = None) -> None:
    """Copy a finished report to ``docs/analogue-methods-summary.{md,json}`` and
    ``docs/figures/analogue_methods.png`` and its lines into the README between the markers; every
    input is checked before anything is written."""
    import re

    from noisymix_infra.io import read_json, write_bytes, write_json, write_text

    root = Path(root) if root else Path(__file__).resolve().parents[2]
    source = Path(results) / "analogue"
    files = [source / n for n in ("analogue.json", "analogue.md", "analogue_methods.png")]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ValueError(f"no analogue report to copy: {missing[0]} is missing (run `noisymix analogue --results DIR`)")
    readme = (root / "README.md").read_text()
    pattern = re.compile(re.escape(README_BEGIN) + r".*?" + re.escape(README_END), flags=re.S)
    if not pattern.search(readme):
        raise ValueError(f"README.md has no {README_BEGIN} ... {README_END} markers")
    summary = read_json(files[0])
    robust_c = Path(results) / "figures" / "robust_c.png"  # the figures step's: the eight methods beside the paper's
    text = files[1].read_text()
    if robust_c.is_file():
        write_bytes(root / "docs" / "figures" / "analogue_robust_c.png", robust_c.read_bytes())
        text += "\n![the eight methods' robust accuracy beside the paper's](figures/analogue_robust_c.png)\n"
    write_json(root / "docs" / "analogue-methods-summary.json", summary)
    write_text(root / "docs" / "analogue-methods-summary.md", text)
    write_bytes(root / "docs" / "figures" / "analogue_methods.png", files[2].read_bytes())
    block = readme_block(summary)
    write_text(root / "README.md", pattern.sub(lambda _: f"{README_BEGIN}\n{block}{README_END}", readme))


def add_arguments(parser) -> None:
    parser.add_argument("--results", required=True,
                        help="the --out of `noisymix reproduce --plan analogue-methods` (its runs are read)")
    parser.add_argument("--update-readme", action="store_true",
                        help="also copy the report to docs/analogue-methods-summary.* and its lines into the README")
    parser.add_argument("--draws", type=int, default=BOOTSTRAP, help="seed-bootstrap draws (default %(default)s)")


def run(args) -> int:
    if args.draws < 100:
        raise ValueError(f"--draws must be at least 100 for a 95 % percentile interval, got {args.draws}")
    summary = write_report(Path(args.results), draws=args.draws)
    if args.update_readme:
        update_docs(Path(args.results))
    print(summary["finding"])
    print(f"written to {Path(args.results) / 'analogue'}" + (" and docs/" if args.update_readme else ""))
    return 0
