"""Summaries, paired bootstrap comparisons, verdicts and claims on hand-made numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from toy.claims import evaluate_claims
from toy.schemes import PAPER_SCHEMES
from toy.stats import HOLDS, NOT_HOLDS, WITHIN_NOISE, combine, paired, summarize, verdict


def test_summary_by_hand():
    s = summarize([1.0, 2.0, 3.0])
    assert s["mean"] == 2.0 and s["std"] == 1.0 and s["n"] == 3
    half = 4.302652729911275 / math.sqrt(3)               # t_{0.975, 2}, from tables
    assert s["ci95"] == pytest.approx([2 - half, 2 + half], rel=1e-9)
    one = summarize([0.5])
    assert one == {"values": [0.5], "n": 1, "mean": 0.5}   # std and CI absent, not null
    with pytest.raises(ValueError):
        summarize([])


def test_paired_counts_and_bootstrap():
    a, b = [0.9, 0.8, 0.7, 0.6, 0.5], [0.8, 0.8, 0.8, 0.5, 0.4]
    p = paired(a, b)
    assert (p["wins"], p["ties"], p["losses"]) == (3, 1, 1)
    assert p["win_rate"] == pytest.approx(0.6)
    assert p["mean_difference"] == pytest.approx(0.04)
    lo, hi = p["ci95"]
    assert -0.1 <= lo < 0.04 < hi <= 0.1 + 1e-12                # within the range of d
    assert paired(a, b) == p                                   # seeded: same numbers every run
    # the bootstrap distribution of the mean of d: its percentiles, recomputed by brute force
    d = np.array(a) - np.array(b)
    rng = np.random.default_rng(p["bootstrap"]["seed"])
    means = [d[rng.integers(0, 5, size=5)].mean() for _ in range(p["bootstrap"]["resamples"])]
    assert p["ci95"] == pytest.approx([np.percentile(means, 2.5), np.percentile(means, 97.5)])
    const = paired([1.0, 2.0, 3.0], [0.5, 1.5, 2.5])
    assert const["ci95"] == pytest.approx([0.5, 0.5])
    with pytest.raises(ValueError):
        paired([1.0], [1.0, 2.0])


def test_verdicts_and_combination():
    assert verdict({"ci95": [0.1, 0.2]}, "greater") == HOLDS
    assert verdict({"ci95": [-0.2, -0.1]}, "greater") == NOT_HOLDS
    assert verdict({"ci95": [-0.1, 0.1]}, "greater") == WITHIN_NOISE
    assert verdict({"ci95": [-0.2, -0.1]}, "less") == HOLDS
    assert verdict({"mean_difference": 1.0}, "less") == WITHIN_NOISE      # one seed: no CI
    assert combine([HOLDS, HOLDS]) == HOLDS
    assert combine([HOLDS, WITHIN_NOISE]) == WITHIN_NOISE
    assert combine([HOLDS, NOT_HOLDS, WITHIN_NOISE]) == NOT_HOLDS


def _metrics(acc_offsets, smooth_offsets, n=12):
    rng = np.random.default_rng(0)
    base = rng.uniform(0.8, 0.9, n)
    noise = rng.normal(0, 0.001, (len(PAPER_SCHEMES), n))
    out = {}
    for k, name in enumerate(PAPER_SCHEMES):
        smooth = 1.0 + smooth_offsets[k] + noise[k]
        out[name] = {"accuracy": list(base + acc_offsets[k] + noise[k]),
                     "grad_norm": list(smooth), "hessian_norm": list(smooth), "contour_length": list(smooth)}
    return out


def test_claims_follow_the_numbers():
    paper_like = _metrics([0.0, 0.0, 0.01, 0.02, 0.03, 0.04], [0.5, 0.4, 0.3, 0.2, 0.1, 0.0])
    verdicts = {c["id"]: c["verdict"] for c in evaluate_claims(paper_like)}
    assert verdicts["accuracy_ordering"] == HOLDS
    assert verdicts["noisymix_best_accuracy"] == HOLDS
    assert verdicts["noisymix_smoothest"] == HOLDS
    assert verdicts["jsd_helps_manifold_mixup"] == HOLDS
    assert verdicts["nfm_between"] == HOLDS
    reversed_ = _metrics([0.04, 0.03, 0.02, 0.01, 0.0, -0.01], [0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    verdicts = {c["id"]: c["verdict"] for c in evaluate_claims(reversed_)}
    assert set(verdicts.values()) == {NOT_HOLDS}
    flat = _metrics([0.0] * 6, [0.0] * 6)
    verdicts = {c["id"]: c["verdict"] for c in evaluate_claims(flat)}
    assert set(verdicts.values()) == {WITHIN_NOISE}


def test_claims_need_their_schemes():
    keep = ("manifold_mixup", "manifold_mixup_jsd")
    some = {k: v for k, v in _metrics([0.0] * 6, [0.0] * 6).items() if k in keep}
    assert [c["id"] for c in evaluate_claims(some)] == ["jsd_helps_manifold_mixup"]
