"""Readers on written fixtures in the standard layouts, good and malformed."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from PIL import Image

from fullscale.data import (
    Preprocess,
    imagenet_r_indices,
    imagenet_r_wnids,
    imagenet_wnids,
    read_c_set,
    read_class_folders,
    read_p_set,
    read_video_folders,
)
from fullscale.data.videos import decode_video
from noisymix_infra.io import save_npy

RNG = np.random.default_rng(0)


def _images(n, h=8, w=8):
    return RNG.integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def _c_set(root, names, n=6, labels_per="all"):
    blocks = {name: _images(5 * n) for name in names}
    for name, array in blocks.items():
        save_npy(root / f"{name}.npy", array)
    labels = RNG.integers(0, 10, n)
    save_npy(root / "labels.npy", np.tile(labels, 5) if labels_per == "all" else labels)
    return blocks, labels


@pytest.mark.parametrize("labels_per", ["all", "one"])
def test_c_set_round_trip(tmp_path, labels_per):
    blocks, labels = _c_set(tmp_path, ["fog", "snow"], labels_per=labels_per)
    data = read_c_set(tmp_path, ("fog", "snow"))
    assert data.count == 6 and (data.labels == labels).all()
    for s in range(1, 6):
        got = data.images("snow", s)
        assert got.dtype == torch.uint8 and got.shape == (6, 3, 8, 8)
        assert (got.permute(0, 2, 3, 1).numpy() == blocks["snow"][(s - 1) * 6:s * 6]).all()
    with pytest.raises(ValueError):
        data.images("snow", 6)


def test_c_set_malformed(tmp_path):
    _c_set(tmp_path, ["fog", "snow"])
    with pytest.raises(FileNotFoundError, match=r"frost\.npy"):
        read_c_set(tmp_path, ("frost",))
    with pytest.raises(FileNotFoundError):
        read_c_set(tmp_path / "absent", ("fog",))
    cases = {
        "float": np.zeros((30, 8, 8, 3), np.float32),  # dtype
        "gray": np.zeros((30, 8, 8), np.uint8),  # layout
        "seven": np.zeros((7, 8, 8, 3), np.uint8),  # not 5 severities
        "bigger": np.zeros((30, 9, 8, 3), np.uint8),  # differs from fog.npy
    }
    for name, array in cases.items():
        save_npy(tmp_path / f"{name}.npy", array)
        with pytest.raises(ValueError, match=f"{name}.npy"):
            read_c_set(tmp_path, (name,) if name != "bigger" else ("fog", name))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "fog.npy").read_bytes()[:300])  # truncated
    with pytest.raises(ValueError, match=r"cut\.npy"):
        read_c_set(tmp_path, ("cut",))
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}] * 5, dtype=object), allow_pickle=True)  # pickled
    with pytest.raises(ValueError, match=r"obj\.npy"):
        read_c_set(tmp_path, ("obj",))
    for labels in (np.zeros(7, np.int64), np.zeros(30, np.float32), np.arange(30)):  # count, dtype, blocks
        save_npy(tmp_path / "labels.npy", labels)
        with pytest.raises(ValueError, match=r"labels\.npy"):
            read_c_set(tmp_path, ("fog",))


def test_p_set_round_trip_and_malformed(tmp_path):
    seq = RNG.integers(0, 256, (4, 5, 8, 8, 3), dtype=np.uint8)
    save_npy(tmp_path / "rotate.npy", seq)
    save_npy(tmp_path / "translate.npy", seq[:, :3])
    data = read_p_set(tmp_path, ("rotate", "translate"))
    assert data.count == 4 and data.frames == {"rotate": 5, "translate": 3} and data.labels is None
    got = data.sequences("rotate", 1, 3)
    assert got.shape == (2, 5, 3, 8, 8) and (got.permute(0, 1, 3, 4, 2).numpy() == seq[1:3]).all()
    save_npy(tmp_path / "labels.npy", np.zeros(3, np.int64))
    with pytest.raises(ValueError, match=r"labels\.npy"):
        read_p_set(tmp_path, ("rotate",))
    (tmp_path / "labels.npy").unlink()
    save_npy(tmp_path / "tilt.npy", seq[:3])  # N differs
    save_npy(tmp_path / "one.npy", seq[:, :1])  # one frame
    save_npy(tmp_path / "flat.npy", seq[:, 0])  # a -C layout
    for names in (("rotate", "tilt"), ("one",), ("flat",)):
        with pytest.raises(ValueError, match=rf"{names[-1]}\.npy"):
            read_p_set(tmp_path, names)
    with pytest.raises(FileNotFoundError, match=r"scale\.npy"):
        read_p_set(tmp_path, ("scale",))


def test_wnid_lists_and_the_imagenet_r_mask():
    wnids, r = imagenet_wnids(), imagenet_r_wnids()
    assert len(wnids) == 1000 == len(set(wnids)) and list(wnids) == sorted(wnids)
    assert wnids[0] == "n01440764" and wnids[-1] == "n15075141"
    assert len(r) == 200 and set(r) <= set(wnids)
    idx = imagenet_r_indices().tolist()
    # the public eval.py's comment lists the indices: [1, 2, 4, 6, 8, 9, 11, 13, 22, 23, ..., 980, 981, 983, 988]
    assert idx[:10] == [1, 2, 4, 6, 8, 9, 11, 13, 22, 23] and idx[-4:] == [980, 981, 983, 988]
    assert [wnids[i] for i in idx] == list(r)


def _write_png(path, array):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)


def test_class_folders_labels_preprocessing_and_errors(tmp_path):
    wnids = imagenet_wnids()
    # a 256 x 300 (w x h) image: the resize to shorter side 256 keeps its size; the centre crop
    # 224 starts at row round(76 / 2) = 38 and column round(32 / 2) = 16
    big = RNG.integers(0, 256, (300, 256, 3), dtype=np.uint8)
    _write_png(tmp_path / wnids[5] / "a.png", big)
    _write_png(tmp_path / wnids[2] / "b.PNG", _images(1, 40, 60)[0])
    (tmp_path / wnids[2] / "notes.txt").write_text("not an image, ignored")
    data = read_class_folders(tmp_path, wnids)
    assert [label for _, label in data.samples] == [2, 5]  # the wnid's position, not the folder order
    image, label = data[1]
    assert label == 5 and image.shape == (3, 224, 224) and image.dtype == torch.uint8
    expected = torch.from_numpy(big[38:38 + 224, 16:16 + 224]).permute(2, 0, 1)
    assert (image.int() - expected.int()).abs().max() <= 1
    small, _ = read_class_folders(tmp_path, wnids, Preprocess(resize=0, crop=50))[0]  # 40 x 60 < 50: padded
    assert small.shape == (3, 50, 50) and (small[:, :5] == 0).all() and (small[:, 45:] == 0).all()
    batches = list(data.batches(batch_size=2, workers=0))
    assert batches[0][0].shape == (2, 3, 224, 224) and batches[0][1].tolist() == [2, 5]
    assert len(data.listing_sha256()) == 64

    (tmp_path / "n99999999").mkdir()
    with pytest.raises(ValueError, match="n99999999"):
        read_class_folders(tmp_path, wnids)
    (tmp_path / "n99999999").rmdir()
    (tmp_path / wnids[7]).mkdir()
    with pytest.raises(FileNotFoundError, match=wnids[7]):
        read_class_folders(tmp_path, wnids)
    (tmp_path / wnids[7] / "broken.jpg").write_bytes(b"not a jpeg")
    broken = read_class_folders(tmp_path, wnids)
    with pytest.raises(ValueError, match=r"broken\.jpg"):
        broken[len(broken) - 1]
    with pytest.raises(FileNotFoundError):
        read_class_folders(tmp_path / "absent", wnids)


def test_videos_round_trip(tmp_path):
    cv2 = pytest.importorskip("cv2")
    wnid = imagenet_wnids()[3]
    path = tmp_path / "rotate" / wnid / "v.mp4"
    path.parent.mkdir(parents=True)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (32, 32))
    for i in range(6):
        writer.write(np.full((32, 32, 3), (40 * i, 0, 200), np.uint8))  # BGR
    writer.release()
    data = read_video_folders(tmp_path / "rotate", imagenet_wnids())
    video, label = data[0]
    assert label == 3 and video.shape == (6, 3, 32, 32) and video.dtype == torch.uint8
    assert abs(int(video[0, 0].float().mean()) - 200) <= 8  # BGR -> RGB: red channel holds 200
    assert [v.shape[0] for batch in data.videos(2, 0) for v in batch] == [6]
    with pytest.raises(ValueError, match="frames"):
        (tmp_path / "x.mp4").write_bytes(b"")
        decode_video(tmp_path / "x.mp4")


def test_videos_without_opencv_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "cv2", None)  # import cv2 now raises ImportError
    with pytest.raises(ValueError, match="opencv"):
        decode_video(tmp_path / "v.mp4")


class _RunsCode:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os
        return (os.system, (f"touch {self.marker}",))


def _npy_header(shape, descr="|u1") -> bytes:
    import io
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


@pytest.mark.parametrize("hostile", ["runs_code", "random", "empty", "huge_header", "short_data", "bad_header"])
def test_hostile_npy_files_are_refused_in_one_line_naming_the_file(tmp_path, hostile):
    _c_set(tmp_path, ["fog"])
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.npy"
    if hostile == "runs_code":  # an object array whose element would run a command when unpickled
        np.save(path, np.array([_RunsCode(marker)] * 30, dtype=object), allow_pickle=True)
    elif hostile == "random":
        path.write_bytes(RNG.integers(0, 256, 5000, dtype=np.uint8).tobytes())
    elif hostile == "empty":
        path.write_bytes(b"")
    elif hostile == "huge_header":  # claims 10^15 images: must not try to allocate or map them
        path.write_bytes(_npy_header((5 * 10**14, 8, 8, 3)) + b"\0" * 100)
    elif hostile == "short_data":  # a right header, half the data
        path.write_bytes(_npy_header((30, 8, 8, 3)) + b"\0" * (30 * 8 * 8 * 3 // 2))
    else:
        path.write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': __import__('os')}\n")
    for names in (("evil",), ("fog", "evil")):
        with pytest.raises(ValueError, match=r"evil\.npy") as caught:
            read_c_set(tmp_path, names)
        assert "\n" not in str(caught.value)
    assert not marker.exists()


def test_a_bad_file_decoded_in_a_worker_is_named(tmp_path):
    """Issue 23: with workers the error was "Caught ValueError in DataLoader worker process 0."
    (the file's name only in the worker's traceback below it)."""
    from fullscale.data.imagenet_fixture import write_hostile_image

    wnids = imagenet_wnids()
    for k in range(4):
        _write_png(tmp_path / wnids[k] / f"{k}.png", _images(1, 20, 20)[0])
    write_hostile_image(tmp_path / wnids[2] / "cut.JPEG", "truncated")
    data = read_class_folders(tmp_path, wnids, Preprocess(resize=0, crop=16))
    for workers in (0, 2):
        with pytest.raises(ValueError) as caught:
            list(data.batches(batch_size=2, workers=workers))
        assert "cut.JPEG" in str(caught.value).splitlines()[0], (workers, str(caught.value))


def test_class_folders_skip_and_report_entries_that_are_not_regular_files(tmp_path, capsys):
    import os

    wnids = imagenet_wnids()
    _write_png(tmp_path / wnids[0] / "a.png", _images(1, 20, 20)[0])
    os.mkfifo(tmp_path / wnids[0] / "x.JPEG")
    (tmp_path / wnids[0] / "d.png").mkdir()
    data = read_class_folders(tmp_path, wnids)
    assert [p.name for p, _ in data.samples] == ["a.png"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "2 entries" in err[0] and "not regular files" in err[0], err
