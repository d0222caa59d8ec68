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
from noisymix_app.cli import main


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


@pytest.mark.parametrize("change", [["--seed", "1"], ["--params", "imagenet"], ["--chunk", "4"], ["--limit", "12"]])
def test_a_rerun_with_other_values_into_an_existing_set_is_refused(tmp_path, capsys, change):
    """The finished files would be kept while the manifest claims the new values: refuse."""
    out = tmp_path / "digits-c"
    base = ["corrupt", "--dataset", "digits", "--out", str(out), "--corruptions", "contrast",
            "--limit", "8", "--chunk", "8"]
    assert main(base) == 0
    manifest, made = (out / "manifest.json").read_bytes(), (out / "contrast.npy").read_bytes()
    capsys.readouterr()
    args = [*base, *change]
    for i, item in enumerate(base):  # the changed option replaces the base's value
        if item == change[0]:
            args = [*base[:i], *base[i + 2:], *change]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "other values" in err and change[0].lstrip("-") in err.replace("count", "limit")
    assert (out / "manifest.json").read_bytes() == manifest and (out / "contrast.npy").read_bytes() == made
    # the same values, another corruption: accepted, and the manifest lists both
    assert main([*base[:6], "fog", *base[7:]]) == 0
    assert json.loads((out / "manifest.json").read_text())["names"] == ["contrast", "fog"]


def test_a_killed_run_is_checked_too_and_its_orphans_are_swept(tmp_path, capsys):
    out = tmp_path / "set"
    base = ["corrupt", "--dataset", "digits", "--out", str(out), "--corruptions", "contrast", "--limit", "8"]
    assert main(base) == 0
    (out / "contrast.npy").unlink()
    orphan = out / ".contrast.npy.x9.tmp"  # kill -9 mid-write
    orphan.write_bytes(b"half")
    assert main([*base, "--seed", "3"]) == 2  # the manifest, written first, still guards the folder
    assert main(base) == 0
    assert not orphan.exists()


def test_an_existing_set_being_written_by_another_process_is_refused(tmp_path, capsys):
    from noisymix_infra.io import directory_lock
    out = tmp_path / "set"
    with directory_lock(out):
        assert main(["corrupt", "--dataset", "digits", "--out", str(out), "--corruptions", "fog",
                     "--limit", "4"]) == 2
    assert "in use by another process" in capsys.readouterr().err


def test_a_full_disk_is_one_line_and_a_rerun_finishes(tmp_path, capsys, monkeypatch):
    import contextlib
    import errno
    import os

    import fullscale.corruptions.writer as writer
    out = tmp_path / "set"
    args = ["corrupt", "--dataset", "digits", "--out", str(out), "--corruptions", "contrast", "--limit", "4"]
    real = writer.atomic_write

    @contextlib.contextmanager
    def fills_the_disk(path, mode="wb"):
        with real(path, mode) as handle:
            handle.write(b"\0" * 10)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            yield handle  # pragma: no cover
    monkeypatch.setattr(writer, "atomic_write", fills_the_disk)
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and os.strerror(errno.ENOSPC) in err and "contrast.npy" in err
    assert not (out / "contrast.npy").exists() and not list(out.glob(".*.tmp"))
    monkeypatch.undo()
    assert main(args) == 0
    assert np.load(out / "contrast.npy").shape == (20, 32, 32, 3)


def test_an_unusable_device_is_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "set"
    assert main(["corrupt", "--dataset", "digits", "--out", str(out), "--corruptions", "fog", "--device", "tpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "tpu" in err and not out.exists()


def test_corrupt_takes_the_set_dialect_of_train(tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", "digits", "--out", str(out), "--set", "corruptions=contrast",
                 "--set", "severities=2", "--set", "limit=5"]) == 0
    assert sorted(p.name for p in out.glob("*.npy")) == ["contrast.npy", "labels.npy"]
    assert np.load(out / "contrast.npy").shape == (5, 32, 32, 3)  # one severity of the first 5 images
    assert main(["corrupt", "--dataset", "digits", "--out", str(tmp_path / "d"), "--set", "chunks=5"]) == 2
    expected = "unknown config key 'chunks'; valid keys: corruptions, severities, seed, params, chunk"
    assert expected in capsys.readouterr().err


def test_a_rerun_from_another_data_root_of_the_same_count_is_refused(tmp_path, capsys):
    """Issue 23: `corrupt` into a folder made from another --data-root (same image count) exited 0,
    kept the first set's contrast.npy and rewrote labels.npy and the manifest for the second."""
    from fullscale.data import write_cifar_fixture

    roots = []
    for seed in (0, 1):
        roots.append(tmp_path / f"data{seed}")
        write_cifar_fixture(roots[-1], "cifar10", n_train=10, n_test=12, seed=seed)
    out = tmp_path / "cifar10-c"
    args = ["corrupt", "--dataset", "cifar10", "--kind", "c", "--out", str(out), "--corruptions", "contrast"]
    assert main([*args, "--data-root", str(roots[0])]) == 0
    made = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    capsys.readouterr()
    assert main([*args, "--data-root", str(roots[1])]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "source_sha256" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == made  # nothing rewritten


def test_every_bad_image_of_a_tree_is_counted_before_anything_is_written(tmp_path, capsys):
    """Issue 23: a bad image of the tree was a traceback after manifest.json was written."""
    from fullscale.data.imagenet_fixture import write_hostile_image

    root = tmp_path / "val"
    rng = np.random.default_rng(0)
    for wnid in ("n01440764", "n01443537"):
        (root / wnid).mkdir(parents=True)
        for k in range(3):
            Image.fromarray(rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)).save(root / wnid / f"img{k}.JPEG")
    write_hostile_image(root / "n01440764" / "cut.JPEG", "truncated")
    write_hostile_image(root / "n01443537" / "huge.png", "huge_1bit")
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", str(root), "--out", str(out), "--corruptions", "contrast",
                 "--severities", "1"]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "2 of 8 images" in line and "cut.JPEG" in line and "huge.png" in line, line
    assert not out.exists()
