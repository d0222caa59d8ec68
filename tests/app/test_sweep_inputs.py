"""`noisymix sweep` (issue 32): inputs checked before any run, a finished attempt's state clean,
the folder claimed, a replaced transfer source reported stale, a malformed plan.json one line."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noisymix_app.cli import main
from noisymix_app.sweep import command as sweep_command
from noisymix_app.sweep import execute as sweep_execute
from noisymix_app.sweep import state as sweep_state
from noisymix_app.sweep.plan import EvalSpec, RunSpec


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_a_cifar_sweep_without_data_root_is_refused_before_any_run(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", "results_cifar10", "--seeds", "1", "--out", str(out)]) == 2
    assert "--data-root" in _one_line_error(capsys)
    assert not (out / "runs").exists() and not (out / "sweep").exists()


def test_the_dry_run_prints_the_plan_and_the_same_problem(capsys):
    assert main(["sweep", "results_cifar10", "--seeds", "1", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "sweep results_cifar10:" in captured.out
    assert "cannot run yet" in captured.err and "--data-root" in captured.err


def test_a_missing_suite_root_or_source_is_refused_up_front(tmp_path, capsys):
    assert main(["sweep", "digits_analogue", "--seeds", "1", "--out", str(tmp_path / "s"),
                 "--suite-root", f"digits-c={tmp_path / 'nowhere'}"]) == 2
    assert "no such folder" in _one_line_error(capsys)
    data = tmp_path / "cifar" / "cifar-10-batches-py"  # the batches are there (checked up front too)
    data.mkdir(parents=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (data / name).write_bytes(b"")
    data = data.parent
    assert main(["sweep", "results_transfer", "--seeds", "1", "--out", str(tmp_path / "t"), "--data-root", str(data),
                 "--source", f"noisymix={tmp_path / 'nm.pt'}"]) == 2
    assert "no such file" in _one_line_error(capsys)


def test_a_run_folder_is_not_taken_as_a_sweep_folder(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "noisymix-folder.json").write_text(json.dumps({"kind": "run"}))
    assert main(["sweep", "digits_analogue", "--seeds", "1", "--out", str(run)]) == 2
    assert "training run" in _one_line_error(capsys)
    assert not (run / "sweep").exists()


def test_a_finished_attempt_clears_the_interrupted_attempts_error(tmp_path, monkeypatch):
    spec = RunSpec("r", "baseline", 0)
    calls = []

    def fake(*args):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(sweep_execute, "_train_and_evaluate", fake)
    with pytest.raises(KeyboardInterrupt):
        sweep_execute.execute_run(spec, tmp_path)
    assert "KeyboardInterrupt" in sweep_state.run_record(tmp_path, "r")["traceback"]
    assert sweep_execute.execute_run(spec, tmp_path) == "done"
    record = sweep_state.run_record(tmp_path, "r")
    assert record["state"] == "done" and record["attempts"] == 2
    assert not record.get("traceback") and not record.get("error") and not record.get("deterministic")


def test_a_replaced_transfer_source_makes_its_run_stale(tmp_path, finished_transfer_run):
    source = tmp_path / "source.pt"
    source.write_bytes(b"old source")
    spec = finished_transfer_run(tmp_path / "out", source).runs[0]
    assert sweep_state.run_state(tmp_path / "out", spec) == "done"
    source.write_bytes(b"new source, another model")
    assert sweep_state.run_state(tmp_path / "out", spec) == "stale"
    text = sweep_command.status_text(tmp_path / "out")
    assert "stale: 1" in text and "changed since it trained" in text and "done" not in text.split("stale: 1")[0][-20:]
    source.unlink()
    assert "is gone" in sweep_command.status_text(tmp_path / "out")


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3),
                     lambda inner: st.lists(inner, max_size=2)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=2),
                     max_leaves=4)
_VALID = {"table": "digits_analogue", "notes": [], "comparisons": [], "analogue": True,
          "runs": [{"name": "baseline-seed0", "preset": "baseline", "seed": 0, "overrides": ["epochs=1"],
                    "evals": [{"suite": "clean", "data_root": None, "partial": False}], "gpus": 1, "rows": ["x"],
                    "data_root": None}]}
_PATHS = [("table",), ("runs",), ("notes",), ("analogue",), ("runs", 0), ("runs", 0, "name"), ("runs", 0, "seed"),
          ("runs", 0, "overrides"), ("runs", 0, "evals"), ("runs", 0, "evals", 0), ("runs", 0, "evals", 0, "suite"),
          ("runs", 0, "gpus"), ("runs", 0, "rows"), ("runs", 0, "data_root"), ("runs", 0, "preset")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(_PATHS), value=_JSON)
def test_a_malformed_plan_json_is_one_line(tmp_path, path, value):
    data = json.loads(json.dumps(_VALID))
    holder = data
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    (tmp_path / "sweep").mkdir(exist_ok=True)
    (tmp_path / "sweep" / "plan.json").write_text(json.dumps(data))
    try:
        sweep_command.status_text(tmp_path)
    except ValueError as error:
        assert "\n" not in str(error) and "plan.json" in str(error)


def test_a_plan_json_that_is_not_an_object_is_one_line(tmp_path, capsys):
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "plan.json").write_text('{"table": "x", "runs": [{"name": 3}]}')
    assert main(["sweep", "status", str(tmp_path)]) == 2
    assert "not a sweep plan" in _one_line_error(capsys)
    assert EvalSpec("clean").suite == "clean"
