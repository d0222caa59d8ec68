"""Issue 40, item 9: every run of the main job computes with one torch thread whatever the machine's
load, the free cores running runs side by side, so load changes the time and never the numbers."""

from __future__ import annotations

import dataclasses
import json

import pytest

from noisymix_app.reproduce.command import reproduce, run_workers
from noisymix_app.reproduce.plans import PLANS
from tests.app.test_sweep_pool import _Meter  # a reading of the load that says a fixed count


def _fake_command(argv):  # every command step but the figures (not what is tested here)
    from pathlib import Path

    from noisymix_app.cli import main

    if argv[0] != "figures":
        return main(argv)
    out = Path(argv[argv.index("--out") + 1])
    out.mkdir(parents=True, exist_ok=True)
    (out / "REPORT.md").write_text("")
    return 0


def test_workers_follow_the_free_cores_and_threads_stay_one(monkeypatch):
    """The most runs side by side: the usable cores (issue 58: how many of them run is followed while the
    job runs, ``noisymix_app.sweep.pool``, no longer decided once at the start)."""
    import noisymix_infra.threads

    plan = dataclasses.replace(PLANS["laptop"], workers=0)
    monkeypatch.setattr(noisymix_infra.threads, "usable_cores", lambda: 1)  # a one-core machine: in this process
    assert run_workers(plan, 36) == 1
    monkeypatch.setattr(noisymix_infra.threads, "usable_cores", lambda: 2)
    assert run_workers(plan, 36) == 2
    assert run_workers(plan, 1) == 1  # never more processes than runs
    assert run_workers(dataclasses.replace(plan, workers=3), 36) == 3
    assert PLANS["laptop"].workers == 0 and "min" not in PLANS["laptop"].description  # no promised duration


@pytest.mark.slow
def test_idle_and_busy_give_the_same_numbers(tmp_path, monkeypatch):
    """The quick plan's runs one after another in this process (a busy machine: one free core) and two
    at a time in worker processes (an idle 2-core machine): the same summary numbers, byte for byte,
    and every run recorded one torch thread."""
    import noisymix_infra.threads

    numbers = {}
    for free in (1, 2):
        monkeypatch.setattr(noisymix_infra.threads, "usable_cores", lambda free=free: free)
        monkeypatch.setattr(noisymix_infra.threads, "CoreMeter", lambda free=free: _Meter(free))
        plan = dataclasses.replace(PLANS["quick"], workers=0)
        out = tmp_path / f"free{free}"
        log = reproduce(plan, out, command=_fake_command)
        assert log["workers"] == free
        summary = json.loads((out / "summary.json").read_text())
        # the summary's numbers and every evaluation's (the -C set's calibration errors are continuous)
        evals = {str(path.relative_to(out)): json.loads(path.read_text())["summary"]
                 for path in sorted(out.glob("runs/*/eval/*.json"))}
        numbers[free] = json.dumps({"table": summary["table"], "claims": summary["claims"], "evals": evals},
                                   sort_keys=True).replace(str(out), "OUT")  # the folder's name aside
        threads = {e["ran_on"]["torch_threads"] for e in log["steps"] if e["name"].startswith(("train", "evaluate"))}
        assert threads == {1}, threads
    assert numbers[1] == numbers[2]
