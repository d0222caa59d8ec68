"""The AugMix operations, batched: every image of a batch with its own op parameters.

Images travel between ops as float tensors holding integer grey levels in [0, 255] (N, 3, H, W):
PIL, which the public AugMix code applies per image, quantises to uint8 after every op, and we
do the same (``_quantise``) so that a chain of ops sees the same inputs as the reference.

Each op is ``op(x, level, sign) -> x`` where ``level`` (N,) is the public code's
``sample_level(severity) = Uniform(0.1, severity)`` draw and ``sign`` (N,) is +-1 (used by the
ops the public code flips at random: rotate, shear, translate).  Parameter maps follow
``augmentations.py`` of github.com/google-research/augmix: ``int_parameter(level, maxval) =
int(level * maxval / 10)``, ``float_parameter(level, maxval) = level * maxval / 10``.

The point ops (autocontrast, equalize, posterize, solarize) equal PIL's ``ImageOps`` exactly on
uint8 images; the geometric ops (rotate, shear, translate) are one bilinear ``grid_sample`` of
PIL's affine map (pixel centres at +0.5, edge-clamped neighbours, black outside) and agree
with PIL's BILINEAR transform to within one grey level on a handful of pixels (float vs
PIL's arithmetic); the ``all_ops`` enhancements (color, contrast, brightness, sharpness)
follow ``ImageEnhance``'s blend with the same degenerate images (tolerances in tests/augment).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["AFFINE_OPS", "BASIC_OPS", "OPS", "Op", "affine", "float_parameter", "int_parameter"]

Op = Callable[[Tensor, Tensor, Tensor], Tensor]


def int_parameter(level: Tensor, maxval: float) -> Tensor:
    """``int(level * maxval / 10)`` of the public code (levels are positive: floor)."""
    return torch.floor(level * maxval / 10)


def float_parameter(level: Tensor, maxval: float) -> Tensor:
    return level * maxval / 10


def _quantise(x: Tensor) -> Tensor:
    # PIL rounds half up when it writes a uint8 pixel.
    return torch.floor(x + 0.5).clamp_(0, 255)


def _per_image(v: Tensor) -> Tensor:
    return v.view(-1, 1, 1, 1)


# ---- point ops: exact PIL equivalents ---------------------------------------------------------

def _lut_index(x: Tensor) -> Tensor:
    """Indices into a flattened (N * C, 256) table: grey level + 256 * (image, channel)."""
    n, c = x.shape[:2]
    offsets = torch.arange(0, n * c * 256, 256, device=x.device, dtype=torch.float32).view(n, c, 1, 1)
    return (x + offsets).long()


def _apply_lut(index: Tensor, lut: Tensor, dtype: torch.dtype) -> Tensor:
    """Per (image, channel) lookup: ``lut`` (N * C, 256) at the grey levels behind ``index``."""
    return torch.take(lut.to(dtype), index)


def autocontrast(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    """``ImageOps.autocontrast(img)``: per channel, stretch [min, max] to [0, 255] (LUT with int())."""
    n, c = x.shape[:2]
    lo = x.amin(dim=(2, 3)).reshape(n * c, 1).double()
    hi = x.amax(dim=(2, 3)).reshape(n * c, 1).double()
    flat = hi <= lo
    # float64 tensor/tensor division, as PIL's Python floats (scalar / tensor is a reciprocal-multiply)
    scale = torch.full_like(hi, 255.0) / torch.where(flat, torch.ones_like(hi), hi - lo)
    levels = torch.arange(256, device=x.device, dtype=torch.float64)
    # PIL: lut[ix] = int(ix * scale + offset), offset = -lo * scale, clipped to [0, 255].
    lut = torch.floor(levels * scale + (-lo * scale)).clamp(0, 255)
    lut = torch.where(flat, levels, lut)
    return _apply_lut(_lut_index(x), lut, x.dtype)


def equalize(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    """``ImageOps.equalize(img)``: per channel, the cumulative-histogram LUT of PIL."""
    n, c, h, w = x.shape
    index = _lut_index(x)
    hist = torch.bincount(index.flatten(), minlength=n * c * 256).view(n * c, 256)
    # PIL drops empty bins, then step = (total - count of the last non-empty bin) // 255.
    top = 255 - torch.argmax((hist.flip(1) > 0).long(), dim=1)
    last = hist.gather(1, top[:, None]).squeeze(1)
    step = (h * w - last) // 255
    keep = ((hist > 0).sum(1) <= 1) | (step == 0)
    safe_step = torch.where(step == 0, torch.ones_like(step), step)
    before = torch.cumsum(hist, 1) - hist  # pixels strictly below each level
    lut = ((safe_step[:, None] // 2 + before) // safe_step[:, None]).clamp(max=255)
    lut = torch.where(keep[:, None], torch.arange(256, device=x.device), lut)
    return _apply_lut(index, lut, x.dtype)


def posterize(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    """``ImageOps.posterize(img, 4 - int_parameter(level, 4))``: keep the top bits."""
    bits = (4 - int_parameter(level, 4)).clamp(0, 8)
    step = torch.pow(2.0, 8 - bits)
    return torch.floor(x / _per_image(step)) * _per_image(step)


def solarize(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    """``ImageOps.solarize(img, 256 - int_parameter(level, 256))``: invert pixels >= threshold."""
    threshold = _per_image(256 - int_parameter(level, 256))
    return torch.where(x >= threshold, 255 - x, x)


# ---- geometric ops: one affine map per image ---------------------------------------------------

def _rotate_matrix(level: Tensor, sign: Tensor, size: tuple[int, int]) -> Tensor:
    """PIL ``Image.rotate(deg)`` about the centre (w/2, h/2): input = R (out - c) + c."""
    degrees = int_parameter(level, 30) * sign
    a = -torch.deg2rad(degrees.double())
    cos, sin = torch.cos(a), torch.sin(a)
    h, w = size
    cx, cy = w / 2.0, h / 2.0
    m = torch.zeros(level.shape[0], 2, 3, dtype=torch.float64, device=level.device)
    m[:, 0, 0], m[:, 0, 1] = cos, sin
    m[:, 1, 0], m[:, 1, 1] = -sin, cos
    m[:, 0, 2] = cx - cos * cx - sin * cy
    m[:, 1, 2] = cy + sin * cx - cos * cy
    return m


def _shear_matrix(axis: int) -> Callable[[Tensor, Tensor, tuple[int, int]], Tensor]:
    def matrix(level: Tensor, sign: Tensor, size: tuple[int, int]) -> Tensor:
        m = _identity(level)
        m[:, axis, 1 - axis] = float_parameter(level, 0.3).double() * sign.double()
        return m
    return matrix


def _translate_matrix(axis: int) -> Callable[[Tensor, Tensor, tuple[int, int]], Tensor]:
    def matrix(level: Tensor, sign: Tensor, size: tuple[int, int]) -> Tensor:
        m = _identity(level)
        # The public code uses IMAGE_SIZE / 3 (32 / 3 for CIFAR); we use the image's own side.
        m[:, axis, 2] = int_parameter(level, size[1 - axis] / 3).double() * sign.double()
        return m
    return matrix


def _identity(level: Tensor) -> Tensor:
    m = torch.zeros(level.shape[0], 2, 3, dtype=torch.float64, device=level.device)
    m[:, 0, 0] = m[:, 1, 1] = 1.0
    return m


def affine(x: Tensor, matrix: Tensor) -> Tensor:
    """Bilinear resampling with PIL's ``Image.transform(AFFINE, (a, b, c, d, e, f))`` convention.

    Output pixel (i, j) has centre (j + 0.5, i + 0.5) and reads the input at
    (a u + b v + c, d u + e v + f) in the same continuous coordinates.  PIL interpolates a
    source point inside [0, w) x [0, h) with edge-clamped neighbours and gives black outside.
    """
    n, _, h, w = x.shape
    # pixel coordinates u = (g + 1) w / 2 of grid_sample's normalised g (align_corners=False)
    to_pixels = torch.tensor([[w / 2, 0, w / 2], [0, h / 2, h / 2], [0, 0, 1]], dtype=torch.float64,
                             device=matrix.device)
    to_normal = torch.linalg.inv(to_pixels)
    theta = to_normal[:2] @ torch.cat([matrix, to_pixels[2:].expand(n, 1, 3)], 1) @ to_pixels
    grid = F.affine_grid(theta.to(device=x.device, dtype=x.dtype), [n, 1, h, w], align_corners=False)
    out = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    inside = (grid >= -1).all(-1) & (grid < 1).all(-1)
    return out * inside.unsqueeze(1).to(x.dtype)


def _translate(axis: int) -> Op:
    """Integer translation (the public code's int_parameter): a shifted copy, black outside."""
    def op(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
        n, _, h, w = x.shape
        side = (w, h)[axis]
        shift = (int_parameter(level, (h, w)[axis] / 3) * sign).long().to(x.device)
        src = torch.arange(side, device=x.device)[None, :] + shift[:, None]  # (n, side)
        valid = (src >= 0) & (src < side)
        src = src.clamp(0, side - 1)
        if axis == 0:
            out = x.gather(3, src.view(n, 1, 1, w).expand_as(x))
            return out * valid.view(n, 1, 1, w).to(x.dtype)
        out = x.gather(2, src.view(n, 1, h, 1).expand_as(x))
        return out * valid.view(n, 1, h, 1).to(x.dtype)
    op.matrix = _translate_matrix(axis)  # type: ignore[attr-defined]
    return op


def _geometric(matrix_fn: Callable[[Tensor, Tensor, tuple[int, int]], Tensor]) -> Op:
    def op(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
        # PIL's bilinear transform truncates the interpolated value when it writes uint8; the
        # 1e-3 absorbs float32 error so an exact grey level (e.g. the identity map) stays put.
        out = affine(x, matrix_fn(level, sign, (x.shape[2], x.shape[3])))
        return torch.floor(out + 1e-3).clamp_(0, 255)
    op.matrix = matrix_fn  # type: ignore[attr-defined]
    return op


# ---- ImageEnhance ops (all_ops) ------------------------------------------------------------------

def _enhance_factor(level: Tensor) -> Tensor:
    return _per_image(float_parameter(level, 1.8) + 0.1)


def _grey(x: Tensor) -> Tensor:
    """PIL's RGB -> L in fixed point: (R 19595 + G 38470 + B 7471 + 2^15) >> 16."""
    r, g, b = x.long().unbind(1)
    return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).unsqueeze(1).to(x.dtype)


def _blend(degenerate: Tensor, x: Tensor, factor: Tensor) -> Tensor:
    """``Image.blend(degenerate, x, factor)``: float32 interpolation, truncated and clipped."""
    return torch.floor(degenerate + factor.float() * (x - degenerate)).clamp_(0, 255)


def color(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    return _blend(_grey(x).expand_as(x), x, _enhance_factor(level))


def contrast(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    mean = torch.floor(_grey(x).mean(dim=(1, 2, 3), keepdim=True) + 0.5)
    return _blend(mean.expand_as(x), x, _enhance_factor(level))


def brightness(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    return _blend(torch.zeros_like(x), x, _enhance_factor(level))


def sharpness(x: Tensor, level: Tensor, sign: Tensor) -> Tensor:
    kernel = torch.tensor([[1.0, 1, 1], [1, 5, 1], [1, 1, 1]], device=x.device, dtype=x.dtype) / 13
    smooth = _quantise(F.conv2d(x.reshape(-1, 1, *x.shape[2:]), kernel.view(1, 1, 3, 3))).view(
        x.shape[0], x.shape[1], x.shape[2] - 2, x.shape[3] - 2)
    degenerate = x.clone()
    degenerate[:, :, 1:-1, 1:-1] = smooth  # PIL keeps the border pixels of the SMOOTH filter
    return _blend(degenerate, x, _enhance_factor(level))


_rotate = _geometric(_rotate_matrix)
_shear_x = _geometric(_shear_matrix(0))
_shear_y = _geometric(_shear_matrix(1))
_translate_x = _translate(0)
_translate_y = _translate(1)

#: The public code's ``augmentations`` list (order matters: op indices are drawn over it).
OPS: dict[str, Op] = {
    "autocontrast": autocontrast,
    "equalize": equalize,
    "posterize": posterize,
    "rotate": _rotate,
    "solarize": solarize,
    "shear_x": _shear_x,
    "shear_y": _shear_y,
    "translate_x": _translate_x,
    "translate_y": _translate_y,
    # ``augmentations_all`` adds these (they overlap the -C corruptions; off by default).
    "color": color,
    "contrast": contrast,
    "brightness": brightness,
    "sharpness": sharpness,
}
BASIC_OPS: tuple[str, ...] = tuple(OPS)[:9]
AFFINE_OPS: tuple[str, ...] = ("rotate", "shear_x", "shear_y", "translate_x", "translate_y")

