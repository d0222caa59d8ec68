"""Issue 46, item 3: the reliability diagrams under shift (``noisymix_figures.calibration_shift``): one
column per method, clean against severity 5, as evaluated and after scaling; seeds pooled by count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.patches import Rectangle

from fullscale.metrics import reliability_bins, reliability_edges
from noisymix_figures.calibration_shift import calibration_shift, pooled_diagrams, reliability_figure
from noisymix_figures.results import Run


def _record(rng: np.random.Generator, sharpness: float) -> tuple[dict, dict]:
    """A -C record's reliability block from random per-image data, and that data (to pool by hand)."""
    images = {}
    block = {"bins": 15, "edges": reliability_edges(15)}
    for key in ("clean", "severity_5"):
        block[key] = {}
        for stage in ("as_evaluated", "temperature_scaled"):
            conf = rng.uniform(0.1, 1.0, 200) ** sharpness
            correct = (rng.uniform(size=200) < conf).astype(float)
            images[key, stage] = (conf, correct)
            block[key][stage] = reliability_bins(conf, correct)
    return {"summary": {"calibration_under_shift": {"reliability": block}}}, images


def _run(method: str, seed: int, record: dict) -> Run:
    return Run(Path(f"{method}-{seed}"), {"dataset": "digits", "model": "preactresnet18", "method": method,
                                          "seed": seed}, {"digits-c": record}, [])


def test_seeds_are_pooled_as_one_set_of_images():
    rng = np.random.default_rng(0)
    made = [_record(rng, 0.5) for _ in range(3)]
    pooled = pooled_diagrams([_run("baseline", s, rec) for s, (rec, _) in enumerate(made)])
    assert pooled["seeds"] == 3 and pooled["edges"] == reliability_edges(15)
    for key in ("clean", "severity_5"):
        for stage in ("as_evaluated", "temperature_scaled"):
            conf = np.concatenate([images[key, stage][0] for _, images in made])
            correct = np.concatenate([images[key, stage][1] for _, images in made])
            want = reliability_bins(conf, correct)
            assert pooled[key][stage]["count"] == want["count"]
            assert [a for a in pooled[key][stage]["accuracy"] if a is not None] == pytest.approx(
                [a for a in want["accuracy"] if a is not None])


def test_the_figure_draws_the_bins_the_diagonal_and_the_counts():
    rng = np.random.default_rng(1)
    diagrams = {m: pooled_diagrams([_run(m, 0, _record(rng, s)[0])]) for m, s in (("noisymix", 0.5),
                                                                                     ("baseline", 0.2))}
    fig = reliability_figure(diagrams, "Reliability under shift (test)")
    assert fig._suptitle.get_text() == "Reliability under shift (test)"
    axes = fig.axes
    assert len(axes) == 8  # 4 rows (reliability, counts; as evaluated, after scaling) x 2 methods
    titles = [ax.get_title() for ax in axes]
    assert titles[0].startswith("Baseline: as evaluated") and titles[1].startswith("NoisyMix: as evaluated")
    top = axes[0]  # Baseline as evaluated (methods in the registry's order)
    assert top.get_xlabel() and top.get_ylabel() == "accuracy in the bin"
    diagonal = [line for line in top.get_lines() if list(line.get_xdata()) == [0, 1]]
    assert diagonal and list(diagonal[0].get_ydata()) == [0, 1]
    bars = [p for p in top.patches if isinstance(p, Rectangle)]
    want = [0.0 if a is None else a for key in ("clean", "severity_5")
            for a in diagrams["baseline"][key]["as_evaluated"]["accuracy"]]
    assert [b.get_height() for b in bars] == pytest.approx(want)
    counts = [b.get_height() for b in axes[2].patches]  # the counts under Baseline's top panel
    assert counts == [c for key in ("clean", "severity_5") for c in diagrams["baseline"][key]["as_evaluated"]["count"]]
    # the legend is the figure's, outside every axes: it covers no bar
    assert len(fig.legends) == 1
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts[:3] == ["perfect calibration", "clean test images", "corrupted, severity 5 (all corruptions)"]
    assert texts[3].startswith("hollow: a bin of fewer than")
    fig.canvas.draw()
    box = fig.legends[0].get_window_extent()
    assert all(not box.overlaps(ax.get_window_extent()) for ax in axes)


def test_the_figure_file_is_written_only_when_a_run_has_the_bins(tmp_path):
    rng = np.random.default_rng(2)
    groups = {("digits", "preactresnet18", "baseline"): [_run("baseline", 0, _record(rng, 0.5)[0])]}
    assert calibration_shift(groups, tmp_path / "calibration_shift.png") == tmp_path / "calibration_shift.png"
    assert (tmp_path / "calibration_shift.png").stat().st_size > 0
    old = {("digits", "preactresnet18", "baseline"): [_run("baseline", 0, {"summary": {}})]}
    assert calibration_shift(old, tmp_path / "none.png") is None and not (tmp_path / "none.png").exists()
    with pytest.raises(ValueError, match="no reliability"):
        reliability_figure({})


def test_small_bins_are_hollow_and_the_counts_of_both_sets_are_visible():
    """Issue 52: bins of 1-2 images were drawn at full height and the clean counts (4,050) vanished beside
    the corrupted ones (60,750): a bin under MIN_COUNT is hollow and faded, the counts are on a log scale
    with each set's total under it."""
    from matplotlib.colors import to_rgba

    from noisymix_figures.calibration_shift import MIN_COUNT

    edges = [i / 4 for i in range(5)]

    def bins(counts):
        return {"accuracy": [0.5, 0.6, 0.7, 0.8], "confidence": [0.1, 0.4, 0.6, 0.9], "count": counts}

    data = {"edges": edges, "seeds": 1,
            "clean": {"as_evaluated": bins([2, 50, 400, 3598]), "temperature_scaled": bins([1, 60, 389, 3600])},
            "severity_5": {"as_evaluated": bins([6000, 20000, 30000, 4750]),
                           "temperature_scaled": bins([7000, 20000, 30000, 3750])}}
    fig = reliability_figure({"baseline": data})
    top, counts = fig.axes[0], fig.axes[1]
    clean_bars = [p for p in top.patches if isinstance(p, Rectangle)][:4]
    assert to_rgba(clean_bars[0].get_facecolor())[3] == 0  # 2 images: hollow
    assert clean_bars[0].get_alpha() < 0.5 and 2 < MIN_COUNT
    assert all(to_rgba(b.get_facecolor())[3] > 0 for b in clean_bars[1:])  # 50 and more: filled
    assert counts.get_yscale() == "log"
    # each set's total under the panel, where no legend covers its bars (issue 57)
    assert counts.get_legend() is None and counts.get_xlabel().endswith("images: clean 4,050; corrupted 60,750")
