"""The blur group (defocus, glass, motion, zoom) and the extra gaussian blur (``make_cifar_c.py`` /
``make_imagenet_c.py``), each registered with its parameter rows (``specs.register_corruption``);
substitutions for the reference's libraries are listed in ``registry``."""

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
from fullscale.corruptions.specs import away_from, register_corruption


def _zooms(*tops_steps: tuple[float, float]) -> tuple[tuple[float, ...], ...]:
    """Zoom blur's rows: the factors np.arange(1, top, step) per severity."""
    return tuple(tuple(float(f) for f in np.arange(1, top, step)) for top, step in tops_steps)


@register_corruption("gaussian_blur", cifar=(0.4, 0.6, 0.7, 0.8, 1), imagenet=(1, 2, 3, 4, 6),
                     pixel_fields={0: "float"}, strengthen=lambda c, k: c * k)  # a bare sigma (a row of one number)
def gaussian_blur_corruption(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return gaussian_blur(x, c)


@register_corruption("defocus_blur", cifar=((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1)),
                     imagenet=((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5)),
                     strengthen=lambda c, k: (c[0] * k, c[1] * k))  # the disk's radius, its anti-alias blur
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


@register_corruption("glass_blur",
                     cifar=((0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2)),
                     imagenet=((0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2)),
                     pixel_fields={0: "float", 1: "int"},
                     # the blur's sigma and the largest jump (a whole pixel, at least one); the passes stay
                     strengthen=lambda c, k: (c[0] * k, max(1, round(c[1] * k)), c[2]),
                     whole_batch=True)  # the swap loop wants the whole batch at once
def glass_blur(x: Tensor, c: tuple[float, int, int], g: torch.Generator) -> Tensor:
    sigma, delta, iterations = c
    x = torch.floor(gaussian_blur(x, sigma) * 255) / 255  # the reference's np.uint8(...)
    n, ch, h, w = x.shape
    perm = _glass_permutation(n, h, w, delta, iterations, g).to(x.device)
    x = x.reshape(n, ch, h * w).gather(2, perm.unsqueeze(1).expand(n, ch, h * w)).view(n, ch, h, w)
    return gaussian_blur(x, sigma)


@register_corruption("motion_blur", cifar=((6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5)),
                     imagenet=((10, 3), (15, 5), (15, 8), (15, 12), (20, 15)),
                     pixel_fields={0: "int", 1: "float"},
                     strengthen=lambda c, k: (max(1, round(c[0] * k)), c[1] * k))  # the taps' reach and sigma
def motion_blur_corruption(x: Tensor, c: tuple[int, float], g: torch.Generator) -> Tensor:
    radius, sigma = c
    angle = uniform((x.shape[0],), -45, 45, g)
    # ImageMagick works on the 8-bit image and writes 8 bits back (rounded)
    return torch.round(motion_blur(x, radius, sigma, angle) * 255) / 255


@register_corruption("zoom_blur",
                     cifar=_zooms((1.06, 0.01), (1.11, 0.01), (1.16, 0.01), (1.21, 0.01), (1.26, 0.01)),
                     imagenet=_zooms((1.11, 0.01), (1.16, 0.01), (1.21, 0.02), (1.26, 0.02), (1.31, 0.03)),
                     strengthen=lambda c, k: tuple(away_from(1, f, k, low=0.05) for f in c))  # zoom 1: none
def zoom_blur(x: Tensor, c: tuple[float, ...], g: torch.Generator) -> Tensor:
    out = sum(zoom_about_centre(x, float(f)) for f in c)
    return (x + out) / (len(c) + 1)
