"""Reliability diagrams under shift (issue 46; Ovadia et al., 2019, Fig. 2's question asked of our
runs): one column per method, clean test images against all corruptions pooled at severity 5, as
evaluated and after the temperature fitted on clean images; the diagonal is perfect calibration, the
bars below count the images per confidence bin.  The bins come from each run's -C record
(``summary.calibration_under_shift.reliability``, ``fullscale.evaluation.shift_calibration``),
pooled over seeds."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import NullFormatter

from fullscale.metrics import pool_reliability
from noisymix_figures.methods import method_label, method_order
from noisymix_figures.plots import save_figure

__all__ = ["MIN_COUNT", "SETS", "STAGES", "calibration_shift", "pooled_diagrams", "reliability_figure"]

#: a bin with fewer images than this is drawn hollow and faded: its accuracy is a handful of images
#: (issue 52: bins of 1-2 images were drawn at full height)
MIN_COUNT = 30

#: the two sets of each panel: (key in the record, legend label, colour)
SETS = (("clean", "clean test images", "tab:blue"), ("severity_5", "corrupted, severity 5 (all corruptions)",
                                                     "tab:red"))
#: the two rows of panels: (key in the record, row title)
STAGES = (("as_evaluated", "as evaluated"), ("temperature_scaled", "after the clean-fitted temperature"))


def pooled_diagrams(runs: list) -> dict | None:
    """The reliability bins of one method's runs (``noisymix_figures.results.Run``s evaluated on a -C
    suite), pooled over seeds (counts added, means weighted by them); None when no run has them."""
    records = []
    for run in runs:
        for suite, record in run.evals.items():
            shift = (record.get("summary") or {}).get("calibration_under_shift") or {}
            if suite.endswith("-c") and "reliability" in shift:
                records.append(shift["reliability"])
    if not records:
        return None
    out = {"edges": records[0]["edges"], "seeds": len(records)}
    for key, _, _ in SETS:
        out[key] = {stage: pool_reliability([r[key][stage] for r in records]) for stage, _ in STAGES}
    return out


def reliability_figure(diagrams: dict[str, dict], title: str = "Reliability under shift") -> Figure:
    """One column per method of ``diagrams`` (method -> ``pooled_diagrams``): accuracy per confidence
    bin for the clean images and severity 5 side by side, the diagonal, and the images per bin below,
    as evaluated (top) and after scaling (bottom).  Issue 52: a bin of fewer than ``MIN_COUNT`` images
    is drawn hollow and faded; the counts are on a log scale, so the clean set's few thousand images show
    beside the corrupted sets' tens of thousands, and each set's total is in the panel's axis label.
    Issue 57: the legend draws each set solid, as its bins are drawn, and the hollow style as an entry
    of its own."""
    if not diagrams:
        raise ValueError("no reliability diagrams to draw")
    methods = sorted(diagrams, key=method_order)
    fig, axes = plt.subplots(4, len(methods), figsize=(3.6 * len(methods) + 0.6, 9.5), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1, 3, 1]}, layout="constrained")
    for col, method in enumerate(methods):
        data = diagrams[method]
        edges = data["edges"]
        width = edges[1] - edges[0]
        for row, (stage, stage_title) in enumerate(STAGES):
            top, bottom = axes[2 * row, col], axes[2 * row + 1, col]
            top.plot([0, 1], [0, 1], color="black", lw=0.8, ls="--")
            for k, (key, _, color) in enumerate(SETS):
                bins = data[key][stage]
                left = [e + k * width / 2 for e in edges[:-1]]
                accuracy = [0.0 if a is None else a for a in bins["accuracy"]]
                bars = top.bar(left, accuracy, width=width / 2, align="edge", color=color, alpha=0.75)
                for bar, count in zip(bars, bins["count"], strict=True):
                    if count < MIN_COUNT:  # hollow and faded: too few images to read an accuracy from
                        bar.set(facecolor="none", edgecolor=color, alpha=0.35, linestyle="--")
                bottom.bar(left, bins["count"], width=width / 2, align="edge", color=color, alpha=0.75)
            top.set(xlim=(0, 1), ylim=(0, 1), xlabel="confidence (max softmax probability)",
                    ylabel="accuracy in the bin")
            top.set_title(f"{method_label(method)}: {stage_title}\n({data.get('seeds', 1)} seed(s) pooled)",
                          fontsize=9)
            # each set's total in the axis label, not in a legend over the bars (the counts reach its top)
            totals = "; ".join(f"{label.split()[0].strip(',')} {sum(data[key][stage]['count']):,}"
                               for key, label, _ in SETS)
            bottom.set(xlim=(0, 1), xlabel=f"confidence\nimages: {totals}", ylabel="images (log)", yscale="log")
            bottom.yaxis.set_minor_formatter(NullFormatter())  # "2 x 10^1" labels collide on a short range
            bottom.axhline(MIN_COUNT, color="gray", lw=0.6, ls=":")
    # the legend draws each set as its bins are drawn (solid; issue 57: a series whose first bin was sparse
    # showed in the hollow style), the sparse bins' style an entry of its own
    handles = [Line2D([0, 1], [0, 1], color="black", lw=0.8, ls="--", label="perfect calibration"),
               *(Patch(facecolor=color, alpha=0.75, label=label) for _, label, color in SETS),
               Patch(facecolor="none", edgecolor="gray", linestyle="--",
                     label=f"hollow: a bin of fewer than {MIN_COUNT} images (dotted line below)")]
    fig.legend(handles=handles, loc="outside lower center", ncol=4, frameon=False)
    fig.suptitle(title)
    return fig


def calibration_shift(groups: dict, out: Path) -> Path | None:
    """``reliability_figure`` of every (data set, model) of ``groups`` (``Results.groups()``) whose
    runs have the bins, written to ``out`` (the first setting; any other to ``out`` suffixed with its
    data set and model).  None when no run has them (records made before issue 46)."""
    settings: dict[tuple[str, str], dict[str, dict]] = {}
    for (dataset, model, method), runs in groups.items():
        pooled = pooled_diagrams(runs)
        if pooled is not None:
            settings.setdefault((dataset, model), {})[method] = pooled
    written = None
    for i, ((dataset, model), diagrams) in enumerate(sorted(settings.items())):
        path = out if i == 0 else out.with_name(f"{out.stem}_{dataset}_{model}{out.suffix}")
        fig = reliability_figure(diagrams, f"Reliability under shift: {dataset}-C, {model} (clean vs severity 5; "
                                           "temperature fitted on clean images)")
        save_figure(fig, path)
        written = written or path
    return written
