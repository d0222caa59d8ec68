"""The frost photographs of ImageNet-C / CIFAR-10-C, located and cropped in batches.

The reference blends one of ``frost1.png .. frost5.jpg`` (``np.random.randint(5)``: the sixth is
never drawn) at a random position.  We read them from ``frost_dir`` or, by default, from
``frost_photos/`` next to this module: the five photographs the reference draws from, byte-identical
to the public release (hendrycks/robustness, as repackaged in ``imagecorruptions`` 1.1.2; Apache-2.0,
licence and checksums in that folder), so a plain install makes all 15 corruptions.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from fullscale.data.image_files import open_image
from noisymix_infra.io import printable

__all__ = ["check_frost_photographs", "find_frost_dir", "frost_textures"]

_SUFFIXES = (".png", ".jpg", ".jpeg")
# shipped with the package (package data), so no optional dependency is needed for frost
_BUNDLED = Path(__file__).resolve().parent / "frost_photos"


def find_frost_dir(frost_dir: str | Path | None = None) -> Path:
    """The folder with the frost photographs: ``frost_dir`` if given, else the bundled
    ``frost_photos/``; FileNotFoundError naming both otherwise."""
    if frost_dir is not None:
        folder = Path(frost_dir)
        if not folder.is_dir() or not _files(folder):
            raise FileNotFoundError(f"frost_dir {printable(folder)} has no frost images (*.png, *.jpg)")
        return folder
    if _BUNDLED.is_dir() and len(_files(_BUNDLED)) >= 5:
        return _BUNDLED
    raise FileNotFoundError(f"frost needs the reference frost photographs: pass frost_dir (a folder with "
                            f"frost1.png .. frost5.jpg) or reinstall noisymix (its {printable(_BUNDLED)} is missing)")


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in _SUFFIXES)


@functools.lru_cache(maxsize=4)
def _photographs(folder: str) -> tuple[Tensor, ...]:
    """The first five photographs of ``folder`` as float RGB (3, H, W) in [0, 255].  Each is
    opened as every image file is (``fullscale.data.image_files.open_image``): a file that is not
    an image, or not a regular file, is a one-line ``ValueError`` naming it."""
    out = []
    for path in _files(Path(folder))[:5]:
        try:
            with open_image(path) as image:
                array = np.asarray(image.convert("RGB"), dtype=np.float32).copy()
        except ValueError as error:
            raise ValueError(f"frost photographs: {error}") from None
        out.append(torch.from_numpy(array).permute(2, 0, 1))
    return tuple(out)


def check_frost_photographs(frost_dir: str | Path | None = None) -> Path:
    """The frost folder (``find_frost_dir``) with its photographs decoded once (cached), so that a
    bad one is refused before a -C set writes anything, not when frost's first chunk is made."""
    folder = find_frost_dir(frost_dir)
    _photographs(str(folder))
    return folder


@functools.lru_cache(maxsize=8)
def _textures(folder: str, scale: float) -> tuple[Tensor, ...]:
    """The first five photographs as float RGB (3, H, W) in [0, 255], resized by ``scale`` as
    cv2.resize(fx=fy=scale) (bilinear, half-pixel centres, no antialiasing)."""
    out = []
    for photograph in _photographs(folder):
        img = photograph.unsqueeze(0)
        if scale != 1.0:
            size = (round(img.shape[2] * scale), round(img.shape[3] * scale))
            img = torch.round(F.interpolate(img, size=size, mode="bilinear", align_corners=False))
        out.append(img[0])
    return tuple(out)


def frost_textures(n: int, h: int, w: int, scale: float, generator: torch.Generator,
                   frost_dir: str | Path | None = None) -> Tensor:
    """``n`` random (h, w) crops of the frost photographs, float RGB (N, 3, h, w) in [0, 1]:
    photograph k ~ U{0..4}, then the top-left corner uniform over the photograph."""
    textures = _textures(str(find_frost_dir(frost_dir)), float(scale))
    if any(t.shape[1] <= h or t.shape[2] <= w for t in textures):
        raise ValueError(f"frost photographs (scaled by {scale}) are smaller than the {h}x{w} images")
    dev = generator.device
    pick = torch.randint(0, len(textures), (n,), generator=generator, device=dev).cpu()
    u = torch.rand((n, 2), generator=generator, device=dev, dtype=torch.float64).cpu()
    out = torch.empty(n, 3, h, w)
    for k, tex in enumerate(textures):
        idx = torch.nonzero(pick == k).flatten()
        if not len(idx):
            continue
        top = (u[idx, 0] * (tex.shape[1] - h)).long()
        left = (u[idx, 1] * (tex.shape[2] - w)).long()
        rows = (top[:, None] + torch.arange(h))[:, :, None]
        cols = (left[:, None] + torch.arange(w))[:, None, :]
        out[idx] = tex[:, rows, cols].permute(1, 0, 2, 3)
    return out / 255
