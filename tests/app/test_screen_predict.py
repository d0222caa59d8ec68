"""The screen's map and its leave-one-out validity (issue 59, goal 3), each against an independent
computation: the leave-one-out errors against the hat matrix's closed form e_i / (1 - h_ii), the
interval's width against scipy's t quantile, the nested coverage against the closed form applied to
each set of seven, and the prediction of a left-out method against its own leave-one-out row."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from noisymix_app.screen.predict import fit_line, half_width, loo, map_record, predict


def _closed_form_loo_errors(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """e_(i) = r_i / (1 - h_ii): the residuals of the fit on all points over one minus the leverage
    (H = X (X'X)^-1 X', X = [1, x]); no refit."""
    design = np.column_stack([np.ones_like(x), x])
    hat = design @ np.linalg.inv(design.T @ design) @ design.T
    residuals = y - hat @ y
    return residuals / (1 - np.diag(hat))


points = st.integers(5, 12).flatmap(lambda n: st.tuples(
    st.lists(st.floats(-50, 100, allow_nan=False), min_size=n, max_size=n),
    st.lists(st.floats(-50, 100, allow_nan=False), min_size=n, max_size=n)))


@settings(max_examples=150, deadline=None)
@given(points)
def test_leave_one_out_errors_equal_the_hat_matrix_closed_form(data):
    x, y = (np.array(v) for v in data)
    assume(np.std(x) > 1e-2 * (1 + np.abs(x).max()))  # a line through points of one x is no line
    design = np.column_stack([np.ones_like(x), x])
    hat = np.diag(design @ np.linalg.inv(design.T @ design) @ design.T)
    assume(hat.max() < 0.98)  # a point alone on its x: its refit is ill-conditioned
    expected = _closed_form_loo_errors(x, y)
    assert y - loo(x, y) == pytest.approx(expected, abs=1e-6 * (1 + np.abs(y).max()))


def test_fit_line_hand_values_and_refusals():
    assert fit_line([0, 1, 2], [1, 3, 5]) == pytest.approx((1.0, 2.0))
    with pytest.raises(ValueError, match="same proxy value"):
        fit_line([1, 1, 1], [1, 2, 3])
    with pytest.raises(ValueError, match="finite"):
        fit_line([1, 2, math.nan], [1, 2, 3])
    with pytest.raises(ValueError, match="at least four"):
        loo([0, 1, 2], [0, 1, 2])


def test_half_width_is_t_times_the_root_mean_square():
    # RMS of (1, -1, 1, -1) is 1: the half-width is t(0.975, 4) = 2.776...
    assert half_width([1, -1, 1, -1]) == pytest.approx(scipy.stats.t.ppf(0.975, 4))
    assert half_width([3, 4]) == pytest.approx(scipy.stats.t.ppf(0.975, 2) * math.sqrt(12.5))
    assert half_width([1, -1, 1, -1], 0.8) == pytest.approx(scipy.stats.t.ppf(0.9, 4))
    with pytest.raises(ValueError, match="two finite"):
        half_width([1.0])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(60, 95), min_size=6, max_size=10, unique=True), st.floats(0.1, 3), st.integers(0, 10**6))
def test_nested_coverage_equals_the_closed_form_on_each_seven(xs, noise, seed):
    x = np.array(xs)
    y = 10 + 0.9 * x + np.random.default_rng(seed).normal(0, noise, len(x))
    names = [f"m{i}" for i in range(len(x))]
    record = map_record(names, x, y)
    errors = _closed_form_loo_errors(x, y)
    assert [r["error"] for r in record["loo"]] == pytest.approx(errors, abs=1e-6)
    t_all = scipy.stats.t.ppf(0.975, len(x))
    assert record["half_width"] == pytest.approx(t_all * math.sqrt(np.mean(errors ** 2)), rel=1e-9)
    covered = 0
    for i, row in enumerate(record["loo"]):
        keep = np.arange(len(x)) != i
        inner = _closed_form_loo_errors(x[keep], y[keep])
        width = scipy.stats.t.ppf(0.975, len(inner)) * math.sqrt(np.mean(inner ** 2))
        assert row["half_width"] == pytest.approx(width, rel=1e-6)
        assert row["covered"] == (abs(errors[i]) <= width)
        covered += abs(errors[i]) <= width
    assert record["covered"] == covered
    assert record["mae"] == pytest.approx(np.mean(np.abs(errors)))
    assert record["spread"] == pytest.approx(np.std(y, ddof=1))


def test_the_proxy_cannot_place_a_method_when_it_predicts_no_better_than_the_spread():
    x = np.array([70.0, 72, 75, 78, 80, 83, 85, 88])
    unrelated = np.array([80.0, 74, 90, 73, 88, 76, 84, 79])  # no line through these
    record = map_record([f"m{i}" for i in range(8)], x, unrelated)
    assert record["rmse"] >= record["spread"] and not record["placeable"]
    linear = 5 + x + np.array([0.3, -0.2, 0.1, -0.4, 0.2, 0.0, -0.1, 0.3])
    assert map_record([f"m{i}" for i in range(8)], x, linear)["placeable"]


def test_a_left_out_method_is_predicted_as_its_own_leave_one_out_row():
    x = np.array([70.0, 72, 75, 78, 80, 83, 85, 88])
    y = 4 + 0.95 * x + np.array([0.8, -1.2, 0.5, -0.4, 1.1, 0.0, -0.9, 0.6])
    names = [f"m{i}" for i in range(8)]
    record = map_record(names, x, y)
    for i, row in enumerate(record["loo"]):
        found = predict(record, x[i], leave_out=names[i])
        assert found["value"] == pytest.approx(row["predicted"])
        assert found["half_width"] == pytest.approx(row["half_width"])
    whole = predict(record, 79.0)
    assert whole["value"] == pytest.approx(record["intercept"] + record["slope"] * 79.0)
    assert whole["high"] - whole["value"] == pytest.approx(record["half_width"])
    assert not whole["extrapolated"] and predict(record, 60.0)["extrapolated"]
    with pytest.raises(ValueError, match="not one of"):
        predict(record, 79.0, leave_out="nobody")
