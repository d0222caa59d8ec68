"""Issue 63, goal 6: every fidelity sentence from the measured numbers (noisymix_app.analogue.fidelity.lines)."""

from __future__ import annotations

from fullscale.vocabulary import CORRUPTIONS
from noisymix_app.analogue.fidelity import lines


def _row(ours: float, paper: float, severities: list[float], flags: list[str] | None = None) -> dict:
    tolerance = max(0.4 * paper, 5.0)
    return {"ours": ours, "paper": paper, "in_sample": paper, "seeds": 9,
            "within_tolerance": abs(ours - paper) <= tolerance, "at_least": ours >= 3.0, "severities": severities,
            "flags": flags or []}


def _profile(rows: dict) -> dict:
    return {"rows": rows, "rank_correlation": 0.9, "in_sample_rank_correlation": 0.94, "within_tolerance": 0,
            "at_least": 15, "of": len(rows), "seeds": 9, "fitted_set": True, "made": None}


def test_the_words_name_floors_misses_and_severities_as_measured():
    smooth = [90.0, 85.0, 80.0, 75.0, 70.0]  # mean 80: drop 15 from a clean 95
    rows = {name: _row(15.0, 15.0, smooth) for name in CORRUPTIONS}
    rows["brightness"] = _row(5.5, 1.5, [96, 95, 93, 90, 78])        # floored target, +267 %: the 5-point floor
    rows["fog"] = _row(20.0, 6.9, [90, 85, 80, 75, 70])              # beyond 40 % and 5 points
    rows["pixelate"] = _row(14.5, 20.8, [96, 95, 95, 94, 24])        # a cliff at s5
    rows["impulse_noise"] = _row(39.0, 42.7, [93, 82, 65, 27, 12], ["s5 chance"])
    text = "\n".join(lines({"c": _profile(rows)}))
    assert "by construction" not in text
    assert "floored at 4.5 points (floored: brightness (the paper's 1.5))" in text
    assert "only within the 5-point floor (brightness (+267 %))" in text
    assert "1 beyond both (fog (+190 %))" in text
    assert "pixelate (s5 cliff)" in text and "impulse_noise (s5 chance, s4 cliff)" in text
    assert "| brightness | 5.5 | 1.5 | 4.5 |" in text  # the paper's drop and the target it was fitted to


def test_the_fresh_seeds_profile_is_a_column_and_a_number_of_its_own():
    rows = {name: _row(15.0, 15.0, [90.0, 85.0, 80.0, 75.0, 70.0]) for name in CORRUPTIONS}
    fresh = _profile({name: _row(12.0, 15.0, [90.0, 85.0, 80.0, 75.0, 70.0]) for name in CORRUPTIONS})
    fresh.update(seeds=10, rank_correlation=0.81)
    text = "\n".join(lines({"c": _profile(rows), "fresh": {"c": fresh}}))
    assert "on the 10 fresh seeds of the eight-method plan (trained after the fits were frozen) +0.81" in text
    assert "| fresh seeds (10) |" in text and "| gaussian_noise | 15.0 | 12.0 | 15.0 |" in text
