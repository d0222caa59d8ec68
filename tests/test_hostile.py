"""A hostile-input campaign through the front door, as a new user would meet it (issue 10,
items 7-8): every bad file ends the command with one line naming it, and none runs code."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from fullscale.data import write_cifar_fixture
from noisymix_app.cli import main

QUICK = ["--set", "width=4", "--set", "epochs=1", "--set", "batch_size=16", "--set", "train_subset=32"]


class _RunsCode:
    """Unpickled by plain ``pickle.load``, this creates ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os
        return (os.system, (f"touch {self.marker}",))


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


@pytest.fixture
def cifar(tmp_path):
    root = tmp_path / "data"
    folder = write_cifar_fixture(root, "cifar10", n_train=40, n_test=20)
    return root, folder


def _poison(folder, name, kind, marker):
    path = folder / name
    if kind == "runs_code":
        path.write_bytes(pickle.dumps({b"data": _RunsCode(marker), b"labels": [0]}, protocol=2))
    elif kind == "random":
        path.write_bytes(np.random.default_rng(7).integers(0, 256, 20_000, dtype=np.uint8).tobytes())
    else:  # a plausible header that asks for an absurd allocation (the campaign's MemoryError)
        path.write_bytes(b"\x80\x02}q\x00(C\x04dataq\x01B\xff\xff\xff\x7f")


@pytest.mark.parametrize("kind", ["runs_code", "random", "huge"])
@pytest.mark.parametrize("command", ["train", "corrupt", "evaluate"])
def test_a_poisoned_cifar_batch_is_one_line_and_runs_nothing(tmp_path, capsys, cifar, command, kind):
    root, folder = cifar
    marker = tmp_path / "pwned"
    if command == "train":
        _poison(folder, "data_batch_1", kind, marker)
        status = main(["train", "--preset", "baseline", "--out", str(tmp_path / "run"), "--data-root", str(root),
                       *QUICK])
        assert not (tmp_path / "run" / "config.json").exists()
    elif command == "corrupt":
        _poison(folder, "test_batch", kind, marker)
        status = main(["corrupt", "--dataset", "cifar10", "--data-root", str(root), "--out", str(tmp_path / "c"),
                       "--corruptions", "contrast", "--limit", "4"])
    else:
        assert main(["train", "--preset", "baseline", "--out", str(tmp_path / "run"), "--data-root", str(root),
                     *QUICK]) == 0
        capsys.readouterr()
        _poison(folder, "test_batch", kind, marker)
        status = main(["evaluate", str(tmp_path / "run"), "--suite", "clean", "--data-root", str(root)])
    assert status == 2
    assert "_batch" in _one_line(capsys)
    assert not marker.exists()


def test_a_resumed_run_with_garbage_metrics_is_one_line(tmp_path, capsys, cifar):
    root, _ = cifar
    run = tmp_path / "run"
    args = ["train", "--preset", "baseline", "--out", str(run), "--data-root", str(root), *QUICK]
    assert main(args) == 0
    (run / "metrics.jsonl").write_text("{oops\n")
    assert main([*args, "--resume"]) == 2
    assert "metrics.jsonl" in _one_line(capsys)


def test_kill_9_then_resume_is_bit_identical_and_leaves_no_stale_lock(tmp_path):
    """A real SIGKILL mid-run: the kernel drops the flock with the process, the next `train
    --resume` takes the folder, sweeps what was half-written and ends bit-identical."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import torch

    from noisymix_infra.io import load_state_dict
    # one torch thread in every process: bit-identity is the contract for the same thread count on one
    # machine (a convolution's float sums may be split differently over 1 and 2 threads)
    digits = ["--set", "dataset=digits", "--set", "width=4", "--set", "epochs=3", "--set", "batch_size=32",
              "--set", "train_subset=64", "--threads", "1"]
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    assert main(["train", "--preset", "noisymix", "--out", str(straight), *digits]) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-m", "noisymix_app.cli", "train", "--preset", "noisymix", "--out",
                              str(killed), *digits], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (killed / "checkpoint.pt").exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    if (killed / "final.pt").exists():
        pytest.skip("the child finished before it could be killed (a very fast machine)")
    (killed / ".checkpoint.pt.orphan.tmp").write_bytes(b"half")  # as if killed mid-write
    assert main(["train", "--preset", "noisymix", "--out", str(killed), "--resume", *digits]) == 0
    assert not list(killed.glob(".*.tmp"))
    a, b = load_state_dict(straight / "final.pt"), load_state_dict(killed / "final.pt")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_resume_from_another_runs_checkpoint_is_refused(tmp_path, capsys, cifar):
    """Issue 23: a checkpoint of another run (another seed, lr 0.3, weight decay 0.01) copied into a
    run folder must not be resumed with its foreign optimizer state under this run's config.json."""
    import shutil

    root, _ = cifar
    mine, other = tmp_path / "mine", tmp_path / "other"
    quick = [*QUICK[:2], *QUICK[4:]]  # QUICK without its epochs=1: a key is given once
    base = ["train", "--preset", "baseline", "--data-root", str(root), *quick, "--set", "epochs=2"]
    assert main([*base, "--out", str(other), "--set", "seed=1", "--set", "lr=0.3",
                 "--set", "weight_decay=0.01"]) == 0
    assert main([*base, "--out", str(mine)]) == 0
    (mine / "final.pt").unlink()  # as if killed after the first epoch's checkpoint
    shutil.copy(other / "checkpoint.pt", mine / "checkpoint.pt")
    capsys.readouterr()
    assert main([*base, "--out", str(mine), "--resume"]) == 2
    line = _one_line(capsys)
    assert "checkpoint.pt" in line and "another config" in line, line


@pytest.mark.parametrize("device", ["meta", "hpu"])
@pytest.mark.parametrize("command", ["train", "corrupt", "evaluate"])
def test_a_device_the_toolkit_cannot_run_on_is_one_line_and_leaves_nothing(tmp_path, capsys, device, command):
    """Issue 23: `device=meta` or `hpu` gave tracebacks; corrupt left manifest.json and labels.npy."""
    out = tmp_path / "out"
    args = {"train": ["train", "--preset", "digits-baseline", "--out", str(out), "--set", f"device={device}"],
            "corrupt": ["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(out),
                        "--set", f"device={device}"],
            "evaluate": ["evaluate", str(out), "--suite", "clean", "--device", device]}[command]
    assert main(args) == 2
    assert device in _one_line(capsys)
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("command", ["train", "corrupt"])
def test_a_seed_beyond_torchs_range_names_the_key_and_the_range(tmp_path, capsys, command):
    seed = f"seed={2**70}"
    args = {"train": ["train", "--preset", "digits-baseline", "--out", str(tmp_path / "r"), "--set", seed],
            "corrupt": ["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(tmp_path / "c"),
                        "--set", seed]}[command]
    assert main(args) == 2
    line = _one_line(capsys)
    assert "seed" in line and "2**63" in line, line


def test_a_diverged_run_with_finite_weights_is_not_marked_finished(tmp_path, capsys):
    """Issue 23: lr 1e38 leaves finite weights (~3e37) whose logits are not finite; training
    reported success and marked the run finished, and evaluation then refused it."""
    import json

    out = tmp_path / "run"
    # one step (64 images, batch 64): a single update, whose loss was checked before it was taken
    assert main(["train", "--preset", "digits-baseline", "--out", str(out), "--set", "epochs=1", "--set", "width=8",
                 "--set", "lr=1e38", "--set", "train_subset=64", "--set", "batch_size=64", "--threads", "1"]) == 1
    line = _one_line(capsys)
    assert "diverged" in line and "logits" in line, line
    assert not (out / "final.pt").exists() and not (out / "checkpoint.pt").exists()
    assert "finished" not in json.loads((out / "config.json").read_text())["run"]


def test_training_data_without_one_batch_is_one_line(tmp_path, capsys):
    """Issue 23: CIFAR batches of 0 training images and an ImageNet tree smaller than one batch
    ended in ZeroDivisionError."""
    from fullscale.data.imagenet_fixture import write_imagenet_tree

    write_cifar_fixture(tmp_path / "cifar", "cifar10", n_train=0, n_test=5)
    assert main(["train", "--preset", "baseline", "--data-root", str(tmp_path / "cifar"), "--out",
                 str(tmp_path / "a"), "--set", "width=4", "--set", "epochs=1"]) == 2
    assert "holds 0 image(s)" in _one_line(capsys)
    write_imagenet_tree(tmp_path / "imagenet", n_train=2, n_val=1)
    assert main(["train", "--preset", "imagenet-resnet50-baseline", "--set", f"data_root={tmp_path / 'imagenet'}",
                 "--out", str(tmp_path / "b"), "--set", "width=4", "--set", "epochs=1", "--set", "batch_size=64",
                 "--set", "workers=0", "--set", "image_size=32"]) == 2
    assert "not one step of batch 64" in _one_line(capsys)


def test_a_model_that_cannot_fit_is_one_line_before_any_allocation(tmp_path, capsys):
    """Issue 23: `--set width=100000` was an allocation traceback."""
    out = tmp_path / "wide"
    assert main(["train", "--preset", "digits-baseline", "--set", "width=100000", "--out", str(out)]) == 2
    line = _one_line(capsys)
    assert "does not fit" in line and "parameters" in line and "GiB available" in line, line
    assert not (out / "config.json").exists()


# ---- images: ImageNet val (evaluate) and a class-folder tree (corrupt) -----------------------------

@pytest.fixture
def imagenet_run(tmp_path):
    """A 1000-class run of `dataset: imagenet` (a tiny untrained model) and a 10-class val tree."""
    from fullscale.data.imagenet_fixture import write_imagenet_tree
    from fullscale.models import create_model
    from noisymix_infra.io import save_torch, write_json

    run = tmp_path / "run"
    save_torch(run / "final.pt", create_model("preactresnet18", 1000, width=4).state_dict())
    write_json(run / "config.json", {"model": "preactresnet18", "model_kwargs": {"width": 4}, "num_classes": 1000,
                                     "dataset": "imagenet", "method": "baseline", "preset": "baseline", "seed": 0})
    tree = write_imagenet_tree(tmp_path / "imagenet", n_train=1, n_val=1, side=(24, 32))
    return run, tree / "val"


def _evaluate(run, data_root, workers):
    return main(["evaluate", str(run), "--suite", "clean", "--data-root", str(data_root), "--resize", "20",
                 "--crop", "16", "--workers", str(workers), "--device", "cpu", "--batch-size", "4"])


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("kind", ["bomb", "truncated", "empty", "huge_1bit"])
def test_a_bad_val_image_is_one_line_naming_it(imagenet_run, capsys, kind, workers):
    """Issue 23: a decompression bomb in the val folder was PIL's DecompressionBombError traceback;
    with --workers 2 any bad file was "Caught ValueError in DataLoader worker process 0." without
    its name; a 12000 x 12000 1-bit PNG (17.5 kB) was decoded to 1.8 GB."""
    from fullscale.data import imagenet_wnids
    from fullscale.data.imagenet_fixture import write_hostile_image

    run, val = imagenet_run
    write_hostile_image(val / imagenet_wnids()[3] / f"bad_{kind}.png", kind)
    assert _evaluate(run, val, workers) == 2
    line = _one_line(capsys)
    assert f"bad_{kind}.png" in line, line
    assert not (run / "eval" / "clean.json").exists()


def test_non_utf8_file_names_are_read_and_named(imagenet_run, capsys):
    """Issue 23: a file named b'\\xff.JPEG' made the listing digest raise UnicodeEncodeError; a bad one
    must be named in one line that can itself be printed."""
    import os
    import shutil

    from fullscale.data import imagenet_wnids
    from fullscale.data.imagenet_fixture import write_hostile_image

    run, val = imagenet_run
    folder = val / imagenet_wnids()[0]
    good = next(folder.iterdir())
    shutil.copy(good, os.fsencode(folder) + b"/\xff.JPEG")
    assert _evaluate(run, val, 0) == 0, capsys.readouterr().err
    capsys.readouterr()
    write_hostile_image(os.fsdecode(os.fsencode(folder) + b"/\xfe.JPEG"), "truncated")
    assert _evaluate(run, val, 2) == 2
    line = _one_line(capsys)
    assert "\\xfe.JPEG" in line, line
    line.encode("utf-8")  # printable anywhere: no lone surrogates


@pytest.mark.parametrize("kind", ["long_field", "not_utf8"])
def test_a_bad_solution_csv_is_one_line_naming_it(imagenet_run, tmp_path, capsys, kind):
    """Issue 23: a 200 kB field was `_csv.Error: field larger than field limit` (a traceback); a
    non-UTF-8 file was a decoding error that did not name the file."""
    import shutil

    run, val = imagenet_run
    flat = tmp_path / "flat" / "val"
    flat.mkdir(parents=True)
    rows = ["ImageId,PredictionString"]
    for path in sorted(val.rglob("*.JPEG")):
        shutil.copy(path, flat / path.name)
        rows.append(f"{path.stem},{path.parent.name} 0 0 10 10")
    body = ("\n".join(rows) + "\n").encode()
    body += {"long_field": b"x," + b"y" * 200_000 + b"\n", "not_utf8": b"\xff\xfe,\xff\n"}[kind]
    (tmp_path / "flat" / "LOC_val_solution.csv").write_bytes(body)
    assert _evaluate(run, flat, 0) == 2
    line = _one_line(capsys)
    assert "LOC_val_solution.csv" in line, line


@pytest.mark.parametrize("kind", ["truncated", "empty", "bomb"])
def test_a_bad_image_in_a_corrupt_tree_is_one_line_and_leaves_nothing(tmp_path, capsys, kind):
    """Issue 23: `corrupt --dataset TREE` with a truncated, empty or bomb image was a traceback that
    left manifest.json (and the first finished images) behind."""
    from fullscale.data import imagenet_wnids
    from fullscale.data.imagenet_fixture import write_hostile_image, write_imagenet_tree

    tree = write_imagenet_tree(tmp_path / "imagenet", n_train=1, n_val=1, side=(24, 32)) / "val"
    write_hostile_image(tree / imagenet_wnids()[9] / f"zz_{kind}.JPEG", kind)
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", str(tree), "--out", str(out), "--corruptions", "contrast",
                 "--severities", "1", "--chunk", "4"]) == 2
    line = _one_line(capsys)
    assert f"zz_{kind}.JPEG" in line and "1 of 11" in line, line
    assert not out.exists() or not any(out.iterdir())


class _Hung(Exception):
    pass


def _alarm(seconds):
    """A context that raises ``_Hung`` in the test after ``seconds`` (a blocked ``open`` included)."""
    import contextlib
    import signal

    @contextlib.contextmanager
    def guard():
        def hung(signum, frame):
            raise _Hung(f"still running after {seconds} s")

        previous = signal.signal(signal.SIGALRM, hung)
        signal.alarm(seconds)
        try:
            yield
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)

    return guard()


def test_entries_that_are_not_regular_files_are_skipped_and_reported_by_corrupt(tmp_path, capsys):
    """Issue 23: a FIFO named x.JPEG in the tree blocked `corrupt` forever in open(); a folder
    named d.JPEG was an IsADirectoryError.  Readers take regular files only, and say what they
    skipped in one line."""
    import os

    from fullscale.data import imagenet_wnids
    from fullscale.data.imagenet_fixture import write_imagenet_tree

    tree = write_imagenet_tree(tmp_path / "imagenet", n_train=1, n_val=1, side=(24, 32)) / "val"
    folder = tree / imagenet_wnids()[4]
    os.mkfifo(folder / "x.JPEG")
    (folder / "d.JPEG").mkdir()
    (folder / "loop.JPEG").symlink_to(folder / "loop.JPEG")
    out = tmp_path / "c"
    with _alarm(20):
        status = main(["corrupt", "--dataset", str(tree), "--out", str(out), "--corruptions", "contrast",
                       "--severities", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 0, err
    assert len(err) == 1 and "3 entries" in err[0] and "not regular files" in err[0], err
    assert str(folder) in err[0]
    made = sorted(p.name for p in (out / "contrast" / "1").rglob("*.JPEG"))
    assert len(made) == 10 and not {"x.JPEG", "d.JPEG", "loop.JPEG"} & set(made)
