"""`noisymix sweep`: plans, the local launcher (interrupted = uninterrupted), the SLURM path
without a cluster, retries, and the config check."""

from __future__ import annotations

import dataclasses
import json
import os
import stat

import pytest
import torch

from noisymix_app.cli import main
from noisymix_app.reproduce.plans import PLANS
from noisymix_app.sweep.command import status_text
from noisymix_app.sweep.local import run_local
from noisymix_app.sweep.plan import build_plan, config_identity, plan_from_reproduce
from noisymix_app.sweep.slurm import RunJob, SlurmOptions, submit_slurm
from noisymix_app.sweep.state import check_config, run_state
from noisymix_infra.config import config_to_dict

pytest.importorskip("submitit")

# digits, width 4, 128 training images, 2 epochs (so a run can be killed between its epochs)
# the 32x32 digits and their Digits-C suite (the quick plan's data are the 16x16 digits)
_TINY = dataclasses.replace(PLANS["quick"], methods=("baseline",), epochs=2, eval_suites=("clean", "calibration"),
                            dataset="digits", corrupted_suite="digits-c", perturbed_suite=None, perturbed_methods=())


def _plan(seeds=(0, 1)):
    return plan_from_reproduce(_TINY, None, seeds=seeds)


def _results(out, plan):
    """Every number a run leaves: the final weights and the evaluation summaries."""
    got = {}
    for spec in plan.runs:
        run = out / "runs" / spec.name
        got[spec.name] = {
            "weights": torch.load(run / "final.pt", weights_only=True),
            "evals": {e.suite: json.loads((run / "eval" / f"{e.suite}.json").read_text())["summary"]
                      for e in spec.evals},
            "metrics": [{k: v for k, v in json.loads(line).items() if k not in ("seconds", "images_per_s")}
                        for line in (run / "metrics.jsonl").read_text().splitlines()],
        }
    return got


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        assert a[name]["evals"] == b[name]["evals"], name
        assert a[name]["metrics"] == b[name]["metrics"], name
        for key, tensor in a[name]["weights"].items():
            assert torch.equal(tensor, b[name]["weights"][key]), (name, key)


def test_killed_sweep_rerun_matches_an_uninterrupted_one(tmp_path, monkeypatch, one_torch_thread):
    # bit-identity holds for equal thread counts: the worker process runs with threads=1, so this
    # process does too (without xdist it would have torch's default, and sum convolutions otherwise)
    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    plan = _plan()
    # uninterrupted, in worker processes (the local launcher's queue, one CPU worker)
    states = run_local(plan, tmp_path / "a", workers=1, threads=1)
    assert set(states.values()) == {"done"}
    reference = _results(tmp_path / "a", plan)
    table = json.loads((tmp_path / "a" / "table" / "digits_analogue.json").read_text())
    baseline = table["tables"]["tab:results_cifar10"]["Baseline"]
    cell = next(v for k, v in baseline.items() if k.startswith("digits") and "-C" not in k)
    assert cell["n"] == 2 and set(cell["per_seed"]) == {"0", "1"}
    seeds = list(cell["per_seed"].values())
    assert cell["mean"] == pytest.approx(sum(seeds) / 2) and cell["min"] == min(seeds)
    assert cell["std"] == pytest.approx(abs(seeds[0] - seeds[1]) / 2 ** 0.5)
    assert "provenance" in table

    # interrupted: the first run finishes, the second is killed after its first epoch's checkpoint
    import fullscale.training.checkpoint as checkpoint_module
    import fullscale.training.loop as trainer

    out = tmp_path / "b"
    real_save = checkpoint_module.save_torch

    def save_then_die(path, obj):
        real_save(path, obj)
        if "seed1" in str(path) and path.name == "checkpoint.pt" and obj["epoch"] == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint_module, "save_torch", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        run_local(plan, out, workers=0, threads=1)
    assert run_state(out, plan.runs[0]) == "done"
    assert run_state(out, plan.runs[1]) == "interrupted"
    assert (out / "runs" / plan.runs[1].name / "checkpoint.pt").exists()
    assert not (out / "runs" / plan.runs[1].name / "final.pt").exists()
    first = (out / "runs" / plan.runs[0].name / "final.pt").stat().st_mtime_ns
    monkeypatch.setattr(checkpoint_module, "save_torch", real_save)

    trained = []
    real_train = trainer.train
    monkeypatch.setattr(trainer, "train", lambda cfg, run, resume: trained.append((run.name, resume))
                        or real_train(cfg, run, resume=resume))
    states = run_local(plan, out, workers=0, threads=1)
    assert set(states.values()) == {"done"}
    assert trained == [(plan.runs[1].name, True)]  # the finished run is skipped, the killed one resumed
    assert (out / "runs" / plan.runs[0].name / "final.pt").stat().st_mtime_ns == first
    _assert_same(_results(out, plan), reference)
    # and once more: nothing to do
    trained.clear()
    run_local(plan, out, workers=0, threads=1)
    assert trained == []
    assert "done: 2" in status_text(out)


def test_a_diverged_run_is_reported_not_retried_and_a_crash_is_retried(tmp_path, monkeypatch):
    import fullscale.training.loop as trainer
    from fullscale.training.checks import NonFiniteLoss

    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    calls = []

    def diverge(cfg, run, resume):
        calls.append(run.name)
        if cfg.seed == 0:
            raise NonFiniteLoss("non-finite loss at epoch 1, step 3")
        raise RuntimeError("CUDA error: an illegal memory access")  # a crash: worth a retry

    monkeypatch.setattr(trainer, "train", diverge)
    plan = _plan()
    states = run_local(plan, tmp_path, workers=0, threads=1, retries=2)
    assert states == {plan.runs[0].name: "failed", plan.runs[1].name: "failed"}
    assert calls.count(plan.runs[0].name) == 1 and calls.count(plan.runs[1].name) == 3
    text = status_text(tmp_path)
    assert "NonFiniteLoss: non-finite loss at epoch 1, step 3 (deterministic: not retried)" in text
    assert "illegal memory access" in text
    # a rerun retries the crashed run, not the diverged one
    calls.clear()
    run_local(plan, tmp_path, workers=0, threads=1, retries=0)
    assert calls == [plan.runs[1].name]


def test_a_run_whose_config_differs_from_the_one_on_disk_is_refused(tmp_path, capsys):
    spec = _plan((0,)).runs[0]
    run_dir = tmp_path / "runs" / spec.name
    run_dir.mkdir(parents=True)
    stored = config_to_dict(spec.config())
    (run_dir / "config.json").write_text(json.dumps({"config": {**stored, "epochs": 7}, "run": {}}))
    with pytest.raises(ValueError, match=r"holds a run of another config \(epochs: 7 on disk, 2 planned\)"):
        check_config(spec, run_dir)
    # through the command: one line, exit 2, before anything runs
    assert main(["sweep", "digits_analogue", "--seeds", "1", "--out", str(tmp_path)]) == 2
    assert "holds a run of another config" in capsys.readouterr().err
    # the same config under another preset name (a shared table row) is accepted and keeps its name
    (run_dir / "config.json").write_text(json.dumps({**stored, "preset": "ablation-----"}))
    assert check_config(spec, run_dir).preset == "ablation-----"


def test_ablation_rows_equal_to_table_runs_are_the_same_runs():
    ablation = build_plan("ablation", [0, 1])
    table = build_plan("results_cifar100", [0, 1])
    assert len(ablation.runs) == 10 * 2 and len({r.name for r in ablation.runs}) == 20
    shared = {r.name for r in ablation.runs} & {r.name for r in table.runs}
    # tab:ablation's ----, -F--, -FN-, A--J and AFNJ are the WRN-28 CIFAR-100 table's Baseline,
    # Manifold Mixup, NFM, AugMix and NoisyMix (vocabulary.ABLATION_ROWS / METHOD_ROWS)
    assert shared == {f"cifar100-wrn28_4-{m}-seed{s}" for m in ("baseline", "manifold_mixup", "nfm", "augmix_jsd",
                                                                "noisymix") for s in (0, 1)}
    for name in shared:
        a = next(r for r in ablation.runs if r.name == name)
        t = next(r for r in table.runs if r.name == name)
        assert a.preset != t.preset
        assert config_identity(config_to_dict(a.config())) == config_identity(config_to_dict(t.config()))
    # AugMax has no method: skipped with a note; Puzzle Mix is trained; ImageNet's Puzzle Mix row has no preset
    assert any("AugMax" in n for n in table.notes) and not any("Puzzle Mix" in n for n in table.notes)
    imagenet = build_plan("results_imagenet", [0])
    assert {r.preset for r in imagenet.runs} >= {"imagenet-resnet50-baseline", "imagenet-resnet50-noisymix"}
    assert any("imagenet-resnet50-puzzlemix' does not exist yet" in n for n in imagenet.notes)


def test_dry_run_lists_runs_with_gpu_hours(capsys):
    assert main(["sweep", "ablation", "--seeds", "2", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "sweep ablation: 20 runs" in text
    # 50,000 images x 3 views x 200 epochs at the stated 5,000 view-images/s per GPU
    noisymix = next(line for line in text.splitlines() if line.startswith("cifar100-wrn28_4-noisymix-seed0"))
    assert f"{50_000 * 3 * 200 / 5_000 / 3600:7.2f}" in noisymix
    assert "ASSUMED" in text and "left out" in text  # no -C data given: the suite is named as left out


@pytest.mark.parametrize(("plan_name", "overrides", "seconds_per_epoch"), [
    ("laptop", (), 1.92),  # the laptop plan: width 16, stride-2 stem (RESULTS.md, NoisyMix 1.92 s/epoch)
    ("laptop", ("stem_stride=1",), 4.9),  # the public stem at width 16 (4.9 s/epoch)
    ("laptop", ("stem_stride=1", "width=8"), 4.9 / 2),  # linear in width
    ("digits16", (), 1.92 * 0.52),  # the 16x16 digits: the measured step ratio (RESULTS.md, issue 34)
])
def test_digits_cpu_hours_are_the_measured_seconds_per_epoch(plan_name, overrides, seconds_per_epoch):
    """The dry run's CPU-hours of a digits NoisyMix run: epochs x the measured seconds per epoch
    (all 1,347 training images, 3 views), whatever width and stem the plan sets."""
    from noisymix_app.sweep.estimates import estimate_hours

    plan = plan_from_reproduce(PLANS[plan_name], None, seeds=(0,), extra_overrides=overrides)
    noisymix = next(spec for spec in plan.runs if spec.preset == "noisymix")
    epochs = PLANS[plan_name].epochs
    assert estimate_hours(noisymix) == pytest.approx(epochs * seconds_per_epoch / 3600, rel=1e-9)


def _fake_slurm(tmp_path, monkeypatch):
    """``sbatch`` and ``srun`` stand-ins on PATH: sbatch keeps each script and answers a job id."""
    bin_dir, scripts = tmp_path / "bin", tmp_path / "scripts"
    bin_dir.mkdir()
    scripts.mkdir()
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\nfor a in "$@"; do case "$a" in *.sh) cp "$a" {scripts}/;; esac; done\n'
                                    'echo "Submitted batch job 4242"\n')
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    # sacct answers the state written in $FAKE_SLURM_STATE for every job of array 4242
    (bin_dir / "sacct").write_text('#!/bin/sh\necho "JobID|State|NodeList"\n'
                                   'for i in 0 1 2; do echo "4242_$i|$FAKE_SLURM_STATE|node1"; done\n'
                                   'echo "4242|$FAKE_SLURM_STATE|node1"\n')
    for tool in ("sbatch", "srun", "sacct"):
        (bin_dir / tool).chmod((bin_dir / tool).stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return scripts


def test_slurm_submission_is_one_array_job_plus_one_multinode_job_per_multigpu_run(tmp_path, monkeypatch):
    scripts = _fake_slurm(tmp_path, monkeypatch)
    plan = build_plan("ablation", [0, 1])
    big = dataclasses.replace(plan.runs[0], name="imagenet-like", gpus=16)
    plan = dataclasses.replace(plan, runs=(*plan.runs[:3], big))
    jobs = submit_slurm(plan, tmp_path / "out", SlurmOptions(partition="gpu", account="lab", time_min=600,
                                                             gpus_per_node=8))
    assert [j.job_id for j in jobs] == ["4242_0", "4242_1", "4242_2", "4242"]
    texts = [p.read_text() for p in scripts.glob(".*.sh")]
    array = next(t for t in texts if "--array" in t)
    multi = next(t for t in texts if "--array" not in t)
    for line in ("--array=0-2%3", "--gpus-per-node=1", "--ntasks-per-node=1", "--nodes=1", "--partition=gpu",
                 "--account=lab", "--time=600"):
        assert f"#SBATCH {line}\n" in array, line
    for line in ("--nodes=2", "--gpus-per-node=8", "--ntasks-per-node=8", "--partition=gpu"):
        assert f"#SBATCH {line}\n" in multi, line
    assert "torchrun" not in multi and "srun" in multi  # one task per GPU, started by srun
    assert "submitted 4242" in status_text(tmp_path / "out")
    # the same command again while SLURM holds the jobs submits nothing; once they ended unfinished
    # (cancelled, a node failure), it submits them again
    monkeypatch.setenv("FAKE_SLURM_STATE", "PENDING")
    assert submit_slurm(plan, tmp_path / "out", SlurmOptions()) == []
    monkeypatch.setenv("FAKE_SLURM_STATE", "NODE_FAIL")
    assert len(submit_slurm(plan, tmp_path / "out", SlurmOptions())) == 4


def test_a_multi_process_run_gets_one_worker_per_device_and_the_distributed_environment(tmp_path, monkeypatch):
    """On the CPU a 2-"GPU" run is two gloo processes (rank 0 writes): what the local queue does
    with a multi-GPU run on a machine with GPUs."""
    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    plan = _plan((0,))
    plan = dataclasses.replace(plan, runs=(dataclasses.replace(plan.runs[0], gpus=2),))
    with pytest.raises(ValueError, match=r"need several processes each.*--workers"):
        run_local(plan, tmp_path, workers=0, threads=1)
    assert run_local(plan, tmp_path, workers=2, threads=1) == {plan.runs[0].name: "done"}
    record = json.loads((tmp_path / "runs" / plan.runs[0].name / "config.json").read_text())
    assert record["run"]["world_size"] == 2
    assert (tmp_path / "sweep" / "logs" / f"{plan.runs[0].name}.rank1.log").exists()
    # a run needing more devices than the machine has fails at once, named, not retried
    big = dataclasses.replace(plan, runs=(dataclasses.replace(plan.runs[0], name="big", gpus=3),))
    assert run_local(big, tmp_path / "big", workers=2) == {"big": "failed"}
    assert "needs 3 devices, this machine has 2" in status_text(tmp_path / "big")


def test_slurm_jobs_run_through_submitits_debug_executor_and_requeue_resumes(tmp_path, monkeypatch):
    import submitit

    import fullscale.training.checkpoint as checkpoint_module
    import fullscale.training.loop as trainer

    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    plan = _plan((0,))
    out = tmp_path / "out"
    # a preempted job: killed after the first epoch's checkpoint
    real_save = checkpoint_module.save_torch

    def save_then_die(path, obj):
        real_save(path, obj)
        if path.name == "checkpoint.pt" and obj["epoch"] == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint_module, "save_torch", save_then_die)
    jobs = submit_slurm(plan, out, SlurmOptions(cluster="debug"))
    with pytest.raises(KeyboardInterrupt):
        jobs[0].result()
    monkeypatch.setattr(checkpoint_module, "save_torch", real_save)
    # the debug executor delivers no signal: call the preemption handler as submitit would
    job = RunJob(plan.runs[0].as_dict(), str(out), None)
    delayed = job.checkpoint()
    assert isinstance(delayed, submitit.helpers.DelayedSubmission)
    assert delayed.function.spec == job.spec and delayed.function.requeues == 1
    resumed = []
    real_train = trainer.train
    monkeypatch.setattr(trainer, "train", lambda cfg, run, resume: resumed.append(resume)
                        or real_train(cfg, run, resume=resume))
    assert delayed.function(*delayed.args, **delayed.kwargs) == "done"
    assert resumed == [True]
    metrics = (out / "runs" / plan.runs[0].name / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(m)["epoch"] for m in metrics] == [1, 2]
    # the same run, uninterrupted, through the debug executor, gives the same weights
    other = tmp_path / "other"
    assert [j.result() for j in submit_slurm(plan, other, SlurmOptions(cluster="debug"))] == ["done"]
    assert (other / "table" / "digits_analogue.md").exists()
    _assert_same(_results(out, plan), _results(other, plan))


def test_a_run_another_process_works_on_is_left_alone(tmp_path):
    """The run's lock is held (another process, perhaps on another node): no training, no state written."""
    from noisymix_app.sweep.execute import RunFailed, execute_run
    from noisymix_infra.io import directory_lock

    spec = _plan((0,)).runs[0]
    with directory_lock(tmp_path / "sweep" / "locks" / spec.name, "training elsewhere"):
        assert run_state(tmp_path, spec) == "pending"  # no state file: never started by a sweep
        with pytest.raises(RunFailed, match="in use by another process"):
            execute_run(spec, tmp_path)
    assert not (tmp_path / "sweep" / "state" / f"{spec.name}.json").exists()
    assert not (tmp_path / "runs" / spec.name).exists()


def test_a_multi_gpu_slurm_task_takes_its_rank_from_submitits_environment(tmp_path, monkeypatch):
    """Task 11 of a 16-task job on gpu[01-02] (8 per node): RANK etc. from submitit's
    TorchDistributedEnvironment (what srun starts, no torchrun), CUDA_VISIBLE_DEVICES untouched."""
    import noisymix_app.sweep.slurm as slurm_launcher

    slurm = {"SUBMITIT_EXECUTOR": "slurm", "SLURM_JOB_ID": "77", "SLURM_NTASKS": "16", "SLURM_JOB_NUM_NODES": "2",
             "SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_PROCID": "11", "SLURM_LOCALID": "3",
             "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    for key, value in slurm.items():
        monkeypatch.setenv(key, value)
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.setenv(key, "")  # recorded, so that the export below is undone after the test
        monkeypatch.delenv(key)
    seen = {}
    monkeypatch.setattr(slurm_launcher, "execute_run", lambda spec, out: seen.update(os.environ) or "done")
    spec = dataclasses.replace(_plan((0,)).runs[0], gpus=16)
    assert RunJob(spec.as_dict(), str(tmp_path))() == "done"
    assert {k: seen[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR")} == {
        "RANK": "11", "WORLD_SIZE": "16", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "gpu01"}
    assert seen["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"  # the trainer picks cuda:LOCAL_RANK


def test_transfer_table_runs_one_folder_per_source_row(tmp_path):
    from noisymix_app.sweep.plan import build_plan

    sources = {"baseline": str(tmp_path / "base.pt"), "noisymix": str(tmp_path / "nm.pt")}
    plan = build_plan("results_transfer", [0], sources=sources)
    names = sorted(r.name for r in plan.runs)
    assert names == ["cifar10-resnet50_transfer-baseline-seed0", "cifar10-resnet50_transfer-noisymix-seed0",
                     "cifar100-resnet50_transfer-baseline-seed0", "cifar100-resnet50_transfer-noisymix-seed0"]
    for run in plan.runs:
        config = run.config()
        assert config.transfer.source_weights == sources[config.transfer.source_row]
    assert any("'AugMix'" in note and "no --source augmix=PATH" in note for note in plan.notes)


@pytest.mark.parametrize("option,value,expected", [("--source", "noisymix", "--source expects ROW=PATH"),
                                                   ("--suite-root", "cifar10-c", "--suite-root expects SUITE=DIR")])
def test_a_malformed_pair_is_one_line_and_nothing_is_written(tmp_path, capsys, option, value, expected):
    out = tmp_path / "sweep"
    assert main(["sweep", "results_transfer", "--seeds", "1", "--out", str(out), option, value, "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0]
    assert not out.exists()


def test_the_sweep_judges_a_stored_run_by_the_trainers_resume_rule():
    from fullscale.run_record import later_keys
    from fullscale.training.config import DataConfig, TrainConfig, flat_config

    grouped = config_to_dict(TrainConfig(data=DataConfig(dataset="imagenet", workers=8)))
    planned = flat_config(grouped)  # the flat layout of runs made before the config had groups
    assert config_identity(grouped) == config_identity(planned)
    # a loader setting the trainer lets a resume change does not make another run
    assert config_identity(planned) == config_identity({**planned, "workers": 2, "checkpoint_every": 50})
    # a run written before a key existed computed with that key's later default ...
    older = {k: v for k, v in planned.items() if k not in later_keys()}
    assert config_identity(older) == config_identity(planned) == config_identity(grouped)
    # ... and differs from a plan that asks for another value of it
    assert config_identity(older) != config_identity({**planned, "ddp_draws": "per_rank"})
    per_rank = {**grouped, "runtime": {**grouped["runtime"], "ddp_draws": "per_rank"}}
    assert config_identity(older) != config_identity(per_rank)


def test_imagenet_gpu_hours_are_not_multiplied_by_the_gpus_again(capsys):
    """Issue 23: a ResNet-50 run on 8 GPUs is 1,281,167 images x 200 epochs at 2,500 images/s per
    GPU = 28.47 GPU-hours (3.6 h on 8 GPUs), not 8 times that (227.76 before the fix)."""
    assert main(["sweep", "results_imagenet", "--seeds", "1", "--dry-run"]) == 0
    text = capsys.readouterr().out
    baseline = next(line for line in text.splitlines() if line.startswith("imagenet-resnet50-baseline-seed0"))
    assert " 28.47 " in baseline and " 8 " in baseline, baseline
    assert "227.76" not in text


@pytest.mark.parametrize("option", [["--source", "bogus=/nowhere"], ["--suite-root", "bogus-c=/nowhere"],
                                    ["--source", "noisymix=/nowhere", "--suite-root", "imagenet-c=/nowhere"]])
def test_unknown_rows_and_suites_are_refused(option, capsys):
    """Issue 23: they were silently ignored ("0/0 runs done", exit 0)."""
    assert main(["sweep", "results_transfer", "--seeds", "1", "--dry-run", *option]) == 2
    err = capsys.readouterr().err.strip()
    assert "bogus" in err or "imagenet-c" in err
    assert "\n" not in err and "Traceback" not in err


def test_a_source_outside_the_transfer_table_is_refused(capsys):
    assert main(["sweep", "ablation", "--seeds", "1", "--dry-run", "--source", "noisymix=/nowhere"]) == 2
    assert "only results_transfer takes --source" in capsys.readouterr().err


def test_dry_run_footer_names_only_the_sources_its_rows_use_and_notes_once(capsys):
    """Issue 21: every footer mentioned "CPU digits rows", even for GPU tables; the AugMax note
    printed once per data set."""
    assert main(["sweep", "results_imagenet", "--seeds", "1", "--dry-run"]) == 0
    gpu = capsys.readouterr().out
    assert "ASSUMED" in gpu and "CPU digits rows" not in gpu
    assert main(["sweep", "digits_analogue", "--seeds", "1", "--dry-run"]) == 0
    cpu = capsys.readouterr().out
    assert "CPU digits rows" in cpu and "ASSUMED" not in cpu
    assert main(["sweep", "results_cifar10", "--seeds", "1", "--dry-run"]) == 0
    assert capsys.readouterr().out.count("AugMax") == 1


def test_a_rerun_with_another_suite_root_evaluates_again(tmp_path, monkeypatch, one_torch_thread):
    """Issue 23: rerun with another --suite-root, the sweep said "done" and kept the old set's
    evaluation while plan.json named the new one."""
    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    sets = {}
    for name, seed in (("a", 0), ("b", 1)):  # gaussian noise of other seeds: other images
        sets[name] = tmp_path / f"digits-c-{name}"
        assert main(["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(sets[name]),
                     "--corruptions", "gaussian_noise", "--seed", str(seed)]) == 0
    tiny = dataclasses.replace(_TINY, epochs=1, eval_suites=("clean", "digits-c"), corruptions=("gaussian_noise",))
    out = tmp_path / "sweep"
    for name in ("a", "b"):
        plan = plan_from_reproduce(tiny, sets[name], seeds=(0,))
        assert set(run_local(plan, out, workers=0, threads=1, tabulate=False).values()) == {"done"}
        record = json.loads((out / "runs" / plan.runs[0].name / "eval" / "digits-c.json").read_text())
        assert record["data_root"] == str(sets[name].resolve()), name


def test_a_set_generated_anew_in_the_same_folder_is_evaluated_again(tmp_path, monkeypatch, one_torch_thread):
    """The sweep compared only the folder: a -C set regenerated in place (other seed, same name)
    kept the evaluation of the old images.  The evaluation now records the folder's
    ``data_fingerprint`` and the sweep reuses it only while that holds."""
    import shutil

    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    corrupted = tmp_path / "digits-c"
    tiny = dataclasses.replace(_TINY, epochs=1, eval_suites=("digits-c",), corruptions=("gaussian_noise",))
    plan = plan_from_reproduce(tiny, corrupted, seeds=(0,))
    out = tmp_path / "sweep"
    results = []
    for seed in (0, 1):
        shutil.rmtree(corrupted, ignore_errors=True)
        assert main(["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(corrupted),
                     "--corruptions", "gaussian_noise", "--seed", str(seed)]) == 0
        assert set(run_local(plan, out, workers=0, threads=1, tabulate=False).values()) == {"done"}
        results.append(json.loads((out / "runs" / plan.runs[0].name / "eval" / "digits-c.json").read_text()))
    assert results[0]["data_fingerprint"] != results[1]["data_fingerprint"]
    assert results[1]["data_identity"] != results[0]["data_identity"]  # computed from the new files


def test_members_train_a_methods_seeds_as_one_model_then_evaluate_each(tmp_path, monkeypatch, one_torch_thread):
    """``--members 2``: the two seeds train as one stacked model (recorded in each run's config.json),
    each is evaluated as a run of its own, and the runs equal their seeds trained alone up to the
    rounding of grouped convolutions (tests/trainer/test_members.py holds the tolerances)."""
    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    plan = _plan()
    states = run_local(plan, tmp_path / "grouped", workers=0, threads=1, members=2)
    assert set(states.values()) == {"done"}
    run_local(plan, tmp_path / "alone", workers=0, threads=1)
    for spec in plan.runs:
        grouped = json.loads((tmp_path / "grouped" / "runs" / spec.name / "config.json").read_text())
        assert grouped["run"]["members"]["seeds"] == [0, 1]
        state = json.loads((tmp_path / "grouped" / "sweep" / "state" / f"{spec.name}.json").read_text())
        assert dict(state["timings"])["train"] > 0  # its share of the group's training
        for suite in ("clean", "calibration"):
            ours, theirs = (json.loads((tmp_path / d / "runs" / spec.name / "eval" / f"{suite}.json").read_text())
                            ["summary"] for d in ("grouped", "alone"))
            assert ours.keys() == theirs.keys()
        first, alone = (json.loads((tmp_path / d / "runs" / spec.name / "metrics.jsonl").read_text()
                                   .splitlines()[0])["loss"] for d in ("grouped", "alone"))
        assert first == pytest.approx(alone, rel=1e-2)


def test_members_need_one_process(tmp_path, capsys):
    for extra in (["--members", "2", "--workers", "1"], ["--members", "2", "--workers", "0", "--launcher", "slurm"],
                  ["--members", "0", "--workers", "0"], ["--members", "2", "--workers", "1", "--dry-run"]):
        assert main(["sweep", "digits_analogue", "--seeds", "2", *extra, "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"--members {extra[1]}" in err[0], err
    assert not any(tmp_path.iterdir())  # refused before anything was planned or written
