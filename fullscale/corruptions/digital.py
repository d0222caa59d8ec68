"""The digital group (contrast, elastic transform, pixelate, JPEG) and the extra saturate.  On the CPU,
JPEG and pixelate call PIL per image (the reference itself, and faster there); on accelerators
they run as tensor code (pixelate bit-exact, JPEG within a level).  Each corruption is registered
with its parameter rows (``specs.register_corruption``)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import Tensor

from fullscale.corruptions._draws import uniform
from fullscale.corruptions._filters import (
    gaussian_blur,
    hsv_to_rgb,
    rgb_to_hsv,
)
from fullscale.corruptions.jpeg import jpeg_roundtrip
from fullscale.corruptions.specs import Strengthened, away_from, register_corruption

_S = 244  # make_imagenet_c.py's elastic rows use 244 ("should have been 224"); kept as published


@register_corruption("saturate", cifar=((0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2)),
                     imagenet=((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (20, 0.2)))
def saturate(x: Tensor, c: tuple[float, float], g: torch.Generator) -> Tensor:
    mul, add = c
    hsv = rgb_to_hsv(x)
    hsv[:, 1] = (hsv[:, 1] * mul + add).clamp(0, 1)
    return hsv_to_rgb(hsv)


@register_corruption("contrast", cifar=(0.75, 0.5, 0.4, 0.3, 0.15), imagenet=(0.4, 0.3, 0.2, 0.1, 0.05),
                     strengthen=lambda c, k: away_from(1, c, k, low=0))
def contrast(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    means = x.mean(dim=(2, 3), keepdim=True)
    return (x - means) * c + means


@register_corruption(
    "elastic_transform",
    cifar=tuple((32 * a, 32 * s, 32 * f) for a, s, f in
                ((0, 0, 0.08), (0.05, 0.2, 0.07), (0.08, 0.06, 0.06), (0.1, 0.04, 0.05), (0.1, 0.03, 0.03))),
    imagenet=tuple((_S * a, _S * s, _S * f) for a, s, f in
                   ((2, 0.7, 0.1), (2, 0.08, 0.2), (0.05, 0.01, 0.02), (0.07, 0.01, 0.02), (0.12, 0.01, 0.02))),
    pixel_fields={0: "float", 1: "float", 2: "float"},
    strengthen=lambda c, k: (c[0] * k, c[1], c[2] * k))  # the field's amplitude and the affine jitter; smoothness stays
def elastic_transform(x: Tensor, c: tuple[float, float, float], g: torch.Generator) -> Tensor:
    """A random affine of three control points (cv2.getAffineTransform / warpAffine), then a
    smooth displacement field: uniform(-1, 1) blurred by skimage gaussian(sigma, reflect,
    truncate=3), times alpha, sampled bilinearly (map_coordinates order 1, reflect)."""
    alpha, sigma, affine = c
    n, _, h, w = x.shape
    centre, square = torch.tensor([h // 2, w // 2], dtype=torch.float64), min(h, w) // 3
    corner = torch.stack([centre[0] + square, centre[1] - square])
    pts1 = torch.stack([centre + square, corner, centre - square])
    pts2 = pts1 + uniform((n, 3, 2), -affine, affine, g).double().cpu()
    # cv2.getAffineTransform(pts1, pts2) = M with pts2 = M [pts1; 1]; warpAffine samples src = M^-1 dst
    ones = torch.ones(3, 1, dtype=torch.float64)
    forward = torch.linalg.solve(torch.cat([pts1, ones], 1), pts2).transpose(1, 2)  # (n, 2, 3)
    full = torch.cat([forward, torch.tensor([[[0.0, 0.0, 1.0]]], dtype=torch.float64).expand(n, 1, 3)], 1)
    inverse = torch.linalg.inv(full)[:, :2]
    ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64),
                            indexing="ij")
    pix = torch.stack([xs, ys, torch.ones_like(xs)], -1).view(1, h * w, 3)
    src = pix @ inverse.transpose(1, 2)  # (n, HW, 2) as (x, y) pixel coordinates
    x = _sample(x, src.view(n, h, w, 2), "mirror")
    dxy = uniform((n, 2, h, w), -1, 1, g).to(device=x.device, dtype=torch.float64)
    dxy = gaussian_blur(dxy, sigma, mode="reflect", truncate=3.0) * alpha
    grid = torch.stack([xs, ys], -1).to(dxy).unsqueeze(0) + dxy.permute(0, 2, 3, 1)
    return _sample(x, grid, "reflect")


def _fold(coord: Tensor, n: int, mode: str) -> Tensor:
    """Continuous pixel coordinates folded into [0, n - 1]: ``mirror`` = reflect-101 (OpenCV's
    BORDER_REFLECT_101, scipy 'mirror'), ``reflect`` = half-sample symmetric (scipy 'reflect')."""
    if mode == "mirror":
        period = 2 * (n - 1)
        c = torch.remainder(coord, period)
        c = torch.where(c > n - 1, period - c, c)
    else:
        c = torch.remainder(coord + 0.5, 2 * n)
        c = torch.where(c > n, 2 * n - c, c) - 0.5
    return c.clamp(0, n - 1)


def _sample(x: Tensor, pixel_xy: Tensor, mode: str) -> Tensor:
    """Bilinear sample at pixel coordinates (x, y) (pixel centres at integers), borders folded."""
    _n, _, h, w = x.shape
    pixel_xy = pixel_xy.to(x.device, torch.float64)
    px, py = _fold(pixel_xy[..., 0], w, mode), _fold(pixel_xy[..., 1], h, mode)
    grid = torch.stack([(2 * px + 1) / w - 1, (2 * py + 1) / h - 1], -1)
    return F.grid_sample(x, grid.to(x), mode="bilinear", padding_mode="border", align_corners=False)


# the resize factor (1: none) kept >= 0.1 (3 pixels of a 32-pixel side)
@register_corruption("pixelate", cifar=(0.95, 0.9, 0.85, 0.75, 0.65), imagenet=(0.6, 0.5, 0.4, 0.3, 0.25),
                     strengthen=lambda c, k: away_from(1, c, k, low=0.1),
                     cpu_u8=lambda images_u8, c: pil_per_image(images_u8, "pixelate", c))
def pixelate(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    """PIL BOX resize to int(size c) and back (BOX again)."""
    h, w = x.shape[2:]
    return _box_resize(_box_resize(x, int(h * c), int(w * c)), h, w)


def _box_mask(n_in: int, n_out: int) -> Tensor:
    """PIL's BOX taps (Resample.c ``precompute_coeffs``, in its double arithmetic): a 0/1 matrix
    (n_out, n_in) marking the input pixels whose centres fall in the box of width max(scale, 1)
    around output centre (i + 0.5) scale."""
    scale = n_in / n_out
    support = 0.5 * max(scale, 1.0)
    centre = (torch.arange(n_out, dtype=torch.float64) + 0.5) * scale
    pixel = torch.arange(n_in, dtype=torch.float64)
    t = (pixel[None, :] - centre[:, None] + 0.5) / max(scale, 1.0)
    lo = torch.clamp(torch.floor(centre - support + 0.5), min=0)
    hi = torch.clamp(torch.floor(centre + support + 0.5), max=n_in)
    inside = (pixel[None, :] >= lo[:, None]) & (pixel[None, :] < hi[:, None])
    return ((t > -0.5) & (t <= 0.5) & inside).double()


def _box_resize(x: Tensor, out_h: int, out_w: int) -> Tensor:
    """PIL's ``resize(..., BOX)`` of an 8-bit image (Resample.c): output pixel i averages the
    input pixels whose centres fall in the box of width max(scale, 1) around (i + 0.5) scale.
    PIL resamples horizontally, rounds to 8 bits (half up), then vertically: the same here.  Its
    22-bit fixed-point weights round the same way: a box mean of k levels is a multiple of 1 / k,
    a tie only when exact."""
    def weights(n_in: int, n_out: int) -> Tensor:
        m = _box_mask(n_in, n_out)
        return (m / m.sum(1, keepdim=True)).to(device=x.device, dtype=x.dtype)

    levels = torch.round(x * 255)
    across = torch.floor(torch.matmul(levels, weights(x.shape[3], out_w).T) + 0.5 + 1e-4)
    return torch.floor(torch.matmul(weights(x.shape[2], out_h), across) + 0.5 + 1e-4) / 255


def _jpeg_strength(quality: int, k: float) -> int | Strengthened:
    """The quality moved ``k`` times as far from 100, down to 1; the strength left once it is 1 scales
    the compression's artefact.  Quality alone saturates: at quality 1 (every CIFAR row's at k >= 5)
    the 32x32 digits, 8x8 images upscaled, lose 3.5 points where CIFAR-10's Baseline loses 16, and a
    row's artefact amplified at its own quality (16 x) 4.6 (`noisymix fit-analogue`, issue 46)."""
    at_one = 99 / (100 - quality)  # the k at which this row's quality reaches 1
    if k <= at_one:
        return round(away_from(100, quality, k, low=1, high=100))
    return Strengthened(1, k / at_one)


@register_corruption("jpeg_compression", cifar=(80, 65, 58, 50, 40), imagenet=(25, 18, 15, 10, 7),
                     strengthen=_jpeg_strength,
                     cpu_u8=lambda images_u8, c: pil_per_image(images_u8, "jpeg_compression", c))
def jpeg_compression(x: Tensor, c: int, g: torch.Generator) -> Tensor:
    """PIL's libjpeg (exact) for float images; ``corrupt`` sends CPU uint8 batches straight to
    ``pil_per_image``, accelerator batches to the tensor re-implementation (``jpeg.py``)."""
    if x.device.type != "cpu":
        return jpeg_roundtrip(x, c)
    u8 = torch.floor(x * 255 + 0.5).clamp(0, 255).to(torch.uint8)
    return pil_per_image(u8, "jpeg_compression", c).float() / 255


def pil_per_image(images_u8: Tensor, name: str, c: Any) -> Tensor:
    """JPEG and pixelate on the CPU, uint8 (N, 3, H, W) in and out, bit-identical with the
    reference's PIL calls and faster than them (``noisymix bench corruptions``): the planes go to
    PIL without a transposition (``Image.merge`` of three zero-copy planes), the JPEG is decoded
    by libjpeg straight into the output array, and pixelate's upsampling (a BOX filter with a
    box narrower than a pixel copies one source pixel) is a gather.  The result is a
    channels-last strided view for JPEG, contiguous for pixelate."""
    if name == "jpeg_compression":
        return _jpeg_pil(images_u8, int(c))
    if name == "pixelate":
        return _pixelate_pil(images_u8, float(c))
    raise ValueError(f"pil_per_image: no PIL path for {name!r}; expected jpeg_compression or pixelate")


def _rgb_image(planes: np.ndarray) -> Image.Image:
    """One PIL RGB image from a contiguous (3, H, W) uint8 array (no transposition)."""
    h, w = planes.shape[1:]
    return Image.merge("RGB", [Image.frombuffer("L", (w, h), p, "raw", "L", 0, 1) for p in planes])


def _jpeg_pil(images_u8: Tensor, quality: int) -> Tensor:
    """``Image.save(JPEG, quality)`` then libjpeg's decoder (rawmode RGB, as ``Image.open`` sets
    it for a 3-component baseline file) writing into a shared RGBX buffer: ``Image.open`` +
    ``np.asarray`` decode the same bytes the same way, through a slower Python path and a copy."""
    n, _, h, w = images_u8.shape
    planes = images_u8.contiguous().numpy()
    out = np.empty((n, h, w, 4), dtype=np.uint8)
    for i in range(n):
        buffer = io.BytesIO()
        _rgb_image(planes[i]).save(buffer, "JPEG", quality=quality)
        target = Image.frombuffer("RGBX", (w, h), out[i], "raw", "RGBX", 0, 1)  # shares out[i]
        decoder = Image._getdecoder("RGBX", "jpeg", ("RGB", ""))
        decoder.setimage(target.im, (0, 0, w, h))
        decoder.decode(buffer.getvalue())
    return torch.from_numpy(out)[..., :3].permute(0, 3, 1, 2)


def _pixelate_pil(images_u8: Tensor, c: float) -> Tensor:
    """PIL's BOX downsizing per image; the BOX upsizing back (each output pixel one source pixel,
    ``_box_mask`` has one tap per row) as two gathers over the batch."""
    h, w = images_u8.shape[2:]
    small_w, small_h = int(w * c), int(h * c)
    up_w, up_h = _box_mask(small_w, w), _box_mask(small_h, h)
    planes = images_u8.contiguous().numpy()
    if small_w >= w or small_h >= h or up_w.sum(1).max() != 1 or up_h.sum(1).max() != 1:
        out = [np.asarray(_rgb_image(p).resize((small_w, small_h), Image.BOX).resize((w, h), Image.BOX))
               for p in planes]
        return torch.from_numpy(np.stack(out)).permute(0, 3, 1, 2)
    small = np.stack([np.asarray(_rgb_image(p).resize((small_w, small_h), Image.BOX)) for p in planes])
    small = np.ascontiguousarray(small.transpose(0, 3, 1, 2))
    across = np.take(small, up_w.argmax(1).numpy(), axis=3)
    return torch.from_numpy(np.take(across, up_h.argmax(1).numpy(), axis=2))
