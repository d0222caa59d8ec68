"""Small on-disk ImageNet stand-ins for tests and benchmarks (nothing is downloaded).

- ``write_photo_jpegs``: JPEGs of ImageNet's typical size and quality (about 500x375, quality
  90) cut from the real photos that scikit-learn (``china.jpg``, ``flower.jpg``) and, when
  installed, scikit-image (astronaut, coffee, chelsea) ship: random crops, resized.
- ``write_imagenet_tree``: an ImageNet-layout tree ``train/<wnid>/*.JPEG``, ``val/<wnid>/*.JPEG``
  of the built-in digits (upscaled), 10 classes under the first 10 ImageNet wnids, optionally
  with the awkward files of the real data set: one truncated JPEG, one greyscale, one CMYK and
  one PNG named ``.JPEG``.
- ``write_hostile_image``: the bad files a reader must count or refuse in one line (``HOSTILE``):
  a cut JPEG, an empty file, a decompression bomb (a PNG header claiming 30000 x 30000), a scan
  cut short but closed by an end marker, a header claiming 65000 x 65000 over cut data, and a
  real 12000 x 12000 1-bit PNG (17.5 kB on disk, 144 M pixels decoded).
"""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from fullscale.data.wnids import imagenet_wnids

__all__ = ["AWKWARD", "HOSTILE", "sample_photos", "write_hostile_image", "write_imagenet_tree", "write_photo_jpegs"]

# the awkward train files written by write_imagenet_tree(awkward=True): kind -> file name
AWKWARD = {"truncated": "truncated.JPEG", "gray": "gray.JPEG", "cmyk": "cmyk.JPEG", "png": "png.JPEG"}


def sample_photos() -> list[np.ndarray]:
    """The bundled real photos as uint8 (H, W, 3) arrays."""
    from sklearn.datasets import load_sample_image

    photos = [load_sample_image("china.jpg"), load_sample_image("flower.jpg")]
    try:
        from skimage import data
    except ImportError:
        return photos
    return [*photos, data.astronaut(), data.coffee(), data.chelsea()]


def write_photo_jpegs(folder: str | Path, n: int, *, seed: int = 0, size: tuple[int, int] = (500, 375),
                      quality: int = 90) -> list[Path]:
    """``n`` JPEGs (``size`` = (width, height), landscape and portrait alternating) of random
    crops (40-100% of each side) of the bundled photos, resized bicubic; returns their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    photos = sample_photos()
    paths = []
    for i in range(n):
        photo = photos[i % len(photos)]
        h, w = photo.shape[:2]
        ch, cw = int(h * rng.uniform(0.4, 1.0)), int(w * rng.uniform(0.4, 1.0))
        top, left = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
        out = size if i % 4 else size[::-1]
        image = Image.fromarray(photo[top:top + ch, left:left + cw]).resize(out, Image.Resampling.BICUBIC)
        path = folder / f"photo_{i:05d}.JPEG"
        image.save(path, quality=quality)
        paths.append(path)
    return paths


def _digit_images(n_per_class: int, side: tuple[int, int], seed: int) -> list[list[np.ndarray]]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    rng = np.random.default_rng(seed)
    out = []
    for k in range(10):
        members = rng.permutation(np.flatnonzero(bunch.target == k))[:n_per_class]
        small = torch.from_numpy(bunch.images[members].astype(np.float32) / 16.0)[:, None]
        big = F.interpolate(small, size=side, mode="bilinear", align_corners=False).clamp(0, 1)
        tint = torch.from_numpy(rng.uniform(0.3, 1.0, (1, 3, 1, 1)).astype(np.float32))
        rgb = (big * tint * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
        out.append(list(rgb))
    return out


def write_imagenet_tree(root: str | Path, *, n_train: int = 8, n_val: int = 3, side: tuple[int, int] = (48, 64),
                        awkward: bool = False, seed: int = 0) -> Path:
    """Write ``root/train/<wnid>/*.JPEG`` and ``root/val/<wnid>/*.JPEG`` (10 classes of digits,
    ``side`` = (height, width)); with ``awkward``, class 0's train folder also holds the files of
    ``AWKWARD``.  Returns ``root``."""
    root = Path(root)
    wnids = imagenet_wnids()[:10]
    images = _digit_images(n_train + n_val, side, seed)
    for k, wnid in enumerate(wnids):
        for split, chunk in (("train", images[k][:n_train]), ("val", images[k][n_train:])):
            folder = root / split / wnid
            folder.mkdir(parents=True, exist_ok=True)
            for i, array in enumerate(chunk):
                Image.fromarray(array).save(folder / f"{wnid}_{split}_{i:04d}.JPEG", quality=90)
    if awkward:
        folder = root / "train" / wnids[0]
        sample = Image.fromarray(images[0][0])
        buffer = io.BytesIO()
        sample.save(buffer, format="JPEG", quality=90)
        data = buffer.getvalue()
        (folder / AWKWARD["truncated"]).write_bytes(data[: len(data) // 2])
        sample.convert("L").save(folder / AWKWARD["gray"], format="JPEG", quality=90)
        sample.convert("CMYK").save(folder / AWKWARD["cmyk"], format="JPEG", quality=90)
        sample.save(folder / AWKWARD["png"], format="PNG")
    return root


# the hostile files of write_hostile_image
HOSTILE = ("truncated", "empty", "bomb", "cut_eoi", "huge_header", "huge_1bit")


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _jpeg(seed: int = 0) -> bytes:
    array = np.random.default_rng(seed).integers(0, 256, (96, 128, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def _with_size(jpeg: bytes, height: int, width: int) -> bytes:
    """``jpeg`` with its frame header (SOF0) claiming ``height`` x ``width``."""
    sof = jpeg.find(b"\xff\xc0")
    return jpeg[:sof + 5] + struct.pack(">HH", height, width) + jpeg[sof + 9:]


def write_hostile_image(path: str | Path, kind: str) -> Path:
    """Write the bad image ``kind`` (one of ``HOSTILE``) to ``path``; each is a few kB at most."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    jpeg = _jpeg()
    if kind == "truncated":  # a download cut in half
        data = jpeg[: len(jpeg) // 2]
    elif kind == "empty":
        data = b""
    elif kind == "bomb":  # only a header: PIL's Image.open refuses it (over twice its pixel limit)
        ihdr = struct.pack(">IIBBBBB", 30000, 30000, 1, 0, 0, 0, 0)
        data = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IEND", b"")
    elif kind == "cut_eoi":  # a cut scan closed by an end-of-image marker: libjpeg only warns
        data = jpeg[: len(jpeg) // 2] + b"\xff\xd9"
    elif kind == "huge_header":  # 65000 x 65000 claimed over the cut data of a small image
        data = _with_size(jpeg[: len(jpeg) // 2], 65000, 65000)
    elif kind == "huge_1bit":  # a real, decodable image: 144 M pixels from 17.5 kB
        buffer = io.BytesIO()
        Image.new("1", (12000, 12000)).save(buffer, format="PNG")
        data = buffer.getvalue()
    else:
        raise ValueError(f"unknown hostile image {kind!r}; known: {', '.join(HOSTILE)}")
    path.write_bytes(data)
    return path
