"""The per-severity panel of the report (issue 31): accuracy, RMS calibration error and the signed
confidence gap against severity, clean at 0, from the runs' own evaluation records."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from noisymix_figures.calibration_severity import calibration_by_severity
from noisymix_figures.results import Run


def _run(accuracy: list[list[float]], rms: list[float], gap: list[float], clean: tuple[float, float, float]) -> Run:
    """accuracy[c][s]: corruption c at severity s + 1; rms/gap[s]: the suite's per-severity means."""
    results = {f"c{c}": {str(s + 1): {"accuracy": a} for s, a in enumerate(row)} for c, row in enumerate(accuracy)}
    per_severity = {str(s + 1): {"rms_calibration_error": r, "confidence_gap": g, "ece": r}
                    for s, (r, g) in enumerate(zip(rms, gap, strict=True))}
    evals = {"digits16-c": {"results": results, "summary": {"clean_accuracy": clean[0],
                                                          "calibration": {"per_severity": per_severity}}},
             "calibration": {"summary": {"rms_calibration_error": clean[1], "confidence_gap": clean[2]}}}
    return Run(Path("r"), {"dataset": "digits16", "model": "preactresnet18", "method": "noisymix"}, evals, [])


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.lists(st.lists(st.floats(0, 1), min_size=5, max_size=5), min_size=2, max_size=3),
                          st.lists(st.floats(0, 0.5), min_size=5, max_size=5),
                          st.lists(st.floats(-0.5, 0.5), min_size=5, max_size=5),
                          st.tuples(st.floats(0, 1), st.floats(0, 0.5), st.floats(-0.5, 0.5))),
                min_size=1, max_size=3))
def test_the_panel_draws_the_seed_mean_of_each_severity(tmp_path_factory, seeds):
    out = tmp_path_factory.mktemp("f") / "sev.png"
    runs = [_run([list(c) for c in acc], list(rms), list(gap), clean) for acc, rms, gap, clean in seeds]
    assert calibration_by_severity({("digits16", "preactresnet18", "noisymix"): runs}, out) == out
    rows = list(csv.DictReader(out.with_suffix(".csv").open()))
    got = {(r["measure"], int(r["severity"])): float(r["mean"]) for r in rows}
    # independent: the mean over corruptions of each seed, then over seeds (percent)
    for s in range(1, 6):
        accs = [np.mean([row[s - 1] for row in acc]) for acc, *_ in seeds]
        assert abs(got[("accuracy", s)] - 100 * np.mean(accs)) < 1e-3
        assert abs(got[("rms_calibration_error", s)] - 100 * np.mean([rms[s - 1] for _, rms, _, _ in seeds])) < 1e-3
        assert abs(got[("confidence_gap", s)] - 100 * np.mean([gap[s - 1] for _, _, gap, _ in seeds])) < 1e-3
    assert abs(got[("confidence_gap", 0)] - 100 * np.mean([c[2] for *_, c in seeds])) < 1e-3
    assert abs(got[("accuracy", 0)] - 100 * np.mean([c[0] for *_, c in seeds])) < 1e-3


def test_no_per_severity_calibration_draws_nothing(tmp_path):
    run = _run([[0.5] * 5], [0.1] * 5, [0.0] * 5, (0.9, 0.1, 0.0))
    del run.evals["digits16-c"]["summary"]["calibration"]
    assert calibration_by_severity({("digits16", "preactresnet18", "noisymix"): [run]}, tmp_path / "x.png") is None
    assert not (tmp_path / "x.png").exists()
