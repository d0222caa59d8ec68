"""``noisymix corrupt`` end to end: the standard layouts, resuming, ImageNet-C folders, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from fullscale.corruptions import corrupt
from fullscale.corruptions.writer import chunk_generator, write_imagenet_c
from fullscale.data import load_dataset
from noisymix.cli import main


def test_corrupt_digits_c_standard_layout_and_resume(tmp_path):
    out = tmp_path / "digits-c"
    args = ["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(out),
            "--corruptions", "fog,contrast", "--limit", "20", "--chunk", "8"]
    assert main(args) == 0
    fog = np.load(out / "fog.npy", allow_pickle=False)
    labels = np.load(out / "labels.npy", allow_pickle=False)
    clean = load_dataset("digits", "test")
    assert fog.shape == (100, 32, 32, 3) and fog.dtype == np.uint8
    assert labels.dtype == np.uint8 and labels.shape == (100,)  # CIFAR-10-C: labels repeated 5 times
    assert (labels.reshape(5, 20) == clean.labels[:20].numpy()).all()
    # severity blocks in order, each the corruption of the clean images with its chunk generators
    x = clean.images[:20]
    for severity in (1, 5):
        expected = torch.cat([corrupt(x[s:s + 8], "contrast", severity, generator=chunk_generator(0, "contrast",
                                                                                                    severity, k, "cpu"))
                              for k, s in enumerate(range(0, 20, 8))])
        block = np.load(out / "contrast.npy")[(severity - 1) * 20:severity * 20]
        assert np.array_equal(block, expected.permute(0, 2, 3, 1).numpy())
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["names"] == ["fog", "contrast"] and manifest["params"] == "cifar"

    mtime = (out / "fog.npy").stat().st_mtime_ns
    (out / "contrast.npy").write_bytes((out / "contrast.npy").read_bytes()[:1000])  # a broken file
    assert main(args) == 0
    assert (out / "fog.npy").stat().st_mtime_ns == mtime  # finished files are kept
    assert np.load(out / "contrast.npy").shape == (100, 32, 32, 3)  # the broken one is made again
    # the same corruption made alone is the same file (generators do not depend on the list)
    assert main(["corrupt", "--dataset", "digits", "--out", str(tmp_path / "alone"), "--corruptions", "fog",
                 "--limit", "20", "--chunk", "8"]) == 0
    assert np.array_equal(np.load(tmp_path / "alone" / "fog.npy"), fog)


def test_corrupt_p_and_errors(tmp_path):
    assert main(["corrupt", "--dataset", "digits", "--kind", "p", "--out", str(tmp_path / "p"),
                 "--corruptions", "translate,motion_blur", "--limit", "5"]) == 0
    assert np.load(tmp_path / "p" / "translate.npy").shape == (5, 16, 32, 32, 3)
    assert np.load(tmp_path / "p" / "motion_blur.npy").shape == (5, 21, 32, 32, 3)
    assert np.load(tmp_path / "p" / "labels.npy").shape == (5,)
    assert main(["corrupt", "--dataset", "digits", "--out", str(tmp_path / "x"), "--corruptions", "rain"]) == 2
    assert main(["corrupt", "--dataset", "digits", "--out", str(tmp_path / "x"), "--severities", "0"]) == 2
    assert main(["corrupt", "--dataset", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")]) == 2


def test_default_set_has_all_fifteen_with_the_bundled_photographs(tmp_path):
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", "digits", "--out", str(out), "--limit", "3", "--severities", "1"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["names"]) == 15 and "frost" in manifest["names"] and not manifest["skipped"]
    assert np.load(out / "frost.npy").shape == (3, 32, 32, 3)


def test_default_set_leaves_frost_out_without_photographs(tmp_path, monkeypatch):
    monkeypatch.setattr("fullscale.corruptions.frost._BUNDLED", tmp_path / "none")
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", "digits", "--out", str(out), "--limit", "3", "--severities", "1"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert "frost" not in manifest["names"] and len(manifest["names"]) == 14
    assert "frost skipped" in manifest["skipped"] and not (out / "frost.npy").exists()
    assert main(["corrupt", "--dataset", "digits", "--out", str(out), "--corruptions", "frost"]) == 2


def test_imagenet_folder_tree_to_imagenet_c_layout(tmp_path):
    root = tmp_path / "val"
    rng = np.random.default_rng(0)
    for wnid, size in (("n01440764", (300, 260)), ("n01443537", (256, 320))):
        (root / wnid).mkdir(parents=True)
        for k in range(2):
            Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(root / wnid / f"img{k}.JPEG")
    out = tmp_path / "imagenet-c"
    args = ["corrupt", "--dataset", str(root), "--out", str(out), "--corruptions", "contrast,gaussian_noise",
            "--severities", "1,5", "--chunk", "3"]
    assert main(args) == 0
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.JPEG"))
    assert len(files) == 2 * 2 * 4 and "contrast/5/n01443537/img1.JPEG" in files
    img = Image.open(out / "contrast" / "5" / "n01440764" / "img0.JPEG")
    assert img.size == (224, 224) and img.mode == "RGB"
    assert (out / "gaussian_noise" / "1" / ".complete").exists()
    assert json.loads((out / "manifest.json").read_text())["params"] == "imagenet"
    mtime = (out / "contrast" / "1" / "n01440764" / "img0.JPEG").stat().st_mtime_ns
    assert main(args) == 0
    assert (out / "contrast" / "1" / "n01440764" / "img0.JPEG").stat().st_mtime_ns == mtime
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no class folders"):
        write_imagenet_c(empty, out, ["contrast"])
    assert main(["corrupt", "--dataset", str(empty), "--out", str(out)]) == 2
