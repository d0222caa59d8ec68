"""Readers on written fixtures (good and malformed) and `noisymix evaluate` end to end, with resume."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from fullscale.data import load_dataset
from fullscale.models import create_model
from fullscale.readers import read_c_set, read_p_set
from noisymix.cli import main
from noisymix.io import save_npy, save_torch, write_json

N = 450  # the digits test split


@pytest.fixture()
def run_dir(tmp_path):
    run = tmp_path / "run"
    torch.manual_seed(0)
    model = create_model("preactresnet18", 10, width=4)
    save_torch(run / "final.pt", model.state_dict())
    write_json(run / "config.json", {"model": "preactresnet18", "model_kwargs": {"width": 4}, "num_classes": 10,
                                     "dataset": "digits", "method": "baseline", "preset": "baseline", "seed": 0})
    return run


def _c_set(root, names, count=N):
    images = load_dataset("digits", "test").images[:count].permute(0, 2, 3, 1).numpy()
    labels = load_dataset("digits", "test").labels[:count].numpy()
    for name in names:
        save_npy(root / f"{name}.npy", np.concatenate([images] * 5))
    save_npy(root / "labels.npy", np.tile(labels, 5).astype(np.uint8))
    return root


def test_reader_round_trip_and_malformed_files(tmp_path):
    root = _c_set(tmp_path / "c", ["fog", "snow"], count=20)
    data = read_c_set(root, ("fog", "snow"))
    assert data.count == 20 and data.labels.shape == (20,)
    assert data.images("fog", 3).shape == (20, 3, 32, 32)
    with pytest.raises(FileNotFoundError, match=r"frost\.npy"):
        read_c_set(root, ("frost",))
    save_npy(root / "labels.npy", np.zeros(7, np.uint8))
    with pytest.raises(ValueError, match="labels"):
        read_c_set(root, ("fog",))
    (root / "snow.npy").write_bytes((root / "fog.npy").read_bytes()[:200])  # truncated
    _c_set(root, [], count=20)
    with pytest.raises(ValueError):
        read_c_set(root, ("snow",)).images("snow", 1)
    save_npy(root / "bad.npy", np.zeros((100, 32, 32, 3), np.float32))
    with pytest.raises(ValueError, match="uint8"):
        read_c_set(root, ("bad",)).images("bad", 1)
    p = tmp_path / "p"
    save_npy(p / "rotate.npy", np.zeros((4, 31, 32, 32, 3), np.uint8))
    assert read_p_set(p, ("rotate",)).sequences("rotate", 0, 2).shape == (2, 31, 3, 32, 32)


def test_evaluate_end_to_end_matches_direct_computation_and_resumes(run_dir, tmp_path, monkeypatch):
    root = _c_set(tmp_path / "c", ["fog", "contrast"])
    import fullscale.evaluation as evaluation
    monkeypatch.setitem(evaluation.SUITES, "digits-c", lambda *a: evaluation.corrupted(*a, names=("fog", "contrast")))
    assert main(["evaluate", str(run_dir), "--suite", "clean"]) == 0
    clean = json.loads((run_dir / "eval" / "clean.json").read_text())
    assert clean["complete"] and clean["results"]["clean"]["n"] == N
    # the -C set holds clean images: every severity's accuracy equals the clean accuracy
    assert main(["evaluate", str(run_dir), "--suite", "digits-c", "--data-root", str(root)]) == 0
    result = json.loads((run_dir / "eval" / "digits-c.json").read_text())
    acc = clean["summary"]["accuracy"]
    assert all(result["results"][c][str(s)]["accuracy"] == pytest.approx(acc) for c in ("fog", "contrast")
               for s in range(1, 6))
    assert result["summary"]["mean_accuracy"] == pytest.approx(acc)
    assert {f["path"].rsplit("/", 1)[-1] for f in result["data"]["files"]} == {"labels.npy", "fog.npy",
                                                                               "contrast.npy"}
    # resume: a partial file with fog done is completed without recomputing fog
    partial = {**result, "complete": False, "results": {"fog": {str(s): {"accuracy": -1.0, "n": N}
                                                                for s in range(1, 6)}}}
    write_json(run_dir / "eval" / "digits-c.json", partial)
    assert main(["evaluate", str(run_dir), "--suite", "digits-c", "--data-root", str(root)]) == 0
    resumed = json.loads((run_dir / "eval" / "digits-c.json").read_text())
    assert resumed["results"]["fog"]["1"]["accuracy"] == -1.0  # kept, not recomputed
    assert resumed["results"]["contrast"]["1"]["accuracy"] == pytest.approx(acc)


def test_calibration_fgsm_and_p_suites(run_dir, tmp_path):
    assert main(["evaluate", str(run_dir), "--suite", "calibration"]) == 0
    cal = json.loads((run_dir / "eval" / "calibration.json").read_text())["summary"]
    assert 0 <= cal["rms_calibration_error"] <= 1 and cal["rms_estimator"] == "exact"
    assert main(["evaluate", str(run_dir), "--suite", "fgsm"]) == 0
    fg = json.loads((run_dir / "eval" / "fgsm.json").read_text())["summary"]
    assert len(fg["accuracy"]) == 4
    p = tmp_path / "p"
    frames = np.repeat(load_dataset("digits", "test").images[:10].permute(0, 2, 3, 1).numpy()[:, None], 31, 1)
    save_npy(p / "rotate.npy", frames)
    save_npy(p / "labels.npy", np.zeros(10, np.int64))
    assert main(["evaluate", str(run_dir), "--suite", "digits-p", "--data-root", str(p)]) == 0
    fp = json.loads((run_dir / "eval" / "digits-p.json").read_text())
    assert fp["results"]["rotate"]["flip_probability"] == 0.0  # identical frames never flip


def test_missing_run_or_data_is_a_clear_error(run_dir, tmp_path):
    assert main(["evaluate", str(tmp_path / "nope"), "--suite", "clean"]) == 2
    assert main(["evaluate", str(run_dir), "--suite", "digits-c"]) == 2
    assert main(["evaluate", str(run_dir), "--suite", "digits-c", "--data-root", str(tmp_path)]) == 2
