"""Metrics on hand-computed cases and against straightforward reference formulas."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fullscale.corruptions.common import CORRUPTIONS
from fullscale.metrics import (
    ALEXNET_ERR,
    accuracy,
    aurra,
    corruption_summary,
    expected_calibration_error,
    flip_probability,
    mean_corruption_error,
    rms_calibration_error,
)


def test_accuracy_hand_case():
    assert accuracy(np.array([1, 2, 3, 4]), np.array([1, 0, 3, 0])) == 0.5
    with pytest.raises(ValueError):
        accuracy(np.array([1]), np.array([1, 2]))


def test_flip_probability_both_definitions():
    p = np.array([[0, 0, 1, 1], [2, 3, 2, 2]])
    # consecutive: row 0 flips at t=2 (1 of 3), row 1 at t=1, t=2 (2 of 3) -> 3 / 6
    assert flip_probability(p, noise=False) == pytest.approx(0.5)
    # against frame 0: row 0 differs at t=2, 3 (2 of 3); row 1 at t=1 (1 of 3) -> 3 / 6
    assert flip_probability(p, noise=True) == pytest.approx(0.5)
    q = np.array([[0, 1, 0, 1]])
    assert flip_probability(q, noise=False) == 1.0 and flip_probability(q, noise=True) == pytest.approx(2 / 3)


def test_rms_calibration_error_exact_and_public():
    # 250 samples -> bins [0,100), [100,250) after sorting by confidence
    conf = np.concatenate([np.full(100, 0.6), np.full(150, 0.9)])
    correct = np.concatenate([np.r_[np.ones(50), np.zeros(50)], np.ones(150)])
    exact = np.sqrt(100 / 250 * (0.6 - 0.5) ** 2 + 150 / 250 * (0.9 - 1.0) ** 2)
    assert rms_calibration_error(conf, correct) == pytest.approx(exact)
    # the public loop skips the last bin but keeps n = 250
    assert rms_calibration_error(conf, correct, estimator="public") == pytest.approx(np.sqrt(100 / 250 * 0.01))


def test_ece_hand_case():
    conf = np.array([0.95, 0.95, 0.55, 0.55])
    correct = np.array([1, 1, 1, 0])
    assert expected_calibration_error(conf, correct) == pytest.approx(0.5 * 0.05 + 0.5 * 0.05)


def test_aurra_hand_case():
    # most confident first: correct, wrong, correct -> accuracies 1, 1/2, 2/3
    assert aurra(np.array([0.9, 0.8, 0.7]), np.array([1, 0, 1])) == pytest.approx((1 + 0.5 + 2 / 3) / 3)


@settings(max_examples=30)
@given(st.lists(st.floats(0.01, 1.0), min_size=5, max_size=300), st.integers(0, 2**31 - 1))
def test_calibration_bounds(conf, seed):
    conf = np.array(conf)
    correct = np.random.default_rng(seed).integers(0, 2, len(conf)).astype(float)
    for value in (rms_calibration_error(conf, correct, bin_size=10), expected_calibration_error(conf, correct)):
        assert 0 <= value <= 1
    # perfectly calibrated in every bin: zero error
    assert rms_calibration_error(np.full(200, 1.0), np.ones(200)) == 0


def test_mce_against_alexnet_normalisation():
    accs = {c: [1 - ALEXNET_ERR[c]] * 5 for c in CORRUPTIONS}  # exactly AlexNet's errors
    out = mean_corruption_error(accs, clean_accuracy=1 - 0.4348)
    assert out["mce"] == pytest.approx(1.0) and out["relative_mce"] == pytest.approx(1.0)
    half = {c: [1 - ALEXNET_ERR[c] / 2] * 5 for c in CORRUPTIONS}
    assert mean_corruption_error(half)["mce"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="missing"):
        mean_corruption_error({"fog": [0.5] * 5})


def test_alexnet_errors_are_the_augmix_table():
    assert ALEXNET_ERR["gaussian_noise"] == 0.886428 and ALEXNET_ERR["jpeg_compression"] == 0.6065
    assert len(ALEXNET_ERR) == 15


def test_corruption_summary_categories():
    per = {c: i / 20 for i, c in enumerate(CORRUPTIONS)}
    s = corruption_summary(per)
    assert s["mean_accuracy"] == pytest.approx(np.mean(list(per.values())))
    assert s["per_category"]["noise"] == pytest.approx((0 + 0.05 + 0.1) / 3)
    assert s["mean_accuracy_no_noise"] == pytest.approx(np.mean([i / 20 for i in range(3, 15)]))
