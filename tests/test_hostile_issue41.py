"""Issue 41, a hostile campaign against the front door: nothing lost (no command writes over what
it does not own), nothing mixed up (every result bound to the weights and config it came from).
Every refusal is one line on stderr, exit status 2, and nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from noisymix_app.cli import main
from noisymix_infra.folder_kind import MARKER, folder_kind, mark_folder

QUICK = ["--set", "width=4", "--set", "epochs=1", "--set", "batch_size=16", "--set", "train_subset=32",
         "--set", "dataset=digits"]


def _status(argv: list[str]) -> int:
    """``main(argv)``'s exit status, also where argparse refuses the arguments (SystemExit)."""
    try:
        return main(argv)
    except SystemExit as done:
        return int(done.code)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two digits runs of one experiment (seeds 0 and 1), each evaluated on the clean suite."""
    root = tmp_path_factory.mktemp("trained")
    for seed in (0, 1):
        run = root / "results" / f"baseline-seed{seed}"
        assert main(["train", "--preset", "baseline", "--out", str(run), *QUICK, "--set", f"seed={seed}"]) == 0
        assert main(["evaluate", str(run), "--suite", "clean", "--device", "cpu"]) == 0
    return root / "results"


@pytest.fixture
def results(trained, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(trained, copy)
    return copy


# --- data loss ------------------------------------------------------------------------------------------------


def test_bench_out_never_replaces_a_file_it_did_not_write(tmp_path, one_line_error, monkeypatch):
    import noisymix_app.bench.bench_toy as bench

    monkeypatch.setattr(bench, "run", lambda options: pytest.fail("the benchmark ran before --out was checked"))
    mark_folder(tmp_path / "run", "run")
    mark_folder(tmp_path / "cset", "c-set")
    for name, data in (("run/final.pt", b"weights"), ("cset/labels.npy", b"labels"), ("mine.json", b'{"a": 1}')):
        target = tmp_path / name
        target.write_bytes(data)
        assert main(["bench", "toy", "--out", str(target)]) == 2
        line = one_line_error()
        assert "not a result of noisymix bench" in line or "holds only that command's files" in line
        assert target.read_bytes() == data


def test_bench_out_a_folder_is_refused_before_the_benchmark_runs(tmp_path, one_line_error, monkeypatch):
    import noisymix_app.bench.bench_toy as bench

    monkeypatch.setattr(bench, "run", lambda options: pytest.fail("the benchmark ran before --out was checked"))
    assert main(["bench", "toy", "--out", str(tmp_path)]) == 2
    assert "is a folder" in one_line_error()


def test_bench_out_into_a_run_or_a_set_is_refused(tmp_path, one_line_error, monkeypatch):
    import noisymix_app.bench.bench_toy as bench

    monkeypatch.setattr(bench, "run", lambda options: pytest.fail("the benchmark ran before --out was checked"))
    mark_folder(tmp_path / "run", "run")
    for out in (tmp_path / "run" / "bench.json", tmp_path / "run" / "eval" / "bench.json"):
        assert main(["bench", "toy", "--out", str(out)]) == 2
        assert "training run" in one_line_error()
        assert not out.exists()


def test_bench_out_may_replace_its_own_result(tmp_path):
    from noisymix_app.bench.cli import check_out

    own = tmp_path / "toy.json"
    own.write_text(json.dumps({"benchmark": "toy", "machine": {}, "provenance": {}}))
    check_out(str(own))  # no error: a result of its own
    check_out(str(tmp_path / "new.json"))


def test_train_out_never_overwrites_a_users_own_config(tmp_path, one_line_error):
    user = tmp_path / "mine"
    user.mkdir()
    (user / "config.json").write_text('{"my": "settings"}')
    assert main(["train", "--out", str(user), *QUICK]) == 2
    assert "config.json" in one_line_error()
    assert (user / "config.json").read_text() == '{"my": "settings"}'
    assert sorted(p.name for p in user.iterdir()) == ["config.json"]


def test_figures_out_never_overwrites_a_users_own_report(results, tmp_path, one_line_error):
    user = tmp_path / "notes"
    user.mkdir()
    (user / "REPORT.md").write_text("my report")
    assert main(["figures", "--results", str(results), "--out", str(user), "--no-examples"]) == 2
    assert "REPORT.md" in one_line_error()
    assert (user / "REPORT.md").read_text() == "my report" and not (user / MARKER).exists()


@pytest.mark.parametrize("command", ["verify", "toy"])
def test_verify_and_toy_out_refuse_a_folder_of_another_command_or_a_users_files(tmp_path, one_line_error, command):
    run = tmp_path / "run"
    mark_folder(run, "run")
    assert main([command, "--out", str(run)]) == 2
    assert "training run" in one_line_error()
    user = tmp_path / "user"
    user.mkdir()
    name = "theory.md" if command == "verify" else "toy.md"
    (user / name).write_text("mine")
    assert main([command, "--out", str(user)]) == 2
    assert name in one_line_error()
    assert (user / name).read_text() == "mine"


# --- wrong results with exit 0 ----------------------------------------------------------------------------------


def test_every_evaluation_records_the_sha256_of_its_weights_and_config(results):
    from fullscale.run_record import config_sha256
    from fullscale.runs import split_run_record
    from noisymix_infra.io import read_json, sha256_file

    run = results / "baseline-seed0"
    record = read_json(run / "eval" / "clean.json")
    assert record["checkpoint"]["sha256"] == sha256_file(run / "final.pt")
    assert record["config_sha256"] == config_sha256(split_run_record(read_json(run / "config.json"))[0])


def test_figures_leaves_out_an_evaluation_whose_weights_changed_since(results):
    from noisymix_figures.results import collect

    shutil.copy(results / "baseline-seed1" / "final.pt", results / "baseline-seed0" / "final.pt")
    shutil.rmtree(results / "baseline-seed1")
    found = collect(results)
    assert found.runs[0].evals == {}
    assert any("baseline-seed0/eval/clean.json" in p and "other weights" in p for p in found.problems)


def test_figures_leaves_out_an_evaluation_whose_config_was_edited_since(results):
    from noisymix_figures.results import collect

    path = results / "baseline-seed0" / "config.json"
    record = json.loads(path.read_text())
    record["config"]["method"] = "noisymix"  # relabels the run in the tables
    path.write_text(json.dumps(record))
    found = collect(results)
    relabelled = next(r for r in found.runs if r.path.name == "baseline-seed0")
    assert relabelled.evals == {}
    assert any("baseline-seed0/eval/clean.json" in p and "config.json changed" in p for p in found.problems)


def test_a_copied_run_with_only_its_seed_edited_is_not_another_seed(results, one_line_error):
    copy = results / "baseline-seed7"
    shutil.copytree(results / "baseline-seed0", copy)
    record = json.loads((copy / "config.json").read_text())
    record["config"]["seed"] = 7
    (copy / "config.json").write_text(json.dumps(record))
    assert main(["figures", "--results", str(results), "--out", str(results.parent / "fig"), "--no-examples"]) == 2
    assert "same weights" in one_line_error()
    assert not (results.parent / "fig").exists()


def test_a_config_with_a_value_of_the_wrong_type_is_refused_when_read(results, one_line_error):
    from noisymix_figures.results import collect

    path = results / "baseline-seed0" / "config.json"
    record = json.loads(path.read_text())
    record["config"]["optim"] = 3
    path.write_text(json.dumps(record))
    found = collect(results)
    assert [r.path.name for r in found.runs] == ["baseline-seed1"]
    assert any("baseline-seed0/config.json" in p and "optim" in p for p in found.problems)
    assert main(["evaluate", str(results / "baseline-seed0"), "--suite", "clean", "--device", "cpu"]) == 2
    assert "optim" in one_line_error()


def test_a_non_finite_metric_is_left_out_and_named(results):
    from noisymix_figures.results import collect

    path = results / "baseline-seed0" / "eval" / "clean.json"
    record = json.loads(path.read_text())
    record["summary"]["accuracy"] = float("nan")
    path.write_text(json.dumps(record))  # Python writes (and reads) NaN: not JSON, but it happens
    found = collect(results)
    assert next(r for r in found.runs if r.path.name == "baseline-seed0").evals == {}
    assert any("clean.json" in p and "non-finite" in p for p in found.problems)


def test_a_16_bit_png_is_scaled_to_8_bits_not_saturated(tmp_path):
    from PIL import Image

    from fullscale.corruptions.writer import _load_224
    from fullscale.data.folders import Preprocess, decode

    grey = (np.arange(256 * 256).reshape(256, 256) % 65536).astype(np.uint16)
    path = tmp_path / "n0001" / "a.png"
    path.parent.mkdir()
    Image.fromarray(grey).save(path)
    assert Image.open(path).mode.startswith("I;16")
    for image in (_load_224(path), decode(path, Preprocess(256, 224)).permute(1, 2, 0).numpy()):
        assert 100 < image.mean() < 155 and image.min() < 30  # the mid grey of the ramp, not white


@pytest.mark.parametrize("where", ["run/eval", "run/sub", "cset/sub"])
@pytest.mark.parametrize("command", ["corrupt", "train"])
def test_no_output_inside_a_run_or_a_set(tmp_path, one_line_error, where, command):
    mark_folder(tmp_path / "run", "run")
    mark_folder(tmp_path / "cset", "c-set")
    out = tmp_path / where
    if command == "corrupt":
        argv = ["corrupt", "--dataset", "digits", "--out", str(out), "--corruptions", "gaussian_noise"]
    else:
        argv = ["train", "--out", str(out), *QUICK]
    assert main(argv) == 2
    assert "inside" in one_line_error()
    assert not out.exists()


def test_a_symlinked_marker_is_not_trusted(tmp_path, one_line_error):
    real = tmp_path / "run"
    mark_folder(real, "run")
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / MARKER).symlink_to(real / MARKER)
    with pytest.raises(ValueError, match="symbolic link"):
        folder_kind(fake)
    assert main(["train", "--out", str(fake), *QUICK]) == 2
    assert "symbolic link" in one_line_error()
    assert sorted(p.name for p in fake.iterdir()) == [MARKER]


def test_update_readme_is_refused_outside_a_git_checkout(tmp_path, one_line_error, monkeypatch):
    from noisymix_app.reproduce.command import check_git_checkout
    from noisymix_infra import provenance

    with pytest.raises(ValueError, match="not a git checkout"):
        check_git_checkout(tmp_path)
    monkeypatch.setattr(provenance, "ROOT", tmp_path)
    assert main(["reproduce", "--plan", "quick", "--out", str(tmp_path / "out"), "--update-readme"]) == 2
    assert "git checkout" in one_line_error()
    assert not (tmp_path / "out").exists()


# --- tracebacks, hang -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", ["1", "2"])
def test_corrupt_size_below_its_bound_is_one_line_before_any_work(tmp_path, one_line_error, size):
    out = tmp_path / "set"
    assert main(["corrupt", "--dataset", "digits", "--out", str(out), "--size", size,
                 "--corruptions", "elastic_transform"]) == 2
    assert "from 8" in one_line_error()
    assert not out.exists()


def test_sweep_seeds_above_its_bound_is_one_line_at_once(tmp_path, one_line_error):
    import time

    started = time.perf_counter()
    assert main(["sweep", "digits_analogue", "--seeds", "1000000", "--out", str(tmp_path / "s")]) == 2
    assert "1000" in one_line_error() and time.perf_counter() - started < 10
    assert not (tmp_path / "s").exists()


# --- other ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sets", [["lr=0.2", "optim.lr=0.1"], ["epochs=2", "epochs=3"]])
def test_one_key_set_twice_is_refused(tmp_path, one_line_error, sets):
    argv = ["train", "--out", str(tmp_path / "r"), *QUICK[:2]]
    for item in sets:
        argv += ["--set", item]
    assert _status(argv) == 2
    assert "given twice" in one_line_error()
    assert not (tmp_path / "r").exists()


def test_resume_reads_the_runs_own_config_and_refuses_flags_that_differ(tmp_path, capsys, one_line_error):
    from fullscale.data import write_cifar_fixture

    root = tmp_path / "data"
    write_cifar_fixture(root, "cifar10", n_train=40, n_test=20)
    run = tmp_path / "run"
    quick = ["--set", "width=4", "--set", "batch_size=16", "--set", "train_subset=32", "--set", "epochs=2"]  # CIFAR
    assert main(["train", "--out", str(run), "--data-root", str(root), *quick]) == 0
    (run / "final.pt").unlink()  # as if killed after its first epoch's checkpoint
    capsys.readouterr()
    assert main(["train", "--out", str(run), "--resume"]) == 0  # no --data-root, no --set: the run's own
    assert (run / "final.pt").is_file()
    (run / "final.pt").unlink()
    assert main(["train", "--out", str(run), "--resume", "--data-root", str(root), *quick[:-2],
                 "--set", "epochs=3"]) == 2
    assert "differs" in one_line_error()


@pytest.mark.parametrize(("command", "out", "why"), [("train", "/", "root of the file system"),
                                                      ("corrupt", "", "empty")])
def test_root_and_empty_out_are_refused(tmp_path, one_line_error, monkeypatch, command, out, why):
    monkeypatch.chdir(tmp_path)
    # CIFAR without its data: were --out / not refused first, training would stop at the data, not write into /
    argv = (["train", "--out", out, "--set", "dataset=cifar10"] if command == "train"
            else ["corrupt", "--dataset", "digits", "--out", out, "--corruptions", "gaussian_noise"])
    assert main(argv) == 2
    assert why in one_line_error()
    assert list(tmp_path.iterdir()) == []


def test_corrupt_with_no_corruption_named_is_refused(tmp_path, one_line_error):
    assert main(["corrupt", "--dataset", "digits", "--out", str(tmp_path / "set"), "--corruptions", ","]) == 2
    assert "no corruption" in one_line_error()
    assert not (tmp_path / "set").exists()


def test_a_failed_corrupt_leaves_no_lock_or_marker(tmp_path, one_line_error, monkeypatch):
    import fullscale.cli_corrupt as cli

    def fail(*args, **kwargs):
        raise ValueError("the disk said no")

    monkeypatch.setattr(cli, "write_npy_set", fail)
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (tmp_path / "new", empty):
        assert main(["corrupt", "--dataset", "digits", "--out", str(out), "--corruptions", "gaussian_noise",
                     "--limit", "4"]) == 2
        assert "the disk said no" in one_line_error()
    assert not (tmp_path / "new").exists() and list(empty.iterdir()) == []


def test_evaluate_a_file_that_is_not_a_checkpoint_says_so_without_torchs_advice(trained, tmp_path, one_line_error):
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros(3))
    assert main(["evaluate", str(trained / "baseline-seed0"), "--suite", "clean", "--checkpoint", str(npy),
                 "--device", "cpu"]) == 2
    line = one_line_error()
    assert "not a checkpoint" in line and "weights_only=False" not in line and "Re-running" not in line


def test_evaluate_never_writes_over_a_users_file_in_eval(results, one_line_error):
    mine = results / "baseline-seed0" / "eval" / "clean.json"
    mine.write_text('{"my": "numbers"}')
    assert main(["evaluate", str(results / "baseline-seed0"), "--suite", "clean", "--device", "cpu"]) == 2
    assert "not an evaluation of noisymix" in one_line_error()
    assert mine.read_text() == '{"my": "numbers"}'


def test_figures_refuses_an_empty_folder_and_a_corrupted_set(tmp_path, one_line_error):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["figures", "--results", str(empty), "--out", str(tmp_path / "f1")]) == 2
    assert "no results" in one_line_error()
    cset = tmp_path / "cset"
    mark_folder(cset, "c-set")
    assert main(["figures", "--results", str(cset), "--out", str(tmp_path / "f2")]) == 2
    assert "-C set" in one_line_error()
    assert not (tmp_path / "f1").exists() and not (tmp_path / "f2").exists()


def test_figures_refuses_its_results_folder_as_out(results, one_line_error):
    for out in (results, results.parent):  # the folder itself, or one that holds it
        assert main(["figures", "--results", str(results), "--out", str(out)]) == 2
        assert "the --results folder" in one_line_error()
        assert folder_kind(out) is None


def test_figures_with_missing_results_creates_nothing(tmp_path, one_line_error):
    assert main(["figures", "--results", str(tmp_path / "missing"), "--out", str(tmp_path / "f")]) == 2
    one_line_error()
    assert not (tmp_path / "f").exists()


def test_figures_reports_a_sound_results_folder(results, tmp_path):
    out = tmp_path / "fig"
    assert main(["figures", "--results", str(results), "--out", str(out), "--no-examples"]) == 0
    report = (out / "REPORT.md").read_text()
    assert "other weights" not in report and "non-finite" not in report
    assert Path(out / MARKER).is_file()


# --- the same class of defect in commands the campaign did not try ---------------------------------------------


def test_corrupt_never_writes_over_a_users_npy_of_a_corruptions_name(tmp_path, one_line_error):
    user = tmp_path / "mine"
    user.mkdir()
    np.save(user / "gaussian_noise.npy", np.zeros(3))
    before = (user / "gaussian_noise.npy").read_bytes()
    assert main(["corrupt", "--dataset", "digits", "--out", str(user), "--corruptions", "gaussian_noise",
                 "--limit", "4"]) == 2
    assert "gaussian_noise" in one_line_error()
    assert (user / "gaussian_noise.npy").read_bytes() == before
    assert sorted(p.name for p in user.iterdir()) == ["gaussian_noise.npy"]


def test_evaluate_a_bare_checkpoint_into_a_folder_inside_a_run_is_refused(tmp_path, one_line_error):
    mark_folder(tmp_path / "run", "run")
    weights = tmp_path / "w.pt"
    weights.write_bytes(b"not read")
    out = tmp_path / "run" / "public"
    assert main(["evaluate", str(weights), "--model", "resnet50", "--out", str(out), "--suite", "clean",
                 "--device", "cpu"]) == 2
    assert "inside" in one_line_error()
    assert not out.exists()


def test_corrupt_a_flag_and_the_same_key_by_set_is_refused(tmp_path, one_line_error):
    assert main(["corrupt", "--dataset", "digits", "--out", str(tmp_path / "set"), "--seed", "1",
                 "--set", "seed=2"]) == 2
    assert "given twice" in one_line_error()
    assert not (tmp_path / "set").exists()


def test_the_reproduce_summary_leaves_out_a_nan_metric_and_other_weights(tmp_path):
    import dataclasses

    from noisymix_app.reproduce.plans import PLANS
    from noisymix_app.reproduce.summary import summarize

    out = tmp_path / "out"
    plan = dataclasses.replace(PLANS["laptop"], methods=("baseline", "noisymix"), seeds=(0, 1, 2))
    out.mkdir()
    (out / "reproduce.json").write_text(json.dumps({"plan": dataclasses.asdict(plan), "steps": []}))
    for method in plan.methods:
        for seed in plan.seeds:
            run = out / "runs" / f"{method}-seed{seed}"
            (run / "eval").mkdir(parents=True)
            (run / "final.pt").write_bytes(f"{method} {seed}".encode())
            clean = float("nan") if (method, seed) == ("noisymix", 0) else 0.9
            checkpoint = "0" * 64 if (method, seed) == ("noisymix", 1) else None
            record = {"summary": {"accuracy": clean}, **({"checkpoint": {"sha256": checkpoint}} if checkpoint else {})}
            (run / "eval" / "clean.json").write_text(json.dumps(record))
    summary = summarize(out)
    assert summary["table"]["noisymix"]["clean"]["n"] == 1  # seed 0 (NaN) and seed 1 (other weights) left out
    assert "nan" not in json.dumps(summary["claims"]).lower()


def test_a_figures_report_made_before_the_marker_is_still_its_own(results, tmp_path):
    out = tmp_path / "old-report"
    assert main(["figures", "--results", str(results), "--out", str(out), "--no-examples"]) == 0
    (out / MARKER).unlink()  # as figures wrote it before folders were marked
    assert folder_kind(out) == "figures"
    assert main(["figures", "--results", str(results), "--out", str(out), "--no-examples"]) == 0
