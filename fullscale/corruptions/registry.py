"""The 15 common corruptions of CIFAR-10-C / ImageNet-C (Hendrycks & Dietterich, 2019) and 4
extras, batched over images.

Each corruption maps float images (N, 3, H, W) in [0, 1] and the parameter row of one severity
to corrupted images, with per-image randomness from a ``torch.Generator``.  The rows are those
of ``make_cifar_c.py`` (``params="cifar"``) and ``make_imagenet_c.py`` (``params="imagenet"``)
in github.com/hendrycks/robustness, kept as data next to each function: its group file
(``noise.py``, ``blur.py``, ``weather.py``, ``digital.py``) registers it with its rows
(``@register_corruption``, ``specs.py``); this module holds the registry (``SPECS``, in the
vocabulary's order), the lookup and ``corrupt``.  A new corruption is its group file plus its name
in ``fullscale.vocabulary`` (``EXTRA_CATEGORIES``).  Where the reference calls a library we do not
ship, we say what we do instead:

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

from typing import Any

import torch
from torch import Tensor

# the group files register their corruptions on import (``@register_corruption``)
from fullscale.corruptions import blur, digital, noise, weather  # noqa: F401
from fullscale.corruptions._draws import to_u8
from fullscale.corruptions.specs import Corruption, CorruptionSpec, Strengthened, registered
from fullscale.vocabulary import CATEGORIES, CORRUPTIONS, EXTRA_CORRUPTIONS

__all__ = ["CATEGORIES", "CORRUPTIONS", "EXTRA_CORRUPTIONS", "NATIVE_SIDE", "PARAMS", "PIXEL_FIELDS", "SPECS",
           "Corruption", "CorruptionSpec", "check_pixel_scale", "corrupt", "pixel_scaled", "strengthened", "to_u8"]

#: the parameter tables: make_cifar_c.py's, make_imagenet_c.py's, and the difficulty-matched Digits-C's (the
#: CIFAR rows at strengths fitted so that the digits' Baseline loses what CIFAR-10's loses on CIFAR-10-C:
#: ``fullscale.corruptions.matched``)
PARAMS = ("cifar", "imagenet", "digits-matched")
#: the image side each parameter table was written for (make_cifar_c.py: 32; make_imagenet_c.py: 224)
NATIVE_SIDE = {"cifar": 32, "imagenet": 224, "digits-matched": 32}

_REGISTERED = registered()
# the registry and the vocabulary name the same corruptions, each in its group (the specs take their
# group from the vocabulary when registered)
if set(_REGISTERED) != {*CORRUPTIONS, *EXTRA_CORRUPTIONS}:
    raise ImportError("fullscale.corruptions.registry and fullscale.vocabulary disagree on the corruptions: "
                      f"{', '.join(sorted(set(_REGISTERED) ^ {*CORRUPTIONS, *EXTRA_CORRUPTIONS}))}")
#: every registered corruption, in the vocabulary's order: the 15, then the extras
SPECS: dict[str, CorruptionSpec] = {name: _REGISTERED[name] for name in (*CORRUPTIONS, *EXTRA_CORRUPTIONS)}

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
#: quality level; no row can undo that).  Each spec carries its own (``register_corruption(...,
#: pixel_fields=...)`` in its group file; spatter's mud blur, index 4 in mud mode: ``mud_field``).
PIXEL_FIELDS: dict[str, dict[int, str]] = {name: dict(spec.pixel_fields) for name, spec in SPECS.items()
                                           if spec.pixel_fields}


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
    mud = SPECS[name].mud_field
    if mud is not None and out[-1]:  # spatter's mud: index 4 is the mud mask's blur sigma
        pixel[mud] = "float"
    for i, kind in pixel.items():
        out[i] = max(1, round(out[i] * scale)) if kind == "int" else float(out[i]) * scale
    return out[0] if scalar else tuple(out)


def check_pixel_scale(scale: float) -> None:
    """A pixel scale (``pixel_scaled``, the -P sequences'): a positive factor below 64."""
    if not (isinstance(scale, float | int) and 0 < scale < 64):
        raise ValueError(f"pixel scale must be in (0, 64), got {scale!r}")


def strengthened(name: str, row: Any, strength: float) -> Any:
    """``name``'s parameter ``row`` ``strength`` times as strong (``CorruptionSpec.strengthen``);
    ``strength == 1`` returns ``row`` itself.  A corruption without a rule keeps its row and scales
    its difference from the image instead: ``Strengthened(row, strength)``, as a rule whose row
    saturates answers (``corrupt`` applies the factor)."""
    if not (isinstance(strength, float | int) and 0 < strength < 1e3):
        raise ValueError(f"strength must be a number in (0, 1000), got {strength!r}")
    rule = SPECS[name].strengthen
    if strength == 1:
        return row
    return Strengthened(row, float(strength)) if rule is None else rule(row, float(strength))


def _scaled_difference(x: Tensor, out: Tensor, factor: float | None) -> Tensor:
    """``x + factor (out - x)``: a corruption's difference from the image ``factor`` times as large
    (``Strengthened``); ``out`` itself where there is no factor."""
    return out if factor is None else x + factor * (out - x)


def corrupt(images_u8: Tensor, name: str, severity: int, *, generator: torch.Generator,
            params: str = "cifar", frost_dir: str | None = None, pixel_scale: float = 1.0,
            strength: float = 1.0) -> Tensor:
    """``name`` at ``severity`` (1..5) on uint8 images (N, 3, H, W) -> uint8 (N, 3, H, W), as the
    -C sets store them (the reference's ``np.uint8(...)``: truncation after clipping to [0, 1]).

    ``params``: ``"cifar"`` (make_cifar_c.py), ``"imagenet"`` (make_imagenet_c.py) rows, or
    ``"digits-matched"`` (the CIFAR rows at the fitted strengths of ``fullscale.corruptions.matched``,
    the 15 corruptions only); ``strength``: a further factor on the corruption's strength
    (``strengthened``; the fit's knob, 1 for the published rows); the images may have any size;
    ``pixel_scale`` scales the rows' lengths in pixels for images of
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
    if params == "digits-matched":
        from fullscale.corruptions.matched import matched_strength
        table, strength = "cifar", strength * matched_strength(name)
    else:
        table = params
    row, blend = strengthened(name, spec.row(table, severity), strength), None
    if isinstance(row, Strengthened):  # no rule, or a saturated row: the strength left on the difference
        row, blend = row.row, row.artefact
    row = pixel_scaled(name, row, pixel_scale)
    if spec.cpu_u8 is not None and images_u8.device.type == "cpu":
        out_u8 = spec.cpu_u8(images_u8, row)
        if blend is None:
            return out_u8
        return to_u8(_scaled_difference(images_u8.float().div_(255), out_u8.float().div_(255), blend))
    n, _, h, w = images_u8.shape
    # On the CPU, elementwise chains over a large batch run from memory, over a few images from
    # cache (1.5 - 3.5x faster at 224x224); a spec may ask for larger blocks (``cpu_block``) or the
    # whole batch at once (``whole_batch``: glass blur's swap loop).
    cpu_block = _CPU_BLOCK * spec.cpu_block
    block = n if images_u8.device.type != "cpu" or spec.whole_batch else max(1, cpu_block // (3 * h * w))
    extra = {"frost_dir": frost_dir} if spec.frost_dir else {}
    parts = []
    for start in range(0, n, block):
        x = images_u8[start:start + block].float().div_(255)
        parts.append(to_u8(_scaled_difference(x, spec.fn(x, row, generator, **extra), blend)))
    return parts[0] if len(parts) == 1 else torch.cat(parts)


_CPU_BLOCK = 1 << 19  # values per block on the CPU (2 MB of float32)
