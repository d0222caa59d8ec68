"""Small on-disk ImageNet stand-ins for tests and benchmarks (nothing is downloaded).

- ``write_photo_jpegs``: JPEGs of ImageNet's typical size and quality (about 500x375, quality
  90) cut from the real photos that scikit-learn (``china.jpg``, ``flower.jpg``) and, when
  installed, scikit-image (astronaut, coffee, chelsea) ship: random crops, resized.
- ``write_imagenet_tree``: an ImageNet-layout tree ``train/<wnid>/*.JPEG``, ``val/<wnid>/*.JPEG``
  of the built-in digits (upscaled), 10 classes under the first 10 ImageNet wnids, optionally
  with the awkward files of the real data set: one truncated JPEG, one greyscale, one CMYK and
  one PNG named ``.JPEG``.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from fullscale.data.wnids import imagenet_wnids

__all__ = ["AWKWARD", "sample_photos", "write_imagenet_tree", "write_photo_jpegs"]

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
