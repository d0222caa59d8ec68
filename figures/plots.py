"""The paper's figures, in our data, with the paper's values drawn beside ours (matplotlib, Agg)."""

from __future__ import annotations

import csv
import io
import re
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from fullscale.evaluation.resolution import summary_step
from fullscale.vocabulary import CATEGORIES, CORRUPTIONS, METHOD_ROWS
from noisymix_figures.methods import method_color, method_label, method_order
from noisymix_figures.paper import paper_number, paper_values
from noisymix_figures.registry import NEEDS_IMAGENET, has_suite, needs_cifar, register
from noisymix_infra.io import write_bytes
from noisymix_infra.stats import Seeds, interval, paired

__all__ = ["CATEGORY_FIGURES", "category_bars", "category_figure", "imagenet_points",
           "robust_c_bars", "robust_c_vs_r", "save_figure", "write_points"]


def save_figure(fig, path: Path) -> Path:
    """``fig`` as a PNG at ``path`` (atomic), closed."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    write_bytes(path, buffer.getvalue())
    return path


def _paper_rows(label: str) -> dict:
    return dict(paper_values()[label]["rows"])


def _paper_beside_ours(ax, paper: list, ours: list, errors, colors: list[str]) -> np.ndarray:
    """Two bars per method in its colour: the paper's (left, hatched, pale) and ours (right, solid,
    ``errors`` its error bars); a value that is None draws no bar.  Returns the methods' x positions."""
    x = np.arange(len(colors))
    nan = [np.nan if v is None else v for v in paper], [np.nan if v is None else v for v in ours]
    ax.bar(x - 0.2, nan[0], 0.4, color=colors, alpha=0.45, hatch="//", edgecolor="white")
    ax.bar(x + 0.2, nan[1], 0.4, color=colors, yerr=errors, capsize=3)
    return x


def _paper_ours_handles(paper: str, ours: str) -> list:
    """The legend entries of ``_paper_beside_ours``, in no method's colour (issue 48)."""
    from matplotlib.patches import Patch

    return [Patch(facecolor="lightgray", hatch="//", edgecolor="white", label=f"left, hatched: {paper}"),
            Patch(facecolor="dimgray", label=f"right, solid: {ours}")]


def _fill(text: str, width: int) -> str:
    """``text`` wrapped to ``width``, line by line, breaking only at spaces outside `code spans`: a span
    is one word, and no word is broken at a hyphen (issue 57: the examples' caption broke
    `--params digits-matched` after "digits-")."""
    spans = re.sub(r"`[^`]*`", lambda m: m.group().replace(" ", "\u00a0"), text)  # no-break spaces inside
    return "\n".join(textwrap.fill(line, width, break_on_hyphens=False, break_long_words=False)
                      for line in spans.split("\n")).replace("\u00a0", " ")


def _legend_outside(ax, **kwargs) -> None:
    """The legend below the axes, where it covers no bar."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False, **kwargs)


#: the gid of the marks drawn where a bar chart's y-axis is cut (``_shared_range``)
AXIS_BREAK = "axis-break"


def _shared_range(axes, values: list[float], *, floor: float = 0.0, ceiling: float = 100.0) -> None:
    """One y range for every bar panel of a figure, over all their data (a 0-100 axis hid an 84-91
    spread, issue 40; panels cut at different heights could not be compared, issue 48): where it does
    not start at 0, the cut is marked on each axis (a zigzag across its foot) and named in its label."""
    finite = [v for v in values if v is not None and np.isfinite(v)]
    if not finite:
        return
    lo, hi = min(finite), max(finite)
    pad = max(1.0, 0.15 * (hi - lo))
    lo, hi = max(floor, np.floor(lo - pad)), min(ceiling, np.ceil(hi + pad))
    for ax in axes:
        ax.set_ylim(lo, hi)
        if lo <= floor:
            continue
        # the break: a white gap with two slanted strokes across the foot of the y-axis
        for dy in (0.0, 0.025):
            ax.plot([-0.025, 0.025], [0.015 + dy, 0.045 + dy], transform=ax.transAxes, color="black", lw=1.2,
                    clip_on=False, zorder=6, gid=AXIS_BREAK)
        ax.set_ylabel(f"{ax.get_ylabel()}\n(axis cut: starts at {lo:g}, not 0)")


def robust_c_bars(groups: dict, out: Path) -> Path:
    """fig:robust10vs100 (``robust_c_figure``) written to ``out``."""
    return save_figure(robust_c_figure(groups), out)


#: the column of tab:results_cifar10 (PreActResNet-18) each data set of ours is drawn beside: CIFAR-10-C
#: for CIFAR-10 and for the digits (Digits-C stands for CIFAR-10-C), CIFAR-100-C for CIFAR-100
ROBUST_C_COLUMNS = {"cifar10": 1, "cifar100": 3, "digits": 1}


def _c_seeds(runs: list, dataset: str) -> Seeds:
    """Each run's mean -C accuracy (%) by its seed, on the grid of its evaluation (one image; issue 54)."""
    values = Seeds()
    for run in runs:
        record = run.evals.get(f"{dataset}-c", {})
        mean = record.get("summary", {}).get("mean_accuracy")
        if mean is not None:
            values[run.config.get("seed")] = 100 * mean
            step = summary_step(record, ("mean_accuracy",))
            values.step = values.step if step is None else max(values.step or 0.0, 100 * step)
    return values


def robust_c_figure(groups: dict):
    """fig:robust10vs100, one row per data set of ours (``ROBUST_C_COLUMNS``).  Left: the mean -C
    accuracy of every method, in the paper's table order (tab:results_cifar10, then the methods it
    lacks), the paper's bar (hatched) beside ours (mean over seeds, 95 % t-interval, dots: seeds), each
    in its method's colour, the axis from 0 (issue 57: cut at 41 it exaggerated the gaps); a method
    without runs or paper value is marked.  Right: NoisyMix minus each method, paired over the seeds
    both ran (``noisymix_infra.stats.paired``: mean, 95 % t-interval), beside the paper's difference
    in the same column."""
    from matplotlib.lines import Line2D

    paper = _paper_rows("tab:results_cifar10")
    columns = paper_values()["tab:results_cifar10"]["columns"]
    # (data set, model, the paper's column): each setting of ours with a -C mean of a data set the paper's
    # table has a column for; without any, the paper's two columns
    settings = [(d, m, ROBUST_C_COLUMNS[d]) for d, m in sorted({(d, m) for (d, m, _), runs in groups.items()
                                                               if d in ROBUST_C_COLUMNS and _c_seeds(runs, d)})]
    settings = settings or [(None, None, 1), (None, None, 3)]
    fig, axes = plt.subplots(len(settings), 2, figsize=(14, 4.6 * len(settings) + 0.8), squeeze=False,
                             width_ratios=[3, 2], layout="constrained")
    seeds, coarse = set(), False
    for (bars, diffs), (dataset, model, column) in zip(axes, settings, strict=True):
        # (label, method id, paper value): the paper's rows with a value, then our other methods
        rows = [(method_label(n), METHOD_ROWS[n], paper_number(c[column])) for n, c in paper.items()
                if paper_number(c[column]) is not None]
        rows += [(method_label(m), m, None) for d, mo, m in sorted(groups, key=lambda k: method_order(k[2]))
                 if (d, mo) == (dataset, model) and m not in {r[1] for r in rows}
                 and _c_seeds(groups[d, mo, m], d)]
        ours = {m: _c_seeds(groups.get((dataset, model, m), []), dataset) for _, m, _ in rows if dataset and m}
        stats = [interval(list(ours[m].values())) if ours.get(m) else None for _, m, _ in rows]
        x = _paper_beside_ours(bars, [p for *_, p in rows], [s["mean"] if s else None for s in stats],
                               [s["half_width"] or 0.0 if s else 0.0 for s in stats],
                               [method_color(label, "tab:blue") for label, *_ in rows])
        for xi, (*_, p), s in zip(x, rows, stats, strict=True):
            if s:
                bars.scatter([xi + 0.2] * s["n"], s["values"], s=8, color="black", zorder=3)
            for shift, missing in ((-0.2, p is None and "not in the paper"),
                                   (0.2, s is None and dataset and "not run in this job")):
                if missing:
                    bars.text(xi + shift, 1, missing, rotation=90, ha="center", va="bottom", fontsize=7,
                              color="dimgray")
        bars.set_xticks(x, [label for label, *_ in rows], rotation=40, ha="right", fontsize=9)
        bars.set(ylim=(0, 100), ylabel="robust accuracy (%)")
        name = columns[column].split(" (")[0]
        what = "no runs of a matching data set in these results"
        if dataset:
            width = {r.config.get("model_kwargs", {}).get("width") for (d, mo, _), runs in groups.items()
                     if (d, mo) == (dataset, model) for r in runs} - {None}
            what = f"ours: {dataset}-C, {model}" + (f" width {', '.join(map(str, sorted(width)))}" if width else "")
        bars.set_title(f"paper: {name}, PreActResNet-18 (tab:results_cifar10)\n{what}", fontsize=10)
        # the paired differences, NoisyMix minus each other method: the paper's (D, left) beside ours (o, right)
        others = [(label, m, p) for label, m, p in rows if m != "noisymix"]
        mine = next((p for _, m, p in rows if m == "noisymix"), None)
        for xi, (label, m, p) in enumerate(others):
            color = method_color(label, "tab:blue")
            if mine is not None and p is not None:
                diffs.scatter(xi - 0.15, mine - p, marker="D", s=36, facecolors="none", edgecolors=color, zorder=3)
            d = paired(ours["noisymix"], ours[m]) if ours.get("noisymix") and ours.get(m) else None
            if d is None and dataset:
                diffs.text(xi + 0.15, 0, " not run in this job", rotation=90, ha="center", va="bottom",
                           fontsize=7, color="dimgray")
            if d is None:
                continue
            seeds.add(d["n"])
            coarse = coarse or d["below_resolution"]
            diffs.errorbar(xi + 0.15, d["mean"], yerr=d["half_width"], fmt="o", color=color, capsize=3,
                           mfc="none" if d["below_resolution"] else color)
        diffs.axhline(0, color="black", lw=0.8)
        low, high = diffs.get_ylim()  # 0 inside the axes, where "not run in this job" stands
        diffs.set_ylim(min(low, -0.05 * (high - low)), max(high, 0.05 * (high - low)))
        diffs.set_xticks(range(len(others)), [label for label, *_ in others], rotation=40, ha="right", fontsize=9)
        diffs.set_xlim(-0.6, len(others) - 0.4)
        diffs.set_ylabel("NoisyMix - method (points)")
        diffs.set_title(f"NoisyMix minus each method, paired over seeds\n(the paper's: its {name} column)",
                        fontsize=10)
    handles = [*_paper_ours_handles("paper (tab:results_cifar10)", "ours (mean, 95 % t-interval; dots: seeds)"),
               Line2D([], [], ls="none", marker="D", mfc="none", color="dimgray", label="paper: NoisyMix - method")]
    if seeds:
        handles.append(Line2D([], [], marker="o", color="dimgray", label="ours: NoisyMix - method, paired over "
                              f"{'/'.join(map(str, sorted(seeds)))} seeds (mean, 95 % t-interval)"))
    if coarse:
        handles.append(Line2D([], [], ls="none", marker="o", mfc="none", color="dimgray",
                              label="hollow: spread below one image's worth (the interval uses that)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False, fontsize=8)
    fig.suptitle("Robust accuracy on corrupted test sets: the paper's beside ours (colour: method; axis from 0), "
                 "and NoisyMix's paired differences", fontsize=11)
    return fig


def category_bars(groups: dict, out: Path) -> Path:
    """``category_bars_figure`` written to ``out`` (categories.png)."""
    return save_figure(category_bars_figure(groups), out)


def category_bars_figure(groups: dict):
    """Accuracy per corruption category: the paper's ImageNet-C (its fig:imagenet_type) and CIFAR-10-C
    with the ResNet-18 of its main table (tab:results_cifar10_c, the setting our claims are held against;
    issue 52: it drew the WRN rows) for Baseline, NFM, AugMix and NoisyMix, the methods of our main job,
    beside every -C set of ours, on one y range."""
    panels = {"paper ImageNet-C (ResNet-50)": ("tab:results_imagenet_c", None),
              "paper CIFAR-10-C (ResNet-18, tab:results_cifar10_c)": ("tab:results_cifar10_c", None)}
    ours = {}
    for (dataset, model, method), runs in groups.items():
        suite = f"{dataset}-c"
        accs = _our_categories(runs, suite)
        if accs:  # each category's seeds: the bar is their mean, the error bar their 95 % t-interval
            ours.setdefault(f"ours {dataset}-C ({model})", {})[method] = accs
    fig, axes = plt.subplots(1, len(panels) + len(ours), figsize=(6 * (len(panels) + len(ours)), 3.8), squeeze=False,
                             layout="constrained")
    heights = []
    for ax, (title, (label, _)) in zip(axes[0], panels.items(), strict=False):
        rows = _paper_rows(label)
        shown = [m for m in rows if m in CATEGORY_ROWS]
        data = {m: _paper_categories(rows[m]) for m in shown}
        heights += _category_panel(ax, title, data)
    for ax, (title, data) in zip(axes[0][len(panels):], ours.items(), strict=False):
        heights += _category_panel(ax, title, dict(sorted(data.items(), key=lambda kv: method_order(kv[0]))),
                                   seeds=True)
    _shared_range(axes[0], heights)
    fig.suptitle("Accuracy per corruption category, the paper's (the main job's four methods, where its table has "
                 "them) and every -C set of ours (one y range)", fontsize=10)
    return fig


CORRUPTIONS_INDEX = {c: i for i, c in enumerate(CORRUPTIONS)}


def _paper_categories(cells: list) -> dict[str, float]:
    """A paper row of the 15 corruptions' accuracies as its mean per category (the paper's figures' groups)."""
    return {cat: float(np.mean([paper_number(cells[CORRUPTIONS_INDEX[c]]) for c in members]))
            for cat, members in CATEGORIES.items()}


def _our_categories(runs: list, suite: str) -> dict[str, list[float]]:
    """Our runs' accuracy (%) per category of ``suite``, one value per seed; the categories none has left out."""
    accs = {cat: [100 * r.evals[suite]["summary"]["per_category"][cat] for r in runs
                  if cat in r.evals.get(suite, {}).get("summary", {}).get("per_category", {})] for cat in CATEGORIES}
    return {c: v for c, v in accs.items() if v}
#: the paper's rows the category figure draws: the methods of the main job (NFM among them; issue 52)
CATEGORY_ROWS = ("Baseline", "NFM", "AugMix", "NoisyMix (ours)")


def _category_panel(ax, title: str, data: dict, seeds: bool = False) -> list[float]:
    """One panel of bars per method and category; with ``seeds`` each value is a list of our seeds'
    accuracies, drawn as their mean with the tables' spread, the 95 % t-interval of the mean (none
    for one seed), so that a gap between methods can be read against the seed noise.  Returns the heights
    drawn, for the figure's one y range (``_shared_range``)."""
    cats = list(CATEGORIES)
    width = 0.8 / max(len(data), 1)
    for i, (method, values) in enumerate(data.items()):
        name = method_label(method)
        errors = None
        if seeds:
            stats = {c: interval(values[c]) for c in cats if values.get(c)}
            heights = [stats[c]["mean"] if c in stats else np.nan for c in cats]
            errors = [(stats[c]["half_width"] or 0.0) if c in stats else 0.0 for c in cats]
        else:
            heights = [values.get(c, np.nan) for c in cats]
        ax.bar(np.arange(len(cats)) + i * width, heights, width, label=name, color=method_color(name),
               yerr=errors, capsize=2 if seeds else 0)
    ax.set_xticks(np.arange(len(cats)) + 0.4 - width / 2, cats)
    heights = [float(np.mean(v)) if seeds else v for values in data.values()
               for v in (values.values() if isinstance(values, dict) else [])]
    ax.set_title(_fill(title, 60), fontsize=9, pad=8)
    ax.set_ylabel("accuracy (%), mean over seeds ± 95 % t-interval" if seeds else "accuracy (%)", fontsize=8)
    # at the right, one column: below the axes two columns of eleven names were clipped (issue 40)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=7)
    return heights


def write_points(out: Path, points: list[dict]) -> Path:
    """The numbers a figure draws, beside its PNG (``<name>.csv``): one line per point or bar,
    so that what a figure shows can be read (and tested) without the picture."""
    fields = list(dict.fromkeys(k for p in points for k in p))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(points)
    path = out.with_suffix(".csv")
    write_bytes(path, buffer.getvalue().encode())
    return path


def imagenet_points(groups: dict) -> list[dict]:
    """Our ImageNet runs as (ImageNet-C, ImageNet-R) accuracy points: per (model, method), the
    mean over the seeds evaluated on both suites."""
    points = []
    for (dataset, model, method), runs in groups.items():
        pairs = [(100 * r.evals["imagenet-c"]["summary"]["mean_accuracy"],
                  100 * r.evals["imagenet-r"]["summary"]["accuracy"]) for r in runs
                 if dataset == "imagenet" and {"imagenet-c", "imagenet-r"} <= set(r.evals)
                 and "mean_accuracy" in r.evals["imagenet-c"].get("summary", {})
                 and "accuracy" in r.evals["imagenet-r"].get("summary", {})]
        if pairs:
            c, r = np.mean(pairs, axis=0)
            points.append({"source": "ours", "method": method_label(method), "model": model, "seeds": len(pairs),
                           "imagenet_c": round(float(c), 3), "imagenet_r": round(float(r), 3)})
    return points


def robust_c_vs_r(groups: dict, out: Path) -> Path:
    """``robust_c_vs_r_figure`` written to ``out``, the numbers it draws beside it (CSV)."""
    fig, points = robust_c_vs_r_figure(groups)
    write_points(out, points)
    return save_figure(fig, out)


def robust_c_vs_r_figure(groups: dict):
    """(figure, points) of fig:robustCvsR: ImageNet-C vs ImageNet-R accuracy of ResNet-50s, the paper's points
    (tab:results_imagenet, filled) and our ImageNet runs' (open, mean over seeds); the numbers
    drawn are written beside the PNG (``write_points``)."""
    rows = _paper_rows("tab:results_imagenet")
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    markers = "osD^v<>PXh*"
    points = []
    for k, (name, cells) in enumerate(rows.items()):  # a legend, not labels that collide on close points
        x, y = cells[1]["value"], cells[2]
        label = method_label(name)
        ax.scatter(x, y, color=method_color(label, "tab:blue"), marker=markers[k % len(markers)],
                   label=f"{label} (paper)")
        points.append({"source": "paper", "method": label, "model": "ResNet-50", "seeds": "",
                       "imagenet_c": x, "imagenet_r": y})
    ours = imagenet_points(groups)
    for k, point in enumerate(ours):
        ax.scatter(point["imagenet_c"], point["imagenet_r"], facecolors="none", s=70, linewidths=1.6,
                   edgecolors=method_color(point["method"], "black"), marker=markers[k % len(markers)],
                   label=f"{point['method']} (ours, {point['model']}, {point['seeds']} seed(s))")
    _legend_outside(ax, fontsize=7, ncol=2)
    note = ("ours: no run evaluated on both imagenet-c and imagenet-r in these results" if not ours
            else f"ours: open markers, {len(ours)} method(s), mean over seeds")
    ax.set_title(f"ImageNet-C vs ImageNet-R; paper: filled markers\n{note}", fontsize=8)
    ax.set_xlabel("ImageNet-C accuracy (%)")
    ax.set_ylabel("ImageNet-R accuracy (%)")
    return fig, points + ours


#: the paper's per-category figures: the table they average and the (dataset, model) of our runs
CATEGORY_FIGURES: dict[str, tuple[str, str, str, str]] = {
    "fig:imagenet_type": ("tab:results_imagenet_c", "imagenet", "resnet50", "ResNet-50, ImageNet-C"),
    "fig:cifar10_wrs_type": ("tab:results_wrs_cifar10_c", "cifar10", "wrn28_4",
                             "Wide-ResNet-28 (paper: \"WRN-28x2\"; ours: wrn28_4), CIFAR-10-C"),
    "fig:cifar100_wrs_type": ("tab:results_wrs_cifar100_c", "cifar100", "wrn28_4",
                              "Wide-ResNet-28 (paper: \"WRN-28x2\"; ours: wrn28_4), CIFAR-100-C"),
}


def category_figure(groups: dict, label: str, out: Path) -> Path:
    """``category_plot`` of ``label`` written to ``out``, the numbers it draws beside it (CSV)."""
    fig, points = category_plot(groups, label)
    write_points(out, points)
    return save_figure(fig, out)


def category_plot(groups: dict, label: str):
    """(figure, points): one of the paper's per-category figures (``CATEGORY_FIGURES``): the mean accuracy over the
    corruptions of each group (noise, blur, weather, digital) per method, the paper's (every row
    of its table, averaged as the caption says) beside our runs of the matching (dataset, model),
    mean over seeds with the 95 % t-interval; without runs, the paper's panel alone, saying so.
    The paper's rows its own table contradicts are named under its panel."""
    from noisymix_figures.consistency import findings_for

    source, dataset, model, what = CATEGORY_FIGURES[label]
    rows = _paper_rows(source)
    paper = {name: _paper_categories(cells) for name, cells in rows.items()}
    suite = f"{dataset}-c"
    ours: dict[str, dict[str, list[float]]] = {}
    for (d, m, method), runs in groups.items():
        if (d, m) != (dataset, model):
            continue
        accs = _our_categories(runs, suite)
        if accs:
            ours[method] = accs
    fig, axes = plt.subplots(1, 2 if ours else 1, figsize=(13 if ours else 7, 4.4), squeeze=False,
                             layout="constrained")
    heights = _category_panel(axes[0][0], f"paper: {what} ({source})", paper)
    flagged = sorted({row for f in findings_for(source, paper_values()) for row in f.rows[source]})
    points = [{"source": "paper", "method": method_label(name), "category": cat, "accuracy": round(v, 3), "seeds": ""}
              for name, values in paper.items() for cat, v in values.items()]
    if ours:
        data = dict(sorted(ours.items(), key=lambda kv: method_order(kv[0])))
        heights += _category_panel(axes[0][1], f"ours: {model} runs, suite {suite}", data, seeds=True)
        points += [{"source": "ours", "method": method_label(m), "category": cat,
                    "accuracy": round(float(np.mean(v)), 3), "seeds": len(v)}
                   for m, values in data.items() for cat, v in values.items()]
    title = f"Accuracy per corruption category ({label})" + (
        "" if ours else f": paper values only, no runs of {dataset} / {model} with the {suite} suite in these results")
    if flagged:
        title += (f"\npaper rows with a note in {source} (the paper contradicts itself or renames them): "
                  + ", ".join(flagged))
    fig.suptitle(_fill(title, 100), fontsize=9)
    _shared_range(axes[0], heights)
    return fig, points


# ---------------------------------------------------------------------------- the registry
# Each paper figure: its generator, which of our results it draws, and what REPORT.md's
# label-by-label section says of it (``noisymix_figures.registry``); ``position``: its line there.

register("fig:robustCvsR", position=0, files=("robust_c_vs_r.png", "robust_c_vs_r.csv"),
         ours="imagenet runs evaluated on imagenet-c and imagenet-r (open markers)", needs=NEEDS_IMAGENET,
         found=lambda results, drawn: [f"{p['method']} ({p['model']})" for p in imagenet_points(results.groups())])(
    lambda results, out: robust_c_vs_r(results.groups(), out / "robust_c_vs_r.png"))
register("fig:robust10vs100", position=2, files=("robust_c.png",),
         ours="cifar10-c / cifar100-c runs of every model (digits-c runs drawn as the small-scale analogue)",
         needs=needs_cifar("results_cifar10"),
         found=lambda results, drawn: has_suite(results, ("cifar10", "cifar100"), "{}-c"))(
    lambda results, out: robust_c_bars(results.groups(), out / "robust_c.png"))
for _position, (_label, (_source, _dataset, _model, _)) in enumerate(CATEGORY_FIGURES.items(), 19):
    _name = _label.replace("fig:", "")
    register(_label, position=_position, files=(f"{_name}.png", f"{_name}.csv"),
             ours=f"{_dataset} / {_model} runs: {_dataset}-c per category (beside {_source})",
             needs=NEEDS_IMAGENET if _dataset == "imagenet" else needs_cifar("results_cifar100"),
             found=lambda results, drawn, d=_dataset, m=_model: has_suite(results, (d,), "{}-c", m))(
        lambda results, out, label=_label, name=_name: category_figure(results.groups(), label, out / f"{name}.png"))
