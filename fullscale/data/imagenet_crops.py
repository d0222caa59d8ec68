"""ImageNet-1k's train crops: the crop box per sample, decoded at reduced size.

Train transform (public ``imagenet.py`` of google-research/augmix and erichson/NoisyMix:
``RandomResizedCrop(224)`` then ``RandomHorizontalFlip()``): torchvision's crop-box rule
(``crop_box``: scale 0.08–1 of the area, log-uniform aspect ratio 3/4–4/3, 10 attempts, then the
centre-crop fallback), a bilinear antialiased resize of the box to ``size`` (``resize_crop``), a
flip with probability 1/2.  Unlike torchvision, the randomness of sample ``i`` in epoch ``e`` comes from a
generator seeded by a hash of ``(seed, e, i)`` (``sample_seed``), never from a worker's RNG: an
epoch's crops are the same for any number of workers or ranks, and a run resumed mid-epoch sees
the same crops.

Reduced-size decoding (``decoder="pil-draft"`` / ``"simplejpeg"``): the JPEG is decoded with
DCT scaling by the largest factor (1/2, 1/4, 1/8) that still leaves the crop box at least
``DRAFT_MARGIN * size`` pixels on each side, and the same box, mapped into the reduced image
(fractional coordinates), is resized to ``size``.  The crop box is drawn on the full-size
dimensions first, so the draws are identical for every decoder.  ``tests/data/test_imagenet.py``
checks the crops stay >= 35 dB PSNR of full-size decoding on real photos.

A file that cannot be decoded (unreadable, truncated, over the pixel limit checked from its header:
``fullscale.data.image_files``) raises ``ValueError``; the loader (``fullscale.data.imagenet``)
makes it a hole in its batch.  Grayscale, CMYK and PNG-inside-``.JPEG`` files are converted to RGB
(PIL ``convert("RGB")``, as ``ImageFolder``).

What is bad does not depend on the decoder: PIL decides, as in the public code.  libjpeg reports
some damage only as a warning (a scan cut short but closed by an end marker: PIL decodes it,
grey below the cut, and Pillow does not expose the warning); simplejpeg, run strict, raises on
such a warning, and the file is then decoded by PIL on the same crop box.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from fullscale.data.image_files import check_pixels, open_image, read_regular

__all__ = ["DECODERS", "DRAFT_MARGIN", "TrainCrop", "crop_box", "decode_train", "resize_crop", "sample_seed"]

DECODERS = ("pil", "pil-draft", "simplejpeg")


def sample_seed(seed: int, epoch: int, index: int) -> int:
    """A 63-bit seed hashed from (run seed, epoch, sample index): the sample's own random stream."""
    digest = hashlib.blake2b(f"{int(seed)}/{int(epoch)}/{int(index)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def _uniform(g: torch.Generator, low: float, high: float) -> float:
    return float(torch.empty(1, dtype=torch.float64).uniform_(low, high, generator=g))


def crop_box(width: int, height: int, scale: tuple[float, float], ratio: tuple[float, float],
             generator: torch.Generator) -> tuple[int, int, int, int]:
    """(top, left, h, w) of torchvision's ``RandomResizedCrop.get_params``: up to 10 draws of a
    target area fraction in ``scale`` and a log-uniform aspect ratio in ``ratio``; the first box
    that fits is placed uniformly; otherwise a centre crop clamped to ``ratio``."""
    area = width * height
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        target = area * _uniform(generator, scale[0], scale[1])
        aspect = math.exp(_uniform(generator, log_lo, log_hi))
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = int(torch.randint(0, height - h + 1, (1,), generator=generator))
            left = int(torch.randint(0, width - w + 1, (1,), generator=generator))
            return top, left, h, w
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, round(width / min(ratio))
    elif in_ratio > max(ratio):
        w, h = round(height * max(ratio)), height
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


# ---- decoding -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrainCrop:
    """The train transform: ``size`` output side; torchvision's ``scale``/``ratio``; ``flip`` prob;
    ``decoder``: "pil" (full size), "pil-draft" (PIL DCT-scaled), "simplejpeg" (libjpeg-turbo,
    DCT-scaled; non-JPEG and CMYK files fall back to PIL), "auto": simplejpeg where installed (the
    optional extra ``imagenet``; ~1.5x faster per core than PIL, benchmarks/RESULTS.md), else
    pil-draft.  Pillow's wheels decode with libjpeg-turbo too: the two gave identical crops on
    the bundled photos, so "auto" does not make a run depend on what is installed."""

    size: int = 224
    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip: float = 0.5
    decoder: str = "auto"

    def __post_init__(self) -> None:
        if self.decoder == "auto":
            has_simplejpeg = importlib.util.find_spec("simplejpeg") is not None
            object.__setattr__(self, "decoder", "simplejpeg" if has_simplejpeg else "pil-draft")
        if self.size < 1:
            raise ValueError(f"crop size must be >= 1, got {self.size}")
        if not (0 < self.scale[0] <= self.scale[1] <= 1) or not (0 < self.ratio[0] <= self.ratio[1]):
            raise ValueError(f"need 0 < scale[0] <= scale[1] <= 1 and 0 < ratio[0] <= ratio[1], "
                             f"got {self.scale}, {self.ratio}")
        if self.decoder not in DECODERS:
            raise ValueError(f"unknown decoder {self.decoder!r}; known: auto, {', '.join(DECODERS)}")
        if self.decoder == "simplejpeg":
            _simplejpeg()


def _simplejpeg() -> Any:
    try:
        import simplejpeg
    except ImportError:
        raise ValueError("decoder 'simplejpeg' needs the optional extra: pip install simplejpeg") from None
    return simplejpeg


# The reduced box must keep this many times the output side: at 1.0 (never upsample) the DCT-scaled
# decode loses up to 1.5 dB against the 35 dB bound on the bundled photos; at 1.25 the worst of
# 60 crops is 36.9 dB (1.5: 42.5 dB, but half as many images decode reduced).
DRAFT_MARGIN = 1.25


def _draft_factor(box_h: int, box_w: int, size: int) -> int:
    """The largest JPEG DCT scale 1/s (s in 1, 2, 4, 8) keeping the box >= DRAFT_MARGIN * ``size``."""
    need = DRAFT_MARGIN * size
    s = 8
    while s > 1 and (box_h / s < need or box_w / s < need):
        s //= 2
    return s


def _pil_reduced(path: Path, box: Any, size: int, draft: bool) -> tuple[np.ndarray, float, tuple]:
    """(RGB uint8 (H', W', 3), factor, crop box): the file decoded at 1/s size when ``draft`` (JPEG
    only).  ``box`` maps (width, height) -> (top, left, h, w); it is called once the header is read,
    so the box is drawn on the full-size dimensions whatever the decoder.  ``open_image`` refuses
    what is not a regular file or is over the pixel limit before anything is decoded."""
    with open_image(path) as image:
        width, height = image.size
        top, left, h, w = box(width, height)
        factor = 1.0
        if draft and image.format == "JPEG":
            s = _draft_factor(h, w, size)
            # DCT scaling maps full-size pixel x to x / s exactly (the ceil of the size only adds
            # an edge pixel); draft() returns None when it cannot scale (e.g. a progressive file).
            if s > 1 and image.draft("RGB", (width // s, height // s)) is not None:
                factor = 1.0 / s
        array = np.array(image.convert("RGB"))  # writable (torch.from_numpy warns on read-only)
    return array, factor, (top, left, h, w)


def _simplejpeg_reduced(path: Path, box: Any, size: int) -> tuple[np.ndarray, float, tuple]:
    sj = _simplejpeg()
    data = read_regular(path)
    try:
        height, width, colorspace, _ = sj.decode_jpeg_header(data)
    except ValueError:
        return _pil_reduced(path, box, size, draft=True)  # PNG inside .JPEG, or damaged: PIL decides
    if colorspace not in ("RGB", "YCbCr", "Gray"):  # CMYK/YCCK: PIL converts as ImageFolder does
        return _pil_reduced(path, box, size, draft=True)
    check_pixels(path, width, height)  # the limit of every decoder, from the same header
    region = box(width, height)
    # Only the power-of-two factors of PIL's draft: libjpeg-turbo also offers n/8, but its
    # non-SIMD scaled IDCTs for those were measured slower than decoding at full size.
    s = _draft_factor(region[2], region[3], size)
    try:
        array = sj.decode_jpeg(data, colorspace="RGB", min_width=math.ceil(width / s),
                               min_height=math.ceil(height / s), strict=True)
    except ValueError:
        # damage libjpeg may only warn about: PIL decides (the module's docstring), on the box drawn
        return _pil_reduced(path, lambda *_: region, size, draft=True)
    # libjpeg-turbo's 1/s output is ceil(W / s) wide and maps pixel x to x / s
    factor = 1.0 / s if array.shape[1] == math.ceil(width / s) else array.shape[1] / width
    return array, factor, region


def resize_crop(array: np.ndarray, box: tuple[int, int, int, int], factor: float, size: int) -> torch.Tensor:
    """uint8 (3, size, size): the full-size ``box`` (top, left, h, w) of an image decoded at
    ``factor`` x full size, resized bilinearly with antialiasing.  At full size: torch's
    ``interpolate(antialias=True)`` (made to agree with PIL's ``BILINEAR`` resize; on uint8 ~3x
    faster than going through PIL).  On a reduced image the box has fractional coordinates, which
    only PIL's ``resize(box=...)`` takes (rounding them to whole pixels costs ~5 dB)."""
    top, left, h, w = box
    if factor != 1.0:
        region = (left * factor, top * factor, (left + w) * factor, (top + h) * factor)
        out = np.asarray(Image.fromarray(array).resize((size, size), Image.Resampling.BILINEAR, box=region))
        return torch.from_numpy(out.copy()).permute(2, 0, 1)
    region = torch.from_numpy(array[top:top + h, left:left + w]).permute(2, 0, 1)[None]
    return F.interpolate(region, size=(size, size), mode="bilinear", align_corners=False, antialias=True)[0]


def decode_train(path: Path, crop: TrainCrop, seed: int) -> torch.Tensor:
    """uint8 (3, size, size): the random resized crop (then flip) of one file, drawn from ``seed``.

    Raises ValueError naming the file when it cannot be decoded (``image_files.BadImage``)."""
    g = torch.Generator().manual_seed(seed)

    def box(width: int, height: int) -> tuple[int, int, int, int]:
        return crop_box(width, height, crop.scale, crop.ratio, g)

    if crop.decoder == "simplejpeg":
        array, factor, region = _simplejpeg_reduced(path, box, crop.size)
    else:
        array, factor, region = _pil_reduced(path, box, crop.size, crop.decoder == "pil-draft")
    out = resize_crop(array, region, factor, crop.size)
    if float(torch.rand((), generator=g)) < crop.flip:
        out = out.flip(-1)
    return out.contiguous()

