"""Issue 57, goal 8: the figures' defects, each tested on the matplotlib Figure object.

- robust_c (fig:robust10vs100): bars from 0; only the paper's column that the runs' data set stands for
  (Digits-C beside CIFAR-10-C, no CIFAR-100-C panel); every method in the paper's table order with the
  paper's value, the methods without runs marked; NoisyMix minus each method paired over seeds (mean,
  95 % t-interval) beside the paper's difference.  The numbers expected are computed here, from the
  fixture's accuracies and paper_values.json, with scipy's t quantile.
- calibration_shift: the legend draws each set solid, as drawn; sparse bins are an entry of their own.
- corruption_examples: the caption breaks only between words, never inside a code span.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer, ErrorbarContainer
from scipy import stats

from fullscale.vocabulary import CATEGORIES, CORRUPTIONS
from noisymix_figures import plots, plots_examples
from noisymix_figures.methods import method_color
from noisymix_figures.results import collect
from noisymix_infra.io import write_json

PAPER = dict(json.loads((Path(plots.__file__).with_name("paper_values.json")).read_text())
             ["tab:results_cifar10"]["rows"])
#: tab:results_cifar10's rows in the paper's order, as the figures name them, then our method it lacks
ORDER = ["Baseline", "Mixup", "Manifold Mixup", "CutMix", "Puzzle Mix", "NFM", "AugMix", "AugMax*", "NoisyMix",
         "Noise injections"]
#: the fixture's mean -C accuracy per method and seed (4 seeds); Manifold Mixup, CutMix, Puzzle Mix: no runs.
#: Noise injections trails NoisyMix by exactly 5 points on every seed: a spread below one image's step
ACCURACY = {"baseline": [0.75, 0.72, 0.78, 0.74], "mixup": [0.85, 0.86, 0.84, 0.83],
            "nfm": [0.82, 0.81, 0.85, 0.80], "augmix_jsd": [0.91, 0.87, 0.90, 0.90],
            "noisymix": [0.90, 0.88, 0.91, 0.89], "noise": [0.85, 0.83, 0.86, 0.84]}
LABEL = {"baseline": "Baseline", "mixup": "Mixup", "nfm": "NFM", "augmix_jsd": "AugMix", "noisymix": "NoisyMix",
         "noise": "Noise injections"}


def _run(root: Path, dataset: str, method: str, seed: int, acc: float) -> None:
    """A run of ``dataset`` with a -C evaluation, every corruption and severity at ``acc`` (10 images a cell)."""
    run = root / f"{dataset}-{method}-{seed}"
    write_json(run / "config.json", {"config": {"method": method, "model": "preactresnet18", "dataset": dataset,
                                                "seed": seed, "epochs": 3}, "run": {"num_classes": 10}})
    (run / "final.pt").write_bytes(f"weights of {run.name}".encode())
    write_json(run / "eval" / f"{dataset}-c.json", {
        "suite": f"{dataset}-c", "complete": True,
        "results": {c: {str(s): {"accuracy": acc, "n": 10} for s in range(1, 6)} for c in CORRUPTIONS},
        "summary": {"mean_accuracy": acc, "clean_accuracy": 0.95, "per_corruption": dict.fromkeys(CORRUPTIONS, acc),
                    "per_category": dict.fromkeys(CATEGORIES, acc), "n_corruptions": len(CORRUPTIONS)}})


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    root = tmp_path_factory.mktemp("digits")
    for method, accs in ACCURACY.items():
        for seed, acc in enumerate(accs):
            _run(root, "digits", method, seed, acc)
    return collect(root).groups()


def _panel(ax):
    """(tick labels, the paper's bar heights, ours) of a bar panel."""
    paper, ours = [c for c in ax.containers if isinstance(c, BarContainer)]
    return ([t.get_text() for t in ax.get_xticklabels()], [b.get_height() for b in paper],
            [b.get_height() for b in ours])


def _paper_value(row: str, column: int) -> float:
    cell = PAPER[row][column]
    return cell["mean"] if isinstance(cell, dict) else cell


# ------------------------------------------------------------------------------ robust_c

def test_robust_c_starts_at_0_and_shows_every_method_in_the_papers_order(digits):
    fig = plots.robust_c_figure(digits)
    assert len(fig.axes) == 2  # one data set (digits): one row, no CIFAR-100-C panel
    bars, diffs = fig.axes
    assert bars.get_ylim()[0] == 0
    assert "CIFAR-10-C" in bars.get_title() and "CIFAR-100" not in bars.get_title() + diffs.get_title()
    assert "digits-C" in bars.get_title()
    labels, paper, ours = _panel(bars)
    assert labels == ORDER
    rows = {("NoisyMix (ours)" if r == "NoisyMix" else r): r for r in ORDER[:-1]}
    for row, label in rows.items():  # the paper's CIFAR-10-C column, every row of its table
        assert paper[ORDER.index(label)] == pytest.approx(_paper_value(row, 1)), label
    assert np.isnan(paper[ORDER.index("Noise injections")])
    for method, label in LABEL.items():
        assert ours[ORDER.index(label)] == pytest.approx(100 * np.mean(ACCURACY[method])), label
    # the methods without runs (and the one not in the paper) are drawn as missing and marked so
    marks = {(round(t.get_position()[0] - 0.2), t.get_text()) for t in bars.texts}
    for label in ("Manifold Mixup", "CutMix", "Puzzle Mix", "AugMax*"):
        assert np.isnan(ours[ORDER.index(label)]) and (ORDER.index(label), "not run in this job") in marks
    assert (ORDER.index("Noise injections") + 0.4 - 0.4, "not in the paper") in {
        (round(t.get_position()[0] + 0.2), t.get_text()) for t in bars.texts}
    # one colour per method: both bars of a method in its colour
    for k, label in enumerate(labels):
        for container in (c for c in bars.containers if isinstance(c, BarContainer)):
            assert mcolors.to_rgb(container[k].get_facecolor()) == mcolors.to_rgb(method_color(label)), label


def test_robust_c_draws_the_paired_differences_beside_the_papers(digits):
    fig = plots.robust_c_figure(digits)
    diffs = fig.axes[1]
    labels = [t.get_text() for t in diffs.get_xticklabels()]
    assert labels == [name for name in ORDER if name != "NoisyMix"]
    assert 0 in [line.get_ydata()[0] for line in diffs.get_lines() if len(set(line.get_ydata())) == 1]
    drawn = {}
    for container in (c for c in diffs.containers if isinstance(c, ErrorbarContainer)):
        data, _, bars = container.lines
        (x, y), = data.get_xydata()
        (_, low), (_, high) = bars[0].get_segments()[0]
        drawn[labels[round(x - 0.15)]] = (y, (high - low) / 2, data.get_markerfacecolor(), data.get_color())
    assert set(drawn) == {LABEL[m] for m in ACCURACY if m != "noisymix"}
    for method in set(ACCURACY) - {"noisymix"}:  # NoisyMix minus the method, paired by seed
        d = 100 * np.array(ACCURACY["noisymix"]) - 100 * np.array(ACCURACY[method])
        # the spread the interval divides by is the sd, at least one image's worth (noisymix_infra.stats)
        spread = max(np.std(d, ddof=1), 100 / 750)
        half = stats.t.ppf(0.975, len(d) - 1) * spread / np.sqrt(len(d))
        y, width, face, color = drawn[LABEL[method]]
        assert y == pytest.approx(d.mean()) and width == pytest.approx(half, abs=1e-9), method
        assert mcolors.to_rgb(color) == mcolors.to_rgb(method_color(LABEL[method]))
        # a spread below the grid's step (one image of 750 per seed) is drawn hollow; the others solid
        assert (face == "none") == (method == "noise"), method
    # the paper's difference, NoisyMix minus each row of its CIFAR-10-C column, beside ours
    offsets = {labels[round(x + 0.15)]: y for c in diffs.collections if isinstance(c, PathCollection)
               for x, y in c.get_offsets()}
    expected = {label: _paper_value("NoisyMix (ours)", 1) - _paper_value(label, 1)
                for label in labels if label != "Noise injections"}
    assert offsets == pytest.approx(expected)
    # the legend says what each mark is, outside every panel
    fig.canvas.draw()
    (legend,) = fig.legends
    text = " | ".join(t.get_text() for t in legend.get_texts())
    assert "paper: NoisyMix - method" in text and "paired over 4 seeds" in text and "hollow" in text
    assert all(not legend.get_window_extent().overlaps(ax.get_window_extent()) for ax in fig.axes)


def test_robust_c_draws_each_data_set_beside_its_own_column(tmp_path):
    """CIFAR-100 runs beside CIFAR-100-C, digits beside CIFAR-10-C; nothing of a data set without runs."""
    for seed in (0, 1):
        _run(tmp_path, "cifar100", "baseline", seed, 0.40 + seed / 100)
        _run(tmp_path, "digits", "noisymix", seed, 0.90)
    fig = plots.robust_c_figure(collect(tmp_path).groups())
    assert len(fig.axes) == 4
    cifar100, _, digits, _ = fig.axes
    assert "CIFAR-100-C" in cifar100.get_title() and "cifar100-C" in cifar100.get_title()
    assert "CIFAR-10-C" in digits.get_title() and "digits-C" in digits.get_title()
    labels, paper, ours = _panel(cifar100)
    assert paper[labels.index("Baseline")] == pytest.approx(_paper_value("Baseline", 3))
    assert ours[labels.index("Baseline")] == pytest.approx(40.5)
    assert np.isnan(ours[labels.index("NoisyMix")])  # no cifar100 NoisyMix: nothing taken from digits
    assert all(ax.get_ylim()[0] == 0 for ax in (cifar100, digits))


def test_robust_c_without_runs_draws_the_papers_two_columns():
    fig = plots.robust_c_figure({})
    titles = [ax.get_title() for ax in fig.axes[::2]]
    assert "CIFAR-10-C" in titles[0] and "CIFAR-100-C" in titles[1] and all("no runs" in t for t in titles)
    assert not [ax for ax in fig.axes if ax.texts]  # no per-method "no runs" marks where no row has runs


# ------------------------------------------------------------------------------ calibration_shift

def test_the_reliability_legend_draws_each_set_solid_and_sparse_bins_apart():
    """The first bin of each set is sparse (drawn hollow): the legend still shows the set solid."""
    from noisymix_figures.calibration_shift import MIN_COUNT, SETS, reliability_figure

    def bins(counts):
        return {"accuracy": [0.5, 0.6, 0.7, 0.8], "confidence": [0.1, 0.4, 0.6, 0.9], "count": counts}

    stage = {"as_evaluated": bins([2, 50, 400, 3598]), "temperature_scaled": bins([1, 60, 389, 3600])}
    fig = reliability_figure({"noisymix": {"edges": [0, 0.25, 0.5, 0.75, 1.0], "seeds": 1, "clean": stage,
                                           "severity_5": stage}})
    top = fig.axes[0]
    assert mcolors.to_rgba(top.patches[0].get_facecolor())[3] == 0  # the sparse bin itself: hollow
    (legend,) = fig.legends
    entries = dict(zip([t.get_text() for t in legend.get_texts()], legend.legend_handles, strict=True))
    for _, label, color in SETS:
        face = mcolors.to_rgba(entries[label].get_facecolor())
        assert face[3] > 0 and face[:3] == mcolors.to_rgb(color), label
    (sparse,) = [h for t, h in entries.items() if f"fewer than {MIN_COUNT} images" in t]
    assert mcolors.to_rgba(sparse.get_facecolor())[3] == 0 and mcolors.to_rgba(sparse.get_edgecolor())[3] > 0
    counts = fig.axes[1]
    assert counts.get_legend() is None and "clean 4,050; corrupted 4,050" in counts.get_xlabel()


# ------------------------------------------------------------------------------ corruption_examples

@given(st.lists(st.one_of(st.from_regex(r"[a-z]{1,9}(-[a-z]{1,9})?", fullmatch=True),
                          st.from_regex(r"`--[a-z]{1,8}( [a-z]{1,8}(-[a-z]{1,8})?)?`", fullmatch=True)),
                min_size=1, max_size=30), st.integers(8, 60))
def test_fill_breaks_only_between_words_outside_code_spans(words, width):
    lines = plots._fill(" ".join(words), width).split("\n")
    assert all(line.count("`") % 2 == 0 for line in lines)  # no span opened on one line and closed on another
    assert " ".join(lines) == " ".join(words)  # every break at a space; no word split at a hyphen


@pytest.mark.parametrize("params", ["cifar", "digits-matched", None])
def test_the_examples_caption_keeps_each_code_span_on_one_line(tmp_path, params):
    from types import SimpleNamespace

    from fullscale.corruptions.matched import matched_fit

    runs = []
    if params:
        write_json(tmp_path / "manifest.json", {"params": params, "strengths": dict(matched_fit()["strengths"])})
        runs = [SimpleNamespace(evals={"digits-c": {"data_root": str(tmp_path)}})]
    shown = plots_examples.examples_set(SimpleNamespace(runs=runs))
    caption = plots_examples.corruption_examples_figure((1,), shown=shown).get_suptitle()
    spans = [part for i, part in enumerate(shown["what"].split("`")) if i % 2]
    assert bool(spans) == bool(params)  # the run sets' words name the option that made them
    for span in spans:
        assert any(f"`{span}`" in line for line in caption.split("\n")), caption
    assert all(line.count("`") % 2 == 0 for line in caption.split("\n"))
    assert caption.replace("\n", " ").startswith(f"Digits-C: the 15 corruptions on a test digit, {shown['what']}")


# ------------------------------------------------------------------------------ the report's rank correlation

def test_the_reports_spearman_is_that_of_its_two_rankings(digits):
    """REPORT.md's agreement section (now scipy's spearmanr): rho = 1 - 6 sum d^2 / (n (n^2 - 1)) of the
    two rankings it prints above it."""
    from noisymix_figures.report import _agreement
    from noisymix_figures.tables import build_tables

    lines = _agreement(build_tables(digits))
    checked = 0
    for k, line in enumerate(lines):
        if line.startswith("- Spearman rank correlation:"):
            paper, ours = (lines[k - 2].split(": ", 1)[1].split(" > "), lines[k - 1].split(":  ", 1)[1].split(" > "))
            n = len(paper)
            rho = 1 - 6 * sum((paper.index(r) - ours.index(r)) ** 2 for r in paper) / (n * (n * n - 1))
            assert line.split(": ")[1].startswith(f"{rho:+.2f};"), (line, paper, ours)
            checked += 1
    assert checked > 1
