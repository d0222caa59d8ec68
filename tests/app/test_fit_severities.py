"""Issue 51, goal 3: the matched Digits-C per severity — the clip test against the strength rules'
bounds, the flags, and the report's sentence on whether the published rows share a flag."""

from __future__ import annotations

import json

import pytest

from fullscale.corruptions.matched import matched_strength
from noisymix_app.analogue.severities import SEVERITIES_FILE, clipped, markdown, severity_flags


def test_pixelate_clips_at_its_bound_and_noise_does_not():
    # pixelate's factor is kept >= 0.1: severity 5's 0.65 reaches 0.1 at k = 0.9 / 0.35 = 2.57
    assert not clipped("pixelate", 5, 2.0) and clipped("pixelate", 5, 3.0)
    assert not clipped("gaussian_noise", 5, 50.0)  # an sd has no bound
    assert not clipped("pixelate", 5, 1.0)  # the published row is the row itself
    assert clipped("impulse_noise", 5, 20.0)  # a fraction of pixels is at most 1: 0.07 * 20 > 1


def test_flags_mark_chance_clips_and_rows_that_run_backwards():
    assert severity_flags([90, 80, 60, 40, 12], [False] * 4 + [True]) == ["s5 chance", "s5 clip"]
    assert severity_flags([78.7, 80, 82, 85, 89.7], [False] * 5) == ["backwards"]
    assert severity_flags([90, 80, 70, 60, 50], [False] * 5) == []


def _record(matched_flags, published_flags):
    entry = {"strength": 2.0, "matched": {"accuracy": [90, 80, 70, 60, 12], "clip": [False] * 5,
                                          "flags": matched_flags},
             "published": {"accuracy": [95, 94, 93, 92, 91], "clip": [False] * 5, "flags": published_flags}}
    return {"seeds": [100], "images": 10, "clean_accuracy": 95.0, "chance_floor": 15.0,
            "corruptions": {"impulse_noise": entry}}


def test_the_report_says_whether_the_published_rows_share_a_flag():
    assert "impulse_noise s5 chance: the analogue's own" in markdown(_record(["s5 chance"], []))
    assert "elastic" not in markdown(_record([], []))
    shared = markdown(_record(["backwards"], ["backwards"]))
    assert "backwards: the published rows do so too" in shared


@pytest.mark.skipif(not SEVERITIES_FILE.is_file(), reason="no frozen severity profile")
def test_the_frozen_profile_is_of_the_frozen_strengths():
    record = json.loads(SEVERITIES_FILE.read_text())
    for name, entry in record["corruptions"].items():
        assert entry["strength"] == matched_strength(name)
        for table in ("matched", "published"):
            assert entry[table]["flags"] == severity_flags(entry[table]["accuracy"], entry[table]["clip"])


def test_a_folder_without_the_fits_models_is_refused_in_one_line_leaving_nothing(tmp_path, one_line_error):
    from noisymix_app.cli import main

    out = tmp_path / "fit"
    assert main(["fit-analogue", "--kind", "severities", "--out", str(out)]) == 2
    assert "no fitted Baseline model" in one_line_error()
    assert not out.exists()
    assert main(["fit-analogue", "--kind", "severities", "--out", str(out), "--set", "steps=2"]) == 2
    assert "takes no --set" in one_line_error()
