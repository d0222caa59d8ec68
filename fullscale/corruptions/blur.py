"""The blur group (defocus, glass, motion, zoom) and the extra gaussian blur (``make_cifar_c.py`` /
``make_imagenet_c.py``); substitutions for the reference's libraries are listed in ``registry``."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from fullscale.corruptions._draws import uniform
from fullscale.corruptions._filters import (
    conv2d_same,
    disk_kernel,
    gaussian_blur,
    motion_blur,
    zoom_about_centre,
)


def gaussian_blur_corruption(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return gaussian_blur(x, c)


def defocus_blur(x: Tensor, c: tuple[float, float], g: torch.Generator) -> Tensor:
    return conv2d_same(x, disk_kernel(*c))


def _glass_sources(offsets: np.ndarray, h: int, w: int, delta: int) -> np.ndarray:
    """The reference's pixel loop on pixel indices: ``offsets[it, step, i] = (dx, dy)`` are image
    ``i``'s draws at that step; returns, per image, the source pixel of every position (N, H W).

    The reference's line ``x[h, w], x[h', w'] = x[h', w'], x[h, w]`` on an (H, W, 3) array builds
    its right side from *views*: (h', w') is written into (h, w) first, and (h, w), now holding
    the same values, is written back into (h', w'). So pixel (h', w') is copied into (h, w) and
    (h', w') is left unchanged: a copy, not a swap. That is what the released CIFAR-10-C and
    ImageNet-C files contain (Hendrycks & Dietterich's ``make_cifar_c.py`` /
    ``make_imagenet_c.py``), so it is what the benchmark the paper evaluates on is made of."""
    n = offsets.shape[2]
    src = np.tile(np.arange(h * w, dtype=np.int64), (n, 1))
    rows = np.arange(n)
    here = np.array([r * w + col for r in range(h - delta, delta, -1) for col in range(w - delta, delta, -1)],
                    dtype=np.int64)
    for d in offsets:
        there = here[:, None] + d[:, :, 1] * w + d[:, :, 0]  # (steps, N): dx drawn first, then dy
        for a, b in zip(here.tolist(), there, strict=True):
            src[:, a] = src[rows, b]  # the copy; sequential, as a later step may read this pixel
    return src


def _glass_permutation(n: int, h: int, w: int, delta: int, iterations: int, g: torch.Generator) -> Tensor:
    """The reference's loop (for h from H - delta down to delta + 1, for w likewise: copy pixel
    (h + dy, w + dx) into (h, w), dx, dy ~ U{-delta, .., delta - 1}) applied to pixel indices of
    ``n`` images at once: returns, per image, which source pixel ends up where (N, H W)."""
    steps = len(range(h - delta, delta, -1)) * len(range(w - delta, delta, -1))
    offsets = np.stack([torch.randint(-delta, delta, (steps, n, 2), generator=g, device=g.device).cpu().numpy()
                        for _ in range(iterations)]) if steps else np.zeros((iterations, 0, n, 2), np.int64)
    return torch.from_numpy(_glass_sources(offsets, h, w, delta))


def glass_blur(x: Tensor, c: tuple[float, int, int], g: torch.Generator) -> Tensor:
    sigma, delta, iterations = c
    x = torch.floor(gaussian_blur(x, sigma) * 255) / 255  # the reference's np.uint8(...)
    n, ch, h, w = x.shape
    perm = _glass_permutation(n, h, w, delta, iterations, g).to(x.device)
    x = x.reshape(n, ch, h * w).gather(2, perm.unsqueeze(1).expand(n, ch, h * w)).view(n, ch, h, w)
    return gaussian_blur(x, sigma)


def motion_blur_corruption(x: Tensor, c: tuple[int, float], g: torch.Generator) -> Tensor:
    radius, sigma = c
    angle = uniform((x.shape[0],), -45, 45, g)
    # ImageMagick works on the 8-bit image and writes 8 bits back (rounded)
    return torch.round(motion_blur(x, radius, sigma, angle) * 255) / 255


def zoom_blur(x: Tensor, c: tuple[float, ...], g: torch.Generator) -> Tensor:
    out = sum(zoom_about_centre(x, float(f)) for f in c)
    return (x + out) / (len(c) + 1)
