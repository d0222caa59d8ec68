"""Issue 51, goal 3, and issue 57, goal 4: the matched Digits-C per severity — the clip test against the
strength rules' bounds, the flags, the fit's rule against chance and clips, and the report's sentence on
whether the published rows share a flag."""

from __future__ import annotations

import pytest

from fullscale.corruptions.matched import MATCHED_FILE, matched_fit
from noisymix_app.analogue.fit_c import bisect_strength, choose
from noisymix_app.analogue.severities import CHANCE_FLOOR, clipped, markdown, refusal, severity_flags


def test_pixelate_clips_at_its_bound_and_noise_does_not():
    # pixelate's factor is kept >= 0.1: severity 5's 0.65 reaches 0.1 at k = 0.9 / 0.35 = 2.57
    assert not clipped("pixelate", 5, 2.0) and clipped("pixelate", 5, 3.0)
    assert not clipped("gaussian_noise", 5, 50.0)  # an sd has no bound
    assert not clipped("pixelate", 5, 1.0)  # the published row is the row itself
    assert clipped("impulse_noise", 5, 20.0)  # a fraction of pixels is at most 1: 0.07 * 20 > 1


def test_flags_mark_chance_clips_and_rows_that_run_backwards():
    assert severity_flags("pixelate", [90, 80, 60, 40, 12], 3.0) == ["s5 chance", "s5 clip"]
    assert severity_flags("gaussian_noise", [78.7, 80, 82, 85, 89.7], 2.0) == ["backwards"]
    assert severity_flags("gaussian_noise", [90, 80, 70, 60, 50], 2.0) == []


def test_a_severity_at_chance_or_a_clip_is_refused_unless_the_published_rows_share_it():
    published = [95.0, 94.0, 93.0, 92.0, 91.0]
    assert refusal("impulse_noise", 3.0, [90, 80, 60, 40, CHANCE_FLOOR], published).startswith("s5 chance")
    assert refusal("impulse_noise", 3.0, [90, 80, 60, 40, 20], published) is None
    # the published rows at chance there too: not the analogue's own, so not refused
    assert refusal("gaussian_noise", 1.5, [90, 80, 60, 40, 11], [95, 90, 80, 50, 12]) is None
    assert refusal("pixelate", 3.0, [90, 80, 60, 40, 30], published) == "s5 clip"


def test_a_refused_strength_counts_as_too_strong_and_is_never_chosen():
    """A drop that grows with k, a target above what is allowed: every refused point sends the bisection
    down, and the choice is the nearest allowed point, not the nearer refused one."""
    drop = lambda k: 10.0 * k  # noqa: E731
    refuse = lambda k: "s5 chance" if k > 1.5 else None  # noqa: E731
    trace = bisect_strength(drop, 40.0, 6, 4.0, refuse)
    assert trace[0] == (1.0, 10.0)
    refused = {k for k, _ in trace if refuse(k)}
    assert all(k <= 2 ** 4 for k, _ in trace) and refused  # it tried above the bound, then came back
    strength, measured = choose(trace, 40.0, refused)
    assert measured == pytest.approx(10.0 * strength, abs=1e-3)  # the trace keeps 4 decimals
    assert strength <= 1.5 and strength == max(k for k, _ in trace if k not in refused)
    with pytest.raises(ValueError, match="no allowed strength"):
        choose([(2.0, 20.0)], 40.0, {2.0})


def _record(matched_flags, published_flags):
    entry = {"strength": 2.0, "severities": {"matched": [90, 80, 70, 60, 12], "published": [95, 94, 93, 92, 91]},
             "flags": {"matched": matched_flags, "published": published_flags}}
    return {"images": {"split": "fit", "count": 150}, "clean_accuracy": [95.0], "fit": {"impulse_noise": entry}}


def test_the_report_says_whether_the_published_rows_share_a_flag():
    assert "impulse_noise s5 chance: the analogue's own" in markdown(_record(["s5 chance"], []))
    assert "elastic" not in markdown(_record([], []))
    shared = markdown(_record(["backwards"], ["backwards"]))
    assert "backwards: the published rows do so too" in shared
    assert markdown({"fit": {"impulse_noise": {"strength": 2.0}}}) == ""  # a record older than the severities


@pytest.mark.skipif(not MATCHED_FILE.is_file(), reason="no frozen Digits-C fit")
def test_the_frozen_fit_has_no_severity_of_its_own_at_chance_or_clip():
    """Issue 57, goal 4: after the constrained refit no severity is at chance or at its clip unless the
    published rows are too (recomputed from the record's accuracies and the rules, not read from flags)."""
    record = matched_fit()
    if not all("severities" in e for e in record["fit"].values()):
        pytest.skip("the frozen fit predates the per-severity record")
    for name, entry in record["fit"].items():
        accuracies, published = entry["severities"]["matched"], entry["severities"]["published"]
        assert refusal(name, entry["strength"], accuracies, published) is None, name
        assert entry["flags"]["matched"] == severity_flags(name, accuracies, entry["strength"])
