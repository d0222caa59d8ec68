"""The AugMix operations, batched on uint8 images: every image of a batch with its own parameters.

Each op is called as ``op(images_u8, level, sign) -> images_u8`` with images (N, C, H, W) uint8,
``level`` (N,) the public code's ``sample_level(severity) = Uniform(0.1, severity)`` draw and
``sign`` (N,) of +-1 (used by the ops the public code flips at random: rotate, shear, translate).
Parameter maps follow ``augmentations.py`` of github.com/google-research/augmix (identical in
github.com/erichson/NoisyMix): ``int_parameter(level, maxval) = int(level * maxval / 10)``,
``float_parameter(level, maxval) = level * maxval / 10``.

Images stay uint8 between ops, as PIL stores them, so a chain of ops sees the same inputs as the
public per-image pipeline (PIL quantises after every op; so do we).  Ops come in three kinds, so
that ``augmix`` can apply all the ops of one kind drawn at one chain step in a single pass:

* ``LutOp`` -- a point op, given as one 256-entry table per (image, channel):
  autocontrast, equalize, posterize, solarize (equal to ``ImageOps`` exactly) and brightness,
  contrast (``ImageEnhance``'s blend with a constant degenerate image).
* ``AffineOp`` -- a geometric op, given as PIL's affine coefficients ``(a, b, c, d, e, f)``
  (output pixel centre (u, v) reads the input at (a u + b v + c, d u + e v + f)): rotate,
  shear_x/y, translate_x/y, resampled by ``grid_sample`` with PIL's conventions (pixel centres
  at +0.5, edge-clamped neighbours, black outside, truncation to uint8).  Translations move by
  whole pixels and are exact (nearest sampling); rotate and shear agree with PIL's BILINEAR
  transform to within one grey level on a few pixels (float32 against PIL's double arithmetic;
  tolerance stated and tested in tests/augment/test_ops.py).
* ``PixelOp`` -- anything else (color, sharpness), computed directly.

Every op except rotate/shear equals PIL (Pillow 13) bit for bit on uint8 RGB images.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["BASIC_OPS", "OPS", "AffineOp", "LutOp", "Op", "PixelOp", "apply_lut",
           "float_parameter", "int_parameter", "normalise", "resample",
           "resample_normalised", "to_uint8"]

Size = tuple[int, int]  # (H, W)


def int_parameter(level: Tensor, maxval: float) -> Tensor:
    """``int(level * maxval / 10)`` of the public code in float64, as Python computes it (levels > 0)."""
    return torch.floor(level.double() * maxval / 10)


def float_parameter(level: Tensor, maxval: float) -> Tensor:
    """``level * maxval / 10`` of the public code, in float64."""
    return level.double() * maxval / 10


# ---- the three kinds of op ---------------------------------------------------------------------

@dataclass(frozen=True)
class LutOp:
    """A point op: ``table(x, level, sign)`` -> (N, C or 1, 256) uint8, applied per (image, channel).

    ``per_image=False``: the table depends on (level, sign) only and ``table`` accepts ``x=None``
    (posterize, solarize, brightness), so ``augmix`` can build all such tables at once.
    """

    name: str
    table: Callable[[Tensor | None, Tensor, Tensor], Tensor]
    per_image: bool = True

    def __call__(self, x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
        return apply_lut(x, self.table(x, level, sign))


@dataclass(frozen=True)
class AffineOp:
    """A geometric op: ``coefficients(level, sign, (H, W))`` -> (N, 6) float64 PIL AFFINE data.

    ``mode="nearest"`` is for maps that only move pixels by whole pixels (translate), where
    PIL's bilinear filter returns the source pixel exactly and nearest sampling is cheaper.
    """

    name: str
    coefficients: Callable[[Tensor, Tensor, Size], Tensor]
    mode: str = "bilinear"

    def __call__(self, x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
        return resample(x, self.coefficients(level, sign, (x.shape[2], x.shape[3])), mode=self.mode)


@dataclass(frozen=True)
class PixelOp:
    """Any other op: ``fn(x, level, sign)`` -> uint8 images."""

    name: str
    fn: Callable[[Tensor, Tensor, Tensor], Tensor]

    def __call__(self, x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
        return self.fn(x, level, sign)


Op = LutOp | AffineOp | PixelOp


def _lut_index(x: Tensor) -> Tensor:
    """int32 indices into a flattened (N * C, 256) table: grey level + 256 * (image, channel)."""
    n, c = x.shape[:2]
    base = torch.arange(0, n * c * 256, 256, device=x.device, dtype=torch.int32).view(n, c, 1, 1)
    return x.int().add_(base)  # (torch.add(uint8, int32) promotes ~1.4x slower on CPU)


def apply_lut(x: Tensor, tables: Tensor) -> Tensor:
    """``x[i, ch]`` mapped through ``tables[i, ch]`` (tables (N, C or 1, 256) uint8), as ``Image.point``."""
    n, c = x.shape[:2]
    flat = tables.expand(n, c, 256).reshape(-1)
    return flat.index_select(0, _lut_index(x).view(-1)).view_as(x)


def resample(x: Tensor, coefficients: Tensor, *, mode: str = "bilinear") -> Tensor:
    """``Image.transform(size, AFFINE, coefficients, resample=BILINEAR)`` for every image at once.

    PIL maps output pixel (i, j), centre (u, v) = (j + 0.5, i + 0.5), to the input point
    (X, Y) = (a u + b v + c, d u + e v + f); a point outside [0, W) x [0, H) is black, one inside
    interpolates its four neighbours with indices clamped to the image, and the result is
    truncated to uint8.  We build grid_sample's normalised grid g = 2 X / W - 1 directly, clamp
    inside points to the outermost pixel centres (= PIL's neighbour clamping) and send outside
    points far away (zero padding gives the black fill), so no mask pass over the output is needed.
    A point exactly on the border follows PIL: X = 0 is inside, X = W outside.

    ``mode="nearest"`` is only for maps that move by whole pixels (every sample point a pixel
    centre), where PIL's bilinear filter returns the source pixel itself.
    """
    return resample_normalised(x, normalise(coefficients, (x.shape[2], x.shape[3])), mode=mode)


def normalise(coefficients: Tensor, size: Size) -> Tensor:
    """PIL AFFINE data (N, 6) -> (N, 2, 3) float32 for grid_sample's coordinates g = 2 X / side - 1."""
    h, w = size
    k = coefficients.to(torch.float64).view(-1, 2, 3)
    scale = torch.tensor([2.0 / w, 2.0 / h], dtype=torch.float64, device=k.device).view(1, 2, 1)
    k = k * scale
    k[:, :, 2] -= 1
    return k.float()


def resample_normalised(x: Tensor, k: Tensor, *, mode: str = "bilinear") -> Tensor:
    """``resample`` with coefficients already ``normalise``d: (N, 2, 3) float32 on x's device."""
    n, _, h, w = x.shape
    k = k.permute(1, 0, 2).reshape(2, n, 3, 1, 1)  # (axis, image, u/v/1 coefficient)
    # Planar (2, n, h, w) arithmetic is contiguous and fast; grid_sample takes the permuted view.
    u = (torch.arange(w, device=x.device, dtype=torch.float32) + 0.5).view(1, 1, 1, w)
    v = (torch.arange(h, device=x.device, dtype=torch.float32) + 0.5).view(1, 1, h, 1)
    along_u = k[:, :, 0] * u  # (2, n, 1, w)
    along_v = k[:, :, 1] * v + k[:, :, 2]  # (2, n, h, 1)
    grid = along_u + along_v  # (2, n, h, w)
    if mode == "nearest":
        # whole-pixel maps land on pixel centres: inside is exactly the range zero padding keeps
        out = F.grid_sample(x.float(), grid.permute(1, 2, 3, 0), mode="nearest", padding_mode="zeros",
                            align_corners=False)
        return to_uint8(out)
    # outside: floor((g + 1) / 2) != 0 per axis; moving such points by 8 (four image widths)
    # puts them where zero padding reads nothing but black
    outside = torch.floor_((along_u * 0.5) + (along_v * 0.5 + 0.5))
    grid[0].clamp_(-1 + 1 / w, 1 - 1 / w)
    grid[1].clamp_(-1 + 1 / h, 1 - 1 / h)
    grid.add_(outside, alpha=8.0)
    # PIL truncates; + 1e-3 on the input (so on every convex combination of it) absorbs float32
    # error so an exact grey level (identity, integer shifts) stays put.  Outside points read 0.
    source = x.float().add_(1e-3)  # (torch.add(uint8, 1e-3) promotes ~1.6x slower on CPU)
    out = F.grid_sample(source, grid.permute(1, 2, 3, 0), mode="bilinear", padding_mode="zeros",
                        align_corners=False)
    return to_uint8(out)  # values in [0, 255 + 1e-3]: the cast is PIL's truncation


def to_uint8(x: Tensor) -> Tensor:
    """Truncate float grey levels in [0, 256) to uint8.

    On CPU torch's direct float -> uint8 cast is not vectorised; going through int16 is ~3x faster.
    """
    if x.device.type == "cpu":
        return x.to(torch.int16).to(torch.uint8)
    return x.to(torch.uint8)


# ---- point ops (ImageOps): exact PIL equivalents -----------------------------------------------

def _levels(device: torch.device) -> Tensor:
    return torch.arange(256, device=device)


def _autocontrast(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    """``ImageOps.autocontrast(img)``: per channel, lut[i] = int(i * scale + offset), clipped."""
    n, c = x.shape[:2]
    flat = x.view(n, c, -1)
    lo, hi = flat.amin(dim=2, keepdim=True).double(), flat.amax(dim=2, keepdim=True).double()
    still = hi <= lo  # PIL leaves a one-level channel alone: scale 1, offset 0 is the identity
    # float64 tensor / tensor and the same operation order as PIL's Python floats, so the
    # truncation of values that are exactly integers in real arithmetic agrees bit for bit.
    scale = torch.where(still, 1.0, torch.full_like(hi, 255.0) / (hi - lo).clamp(min=1))
    offset = torch.where(still, 0.0, -lo * scale)
    table = (_levels(x.device).double() * scale).add_(offset).floor_().clamp_(0, 255)
    return to_uint8(table)


def _equalize(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    """``ImageOps.equalize(img)``: per channel, PIL's cumulative-histogram table.

    PIL: step = (pixels - count of the highest level present) // 255; no change if step == 0
    (which covers a single-level channel); else lut[i] = (step // 2 + pixels below i) // step.
    """
    n, c, h, w = x.shape
    # a scatter-add into a fixed-size histogram: bincount sizes its output by the input's maximum,
    # which it reads back from the device
    index = _lut_index(x).view(-1).long()
    hist = torch.zeros(n * c * 256, dtype=torch.int64, device=x.device).index_add_(
        0, index, torch.ones((), dtype=torch.int64, device=x.device).expand(index.numel())).view(n, c, 256)
    top = x.view(n, c, -1).amax(dim=2, keepdim=True).long()
    step = (h * w - hist.gather(2, top)) // 255  # (n, c, 1)
    below = torch.cumsum(hist, 2).sub_(hist).double()
    # float64 quotients of integers < 2^53 floor exactly (cheaper than int64 floor_divide on CPU)
    table = (below + (step // 2)).div_(step.clamp(min=1)).floor_().clamp_(max=255)
    return to_uint8(torch.where(step > 0, table, _levels(x.device).double()))


def _posterize(x: Tensor | None, level: Tensor, sign: Tensor) -> Tensor:
    """``ImageOps.posterize(img, 4 - int_parameter(level, 4))``: lut[i] = i & ~(2^(8 - bits) - 1)."""
    bits = (4 - int_parameter(level, 4)).clamp(0, 8).long()
    mask = 256 - (1 << (8 - bits))
    return (_levels(level.device) & mask.view(-1, 1, 1)).to(torch.uint8)


def _solarize(x: Tensor | None, level: Tensor, sign: Tensor) -> Tensor:
    """``ImageOps.solarize(img, 256 - int_parameter(level, 256))``: invert levels >= threshold."""
    threshold = (256 - int_parameter(level, 256)).view(-1, 1, 1)
    levels = _levels(level.device)
    return torch.where(levels >= threshold, 255 - levels, levels).to(torch.uint8)


# ---- ImageEnhance ops (all_ops) --------------------------------------------------------------------

def _factor(level: Tensor, device: torch.device) -> Tensor:
    """``float_parameter(level, 1.8) + 0.1`` in double, then float32 as PIL's C ``float alpha``."""
    return (float_parameter(level, 1.8) + 0.1).float().to(device)


def _blend(degenerate: Tensor, x: Tensor, factor: Tensor) -> Tensor:
    """``Image.blend(degenerate, x, factor)`` (float32 ``in1 + alpha (in2 - in1)``, clipped, truncated)."""
    return to_uint8((degenerate + factor * (x - degenerate)).clamp_(0, 255))


def _grey(x: Tensor) -> Tensor:
    """PIL's RGB -> L in fixed point: (R 19595 + G 38470 + B 7471 + 2^15) >> 16, as int32 (N, 1, H, W)."""
    r, g, b = x.int().unbind(1)
    return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).unsqueeze(1)


def _brightness(x: Tensor | None, level: Tensor, sign: Tensor) -> Tensor:
    levels = _levels(level.device).float()
    return _blend(torch.zeros_like(levels), levels, _factor(level, level.device).view(-1, 1, 1))


def _contrast(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    # degenerate: a flat grey image at int(mean of L + 0.5)
    mean = torch.floor(_grey(x).double().mean(dim=(1, 2, 3)) + 0.5).float().view(-1, 1, 1)
    return _blend(mean, _levels(x.device).float(), _factor(level, x.device).view(-1, 1, 1))


def _color(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    grey = _grey(x).float().expand_as(x)
    return _blend(grey, x.float(), _factor(level, x.device).view(-1, 1, 1, 1))


def _sharpness(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    """Blend with PIL's SMOOTH filter (3x3 kernel [[1,1,1],[1,5,1],[1,1,1]] / 13, border kept)."""
    n, c, h, w = x.shape
    xf = x.float()
    kernel = torch.tensor([[1.0, 1, 1], [1, 5, 1], [1, 1, 1]], device=x.device) / 13
    smooth = F.conv2d(xf.reshape(n * c, 1, h, w), kernel.view(1, 1, 3, 3)).view(n, c, h - 2, w - 2)
    degenerate = xf.clone()
    degenerate[:, :, 1:-1, 1:-1] = torch.floor(smooth + 0.5).clamp_(0, 255)
    return _blend(degenerate, xf, _factor(level, x.device).view(-1, 1, 1, 1))


# ---- geometric ops: PIL affine coefficients per image ------------------------------------------------

def _rotate(level: Tensor, sign: Tensor, size: Size) -> Tensor:
    """``img.rotate(deg, resample=BILINEAR)``, deg = +-int_parameter(level, 30), as ``Image.rotate``."""
    degrees = torch.remainder(int_parameter(level, 30) * sign.double(), 360)
    angle = -torch.deg2rad(degrees)
    cos, sin = torch.round(torch.cos(angle), decimals=15), torch.round(torch.sin(angle), decimals=15)
    h, w = size
    cx, cy = w / 2, h / 2
    # PIL: matrix (cos, sin, 0, -sin, cos, 0), then c, f = matrix applied to -centre, plus centre
    c = cos * -cx + sin * -cy + cx
    f = -sin * -cx + cos * -cy + cy
    return torch.stack((cos, sin, c, -sin, cos, f), dim=1)


def _shear(axis: int) -> Callable[[Tensor, Tensor, Size], Tensor]:
    def coefficients(level: Tensor, sign: Tensor, size: Size) -> Tensor:
        k = _identity(level)
        k[:, 1 if axis == 0 else 3] = float_parameter(level, 0.3) * sign.double()  # (1, s, 0, 0, 1, 0)
        return k
    return coefficients


def _translate(axis: int) -> Callable[[Tensor, Tensor, Size], Tensor]:
    def coefficients(level: Tensor, sign: Tensor, size: Size) -> Tensor:
        k = _identity(level)
        # The public code uses IMAGE_SIZE / 3 (32 / 3 for CIFAR); we use the image's own side.
        side = size[1] if axis == 0 else size[0]
        k[:, 2 if axis == 0 else 5] = int_parameter(level, side / 3) * sign.double()
        return k
    return coefficients


def _identity(level: Tensor) -> Tensor:
    k = torch.zeros(level.shape[0], 6, dtype=torch.float64, device=level.device)
    k[:, 0] = k[:, 4] = 1.0
    return k


#: The public code's ``augmentations_all`` list; ``augmentations`` is its first nine (op indices
#: are drawn over the list, so the order matters).
OPS: dict[str, Op] = {op.name: op for op in (
    LutOp("autocontrast", _autocontrast),
    LutOp("equalize", _equalize),
    LutOp("posterize", _posterize, per_image=False),
    AffineOp("rotate", _rotate),
    LutOp("solarize", _solarize, per_image=False),
    AffineOp("shear_x", _shear(0)),
    AffineOp("shear_y", _shear(1)),
    AffineOp("translate_x", _translate(0), mode="nearest"),
    AffineOp("translate_y", _translate(1), mode="nearest"),
    # ``augmentations_all`` adds these (they overlap ImageNet-C/CIFAR-C; off by default).
    PixelOp("color", _color),
    LutOp("contrast", _contrast),
    LutOp("brightness", _brightness, per_image=False),
    PixelOp("sharpness", _sharpness),
)}
BASIC_OPS: tuple[str, ...] = tuple(OPS)[:9]
