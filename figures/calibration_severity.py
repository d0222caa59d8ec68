"""Accuracy and calibration against corruption severity (``calibration_by_severity``, drawn for
tab:results_imagenet_r_calibration's question on our runs; split from ``noisymix_figures.plots``, issue 63,
goal 9: no file over 500 lines)."""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from fullscale.vocabulary import EXTRA_CORRUPTIONS
from noisymix_figures.methods import method_color, method_label, method_order
from noisymix_figures.plots import _legend_outside, save_figure, write_points
from noisymix_infra.stats import interval

__all__ = ["calibration_by_severity", "calibration_figure"]


#: the per-severity panels: (title, where the value is, scale); severity 0 is the clean test split
_SEVERITY_PANELS = (("accuracy (%)", "accuracy", 100), ("RMS calibration error (%)", "rms_calibration_error", 100),
                    ("mean confidence - accuracy (points; > 0 over-confident)", "confidence_gap", 100))


def _severity_values(run, suite: str, key: str) -> list[float] | None:
    """One run's value at severity 0 (the clean test split: the clean / calibration suites) to 5
    (the -C suite's per-severity means over its corruptions), or None where it lacks any."""
    record = run.evals.get(suite, {}).get("summary", {})
    per = (record.get("calibration") or {}).get("per_severity", {})
    results = run.evals.get(suite, {}).get("results", {})
    if key == "accuracy":
        clean = record.get("clean_accuracy")
        # the corruptions the calibration means average (fullscale.evaluation: the benchmark's, else all)
        names = [c for c in results if c not in EXTRA_CORRUPTIONS] or list(results)
        corrupted = [float(np.mean([results[c][str(s)]["accuracy"] for c in names if str(s) in results[c]]))
                     if names else None for s in range(1, 6)]
    else:
        clean = run.evals.get("calibration", {}).get("summary", {}).get(key)  # absent before issue 31: no point
        corrupted = [per.get(str(s), {}).get(key) for s in range(1, 6)]
    values = [clean, *corrupted]
    return None if any(v is None for v in values[1:]) else [np.nan if v is None else float(v) for v in values]


def calibration_by_severity(groups: dict, out: Path) -> Path | None:
    """``calibration_figure`` written to ``out``, the numbers it draws beside it (CSV); None when no
    run has per-severity calibration."""
    drawn = calibration_figure(groups)
    if drawn is None:
        return None
    fig, points = drawn
    write_points(out, points)
    return save_figure(fig, out)


def calibration_figure(groups: dict):
    """(figure, points) of ``calibration_by_severity``: accuracy, RMS calibration error and the signed
    confidence gap against corruption severity, one line per method (mean over seeds, error bars:
    the 95 % t-interval), for every data set of ours with a -C suite (issue 31): under-confidence
    shows as a gap below 0, over-confidence above.
    Severity 0 is the clean test split; 1-5 average the -C suite's corruptions at that severity.
    The data of every panel is named in its title; the figure's title says what the error bars are
    (issue 48).  None when no run has per-severity calibration."""
    settings: dict[tuple[str, str], dict[str, list]] = {}
    for (dataset, model, method), runs in groups.items():
        suite = f"{dataset}-c"
        rows = [[_severity_values(r, suite, key) for r in runs] for _, key, _ in _SEVERITY_PANELS]
        if all(v is not None for v in rows[1]) and rows[1]:
            settings.setdefault((dataset, model), {})[method] = rows
    if not settings:
        return None
    fig, axes = plt.subplots(len(settings), 3, figsize=(15, 3.8 * len(settings) + 0.6), squeeze=False,
                             layout="constrained")
    points = []
    seeds = set()
    for axes_row, ((dataset, model), methods) in zip(axes, sorted(settings.items()), strict=True):
        for k, (ax, (title, key, scale)) in enumerate(zip(axes_row, _SEVERITY_PANELS, strict=True)):
            for method in sorted(methods, key=method_order):
                values = np.array([v for v in methods[method][k] if v is not None]) * scale
                if not len(values):
                    continue
                with warnings.catch_warnings():  # a severity no seed has (the clean RMS of a run without it)
                    warnings.simplefilter("ignore", RuntimeWarning)
                    mean = np.nanmean(values, 0)
                errors = [interval(list(col[~np.isnan(col)]))["half_width"] or 0.0 if np.sum(~np.isnan(col)) > 1
                          else 0.0 for col in values.T]
                label = method_label(method)
                seeds.add(len(values))
                ax.errorbar(range(6), mean, yerr=errors, marker="o", capsize=3, label=label,
                            color=method_color(label))
                points += [{"dataset": dataset, "model": model, "method": method, "measure": key, "severity": s,
                            "mean": round(float(m), 4), "seeds": int(np.sum(~np.isnan(values[:, s])))}
                           for s, m in enumerate(mean)]
            if key == "confidence_gap":
                ax.axhline(0, color="black", lw=0.8)
            ax.set_xticks(range(6), ["clean", "1", "2", "3", "4", "5"])
            ax.set_xlabel(f"severity ({dataset}-C; clean: the {dataset} test split)")
            ax.set_ylabel(title, fontsize=8)
            ax.set_title(f"{title}\n{dataset}, {model}", fontsize=9)
        _legend_outside(axes_row[1], fontsize=8, ncol=4)
    counts = ", ".join(str(n) for n in sorted(seeds))
    fig.suptitle("Accuracy and calibration against corruption severity (ours): each point the mean over "
                 f"{counts} seed(s);\nerror bars: the 95 % t-interval of that mean over the seeds (none for one "
                 "seed)", fontsize=10)
    return fig, points
