"""Issue 40, item 4: temperature scaling (``fullscale.metrics.fit_temperature``) recovers a known
temperature, and the calibration suite's scaled RMS error is cross-fitted on held-out images."""

from __future__ import annotations

import numpy as np
import pytest

from fullscale.metrics import fit_temperature, rms_calibration_error, scaled_confidence, temperature_scaled


def _synthetic(temperature: float, n: int = 20000, k: int = 10, seed: int = 0):
    """Logits whose labels are drawn from softmax(logits / temperature): the calibrating T is known."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 3.0, (n, k))
    z = logits / temperature
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    labels = (p.cumsum(1) > rng.random((n, 1))).argmax(1)
    return logits, labels


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.5])
def test_fit_recovers_a_known_temperature(temperature):
    logits, labels = _synthetic(temperature)
    assert fit_temperature(logits, labels) == pytest.approx(temperature, rel=0.05)


def test_scaling_removes_the_miscalibration_it_fits():
    logits, labels = _synthetic(2.5)  # over-confident as given: the labels are softer than the logits
    conf, pred = scaled_confidence(logits, 1.0)
    raw = rms_calibration_error(conf, (pred == labels).astype(float))
    scaled = temperature_scaled(logits, labels)
    assert scaled["temperature"] == pytest.approx(2.5, rel=0.05)
    assert all(t == pytest.approx(2.5, rel=0.08) for t in scaled["fold_temperatures"])
    # bins of 100 images: the estimator alone reads about 0.04 on perfectly calibrated predictions
    assert raw > 0.25 and scaled["rms_calibration_error"] < 0.06
    assert abs(scaled["confidence_gap"]) < 0.02


def test_scaling_keeps_the_prediction_and_refuses_bad_input():
    logits, labels = _synthetic(1.0, n=500)
    assert (scaled_confidence(logits, 3.0)[1] == logits.argmax(1)).all()
    with pytest.raises(ValueError):
        fit_temperature(logits[:, :, None], labels)
    with pytest.raises(ValueError):
        fit_temperature(np.full((2, 3), np.nan), np.zeros(2, int))


def test_the_calibration_suite_records_the_temperature_and_the_scaled_error():
    """The calibration suite's summary (``own_split.calibration_summary``, what its eval JSON holds)."""
    import torch

    from fullscale.evaluation.own_split import calibration_summary

    logits, labels = _synthetic(0.5, n=2000)  # under-confident as given: the labels are sharper than the logits
    summary = calibration_summary(torch.from_numpy(logits).float(), torch.from_numpy(labels), "exact", scaled=True)
    scaled = summary["temperature_scaled"]
    assert scaled["temperature"] == pytest.approx(0.5, rel=0.1) and len(scaled["fold_temperatures"]) == 2
    assert summary["confidence_gap"] < 0 and scaled["rms_calibration_error"] < summary["rms_calibration_error"]
    assert "temperature_scaled" not in calibration_summary(torch.from_numpy(logits).float(),
                                                           torch.from_numpy(labels), "exact")
