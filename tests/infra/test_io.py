"""Atomic writes and safe loading."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from noisymix_infra.io import atomic_write, directory_lock, load_state_dict, read_json, save_npy, save_torch, write_json


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "result.json"
    write_json(target, {"a": 1})
    with pytest.raises(RuntimeError), atomic_write(target, "w") as handle:
        handle.write('{"a": 2, "trunc')
        raise RuntimeError("crash mid-write")
    assert read_json(target) == {"a": 1}
    assert os.listdir(tmp_path) == ["result.json"]


def test_json_refuses_nan(tmp_path):
    with pytest.raises(ValueError):
        write_json(tmp_path / "x.json", {"a": float("nan")})
    assert not (tmp_path / "x.json").exists()


def test_state_dicts_round_trip_and_pickled_objects_are_refused(tmp_path):
    state = {"w": torch.arange(3.0), "step": 4}
    save_torch(tmp_path / "ok.pt", state)
    loaded = load_state_dict(tmp_path / "ok.pt")
    assert torch.equal(loaded["w"], state["w"]) and loaded["step"] == 4
    torch.save({"obj": Exception("not weights")}, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="weights_only"):
        load_state_dict(tmp_path / "bad.pt")
    with pytest.raises(FileNotFoundError):
        load_state_dict(tmp_path / "missing.pt")


def test_npy_without_pickle(tmp_path):
    save_npy(tmp_path / "a.npy", np.arange(6, dtype=np.uint8).reshape(2, 3))
    assert np.load(tmp_path / "a.npy", allow_pickle=False).sum() == 15


def test_results_are_readable_by_others(tmp_path):
    write_json(tmp_path / "r.json", {"a": 1})
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o666 & ~umask


class _RunsCode:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("kind", ["runs_code", "random", "empty", "truncated", "text"])
def test_hostile_checkpoints_are_one_line_value_errors_naming_the_file(tmp_path, kind):
    path = tmp_path / "evil.pt"
    marker = tmp_path / "pwned"
    if kind == "runs_code":
        torch.save({"w": _RunsCode(marker)}, path)
    elif kind == "random":
        path.write_bytes(np.random.default_rng(1).integers(0, 256, 10_000, dtype=np.uint8).tobytes())
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        save_torch(path, {"w": torch.zeros(1000)})
        path.write_bytes(path.read_bytes()[:500])
    else:
        path.write_text('{"model": {}}')
    with pytest.raises(ValueError, match=r"evil\.pt") as caught:
        load_state_dict(path)
    assert "\n" not in str(caught.value)
    assert not marker.exists()


@pytest.mark.parametrize("text", ["{", "not json at all", "\xff\xfe"])
def test_a_file_that_is_not_json_is_a_one_line_error_naming_it(tmp_path, text):
    path = tmp_path / "config.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=r"config\.json") as caught:
        read_json(path)
    assert "\n" not in str(caught.value)


def test_directory_lock_excludes_a_second_writer_and_sweeps_orphans(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    orphan, kept = out / ".final.pt.abc123.tmp", out / "notes.tmp"  # only atomic_write's names go
    orphan.write_bytes(b"x")
    kept.write_bytes(b"y")
    with directory_lock(out):
        assert not orphan.exists() and kept.exists()
        with pytest.raises(ValueError, match="in use by another process"), directory_lock(out):
            pass
    with directory_lock(out):  # released on exit
        pass
    (tmp_path / "file").write_text("z")
    with pytest.raises(ValueError, match="not a folder"), directory_lock(tmp_path / "file"):
        pass


def test_read_state_dict_unwraps_public_and_run_files_and_refuses_the_rest(tmp_path):
    import pickle

    from noisymix_infra.io import read_state_dict

    w = torch.arange(3.0)
    for name, obj in (("public.pt", {"state_dict": {"module.fc.weight": w}}), ("ckpt.pt", {"model": {"fc.weight": w},
                                                                                           "epoch": 3})):
        torch.save(obj, tmp_path / name)
        state = read_state_dict(tmp_path / name)
        assert list(state) == ["fc.weight"] and torch.equal(state["fc.weight"], w)
    torch.save([w], tmp_path / "list.pt")
    with pytest.raises(ValueError, match=r"list\.pt is not a ResNet-50 state dict$"):
        read_state_dict(tmp_path / "list.pt", "a ResNet-50 state dict")
    torch.save({}, tmp_path / "empty.pt")
    assert read_state_dict(tmp_path / "empty.pt") == {}
    with pytest.raises(ValueError, match="is not"):
        read_state_dict(tmp_path / "empty.pt", nonempty=True)
    (tmp_path / "evil.pt").write_bytes(pickle.dumps(print))  # a crafted pickle naming a global
    with pytest.raises(ValueError, match="weights_only=True"):
        read_state_dict(tmp_path / "evil.pt")
    (tmp_path / "cut.pt").write_bytes((tmp_path / "public.pt").read_bytes()[:40])  # truncated
    with pytest.raises(ValueError, match="cannot load checkpoint"):
        read_state_dict(tmp_path / "cut.pt")


def test_a_forked_child_does_not_keep_the_lock_of_a_killed_holder(tmp_path):
    """Issue 23: flock belongs to the open file, which a forked child (a DataLoader worker) shares:
    after kill -9 of the holder the child kept the folder locked and `--resume` was refused."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    script = (
        "import os, sys, time\n"
        "from noisymix_infra.io import directory_lock\n"
        "with directory_lock(sys.argv[1]):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "    print(pid, flush=True)\n"
        "    time.sleep(120)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = subprocess.Popen([sys.executable, "-c", script, str(out)], env=env, stdout=subprocess.PIPE, text=True)
    forked = None
    try:
        forked = int(holder.stdout.readline())
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        deadline, taken = time.monotonic() + 1.0, False
        while not taken and time.monotonic() < deadline:
            try:
                with directory_lock(out):
                    taken = True
            except ValueError:
                time.sleep(0.05)
        assert taken, "the lock of the killed process is still held by its forked child"
    finally:
        holder.kill()
        holder.wait()
        if forked:
            try:
                os.kill(forked, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_printable_names_any_file_name():
    from noisymix_infra.io import printable

    name = os.fsdecode(b"/data/\xff.JPEG")
    assert printable(name) == "/data/\\xff.JPEG" and printable(os.fsencode(name)) == "/data/\\xff.JPEG"
    assert printable("caf\u00e9 \ud800") == "caf\u00e9 \\ud800"


@settings(max_examples=200)
@given(st.text())
def test_printable_leaves_no_control_character_and_keeps_the_rest(name):
    """A file name cannot forge a log line or move the terminal: no C0/C1 control character (a
    newline, ESC) survives; printable text is kept as it is."""
    import unicodedata

    from noisymix_infra.io import printable

    shown = printable(name)
    assert not any(unicodedata.category(c) == "Cc" for c in shown)
    shown.encode("utf-8")
    if not any(unicodedata.category(c) in ("Cc", "Cs") for c in name):
        assert shown == name
