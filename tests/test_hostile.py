"""A hostile-input campaign through the front door, as a new user would meet it (issue 10,
items 7-8): every bad file ends the command with one line naming it, and none runs code."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from fullscale.data import write_cifar_fixture
from noisymix.cli import main

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
