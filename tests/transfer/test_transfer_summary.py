"""tab:results_transfer's three -C numbers (all / noise / other) from per-corruption accuracies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fullscale.metrics import transfer_summary
from fullscale.vocabulary import CATEGORIES, CORRUPTIONS


def _per_corruption(groups: dict[str, tuple[float, ...]]) -> dict[str, float]:
    return {name: acc for cat, accs in groups.items() for name, acc in zip(CATEGORIES[cat], accs, strict=True)}


def test_the_papers_baseline_row_is_the_mean_of_group_means():
    # every noise corruption at 48.8 %, every other at 86.5 %: the paper's 77.1 / 48.8 / 86.5,
    # where the mean over the 15 corruptions would be (3 x 48.8 + 12 x 86.5) / 15 = 78.96
    per = {c: (0.488 if c in CATEGORIES["noise"] else 0.865) for c in CORRUPTIONS}
    out = transfer_summary(per)
    assert out["all"] == pytest.approx(0.77075)
    assert round(100 * out["all"], 1) == 77.1
    assert out["noise"] == pytest.approx(0.488) and out["other"] == pytest.approx(0.865)
    assert out["mean_15"] == pytest.approx(0.7896)


def test_uneven_groups_by_hand():
    per = _per_corruption({"noise": (0.3, 0.4, 0.5), "blur": (0.6, 0.6, 0.8, 0.8),
                           "weather": (0.9, 0.9, 0.9, 0.9), "digital": (0.5, 0.6, 0.7, 0.8)})
    out = transfer_summary(per)
    # group means 0.4, 0.7, 0.9, 0.65
    assert out["noise"] == pytest.approx(0.4)
    assert out["all"] == pytest.approx((0.4 + 0.7 + 0.9 + 0.65) / 4)  # 0.6625
    assert out["other"] == pytest.approx((0.7 + 0.9 + 0.65) / 3)  # 0.75
    assert out["mean_15"] == pytest.approx(10.2 / 15)  # 0.68


def test_needs_all_fifteen():
    per = {c: 0.5 for c in CORRUPTIONS[:-1]}
    with pytest.raises(ValueError, match="jpeg_compression"):
        transfer_summary(per)


def test_the_papers_table_follows_that_definition():
    """Every printed cell but one satisfies all = (noise + 3 other) / 4 within the rounding of
    its three numbers; none satisfies the 15-corruption mean (3 noise + 12 other) / 15 for
    every row.  The exception, AugMix on CIFAR-100-C (58.8 / 24.2 / 66.8, where the
    definition gives 56.2), fits neither and is taken as a typo of the paper."""
    table = json.loads((Path(__file__).parents[2] / "figures" / "paper_values.json").read_text())
    rows = table["tab:results_transfer"]["rows"]
    fits, fits_15 = [], []
    for name, cells in rows:
        for all_, noise, other in (cells[1], cells[3]):
            fits.append((name, abs(all_ - (noise + 3 * other) / 4) <= 0.05 + 0.05))
            fits_15.append(abs(all_ - (3 * noise + 12 * other) / 15) <= 0.1)
    assert [name for name, ok in fits if not ok] == ["AugMix"]
    assert len(fits) == 12 and not all(fits_15)
