"""Issues 32, 40, 52, 57: each verdict marked firm, fragile or *margin unknown* against its metric's
cross-machine margin, measured on the same sets: firm when moving the paired mean by the margin leaves the
stated verdict (after Holm) as it is; the margins the largest shift per metric between two CPUs."""

from __future__ import annotations

import pytest

from noisymix_app.reproduce.claims import decide
from noisymix_app.reproduce.margins import cross_machine_margins
from noisymix_app.reproduce.summary import render


def _values(robust: float, over_nfm: float, sd: float = 1.0, n: int = 9) -> dict:
    """NoisyMix Baseline's + ``robust`` and NFM's + ``over_nfm`` on corrupted accuracy, per-seed noise of sd ~sd."""
    noise = [sd * x for x in (-1.2, 0.4, 1.5, -0.3, 0.9, -1.6, 0.2, 1.1, -1.0)][:n]
    base = {s: 60.0 + s for s in range(n)}
    return {"baseline": {"corrupted": base},
            "nfm": {"corrupted": {s: base[s] + robust - over_nfm - noise[s] / 2 for s in range(n)}},
            "noisymix": {"corrupted": {s: base[s] + robust + noise[s] for s in range(n)}}}


def _claims(values, margins):
    return {c["id"]: c for c in decide(values, ["baseline", "nfm", "noisymix"], "main", margins)}


def test_firm_means_no_shift_by_the_margin_changes_the_stated_verdict():
    """A verdict whose adjusted p sits near 5 % is fragile, one far from it firm; without a margin measured on
    these sets: margin unknown (None)."""
    margins = {"corrupted": 1.45}
    near = _claims(_values(10.0, 2.0), margins)["robust_noisymix_vs_nfm"]
    far = _claims(_values(10.0, 9.0), margins)["robust_noisymix_vs_nfm"]
    assert near["verdict"] == "holds" and near["firm"] is False and near["margin"] == 1.45
    assert far["verdict"] == "holds" and far["firm"] is True
    unknown = _claims(_values(10.0, 9.0), {})["robust_noisymix_vs_nfm"]
    assert unknown["firm"] is None and unknown["margin"] is None
    one_seed = _claims(_values(10.0, 9.0, n=1), margins)["robust_noisymix_vs_nfm"]
    assert one_seed["firm"] is None and one_seed["verdict"] == "not enough seeds"


def _summary(claims, **extra):
    return {"plan": {"seeds": list(range(9)), "methods": ["baseline", "nfm", "noisymix"], "dataset": "digits",
                     "model": "m", "width": 8, "epochs": 1}, "git": {}, "corruptions": [15], "table": {},
            "claims": claims, **extra}


def test_each_claim_line_carries_its_stated_verdict_and_mark():
    claims = decide(_values(10.0, 2.0), ["baseline", "nfm", "noisymix"], "main", {"corrupted": 1.45})
    text = render(_summary(claims, margins={"corrupted": 1.45}))
    lines = {line.split("**")[1]: line for line in text.splitlines() if line.startswith("- **")}
    assert "— **holds**, fragile" in lines["NoisyMix is more robust than NFM"]
    assert "A verdict marked fragile changes" in text and "corrupted accuracy 1.45 points" in text
    plain = render(_summary(decide(_values(10.0, 2.0), ["baseline", "nfm", "noisymix"], "main", {})))
    assert "margin unknown" in plain and "No cross-machine margin has been measured on these sets" in plain


def test_margins_are_the_largest_shift_per_metric_between_cpus_on_the_same_sets():
    def summary(cpu, robust, flip, sets="s"):
        return {"plan": {"seeds": [0, 1]}, "machine": {"cpu_model": cpu}, "git": {"commit": cpu}, "sets": sets,
                "claims": [{"id": "robust_noisymix_vs_nfm", "metric": "corrupted", "difference": {"mean": robust}},
                           {"id": "stable_noisymix_vs_baseline", "metric": "flip_probability",
                            "difference": {"mean": flip}}]}

    record = cross_machine_margins([summary("A", 1.0, 0.30), summary("B", 1.5, 0.32), summary("A", 9.0, 0.0),
                                    summary("C", 50.0, 5.0, sets="other")])
    # the two runs on CPU "A" are no cross-machine pair, and C's sets are other sets: the A-B pairs only
    assert record["margins"] == pytest.approx({"corrupted": 7.5, "flip_probability": 0.32})
    assert len(record["pairs"]) == 2 and record["sets"] == "s"
