"""Issue 46, item 3: the reliability diagram's bins and the RMS estimator's noise floor
(``fullscale.metrics.reliability_bins``, ``pool_reliability``, ``noise_floor_draws``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fullscale.metrics import (
    expected_calibration_error,
    noise_floor_draws,
    pool_reliability,
    reliability_bins,
    rms_calibration_error,
)


def _by_hand(conf, correct, bins):
    """Per bin (lower, upper] (0 in the first): count, mean confidence, accuracy, by a plain loop."""
    edges = [b / bins for b in range(bins + 1)]
    out = {"count": [], "mean_confidence": [], "accuracy": []}
    for b in range(bins):
        inside = [i for i, c in enumerate(conf) if edges[b] < c <= edges[b + 1] or (b == 0 and c == 0)]
        out["count"].append(len(inside))
        out["mean_confidence"].append(np.mean([conf[i] for i in inside]) if inside else None)
        out["accuracy"].append(np.mean([correct[i] for i in inside]) if inside else None)
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.1, 0.2, 1 / 3, 0.5, 0.6, 1.0]) | st.floats(0, 1),
                          st.booleans()), min_size=1, max_size=60),
       st.sampled_from([10, 15]))
def test_the_bins_are_the_equal_width_ones_the_ece_uses(pairs, bins):
    conf, correct = np.array([p for p, _ in pairs]), np.array([float(c) for _, c in pairs])
    got, want = reliability_bins(conf, correct, bins), _by_hand(list(conf), list(correct), bins)
    assert got["count"] == want["count"] and sum(got["count"]) == len(conf)
    for key in ("mean_confidence", "accuracy"):
        assert [g is None for g in got[key]] == [w is None for w in want[key]]
        assert [g for g in got[key] if g is not None] == pytest.approx([w for w in want[key] if w is not None])
    ece = sum(n / len(conf) * abs(m - a) for n, m, a in zip(got["count"], got["mean_confidence"], got["accuracy"],
                                                          strict=True) if n)
    assert ece == pytest.approx(expected_calibration_error(conf, correct, bins))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=30), min_size=1,
                max_size=4))
def test_pooled_bins_are_the_bins_of_the_images_put_together(sets):
    diagrams = [reliability_bins(np.array([p for p, _ in s]), np.array([float(c) for _, c in s])) for s in sets]
    everything = [pair for s in sets for pair in s]
    together = reliability_bins(np.array([p for p, _ in everything]), np.array([float(c) for _, c in everything]))
    pooled = pool_reliability(diagrams)
    assert pooled["count"] == together["count"]
    for key in ("mean_confidence", "accuracy"):
        assert [g is None for g in pooled[key]] == [w is None for w in together[key]]
        assert [g for g in pooled[key] if g is not None] == pytest.approx(
            [w for w in together[key] if w is not None])


def test_pooling_refuses_other_bins():
    with pytest.raises(ValueError, match="different bins"):
        pool_reliability([reliability_bins(np.array([0.5]), np.array([1.0]), 10),
                          reliability_bins(np.array([0.5]), np.array([1.0]), 15)])


def test_each_draw_is_the_estimator_on_one_perfectly_calibrated_model():
    """The floor's draw d is ``rms_calibration_error`` of correct_i = [u_di < p_i] (u: the generator's
    uniforms over the images sorted by confidence), for both estimators."""
    rng = np.random.default_rng(1)
    conf = rng.uniform(0.3, 1.0, 350)
    for estimator in ("exact", "public"):
        draws = noise_floor_draws(conf, torch.Generator().manual_seed(7), draws=5, estimator=estimator)
        uniform = torch.rand((5, 350), generator=torch.Generator().manual_seed(7), dtype=torch.float64).numpy()
        ordered = np.sort(conf)
        for d in range(5):
            want = rms_calibration_error(ordered, (uniform[d] < ordered).astype(float), estimator=estimator)
            assert draws[d] == pytest.approx(want, abs=1e-12)


def test_the_floor_matches_its_expectation():
    """E[RMS^2] = sum_b 1 / (n |b|) sum_{i in b} p_i (1 - p_i) for the exact estimator (bins of 100)."""
    rng = np.random.default_rng(2)
    conf = np.sort(rng.uniform(0.2, 1.0, 450))
    bins = [(0, 100), (100, 200), (200, 300), (300, 450)]  # the last bin takes the remainder
    expected = sum(np.sum(conf[a:b] * (1 - conf[a:b])) / (450 * (b - a)) for a, b in bins)
    draws = noise_floor_draws(conf, torch.Generator().manual_seed(0), draws=4000)
    # relative sd of a mean of 4000 squared draws: about sqrt(2 / (4 bins)) / sqrt(4000) ~ 1.1 %
    assert np.mean(draws ** 2) == pytest.approx(expected, rel=0.05)


def test_a_perfectly_calibrated_model_reads_within_the_floor():
    """100 models calibrated by construction (correct ~ Bernoulli(confidence)): their measured errors
    fall above the floor's 95th percentile about 5 % of the time (binomial(100, 0.05): P(> 13) < 0.001)."""
    g = torch.Generator().manual_seed(3)
    above = 0
    for _ in range(100):
        conf = 0.3 + 0.7 * torch.rand(450, generator=g, dtype=torch.float64).numpy()
        correct = (torch.rand(450, generator=g, dtype=torch.float64).numpy() < conf).astype(float)
        floor = noise_floor_draws(conf, g, draws=200)
        above += rms_calibration_error(conf, correct) > np.percentile(floor, 95)
    assert 0 <= above <= 13


def test_the_floor_shrinks_like_one_over_root_n():
    """Four bins of n / 4 images each (as the digits' 450 images give about four bins of 100): the mean
    floor against n on a log-log scale has slope -1/2."""
    ns = [400, 1600, 6400, 25600]
    g = torch.Generator().manual_seed(4)
    floors = []
    for n in ns:
        conf = np.linspace(0.5, 0.99, n)
        floors.append(noise_floor_draws(conf, g, draws=400, bin_size=n // 4).mean())
    slope = np.polyfit(np.log(ns), np.log(floors), 1)[0]
    assert slope == pytest.approx(-0.5, abs=0.05)


def test_the_floor_refuses_what_is_not_a_probability():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="probabilities"):
        noise_floor_draws(np.array([0.5, 1.2]), g)
    with pytest.raises(ValueError, match="public"):
        noise_floor_draws(np.full(50, 0.5), g, estimator="public")
