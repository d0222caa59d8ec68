"""The main job's claims of issue 31: NoisyMix's clean-accuracy gain (the paper's own claim, beside
"keeps clean accuracy") and its calibration under corruption (RMS on the corrupted sets)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from noisymix_app.reproduce.summary import _claims, _lookup


def _values(shift_clean: float, rms_base: list[float], rms_noisymix: list[float]) -> dict:
    seeds = range(len(rms_base))
    base_clean = [95.0 + 0.3 * s for s in seeds]
    return {
        "baseline": {"clean": dict(zip(seeds, base_clean)), "corrupted": dict(zip(seeds, [80.0 + s for s in seeds])),
                     "rms_calibration_error_corrupted": dict(zip(seeds, rms_base))},
        "noisymix": {"clean": {s: c + shift_clean + 0.1 * (s % 2) for s, c in zip(seeds, base_clean)},
                     "corrupted": dict(zip(seeds, [88.0 + s for s in seeds])),
                     "rms_calibration_error_corrupted": dict(zip(seeds, rms_noisymix))},
    }


def test_better_calibrated_under_corruption_is_baselines_error_minus_noisymixs():
    """Without after-scaling numbers (a record from before issue 46) the unscaled error is the metric."""
    base, ours = [12.0, 14.0, 13.0, 15.0, 11.0], [20.0, 19.5, 21.0, 18.0, 22.0]
    claims = {c["id"]: c for c in _claims(_values(0.0, base, ours), ["baseline", "noisymix"])}
    claim = claims["calibrated_noisymix_vs_baseline"]
    assert claim["metric"] == "rms_calibration_error_corrupted"
    differences = np.subtract(base, ours)
    half = stats.t.ppf(0.975, len(differences) - 1) * differences.std(ddof=1) / np.sqrt(len(differences))
    assert claim["difference"]["mean"] == pytest.approx(differences.mean())
    assert claim["difference"]["half_width"] == pytest.approx(half)
    assert claim["threshold"] == 0.0 and claim["verdict"] == "fails"  # NoisyMix's error is the larger here
    assert "under corruption" in claim["statement"]


def test_noisymix_has_one_clean_claim_the_gain():
    """Issue 52: "keeps clean accuracy" and "improves clean accuracy" were one paired difference counted
    twice in the Holm family; the paper's claim is the gain, so that is the one claim."""
    claims = _claims(_values(0.8, [1.0] * 5, [1.0] * 5), ["baseline", "noisymix"])
    clean = [c for c in claims if c["id"].startswith("clean_") and "noisymix" in c["id"]]
    assert [c["id"] for c in clean] == ["clean_noisymix"] and clean[0]["threshold"] == 0.0
    assert clean[0]["verdict"] == "holds"
    claims = {c["id"]: c for c in _claims(_values(-0.5, [1.0] * 5, [1.0] * 5), ["baseline", "noisymix"])}
    assert claims["clean_noisymix"]["verdict"] == "fails"  # loses half a point: no gain


def test_a_run_without_calibration_under_corruption_has_no_such_claim():
    values = _values(0.0, [1.0] * 3, [1.0] * 3)
    for method in values.values():
        method["rms_calibration_error_corrupted"] = {}
    assert not any(c["id"].startswith("calibrated_") for c in _claims(values, ["baseline", "noisymix"]))


def test_lookup_follows_a_key_path_and_says_none_where_it_breaks():
    summary = {"mean_accuracy": 0.8, "calibration": {"rms_calibration_error": 0.12}}
    assert _lookup(summary, ("calibration", "rms_calibration_error")) == pytest.approx(0.12)
    assert _lookup(summary, ("mean_accuracy",)) == pytest.approx(0.8)
    assert _lookup(summary, ("calibration", "ece")) is None and _lookup({}, ("calibration", "x")) is None
