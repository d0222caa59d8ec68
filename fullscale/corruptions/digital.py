"""The digital group (contrast, elastic transform, pixelate, JPEG) and the extra saturate.  On the CPU,
JPEG and pixelate call PIL per image (the reference itself, and faster there); on accelerators
they run as tensor code (pixelate bit-exact, JPEG within a level)."""

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


def saturate(x: Tensor, c: tuple[float, float], g: torch.Generator) -> Tensor:
    mul, add = c
    hsv = rgb_to_hsv(x)
    hsv[:, 1] = (hsv[:, 1] * mul + add).clamp(0, 1)
    return hsv_to_rgb(hsv)


def contrast(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    means = x.mean(dim=(2, 3), keepdim=True)
    return (x - means) * c + means


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


def pixelate(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    """PIL BOX resize to int(size c) and back (BOX again)."""
    h, w = x.shape[2:]
    return _box_resize(_box_resize(x, int(h * c), int(w * c)), h, w)


def _box_resize(x: Tensor, out_h: int, out_w: int) -> Tensor:
    """PIL's ``resize(..., BOX)`` of an 8-bit image (Resample.c): output pixel i averages the
    input pixels whose centres fall in the box of width max(scale, 1) around (i + 0.5) scale.
    PIL resamples horizontally, rounds to 8 bits (half up), then vertically: the same here.  Its
    22-bit fixed-point weights round the same way: a box mean of k levels is a multiple of 1 / k,
    a tie only when exact."""
    def weights(n_in: int, n_out: int) -> Tensor:
        scale = n_in / n_out
        support = 0.5 * max(scale, 1.0)
        centre = (torch.arange(n_out, dtype=torch.float64) + 0.5) * scale
        pixel = torch.arange(n_in, dtype=torch.float64)
        t = (pixel[None, :] - centre[:, None] + 0.5) / max(scale, 1.0)
        lo = torch.clamp(torch.floor(centre - support + 0.5), min=0)
        hi = torch.clamp(torch.floor(centre + support + 0.5), max=n_in)
        inside = (pixel[None, :] >= lo[:, None]) & (pixel[None, :] < hi[:, None])
        m = ((t > -0.5) & (t <= 0.5) & inside).double()
        return (m / m.sum(1, keepdim=True)).to(device=x.device, dtype=x.dtype)

    levels = torch.round(x * 255)
    across = torch.floor(torch.matmul(levels, weights(x.shape[3], out_w).T) + 0.5 + 1e-4)
    return torch.floor(torch.matmul(weights(x.shape[2], out_h), across) + 0.5 + 1e-4) / 255


def jpeg_compression(x: Tensor, c: int, g: torch.Generator) -> Tensor:
    """PIL's libjpeg (exact) for float images; ``corrupt`` sends CPU uint8 batches straight to
    ``pil_per_image``, accelerator batches to the tensor re-implementation (``jpeg.py``)."""
    if x.device.type != "cpu":
        return jpeg_roundtrip(x, c)
    u8 = torch.floor(x * 255 + 0.5).clamp(0, 255).to(torch.uint8)
    return pil_per_image(u8, "jpeg_compression", c).float() / 255


def pil_per_image(images_u8: Tensor, name: str, c: Any) -> Tensor:
    """JPEG and pixelate on the CPU: PIL's C code one image at a time, uint8 in and out — the
    reference itself, and faster there than any tensor version (pixelate's batched version,
    bit-identical, runs on accelerators)."""
    out = []
    for img in images_u8.permute(0, 2, 3, 1).numpy():
        pil = Image.fromarray(img)
        if name == "jpeg_compression":
            buffer = io.BytesIO()
            pil.save(buffer, "JPEG", quality=c)
            out.append(np.asarray(Image.open(buffer)))
        else:
            w, h = pil.size
            out.append(np.asarray(pil.resize((int(w * c), int(h * c)), Image.BOX).resize((w, h), Image.BOX)))
    return torch.from_numpy(np.stack(out)).permute(0, 3, 1, 2)
