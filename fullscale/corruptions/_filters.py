"""Batched image filters the corruptions are made of (float images (N, C, H, W) in [0, 1])."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "conv2d_same",
    "gaussian_blur",
    "gaussian_kernel1d",
    "hsv_to_rgb",
    "motion_blur",
    "plasma_fractal",
    "rgb_to_hsv",
    "warp",
    "zoom_about_centre",
]


def gaussian_kernel1d(sigma: float, truncate: float = 4.0) -> Tensor:
    radius = max(int(truncate * sigma + 0.5), 1)
    t = torch.arange(-radius, radius + 1, dtype=torch.float64)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    return (k / k.sum()).float()


def gaussian_blur(x: Tensor, sigma: float, mode: str = "replicate") -> Tensor:
    """skimage.filters.gaussian (truncate 4) per channel; ``replicate`` = its 'nearest' mode."""
    k = gaussian_kernel1d(sigma).to(x)
    r = k.numel() // 2
    n, c, h, w = x.shape
    y = x.reshape(n * c, 1, h, w)
    y = F.conv2d(F.pad(y, (r, r, 0, 0), mode=mode), k.view(1, 1, 1, -1))
    y = F.conv2d(F.pad(y, (0, 0, r, r), mode=mode), k.view(1, 1, -1, 1))
    return y.view(n, c, h, w)


def conv2d_same(x: Tensor, kernel: Tensor, mode: str = "reflect") -> Tensor:
    """cv2.filter2D(x, -1, kernel) per channel (default border: reflect-101 = torch 'reflect')."""
    kh, kw = kernel.shape
    n, c, h, w = x.shape
    y = F.pad(x.reshape(n * c, 1, h, w), (kw // 2, (kw - 1) // 2, kh // 2, (kh - 1) // 2), mode=mode)
    return F.conv2d(y, kernel.to(x).view(1, 1, kh, kw)).view(n, c, h, w)


def zoom_about_centre(x: Tensor, factor: float) -> Tensor:
    """The reference's ``clipped_zoom``: crop the central 1/factor and scale it back (bilinear)."""
    _n, _c, h, w = x.shape
    ch = math.ceil(h / factor)
    top = (h - ch) // 2
    crop = x[:, :, top:top + ch, top:top + ch]
    size = round(ch * factor)
    up = F.interpolate(crop, size=(size, size), mode="bilinear", align_corners=True)
    trim = (size - h) // 2
    return up[:, :, trim:trim + h, trim:trim + w]


def warp(x: Tensor, matrix: Tensor, padding: str = "zeros") -> Tensor:
    """Bilinear resampling of float images: output pixel centre (u, v) reads the input at
    ``matrix @ (u, v, 1)`` (pixel units, centres at +0.5, PIL's AFFINE convention), per image."""
    n, _, h, w = x.shape
    to_pixels = torch.tensor([[w / 2, 0, w / 2], [0, h / 2, h / 2], [0, 0, 1]], dtype=torch.float64)
    full = torch.cat([matrix.double().cpu(), to_pixels[2:].expand(n, 1, 3)], 1)
    theta = torch.linalg.inv(to_pixels)[:2] @ full @ to_pixels
    grid = F.affine_grid(theta.to(device=x.device, dtype=x.dtype), [n, 1, h, w], align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode=padding, align_corners=False)


def _shift(x: Tensor, dx: Tensor, dy: Tensor) -> Tensor:
    """x sampled at (u + dx, v + dy) per image (bilinear, edge-replicated)."""
    m = torch.zeros(x.shape[0], 2, 3, dtype=torch.float64)
    m[:, 0, 0] = m[:, 1, 1] = 1
    m[:, 0, 2], m[:, 1, 2] = dx.double().cpu(), dy.double().cpu()
    return warp(x, m, padding="border")


def motion_blur(x: Tensor, radius: float, sigma: float, angle_deg: Tensor) -> Tensor:
    """ImageMagick's ``-motion-blur radiusxsigma+angle``: a one-sided Gaussian-weighted streak
    of length ``radius`` pixels in direction ``angle`` (per image), batched as shifted copies."""
    taps = torch.arange(0, int(radius) + 1, dtype=x.dtype, device=x.device)
    weights = torch.exp(-0.5 * (taps / sigma) ** 2)
    weights = weights / weights.sum()
    angle = torch.deg2rad(angle_deg.to(x))
    out = torch.zeros_like(x)
    for t, wt in zip(taps, weights, strict=True):
        out += wt * _shift(x, -t * torch.cos(angle), -t * torch.sin(angle))
    return out


def plasma_fractal(n: int, mapsize: int, wibbledecay: float, generator: torch.Generator) -> Tensor:
    """The reference's diamond-square height map in [0, 1], for ``n`` maps at once (N, S, S)."""
    if mapsize & (mapsize - 1):
        raise ValueError(f"mapsize must be a power of two, got {mapsize}")
    dev = generator.device
    m = torch.zeros(n, mapsize, mapsize, dtype=torch.float64, device=dev)
    step, wibble = mapsize, 100.0

    def wibbled(a: Tensor) -> Tensor:
        u = torch.rand(a.shape, generator=generator, device=dev, dtype=torch.float64)
        return a / 4 + wibble * (2 * u - 1) * wibble

    while step >= 2:
        half = step // 2
        corner = m[:, 0::step, 0::step]
        square = corner + corner.roll(-1, 1)
        square = square + square.roll(-1, 2)
        m[:, half::step, half::step] = wibbled(square)
        dr = m[:, half::step, half::step]
        ul = m[:, 0::step, 0::step]
        m[:, 0::step, half::step] = wibbled(dr + dr.roll(1, 1) + ul + ul.roll(-1, 2))
        m[:, half::step, 0::step] = wibbled(dr + dr.roll(1, 2) + ul + ul.roll(-1, 1))
        step //= 2
        wibble /= wibbledecay
    m = m - m.amin(dim=(1, 2), keepdim=True)
    return (m / m.amax(dim=(1, 2), keepdim=True)).float()


def rgb_to_hsv(x: Tensor) -> Tensor:
    """skimage.color.rgb2hsv, batched (N, 3, H, W) -> (N, 3, H, W) with h in [0, 1)."""
    r, g, b = x.unbind(1)
    v, _ = x.max(1)
    mn, _ = x.min(1)
    delta = v - mn
    s = torch.where(v > 0, delta / v.clamp_min(1e-12), torch.zeros_like(v))
    safe = delta.clamp_min(1e-12)
    h = torch.where(r == v, (g - b) / safe, torch.where(g == v, 2 + (b - r) / safe, 4 + (r - g) / safe))
    h = torch.where(delta > 0, (h / 6) % 1.0, torch.zeros_like(h))
    return torch.stack([h, s, v], 1)


def hsv_to_rgb(x: Tensor) -> Tensor:
    h, s, v = x.unbind(1)
    i = torch.floor(h * 6)
    f = h * 6 - i
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    i = i.long() % 6
    choices = torch.stack([torch.stack(c, 1) for c in ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v),
                                                        (v, p, q))], 0)  # (6, N, 3, H, W)
    index = i.unsqueeze(0).unsqueeze(2).expand(1, -1, 3, -1, -1)
    return choices.gather(0, index).squeeze(0)


def disk_kernel(radius: float, alias_blur: float) -> Tensor:
    """The reference's ``disk``: an aliased disk blurred by a 3x3 (5x5 for r > 8) Gaussian."""
    size = 8 if radius <= 8 else int(radius)
    ksize = 3 if radius <= 8 else 5
    t = np.arange(-size, size + 1)
    xx, yy = np.meshgrid(t, t)
    d = ((xx ** 2 + yy ** 2) <= radius ** 2).astype(np.float64)
    d /= d.sum()
    # cv2.GaussianBlur(ksize, sigma) = separable normalised Gaussian, border reflect-101
    g = np.exp(-0.5 * (np.arange(ksize) - ksize // 2) ** 2 / alias_blur ** 2)
    g /= g.sum()
    kernel = torch.from_numpy(d).view(1, 1, *d.shape)
    kernel = conv2d_same(kernel, torch.from_numpy(np.outer(g, g))).view(*d.shape)
    # the 17 x 17 support is mostly exact zeros for small radii: trim it symmetrically (same result)
    nonzero = torch.nonzero(kernel.abs().sum(0) > 0).flatten()
    r = int(max(size - nonzero.min(), nonzero.max() - size))
    return kernel[size - r:size + r + 1, size - r:size + r + 1].float()
