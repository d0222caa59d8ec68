"""Issue 54, root cause 1: a -C step's identity was its argv, and ``--params digits-matched`` names the table,
not the strengths in the package's ``digits_matched.json``.  After a refit (or an edit) the same
``noisymix reproduce`` kept the old set ("corrupt: done (kept)") and the report put the new fit's residuals
beside drops measured on it; with ``--fresh`` the job failed (``corrupt`` refused the old set) until
``data/`` was deleted by hand.  Here the real ``corrupt`` command makes the step's set (one corruption)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from fullscale.corruptions import matched
from fullscale.corruptions.matched import MATCHED_FILE
from noisymix_app.analogue.fit_c import fit_summary
from noisymix_app.cli import main
from noisymix_app.reproduce.plans import PLANS
from noisymix_app.reproduce.steps import _command_step, _steps

PLAN = dataclasses.replace(PLANS["laptop"], corruptions=("contrast",))


@pytest.fixture()
def package(tmp_path, monkeypatch):
    path = tmp_path / "pkg" / "digits_matched.json"
    path.parent.mkdir()
    path.write_bytes(MATCHED_FILE.read_bytes())
    monkeypatch.setattr(matched, "MATCHED_FILE", path)
    matched.matched_fit.cache_clear()
    yield path
    matched.matched_fit.cache_clear()


def _refit(package, factor: float = 2.0) -> None:
    """A refit of contrast, frozen: the strength in ``strengths`` and in its ``fit`` entry."""
    record = json.loads(package.read_text())
    record["strengths"]["contrast"] = record["fit"]["contrast"]["strength"] = round(
        record["strengths"]["contrast"] * factor, 6)
    package.write_text(json.dumps(record))
    matched.matched_fit.cache_clear()


def _corrupt_step(out):
    return next(s for s in _steps(PLAN, out, None)[0] if s.name == "corrupt")


def _finished(log, *, inputs=True):
    return {(e["name"], tuple(e["argv"])): tuple(e["inputs"]) if inputs else None for e in log["steps"]}


def _strength_made(out) -> float:
    return json.loads((out / "data" / "digits-c-digits-matched" / "manifest.json").read_text())["strengths"]["contrast"]


def _run(step, finished, out, log, *, fresh=False) -> bool:
    return _command_step(step, finished, [], main, log, out / "reproduce.json", 0.0, fresh=fresh)


def test_a_log_older_than_inputs_is_judged_by_the_sets_manifest(tmp_path, package):
    out = tmp_path / "job"
    out.mkdir()
    log: dict = {"steps": []}
    assert _run(_corrupt_step(out), {}, out, log)
    assert not _run(_corrupt_step(out), _finished(log, inputs=False), out, log)  # its manifest's strengths: same
    _refit(package)
    assert _run(_corrupt_step(out), _finished(log, inputs=False), out, log)


def test_fresh_remakes_a_set_of_other_strengths_without_deleting_data_by_hand(tmp_path, package, capsys):
    out = tmp_path / "job"
    out.mkdir()
    log: dict = {"steps": []}
    assert _run(_corrupt_step(out), {}, out, log)
    old = _strength_made(out)
    _refit(package, 0.5)
    capsys.readouterr()
    assert _run(_corrupt_step(out), {}, out, {"steps": []}, fresh=True)  # --fresh: the log is not read
    assert _strength_made(out) == pytest.approx(old / 2, abs=1e-5)


def test_the_report_shows_no_residual_of_a_fit_the_set_was_not_made_with(tmp_path, package):
    out = tmp_path / "job"
    out.mkdir()
    assert _run(_corrupt_step(out), {}, out, {"steps": []})
    folder = out / "data" / "digits-c-digits-matched"
    same = fit_summary(matched.matched_fit(), folder)
    assert same["matches_set"] is True and same["residuals"]["contrast"] == matched.matched_fit()["fit"]["contrast"][
        "residual"]
    _refit(package)
    stale = fit_summary(matched.matched_fit(), folder)
    assert stale["matches_set"] is False and stale["residuals"] == {}


def test_a_half_made_set_of_other_strengths_is_made_anew(tmp_path, package):
    """A -C step killed mid-way (no log entry, no labels.npy) before a refit: its manifest names the old
    strengths, and ``corrupt`` would refuse to resume it; the step starts it afresh."""
    out = tmp_path / "job"
    out.mkdir()
    assert _run(_corrupt_step(out), {}, out, {"steps": []})
    (out / "data" / "digits-c-digits-matched" / "labels.npy").unlink()  # as if killed before its last file
    old = _strength_made(out)
    _refit(package)
    assert _run(_corrupt_step(out), {}, out, {"steps": []})
    assert _strength_made(out) == pytest.approx(2 * old, abs=1e-5)
