"""`noisymix reproduce` end to end in its quick plan: every step, the report, and resume."""

from __future__ import annotations

import dataclasses
import json

import pytest

from noisymix_app.cli import main
from noisymix_app.reproduce.command import PLANS, reproduce


def test_quick_plan_runs_every_command_and_resumes(tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert main(["reproduce", "--plan", "quick", "--out", str(out)]) == 0
    log = json.loads((out / "reproduce.json").read_text())
    steps = [entry["name"] for entry in log["steps"]]
    assert steps[0] == "verify" and steps[1] == "toy" and steps[2] == "corrupt" and steps[-1] == "figures"
    assert any(s.startswith("train noisymix") for s in steps) and any("digits16-c" in s for s in steps)
    assert any("digits16-p" in s for s in steps) and "corrupt-p" in steps
    for path in ("theory/theory.json", "toy/toy.json", "data/digits16-c/labels.npy", "data/digits16-p/labels.npy",
                 "runs/noisymix-seed0/final.pt", "runs/baseline-seed0/eval/digits16-c.json",
                 "runs/noisymix-seed0/eval/digits16-p.json", "figures/REPORT.md", "REPORT.md"):
        assert (out / path).exists(), path
    report = (out / "figures" / "REPORT.md").read_text()
    assert "small-scale analogue" in report and "| digits16 | preactresnet18 | noisymix | 1 |" in report
    # the summary, and the job's report opening with it (the verdict first)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["plan_name"] == "quick" and set(summary["table"]) == {"baseline", "noisymix"}
    assert summary["git"]["commit"] is None or len(summary["git"]["commit"]) == 40
    report = (out / "REPORT.md").read_text()
    assert report.index("## Findings") < report.index("## What was run")
    assert (out / "SUMMARY.md").read_text() in report
    assert "Theory (`noisymix verify`)" in report and "Toy experiment" in report
    # issue 40: the verdict first, and every file the job wrote has a portable name (no : * ? ")
    assert (out / "SUMMARY.md").read_text().startswith("**Does NoisyMix do what the paper says")
    unportable = [str(p.relative_to(out)) for p in out.rglob("*") if any(c in p.name for c in ':*?"')]
    assert not unportable, unportable
    assert (out / "figures" / "tables" / "toy_example.md").is_file()
    # the runs are the sweep's: its bookkeeping names them done
    assert json.loads((out / "sweep" / "state" / "noisymix-seed0.json").read_text())["state"] == "done"
    # a second invocation finds every step done and runs none of them
    calls = []
    _fake_runs(monkeypatch, calls)
    reproduce(PLANS["quick"], out, command=lambda argv: calls.append(argv) or 0)
    assert calls == []


def test_a_failing_step_stops_the_job_and_names_it(tmp_path, monkeypatch):
    import pytest

    import fullscale.training.loop as trainer

    def fail(cfg, run, resume):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(trainer, "train", fail)

    def command(argv):
        return main(argv) if argv[0] in ("corrupt",) else _fake_step(argv, tmp_path / "out")

    with pytest.raises(RuntimeError, match="step 'train baseline-seed0' failed: RuntimeError: out of memory"):
        reproduce(PLANS["quick"], tmp_path / "out", command=command)


def _fake_step(argv, out):
    """Stand-ins for verify/toy that write their marker files (this test is about the driver)."""
    target = {"verify": out / "theory" / "theory.json", "toy": out / "toy" / "toy.json"}[argv[0]]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("[]")
    return 0


def test_full_plan_needs_data():
    import pytest
    with pytest.raises(ValueError, match="data-root"):
        reproduce(PLANS["full"], "/nonexistent-out")


def _fake_runs(monkeypatch, calls):
    """Stand-ins for the typed training and evaluation the sweep calls: they record the call as
    an argv-like list and write the files that mark the step done."""
    import fullscale.evaluation as evaluation
    import fullscale.training.loop as trainer
    from noisymix_infra.config import config_to_dict
    from noisymix_infra.io import data_fingerprint, sha256_file

    def train(cfg, run, resume):
        calls.append(["train", str(run)])
        run.mkdir(parents=True, exist_ok=True)
        (run / "config.json").write_text(json.dumps(config_to_dict(cfg)))
        (run / "final.pt").write_text(f"weights of {cfg.optim.epochs} epochs")

    def evaluate(run, suite, **kwargs):
        calls.append(["evaluate", str(run), "--suite", suite])
        (run / "eval").mkdir(exist_ok=True)
        (run / "eval" / f"{suite}.json").write_text(json.dumps(
            {"complete": True, "checkpoint": {"sha256": sha256_file(run / "final.pt")}, "summary": {},
             "data_root": kwargs.get("data_root"),
             "data_fingerprint": data_fingerprint(kwargs["data_root"]) if kwargs.get("data_root") else None}))

    monkeypatch.setattr(trainer, "train", train)
    monkeypatch.setattr(evaluation, "evaluate", evaluate)


def _fake_command(calls):
    """A stand-in for every command that records it and writes the file marking it done."""
    from pathlib import Path

    def command(argv):
        calls.append(argv)
        out = Path(argv[argv.index("--out") + 1])
        done = out / {"verify": "theory.json", "toy": "toy.json", "corrupt": "labels.npy",
                      "figures": "REPORT.md"}[argv[0]]
        done.parent.mkdir(parents=True, exist_ok=True)
        # the smallest files of the right shape: the summary reads theory.json and toy.json
        done.write_text({"verify": "[]", "toy": '{"experiment": {"seeds": 0}, "claims": []}'}.get(argv[0], "{}"))
        return 0
    return command


def test_another_plan_in_the_same_folder_is_refused_and_replaced_only_with_fresh(tmp_path, monkeypatch):
    """Issue 10, 8(d): a step is done only if it ran with the same arguments (a run: the same config).
    Issue 41: another plan in the folder deleted the first plan's finished runs without --fresh; it
    is refused in one line naming the old plan, and --fresh replaces the old plan's runs and report."""
    import dataclasses

    out = tmp_path / "out"
    quick = PLANS["quick"]
    _fake_runs(monkeypatch, [])
    reproduce(quick, out, command=_fake_command([]))
    (out / "runs" / "noisymix-seed0" / "checkpoint.pt").write_text("quick")
    longer = dataclasses.replace(quick, epochs=2, methods=("baseline",))
    calls = []
    _fake_runs(monkeypatch, calls)
    with pytest.raises(ValueError, match=r"plan 'quick'.*--fresh"):
        reproduce(longer, out, command=_fake_command(calls))
    assert calls == [] and (out / "runs" / "noisymix-seed0" / "final.pt").exists()  # nothing deleted
    reproduce(longer, out, command=_fake_command(calls), fresh=True)
    ran = [" ".join(argv[:2]) for argv in calls]
    # the training run has other arguments: rerun, and its evaluations and the figures with it
    assert sum(argv[0] == "train" for argv in calls) == 1
    # the baseline is one of the -P suite's methods: its clean, -C and -P evaluations
    perturbed = "baseline" in quick.perturbed_methods
    assert sum(argv[0] == "evaluate" for argv in calls) == len(quick.eval_suites) + perturbed
    assert ran[-1].startswith("figures")
    # the quick plan's NoisyMix run is not part of this plan: gone, so figures cannot report it
    assert not (out / "runs" / "noisymix-seed0").exists()
    log = json.loads((out / "reproduce.json").read_text())
    assert all("argv" in entry or "run" in entry or "suite" in entry for entry in log["steps"])
    assert "weights of 2 epochs" in (out / "runs" / "baseline-seed0" / "final.pt").read_text()
    assert not any("noisymix" in entry["name"] for entry in log["steps"])
    # and the same plan again runs nothing
    calls.clear()
    reproduce(longer, out, command=_fake_command(calls))
    assert calls == []


def test_each_run_gets_its_line_with_percent_elapsed_and_what_is_left(tmp_path):
    """Issue 22, item 4: a run's line when it finishes, accuracies in %, elapsed and an estimate."""
    import time

    from noisymix_app.reproduce.command import _progress_line
    from noisymix_infra.io import write_json

    evals = tmp_path / "runs" / "nfm-seed0" / "eval"
    evals.mkdir(parents=True)
    write_json(evals / "clean.json", {"summary": {"accuracy": 0.9325}})
    write_json(evals / "digits-c.json", {"summary": {"mean_accuracy": 0.5}})
    # the calibration suite repeats the clean accuracy: its line shows its error instead
    write_json(evals / "calibration.json", {"summary": {"accuracy": 0.9325, "rms_calibration_error": 0.0248}})
    line = _progress_line(tmp_path, ["nfm-seed0", "nfm-seed1", "nfm-seed2", "nfm-seed3"], time.perf_counter() - 90)
    text = line("nfm-seed0", "done", 2)  # 2 of 4 finished after 90 s: about 90 s left
    assert text.startswith("[2/4] nfm-seed0: clean 93.2 %, digits-c 50.0 %, RMS calibration error 2.5 % "
                           "(1:30 elapsed, ~1:30 left)"), text
    assert "failed" in line("nfm-seed1", "failed", 3)


def test_a_second_reproduce_on_one_folder_and_a_failing_step_are_one_line(tmp_path, monkeypatch, capsys):
    """Issue 23: a failing step was a RuntimeError traceback; a second concurrent `reproduce` on
    the folder reported "failed: None"."""
    from noisymix_app.cli import main
    from noisymix_app.reproduce import command as job
    from noisymix_infra.io import directory_lock

    out = tmp_path / "out"
    with directory_lock(out, "reproducing"):  # another process's job holds the folder
        assert main(["reproduce", "--plan", "quick", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "in use by another process" in err, err

    monkeypatch.setattr(job, "reproduce", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("step 'train baseline-seed0' failed: ValueError: planted")))
    assert main(["reproduce", "--plan", "quick", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and "train baseline-seed0" in err and "rerun" in err


def test_reproduce_refuses_a_run_folder_and_keeps_its_own_older_folders(tmp_path, capsys):
    from noisymix_app.reproduce.command import _claim
    from noisymix_infra.folder_kind import folder_kind

    run = tmp_path / "run"
    run.mkdir()
    (run / "noisymix-folder.json").write_text(json.dumps({"kind": "run"}))
    assert main(["reproduce", "--plan", "quick", "--out", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "training run" in err[0]
    assert sorted(p.name for p in run.iterdir()) == ["noisymix-folder.json"]
    # a reproduce folder made before the marker also holds sweep/plan.json: still a reproduce folder
    old = tmp_path / "old"
    (old / "sweep").mkdir(parents=True)
    (old / "sweep" / "plan.json").write_text("{}")
    (old / "reproduce.json").write_text("{}")
    _claim(old)
    assert folder_kind(old) == "reproduce"


def test_set_overrides_plan_fields_and_names_the_plan_so(tmp_path):
    """``reproduce --set``: the plan's fields in the one ``--set`` dialect.  ``members=2`` with one
    worker trains each method's two seeds as one stacked model (the GPU layout), and the log and
    summary name the plan with its overrides."""
    from noisymix_app.reproduce.command import resolve_plan

    plan, name = resolve_plan("quick", ["seeds=0,1", "members=2"])
    assert (plan.seeds, plan.members, plan.workers) == ((0, 1), 2, 1)
    assert name == "quick --set seeds=0,1 --set members=2"
    assert resolve_plan("quick", ["workers=1"]) == (PLANS["quick"], "quick")  # no change: the plain name
    out = tmp_path / "out"
    # the runs and their sets are real; verify, toy and figures are stood in for (the quick plan's test runs them)
    fake = _fake_command([])

    def command(argv):
        return fake(argv) if argv[0] in ("verify", "toy", "figures") else main(argv)

    log = reproduce(plan, out, name=name, command=command)
    assert log["plan_name"] == name
    for method in ("baseline", "noisymix"):
        for seed in (0, 1):
            record = json.loads((out / "runs" / f"{method}-seed{seed}" / "config.json").read_text())
            assert record["run"]["members"] == {"seeds": [0, 1], "index": seed}  # trained as one stack
            assert (out / "runs" / f"{method}-seed{seed}" / "eval" / "digits16-c.json").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["plan_name"] == name


def test_set_refuses_bad_plan_values_in_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    for bad in (["--set", "memberz=2"], ["--set", "members=0"], ["--set", "seeds=1,1"], ["--set", "epochs=x"],
                ["--set", "members=2", "--update-readme"]):
        assert main(["reproduce", "--plan", "quick", "--out", str(out), *bad]) == 2, bad
        err = capsys.readouterr().err.strip()
        assert err and "\n" not in err and "Traceback" not in err, (bad, err)
        assert not out.exists(), bad


@pytest.mark.parametrize(("cuda", "expected"), [(True, "gpu"), (False, "laptop")])
def test_with_no_plan_named_a_cuda_machine_runs_the_gpu_plan_and_a_cpu_the_laptop_plan(cuda, expected, tmp_path,
                                                                                     monkeypatch):
    """Issue 47, goal 5: the CUDA check decides the default; a named plan always wins; the report and
    the log name the plan that ran."""
    import torch

    from noisymix_app.cli import main
    from noisymix_app.reproduce import command as job
    from noisymix_app.reproduce.plans import PLANS

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    ran = []

    def fake(plan, out, **kwargs):
        ran.append((plan, kwargs["name"]))
        return {"seconds": 0.0}

    monkeypatch.setattr(job, "reproduce", fake)
    assert main(["reproduce", "--out", str(tmp_path / "a")]) == 0
    assert main(["reproduce", "--plan", "quick", "--out", str(tmp_path / "b")]) == 0
    assert ran == [(PLANS[expected], expected), (PLANS["quick"], "quick")]
    # the GPU plan is the laptop plan's runs, each method's seeds stacked in one process, its step one
    # captured CUDA graph (issue 53)
    gpu, laptop = PLANS["gpu"], PLANS["laptop"]
    assert (gpu.workers, gpu.members) == (1, len(laptop.seeds)) and laptop.members == 1
    assert gpu.train_overrides == (*laptop.train_overrides, "runtime.cuda_graph=true")
    assert dataclasses.replace(gpu, description=laptop.description, workers=laptop.workers,
                               members=laptop.members, train_overrides=laptop.train_overrides) == laptop
