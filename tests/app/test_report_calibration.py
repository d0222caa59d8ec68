"""Issue 46, item 3: the report's "Calibration under shift" section (``noisymix_app.reproduce.report_calibration``)
from a reproduce folder's -C records: intervals over seeds, the floor beside, the paired verdict, and
results made before it (which say the section needs a rerun)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from noisymix_app.reproduce.report_calibration import calibration_shift_lines, calibration_shift_summary, report
from noisymix_infra.io import write_json

SEEDS = (0, 1, 2, 3)


def _block(before: float, after: float, floor: float, t: float) -> dict:
    per = {str(s): {"rms_calibration_error": before + 0.01 * s, "rms_calibration_error_scaled": after + 0.005 * s,
                    "noise_floor": {"mean": floor, "p95": 1.6 * floor}} for s in range(6)}
    return {"per_severity": per, "temperature": {"all_clean_images": t, "fold_temperatures": [t, t]}}


def _out(tmp_path, blocks: dict) -> None:
    """A reproduce folder: reproduce.json and each run's digits-c.json (summary only)."""
    write_json(tmp_path / "reproduce.json", {"plan": {"methods": ["baseline", "noisymix"], "seeds": list(SEEDS),
                                                      "corrupted_suite": "digits-c"}})
    for (method, seed), block in blocks.items():
        summary = {"mean_accuracy": 0.8}
        if block is not None:
            summary["calibration_under_shift"] = block
        write_json(tmp_path / "runs" / f"{method}-seed{seed}" / "eval" / "digits-c.json",
                   {"suite": "digits-c", "summary": summary})


def test_the_numbers_over_seeds_and_the_paired_verdict(tmp_path):
    base_after = [0.020, 0.025, 0.022, 0.030]
    nm_after = [0.050, 0.061, 0.055, 0.058]  # NoisyMix worse after scaling by 3.2 points on every seed
    blocks = {("baseline", s): _block(0.05, a, 0.012, 0.9) for s, a in zip(SEEDS, base_after, strict=True)}
    blocks |= {("noisymix", s): _block(0.30, a, 0.015, 0.6 + 0.01 * s) for s, a in zip(SEEDS, nm_after, strict=True)}
    _out(tmp_path, blocks)
    data = calibration_shift_summary(tmp_path)
    # independent: mean and the t-interval of the points at severity 5 (after: + 0.005 x 5)
    values = 100 * (np.array(nm_after) + 0.025)
    cell = data["methods"]["noisymix"]["per_severity"]["5"]
    assert cell["after"]["mean"] == pytest.approx(values.mean())
    assert cell["after"]["half_width"] == pytest.approx(stats.t.ppf(0.975, 3) * values.std(ddof=1) / 2)
    assert cell["before"]["mean"] == pytest.approx(100 * (0.30 + 0.05))
    assert cell["noise_floor"] == pytest.approx({"mean": 1.5, "p95": 2.4})
    assert data["methods"]["noisymix"]["temperature_all_clean_images"]["mean"] == pytest.approx(0.615)
    d = 100 * (np.array(nm_after) - np.array(base_after))
    assert data["verdict"]["difference"]["mean"] == pytest.approx(d.mean())
    assert data["verdict"]["words"] == "above" and data["needs_rerun"] == []
    lines = calibration_shift_lines(data)
    text = "\n".join(lines)
    assert lines[0] == "**Calibration under shift.**" and "Ovadia" in text \
        and "calibration_shift.png among the job's figures" in text
    assert text.count("| NoisyMix |") == 6 and text.count("| Baseline |") == 6  # severities clean, 1..5
    verdict = lines[-1]
    assert verdict.startswith("Verdict: at severity 5") and "above Baseline's" in verdict
    assert f"{d.mean():+.1f}" in verdict and "paired over 4 seeds" in verdict
    assert "NoisyMix's 8.1 is above its noise floor (95th percentile 2.4)" in verdict
    assert report(tmp_path) == (data, lines)


def test_within_noise_when_the_interval_covers_zero(tmp_path):
    blocks = {("baseline", s): _block(0.05, a, 0.01, 1.0) for s, a in zip(SEEDS, [0.02, 0.03, 0.02, 0.03],
                                                                           strict=True)}
    blocks |= {("noisymix", s): _block(0.05, a, 0.01, 1.0) for s, a in zip(SEEDS, [0.03, 0.02, 0.025, 0.026],
                                                                           strict=True)}
    _out(tmp_path, blocks)
    data = calibration_shift_summary(tmp_path)
    assert data["verdict"]["words"] == "within noise of"
    assert "within noise of Baseline's" in calibration_shift_lines(data)[-1]


def test_results_made_before_it_say_the_section_needs_a_rerun(tmp_path):
    _out(tmp_path, {(m, s): None for m in ("baseline", "noisymix") for s in SEEDS})
    data = calibration_shift_summary(tmp_path)
    assert data["methods"] == {} and len(data["needs_rerun"]) == 8 and data["verdict"] is None
    lines = calibration_shift_lines(data)
    assert "needs a rerun" in lines[-1] and "(8 run(s))" in lines[-1]
    assert "needs a rerun" in calibration_shift_lines(None)[-1]  # a summary.json written before the key
    # one run measured, the rest not: its numbers, the others listed as left out, no paired verdict
    _out(tmp_path, {("noisymix", 0): {"not_measured": "the run's clean test split could not be read"}})
    _out(tmp_path, {("baseline", 0): _block(0.05, 0.02, 0.01, 1.0)})
    data = calibration_shift_summary(tmp_path)
    assert list(data["methods"]) == ["baseline"] and any("clean test split" in r for r in data["needs_rerun"])
    assert calibration_shift_lines(data)[-1] == "Verdict: no NoisyMix and Baseline runs with these records to compare."
