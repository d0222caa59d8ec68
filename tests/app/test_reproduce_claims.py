"""The main job's claims decided from the registry (issue 57): each claim's direction (a lower-is-better
metric's difference is the other method's minus NoisyMix's), calibration on the paper's own metrics, one clean
claim, descriptive rows outside the family."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from noisymix_app.reproduce.claims import decide, descriptive_of, family_of
from noisymix_app.reproduce.summary import _lookup


def _values(shift_clean: float, rms_base: list[float], rms_noisymix: list[float]) -> dict:
    seeds = range(len(rms_base))
    base_clean = [95.0 + 0.3 * s for s in seeds]
    return {
        "baseline": {"clean": dict(zip(seeds, base_clean)), "corrupted": dict(zip(seeds, [80.0 + s for s in seeds])),
                     "rms_calibration_error_corrupted": dict(zip(seeds, rms_base)),
                     "aurra_corrupted": dict(zip(seeds, [70.0 + 0.5 * s for s in seeds]))},
        "noisymix": {"clean": {s: c + shift_clean + 0.1 * (s % 2) for s, c in zip(seeds, base_clean)},
                     "corrupted": dict(zip(seeds, [88.0 + s for s in seeds])),
                     "rms_calibration_error_corrupted": dict(zip(seeds, rms_noisymix)),
                     "aurra_corrupted": dict(zip(seeds, [72.0 + 0.5 * s + 0.1 * (s % 2) for s in seeds]))},
    }


def test_calibration_is_decided_on_the_unscaled_error_and_aurra_in_their_directions():
    base, ours = [12.0, 14.0, 13.0, 15.0, 11.0], [20.0, 19.5, 21.0, 18.0, 22.0]
    claims = {c["id"]: c for c in decide(_values(0.0, base, ours), ["baseline", "noisymix"], "main")}
    rms = claims["calibrated_noisymix_vs_baseline"]
    assert rms["metric"] == "rms_calibration_error_corrupted" and rms["better"] == "lower"
    differences = np.subtract(base, ours)  # lower is better: the other's error minus NoisyMix's
    half = stats.t.ppf(0.975, len(differences) - 1) * differences.std(ddof=1) / np.sqrt(len(differences))
    assert rms["difference"]["mean"] == pytest.approx(differences.mean())
    assert rms["difference"]["half_width"] == pytest.approx(half)
    assert rms["verdict"] == "fails"  # NoisyMix's error is the larger here: the opposite is measured
    aurra = claims["aurra_noisymix_vs_baseline"]
    assert aurra["better"] == "higher" and aurra["difference"]["mean"] == pytest.approx(2.0 + 0.1 * 2 / 5)
    assert not rms["matching"] and not aurra["matching"]  # ImageNet-R: the direction only
    assert rms["decidable"] is None and aurra["decidable"] is None


def test_noisymix_has_one_clean_claim_the_gain():
    """Issue 52: "keeps" and "improves" were one paired difference counted twice; the paper's claim is the gain."""
    claims = decide(_values(0.8, [1.0] * 5, [1.0] * 5), ["baseline", "noisymix"], "main")
    clean = [c for c in claims if c["metric"] == "clean"]
    assert [c["id"] for c in clean] == ["clean_noisymix_vs_baseline"] and clean[0]["verdict"] == "holds"
    claims = {c["id"]: c for c in decide(_values(-0.5, [1.0] * 5, [1.0] * 5), ["baseline", "noisymix"], "main")}
    assert claims["clean_noisymix_vs_baseline"]["verdict"] == "fails"  # loses half a point: no gain


def test_what_the_paper_does_not_state_is_descriptive_and_outside_the_family():
    values = _values(0.0, [1.0] * 4, [1.0] * 4)
    values["augmix_jsd"] = {k: dict(v) for k, v in values["noisymix"].items()}
    ids = {c["id"] for c in decide(values, ["baseline", "augmix_jsd", "noisymix"], "main")}
    described = {c["id"] for c in descriptive_of(values, ["baseline", "augmix_jsd", "noisymix"])}
    assert {"robust_augmix_jsd_vs_baseline", "clean_augmix_jsd_vs_baseline"} <= described
    assert not ids & described and all("augmix_jsd_vs" not in i for i in ids)


def test_each_plan_decides_its_own_family():
    assert family_of("laptop") == "main" and family_of("laptop --set seeds=5,6") == "main"
    assert family_of("analogue-methods --set workers=2") == "eight-method" and family_of("ablation") == "ablation"
    values = _values(0.0, [1.0] * 3, [1.0] * 3)
    assert decide(values, ["baseline", "noisymix"], "eight-method") == []  # its methods were not run


def test_lookup_follows_a_key_path_and_says_none_where_it_breaks():
    summary = {"mean_accuracy": 0.8, "calibration": {"rms_calibration_error": 0.12}}
    assert _lookup(summary, ("calibration", "rms_calibration_error")) == pytest.approx(0.12)
    assert _lookup(summary, ("mean_accuracy",)) == pytest.approx(0.8)
    assert _lookup(summary, ("calibration", "ece")) is None and _lookup({}, ("calibration", "x")) is None
