"""Issue 46: the primary claim, Holm's correction over the secondary claims, p-values checked against an
independent computation and hand-computed adjusted values."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from noisymix_app.reproduce.claims import decide
from noisymix_infra.stats import adjusted_verdict, holm, paired, two_sided_p


def test_holm_against_hand_computed_values():
    # sorted: d 0.005 x 4 = 0.02; a 0.01 x 3 = 0.03; c 0.03 x 2 = 0.06; b 0.04 x 1 = 0.04 -> running max 0.06
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005})
    assert adjusted == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06, "d": 0.02})


def test_holm_caps_at_one_and_keeps_a_lone_p():
    assert holm({"x": 0.3, "y": 0.6}) == pytest.approx({"x": 0.6, "y": 0.6})
    assert holm({"x": 0.7, "y": 0.8}) == pytest.approx({"x": 1.0, "y": 1.0})
    assert holm({"only": 0.014}) == {"only": 0.014}


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12))
def test_holm_is_monotone_and_never_below_the_raw_p(ps):
    raw = {f"c{i}": p for i, p in enumerate(ps)}
    adjusted = holm(raw)
    for key, p in raw.items():
        assert p - 1e-12 <= adjusted[key] <= 1.0
    order = sorted(raw, key=lambda k: raw[k])
    assert all(adjusted[a] <= adjusted[b] + 1e-12 for a, b in itertools.pairwise(order))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=3, max_size=10), st.lists(st.floats(-5, 5), min_size=3, max_size=10),
       st.sampled_from([0.0, -1.0]))
def test_two_sided_p_equals_scipys_paired_t_test(a, b, threshold):
    n = min(len(a), len(b))
    diffs = [x - y for x, y in zip(a[:n], b[:n])]
    if max(diffs) - min(diffs) < 1e-6:
        return  # no spread: scipy returns nan
    d = paired(dict(enumerate(a[:n])), dict(enumerate(b[:n])))
    expected = stats.ttest_1samp(diffs, threshold).pvalue
    assert two_sided_p(d, threshold) == pytest.approx(expected, rel=1e-6, abs=1e-12)


def _seeds(values):
    return dict(enumerate(values))


def test_decide_leaves_the_primary_alone_and_adjusts_the_secondary_family():
    """The main family on four methods: the primary (NoisyMix - Baseline, corrupted) at 5 % alone, every other
    claim with data in one Holm family; verdicts from the adjusted p-values."""
    n = 6
    base = {"corrupted": _seeds([70 + s for s in range(n)]),
            "flip_probability": _seeds([10.0 + 0.3 * s for s in range(n)])}
    values = {
        "baseline": base,
        "noisymix": {"corrupted": _seeds([80 + s + 0.5 * (s % 2) for s in range(n)]),
                     "flip_probability": _seeds([5.0 + 0.3 * s + 0.2 * (s % 3) for s in range(n)])},
        "augmix_jsd": {"corrupted": _seeds([79 + s + (s % 3) for s in range(n)]),
                       "flip_probability": _seeds([5.5 + 0.3 * s for s in range(n)])},
        "nfm": {"corrupted": _seeds([75 + s for s in range(n)]),
                "flip_probability": _seeds([7.0 + 0.4 * s for s in range(n)])},
    }
    claims = decide(values, ["baseline", "augmix_jsd", "nfm", "noisymix"], "main")
    by = {c["id"]: c for c in claims}
    primary = by["robust_noisymix_vs_baseline"]
    assert primary["role"] == "primary" and primary["p_adjusted"] == primary["p"] and primary["level"] == 0.05
    rest = [c for c in claims if c["role"] == "secondary" and c["difference"] is not None]
    assert {c["id"] for c in rest} == {"robust_noisymix_vs_augmix_jsd", "robust_noisymix_vs_nfm",
                                       "stable_noisymix_vs_baseline", "stable_noisymix_vs_augmix_jsd",
                                       "stable_noisymix_vs_nfm"}
    expected = holm({c["id"]: c["p"] for c in rest})
    for c in rest:
        assert c["p_adjusted"] == pytest.approx(expected[c["id"]]) and c["level"] == pytest.approx(0.05 / len(rest))
        assert c["verdict"] == adjusted_verdict(c["difference"], 0.0, expected[c["id"]])
    # claims without data (no calibration, no clean values here) stay in the list with no difference, no verdict
    assert by["calibrated_noisymix_vs_baseline"]["difference"] is None
    assert by["clean_noisymix_vs_baseline"]["verdict"] is None


def test_the_issues_example_does_not_hold_after_holm():
    # "NoisyMix flips less than Baseline" at p = 0.014 among 14 secondary claims whose other p-values are
    # larger: Holm multiplies the smallest by 14 (0.196), so it no longer holds at 5 %
    family = {"stable_noisymix_vs_baseline": 0.014, **{f"other{i}": 0.02 + 0.05 * i for i in range(13)}}
    adjusted = holm(family)
    assert adjusted["stable_noisymix_vs_baseline"] == pytest.approx(14 * 0.014)
    assert adjusted_verdict({"mean": 0.4}, 0.0, adjusted["stable_noisymix_vs_baseline"]) == "within noise"


def test_adjusted_verdict_sides():
    d = {"mean": -2.0}
    assert adjusted_verdict(d, 0.0, 0.01) == "fails"
    assert adjusted_verdict({"mean": 2.0}, 0.0, 0.01) == "holds"
    assert adjusted_verdict({"mean": 2.0}, 0.0, 0.2) == "within noise"
