"""Issue 32, part 4: the provenance of a ``noisymix reproduce`` folder describes the work that made its
numbers (each step's own threads, machine and seconds, recorded when the step ran and kept when a
rerun skips it), not the last invocation."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from noisymix_app.reproduce.command import PLANS, reproduce


def _helpers():
    """The quick plan's fast stand-ins of tests/app/test_reproduce.py (the tests are no package)."""
    spec = importlib.util.spec_from_file_location("_reproduce_fakes", Path(__file__).with_name("test_reproduce.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_fake_command, _fake_runs = _helpers()._fake_command, _helpers()._fake_runs


def test_a_resume_that_recomputes_nothing_keeps_the_steps_records_and_the_total(tmp_path, monkeypatch):
    """Issue 32: a 2 s rerun rewrote wall_seconds 1132 -> 2.47 and REPORT.md described itself."""
    out = tmp_path / "out"
    _fake_runs(monkeypatch, [])
    reproduce(PLANS["quick"], out, command=_fake_command([]))
    log = json.loads((out / "reproduce.json").read_text())
    for entry in log["steps"]:  # each step says where it ran, recorded when it ran
        assert {"cpu_model", "cpu_capability", "torch_threads", "finished"} <= set(entry["ran_on"]), entry["name"]
    # as if the steps had been long (a laptop job): 100 s each, 3 threads, another CPU
    for entry in log["steps"]:
        entry["seconds"] = 100.0
        entry["ran_on"] = {**entry["ran_on"], "torch_threads": 3, "cpu_model": "Earlier CPU"}
    (out / "reproduce.json").write_text(json.dumps(log))
    calls = []
    _fake_runs(monkeypatch, calls)
    reproduce(PLANS["quick"], out, command=_fake_command(calls))
    assert calls == []
    again = json.loads((out / "reproduce.json").read_text())
    assert again["steps"] == log["steps"]
    total = 100.0 * len(log["steps"])
    assert again["seconds"] == total
    summary = json.loads((out / "summary.json").read_text())
    # issue 57: the step sum is "seconds"; the wall time is the invocations' own, far less than 100 s a step
    assert summary["seconds"] == total and summary["wall_seconds"] < total
    report = (out / "REPORT.md").read_text()
    assert f"Total: {total:.0f} s, the sum of the steps' recorded times" in report
    assert "This invocation:" in report and "| 3 | Earlier CPU" in report
    assert "Earlier CPU" in (out / "SUMMARY.md").read_text()


def test_a_command_step_records_the_threads_it_computed_with(tmp_path, monkeypatch):
    """`noisymix toy` runs on its own thread count and restores this process's: the step's record
    names the step's count, not the one read after it."""
    import torch

    from noisymix_infra.threads import torch_threads

    _fake_runs(monkeypatch, [])
    fake = _fake_command([])

    def command(argv):
        if argv[0] == "toy":
            with torch_threads(1):
                return fake(argv)
        return fake(argv)

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        reproduce(PLANS["quick"], tmp_path / "out", command=command)
    finally:
        torch.set_num_threads(before)
    steps = {e["name"]: e for e in json.loads((tmp_path / "out" / "reproduce.json").read_text())["steps"]}
    assert steps["toy"]["ran_on"]["torch_threads"] == 1
    assert steps["verify"]["ran_on"]["torch_threads"] == 2


def test_every_step_row_of_the_report_names_its_threads_and_machine(tmp_path, monkeypatch):
    """REPORT.md said "2 torch thread(s)" for the whole job: each step's row now carries its own."""
    out = tmp_path / "out"
    _fake_runs(monkeypatch, [])
    reproduce(PLANS["quick"], out, command=_fake_command([]))
    log = json.loads((out / "reproduce.json").read_text())
    lines = (out / "REPORT.md").read_text().splitlines()
    start = lines.index("| step | seconds | torch threads | machine | finished |") + 2
    rows = [line for line in lines[start:] if line.startswith("| ")]
    assert [row.split(" | ")[0][2:] for row in rows] == [e["name"] for e in log["steps"]]
    for row, entry in zip(rows, log["steps"], strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[2] == str(entry["ran_on"]["torch_threads"]) and entry["ran_on"]["cpu_model"] in cells[3]
        assert "not recorded" not in row
    names = [e["name"] for e in log["steps"]]
    assert {"verify", "toy", "corrupt", "figures"} <= set(names)
    assert any(n.startswith("train ") for n in names) and any(n.startswith("evaluate ") for n in names)
