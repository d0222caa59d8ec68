"""Atomic writes and safe loading."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from noisymix.io import atomic_write, load_state_dict, read_json, save_npy, save_torch, write_json


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
