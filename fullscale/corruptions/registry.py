"""The 15 common corruptions of CIFAR-10-C / ImageNet-C (Hendrycks & Dietterich, 2019) and 4
extras, batched over images.

Each corruption maps float images (N, 3, H, W) in [0, 1] and the parameter row of one severity
to corrupted images, with per-image randomness from a ``torch.Generator``.  The rows are those
of ``make_cifar_c.py`` (``params="cifar"``) and ``make_imagenet_c.py`` (``params="imagenet"``)
in github.com/hendrycks/robustness, kept as data in ``SPECS``.  Where the reference calls a
library we do not ship, we say what we do instead:

* motion blur and the snow streaks: ImageMagick's motion-blur taps (integer offsets along the
  angle, one-sided Gaussian weights), as in the ``imagecorruptions`` package's ``_motion_blur``;
* glass blur: the reference's sequential pixel loop (a copy of pixel (h', w') into (h, w), which
  is what its tuple "swap" of numpy views does), run once for all images of a batch on pixel
  indices (the same copies, exact), then one gather;
* frost: the reference's five frost photographs, bundled with the package in
  ``fullscale/corruptions/frost_photos/`` (byte-identical to the public release, licence and
  checksums there), or those of ``frost_dir`` (``fullscale.corruptions.frost``);
* spatter: OpenCV's Canny / distance transform / histogram equalisation re-done in torch with
  OpenCV's integer rules (``_filters.canny_cv2``, ``equalize_hist_cv2``; the water step
  ``weather.water`` is shared with the -P spatter), except the exact Euclidean distance instead of
  OpenCV's 5x5 chamfer approximation (about 4 % less water; the -P sets use the chamfer);
* JPEG: PIL's libjpeg, one image at a time, on the CPU; on an accelerator the batched DCT
  re-implementation of ``jpeg.py`` (not bit-exact: mean difference below one level);
* pixelate: PIL's BOX resizes re-done as matrix products with PIL's rounding (bit-exact); on
  the CPU PIL itself is faster and is called per image;
* elastic transform: cv2.warpAffine (reflect-101) + scipy map_coordinates (half-sample reflect)
  become two bilinear grid_samples on folded coordinates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from fullscale.corruptions._draws import to_u8
from fullscale.corruptions.blur import (
    defocus_blur,
    gaussian_blur_corruption,
    glass_blur,
    motion_blur_corruption,
    zoom_blur,
)
from fullscale.corruptions.digital import (
    contrast,
    elastic_transform,
    jpeg_compression,
    pil_per_image,
    pixelate,
    saturate,
)
from fullscale.corruptions.noise import gaussian_noise, impulse_noise, shot_noise, speckle_noise
from fullscale.corruptions.weather import brightness, fog, frost, snow, spatter
from fullscale.vocabulary import CATEGORIES, CORRUPTIONS, EXTRA_CORRUPTIONS, category_of

__all__ = ["CATEGORIES", "CORRUPTIONS", "EXTRA_CORRUPTIONS", "NATIVE_SIDE", "PARAMS", "PIXEL_FIELDS", "SPECS",
           "CorruptionSpec", "check_pixel_scale", "corrupt", "pixel_scaled", "to_u8"]

PARAMS = ("cifar", "imagenet")
#: the image side each parameter table was written for (make_cifar_c.py: 32; make_imagenet_c.py: 224)
NATIVE_SIDE = {"cifar": 32, "imagenet": 224}

#: The fields of each corruption's parameter row that are lengths in pixels (index -> "float" or
#: "int"), and so must shrink with the image for a set at another side than the table's
#: (``noisymix corrupt --size``; ``pixel_scaled``).  Everything else is already relative to the image
#: and stays: noise levels and probabilities, blend weights, zoom factors (zoom blur, the snow
#: layer's zoom), pixelate's resize factor, JPEG quality, contrast/brightness/saturation, and fog,
#: whose plasma fractal is made at the image's own side.  Defocus blur stays too, although its
#: radius is a length: the CIFAR rows' disks (radius 0.3-1.5) are already the pixel grid's
#: smallest, and halved (radius < 1: the centre pixel alone) every severity became the identity
#: (mean change 0.0-0.3 grey levels on the 16x16 digits, against 0.4-2.9 at 32x32; unscaled at
#: 16x16: 1.3-10.5, twice CIFAR's blur relative to the image, in severity order).  Blur sigmas, glass blur's
#: largest jump, motion-blur radii, the elastic field's amplitude, smoothness and affine jitter
#: (written as multiples of 32 in the CIFAR rows), spatter's blur (and mud's, mode 1) and the frost
#: photograph's shrink factor (so that a frost crystal covers the same fraction of the image) are
#: lengths.  Integer fields round and keep at least 1 (a 1-pixel glass-blur jump on a 16x16 image
#: is twice the reach of the CIFAR row's, the least a pixel permutation can do).  JPEG's 8x8 block
#: is fixed by the format: at 16x16 it spans a quarter of the image (a stronger artefact per
#: quality level; no row can undo that).
PIXEL_FIELDS: dict[str, dict[int, str]] = {
    "glass_blur": {0: "float", 1: "int"},
    "motion_blur": {0: "int", 1: "float"},
    "snow": {4: "int", 5: "float"},
    "frost": {2: "float"},
    "elastic_transform": {0: "float", 1: "float", 2: "float"},
    "gaussian_blur": {0: "float"},  # a bare sigma (a row of one number)
    "spatter": {2: "float"},  # (and index 4 in mud mode: below)
}


def pixel_scaled(name: str, row: Any, scale: float) -> Any:
    """``name``'s parameter ``row`` for images ``scale`` times the side the table was written for:
    the lengths in pixels (``PIXEL_FIELDS``) times ``scale``, the rest unchanged; ``scale == 1``
    returns ``row`` itself (the published rows, bit for bit)."""
    if scale == 1 or name not in PIXEL_FIELDS:
        return row
    check_pixel_scale(scale)
    scalar = not isinstance(row, tuple)
    out = [row] if scalar else list(row)
    pixel = dict(PIXEL_FIELDS[name])
    if name == "spatter" and out[5]:  # mud: index 4 is the mud mask's blur sigma
        pixel[4] = "float"
    for i, kind in pixel.items():
        out[i] = max(1, round(out[i] * scale)) if kind == "int" else float(out[i]) * scale
    return out[0] if scalar else tuple(out)


def check_pixel_scale(scale: float) -> None:
    """A pixel scale (``pixel_scaled``, the -P sequences'): a positive factor below 64."""
    if not (isinstance(scale, float | int) and 0 < scale < 64):
        raise ValueError(f"pixel scale must be in (0, 64), got {scale!r}")


Corruption = Callable[[Tensor, Any, torch.Generator], Tensor]


@dataclass(frozen=True)
class CorruptionSpec:
    """One corruption: its function, group (noise / blur / weather / digital) and the five parameter
    rows per table."""

    fn: Corruption
    category: str
    cifar: tuple[Any, ...]
    imagenet: tuple[Any, ...]

    def row(self, params: str, severity: int) -> Any:
        return getattr(self, params)[severity - 1]


def _zooms(*tops_steps: tuple[float, float]) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(f) for f in np.arange(1, top, step)) for top, step in tops_steps)


_S = 244  # make_imagenet_c.py's elastic rows use 244 ("should have been 224"); kept as published

SPECS: dict[str, CorruptionSpec] = {
    "gaussian_noise": CorruptionSpec(gaussian_noise, "noise", (0.04, 0.06, 0.08, 0.09, 0.10),
                                     (0.08, 0.12, 0.18, 0.26, 0.38)),
    "shot_noise": CorruptionSpec(shot_noise, "noise", (500, 250, 100, 75, 50), (60, 25, 12, 5, 3)),
    "impulse_noise": CorruptionSpec(impulse_noise, "noise", (0.01, 0.02, 0.03, 0.05, 0.07),
                                    (0.03, 0.06, 0.09, 0.17, 0.27)),
    "defocus_blur": CorruptionSpec(defocus_blur, "blur", ((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1)),
                                   ((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5))),
    "glass_blur": CorruptionSpec(glass_blur, "blur",
                                 ((0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2)),
                                 ((0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2))),
    "motion_blur": CorruptionSpec(motion_blur_corruption, "blur", ((6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5)),
                                  ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15))),
    "zoom_blur": CorruptionSpec(zoom_blur, "blur",
                                _zooms((1.06, 0.01), (1.11, 0.01), (1.16, 0.01), (1.21, 0.01), (1.26, 0.01)),
                                _zooms((1.11, 0.01), (1.16, 0.01), (1.21, 0.02), (1.26, 0.02), (1.31, 0.03))),
    "snow": CorruptionSpec(snow, "weather",
                           ((0.1, 0.2, 1, 0.6, 8, 3, 0.95), (0.1, 0.2, 1, 0.5, 10, 4, 0.9),
                            (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9), (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85),
                            (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8)),
                           ((0.1, 0.3, 3, 0.5, 10, 4, 0.8), (0.2, 0.3, 2, 0.5, 12, 4, 0.7),
                            (0.55, 0.3, 4, 0.9, 12, 8, 0.7), (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
                            (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55))),
    # (image weight, frost weight, frost photo scale): CIFAR shrinks the photos by 0.2 first
    "frost": CorruptionSpec(frost, "weather",
                            ((1, 0.2, 0.2), (1, 0.3, 0.2), (0.9, 0.4, 0.2), (0.85, 0.4, 0.2), (0.75, 0.45, 0.2)),
                            ((1, 0.4, 1.0), (0.8, 0.6, 1.0), (0.7, 0.7, 1.0), (0.65, 0.7, 1.0), (0.6, 0.75, 1.0))),
    "fog": CorruptionSpec(fog, "weather", ((0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75)),
                          ((1.5, 2), (2, 2), (2.5, 1.7), (2.5, 1.5), (3, 1.4))),
    "brightness": CorruptionSpec(brightness, "weather", (0.05, 0.1, 0.15, 0.2, 0.3), (0.1, 0.2, 0.3, 0.4, 0.5)),
    "contrast": CorruptionSpec(contrast, "digital", (0.75, 0.5, 0.4, 0.3, 0.15), (0.4, 0.3, 0.2, 0.1, 0.05)),
    "elastic_transform": CorruptionSpec(
        elastic_transform, "digital",
        tuple((32 * a, 32 * s, 32 * f) for a, s, f in
              ((0, 0, 0.08), (0.05, 0.2, 0.07), (0.08, 0.06, 0.06), (0.1, 0.04, 0.05), (0.1, 0.03, 0.03))),
        tuple((_S * a, _S * s, _S * f) for a, s, f in
              ((2, 0.7, 0.1), (2, 0.08, 0.2), (0.05, 0.01, 0.02), (0.07, 0.01, 0.02), (0.12, 0.01, 0.02)))),
    "pixelate": CorruptionSpec(pixelate, "digital", (0.95, 0.9, 0.85, 0.75, 0.65), (0.6, 0.5, 0.4, 0.3, 0.25)),
    "jpeg_compression": CorruptionSpec(jpeg_compression, "digital", (80, 65, 58, 50, 40), (25, 18, 15, 10, 7)),
    "speckle_noise": CorruptionSpec(speckle_noise, "noise", (0.06, 0.1, 0.12, 0.16, 0.2),
                                    (0.15, 0.2, 0.35, 0.45, 0.6)),
    "gaussian_blur": CorruptionSpec(gaussian_blur_corruption, "blur", (0.4, 0.6, 0.7, 0.8, 1), (1, 2, 3, 4, 6)),
    "spatter": CorruptionSpec(spatter, "weather",
                              ((0.62, 0.1, 0.7, 0.7, 0.5, 0), (0.65, 0.1, 0.8, 0.7, 0.5, 0),
                               (0.65, 0.3, 1, 0.69, 0.5, 0), (0.65, 0.1, 0.7, 0.69, 0.6, 1),
                               (0.65, 0.1, 0.5, 0.68, 0.6, 1)),
                              ((0.65, 0.3, 4, 0.69, 0.6, 0), (0.65, 0.3, 3, 0.68, 0.6, 0),
                               (0.65, 0.3, 2, 0.68, 0.5, 0), (0.65, 0.3, 1, 0.65, 1.5, 1),
                               (0.67, 0.4, 1, 0.65, 1.5, 1))),
    "saturate": CorruptionSpec(saturate, "digital", ((0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2)),
                               ((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (20, 0.2))),
}

# the registry and the vocabulary name the same corruptions in the same order, each in its group
if tuple(SPECS) != (*CORRUPTIONS, *EXTRA_CORRUPTIONS) or any(
        spec.category != category_of(name) for name, spec in SPECS.items()):
    raise ImportError("fullscale.corruptions.registry and fullscale.vocabulary disagree on the corruptions")


def corrupt(images_u8: Tensor, name: str, severity: int, *, generator: torch.Generator,
            params: str = "cifar", frost_dir: str | None = None, pixel_scale: float = 1.0) -> Tensor:
    """``name`` at ``severity`` (1..5) on uint8 images (N, 3, H, W) -> uint8 (N, 3, H, W), as the
    -C sets store them (the reference's ``np.uint8(...)``: truncation after clipping to [0, 1]).

    ``params``: ``"cifar"`` (make_cifar_c.py) or ``"imagenet"`` (make_imagenet_c.py) rows; the
    images may have any size; ``pixel_scale`` scales the rows' lengths in pixels for images of
    another side than the table's (``pixel_scaled``; ``NATIVE_SIDE``).  Randomness comes from
    ``generator`` only; the work runs on the images' device (on the CPU in blocks of a few images,
    drawing block by block)."""
    if name not in SPECS:
        raise ValueError(f"unknown corruption {name!r}; available: {', '.join(SPECS)}")
    if not isinstance(severity, int) or not 1 <= severity <= 5:
        raise ValueError(f"severity must be an int in 1..5, got {severity!r}")
    if params not in PARAMS:
        raise ValueError(f"params must be one of {', '.join(PARAMS)}, got {params!r}")
    if images_u8.dtype != torch.uint8 or images_u8.ndim != 4 or images_u8.shape[1] != 3:
        raise ValueError(f"corrupt expects uint8 images (N, 3, H, W), got {images_u8.dtype} "
                         f"{tuple(images_u8.shape)}")
    if images_u8.shape[0] == 0:
        return images_u8.clone()
    spec = SPECS[name]
    row = pixel_scaled(name, spec.row(params, severity), pixel_scale)
    if name in ("jpeg_compression", "pixelate") and images_u8.device.type == "cpu":
        return pil_per_image(images_u8, name, row)
    n, _, h, w = images_u8.shape
    # On the CPU, elementwise chains over a large batch run from memory, over a few images from
    # cache (1.5 - 3.5x faster at 224x224); glass blur's swap loop wants the whole batch at once.
    # Spatter's water step is a long chain of cheap ops on one grey layer per image: larger blocks.
    cpu_block = _CPU_BLOCK * (2 if name == "spatter" else 1)
    block = n if images_u8.device.type != "cpu" or name == "glass_blur" else max(1, cpu_block // (3 * h * w))
    parts = []
    for start in range(0, n, block):
        x = images_u8[start:start + block].float().div_(255)
        out = frost(x, row, generator, frost_dir) if name == "frost" else spec.fn(x, row, generator)
        parts.append(to_u8(out))
    return parts[0] if len(parts) == 1 else torch.cat(parts)


_CPU_BLOCK = 1 << 19  # values per block on the CPU (2 MB of float32)
