"""Issue 60, root cause 5: only ``ValueError`` became one line, and two readers of user files let other
errors through: ``noisymix analogue --results DIR`` on an evaluation ``{"summary": null}`` and
``python -m noisymix_app.reproduce.summary --rerender FILE`` of a missing, truncated or ``[1]`` file gave
tracebacks.  Both read through ``noisymix_infra.io.read_json_object``; the summary module's own command
line ends in one line as ``noisymix`` does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.app.test_analogue_methods import _runs_like_the_paper, _write_fixture_runs


@pytest.mark.parametrize("spoil", ['{"summary": null}', '{"summary": {}}', '{"summary": {"accuracy": null}}',
                                   '{"results": null}', '{"summary": {"per_corruption": []}}'])
def test_analogue_on_an_evaluation_without_its_numbers_is_one_line_naming_it(tmp_path, one_line_error, spoil):
    from noisymix_app.cli import main

    results = tmp_path / "results"
    _write_fixture_runs(results, _runs_like_the_paper(1.0, 0.3, seeds=2))
    name = "digits-p.json" if "results" in spoil else "digits-c.json" if "per_corruption" in spoil else "clean.json"
    from noisymix_app.reproduce.plans import PLANS

    run = f"cutmix-seed{PLANS['analogue-methods'].seeds[1]}"  # the fixture's second seed
    (results / "runs" / run / "eval" / name).write_text(spoil)
    assert main(["analogue", "--results", str(results), "--draws", "200"]) == 2
    line = one_line_error()
    assert f"{run}/eval/{name}" in line, line
    assert not (results / "analogue").exists()


@pytest.mark.parametrize("content", [None, '{"plan": {"seeds": [0]}, "tab', "[1]", '{"plan": null, "table": {}}'])
def test_rerender_of_a_broken_summary_is_one_line_naming_it_and_writes_nothing(tmp_path, content):
    path = tmp_path / "summary.json"
    if content is not None:
        path.write_text(content)
    done = subprocess.run([sys.executable, "-m", "noisymix_app.reproduce.summary", "--rerender", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    err = done.stderr.strip()
    assert done.returncode == 2 and "\n" not in err and "Traceback" not in err, err
    assert err.startswith("python -m noisymix_app.reproduce.summary: error: ") and str(path) in err, err
    assert done.stdout == ""
    json.dumps(err)  # printable


# ---- other readers of a run's files that indexed into what they read ---------------------------------

SPOILED = ["[1]", "null", '{"suite": "clean", "checkpoint": null, "complete": true, "summary": null}',
           '{"suite": "clean", "checkpoint": 3, "complete": true, "summary": [1], "data": [1]}',
           '{"suite": "calibration", "checkpoint": {"sha256": "x"}, "complete": true, "summary": 7}']


@pytest.mark.parametrize("spoil", SPOILED)
def test_a_spoiled_evaluation_is_not_done_and_no_traceback(tmp_path, spoil):
    """``sweep status``, ``reproduce`` and ``sweep`` ask whether each evaluation is done: an evaluation file
    ``[1]`` or with ``"checkpoint": null`` was an ``AttributeError`` traceback; it is not done (evaluated
    again, where ``evaluate`` refuses a file of the user's own in one line)."""
    from noisymix_app.sweep.plan import EvalSpec
    from noisymix_app.sweep.state import eval_done

    run = tmp_path / "run"
    (run / "eval").mkdir(parents=True)
    (run / "final.pt").write_bytes(b"weights")
    suite = "calibration" if "calibration" in spoil else "clean"
    (run / "eval" / f"{suite}.json").write_text(spoil)
    assert eval_done(run, EvalSpec(suite)) is False
    assert eval_done(run, EvalSpec(suite, str(tmp_path))) is False


@pytest.mark.parametrize("spoil", SPOILED)
def test_a_spoiled_clean_evaluation_gives_no_relative_mce_and_no_traceback(tmp_path, spoil):
    """``evaluate --suite <set>-c`` reads the run's clean.json for relative mCE: ``"checkpoint": null`` was an
    ``AttributeError``; a file it cannot use is as none."""
    from fullscale.evaluation.context import EvalOptions
    from fullscale.evaluation.evaluate_run import _clean_accuracy

    (tmp_path / "clean.json").write_text(spoil)
    assert _clean_accuracy(tmp_path, "x", EvalOptions(), False) == (None, None)


@pytest.mark.parametrize("spoil", ["[1]", "null", '"running"', "{"])
def test_a_spoiled_sweep_state_is_read_as_none(tmp_path, spoil):
    """``sweep status`` and ``reproduce`` read each run's ``sweep/state/<run>.json``: ``[1]`` was a traceback."""
    from noisymix_app.sweep.state import read_state

    (tmp_path / "sweep" / "state").mkdir(parents=True)
    (tmp_path / "sweep" / "state" / "r.json").write_text(spoil)
    assert read_state(tmp_path, "r") == {}
