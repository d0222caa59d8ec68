"""The -P perturbation sequences (Hendrycks & Dietterich, 2019), batched over images.

Each sequence starts at (or passes through) the clean image and changes it frame by frame; the
parameters are those of ``make_cifar_p.py`` (github.com/hendrycks/robustness, ImageNet-P/create_p),
its easiest difficulty for the noise sequences.  Noise frames are independent draws around the
clean image (flip probability is measured against the first frame); the other sequences move
smoothly (flip probability between consecutive frames).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from fullscale.corruptions._filters import gaussian_blur, hsv_to_rgb, motion_blur, rgb_to_hsv, warp

__all__ = ["NOISE_PERTURBATIONS", "PERTURBATIONS", "perturbation_sequence"]


def _noise_frames(x: Tensor, g: torch.Generator, draw: Callable[[Tensor], Tensor]) -> list[Tensor]:
    return [x] + [draw(x) for _ in range(30)]


def _gaussian(x: Tensor, g: torch.Generator) -> list[Tensor]:
    return _noise_frames(x, g, lambda t: t + 0.02 * torch.randn(t.shape, generator=g, device=g.device).to(t))


def _shot(x: Tensor, g: torch.Generator) -> list[Tensor]:
    return _noise_frames(x, g, lambda t: torch.poisson(t.to(g.device) * 700, generator=g).to(t) / 700)


def _speckle(x: Tensor, g: torch.Generator) -> list[Tensor]:
    return _noise_frames(x, g, lambda t: t + t * 0.05 * torch.randn(t.shape, generator=g,
                                                                     device=g.device).to(t))


def _brightness(x: Tensor, g: torch.Generator) -> list[Tensor]:
    hsv = rgb_to_hsv(x)
    frames = []
    for i in range(31):
        h = hsv.clone()
        h[:, 2] = (h[:, 2] + (i - 15) * 1.5 / 100).clamp(0, 1)
        frames.append(hsv_to_rgb(h))
    return frames


def _matrix(x: Tensor, a: float, b: float, c: float, d: float, e: float, f: float) -> Tensor:
    """PIL-convention affine about the image centre: input = A (out - centre) + centre + (c, f)."""
    h, w = x.shape[2:]
    cx, cy = w / 2, h / 2
    m = torch.tensor([[a, b, cx - a * cx - b * cy + c], [d, e, cy - d * cx - e * cy + f]],
                     dtype=torch.float64)
    return m.expand(x.shape[0], 2, 3)


def _geometric(params: list[tuple[float, ...]]) -> Callable[[Tensor, torch.Generator], list[Tensor]]:
    def frames(x: Tensor, g: torch.Generator) -> list[Tensor]:
        return [warp(x, _matrix(x, *p)) for p in params]
    return frames


def _rotation(deg: float) -> tuple[float, ...]:
    t = math.radians(deg)
    return (math.cos(t), math.sin(t), 0.0, -math.sin(t), math.cos(t), 0.0)


def _zoom_blur(x: Tensor, g: torch.Generator) -> list[Tensor]:
    frames, total = [x], x.clone()
    for i in range(1, 31):
        s = 1 / (1 + 0.004 * i)
        total = total + warp(x, _matrix(x, s, 0, 0, 0, s, 0))
        frames.append(total / (i + 1))
    return frames


def _motion_blur(x: Tensor, g: torch.Generator) -> list[Tensor]:
    angles = torch.full((x.shape[0],), 0.0)
    return [motion_blur(x, 6, 1.8, angles + (i - 20) * 9) for i in range(21)]


def _gaussian_blur(x: Tensor, g: torch.Generator) -> list[Tensor]:
    return [gaussian_blur(x, 0.3 + 0.015 * i) for i in range(31)]


PERTURBATIONS: dict[str, Callable[[Tensor, torch.Generator], list[Tensor]]] = {
    "gaussian_noise": _gaussian,
    "shot_noise": _shot,
    "speckle_noise": _speckle,
    "motion_blur": _motion_blur,
    "zoom_blur": _zoom_blur,
    "gaussian_blur": _gaussian_blur,
    "brightness": _brightness,
    "translate": _geometric([(1, 0, -(i - 7), 0, 1, 0) for i in range(16)]),
    "rotate": _geometric([_rotation(i - 15) for i in range(31)]),
    "scale": _geometric([(100 / (2 * i + 70), 0, 0, 0, 100 / (2 * i + 70), 0) for i in range(31)]),
    "shear": _geometric([(1, math.tan(math.radians(i - 15)), 0, 0, 1, 0) for i in range(31)]),
}
NOISE_PERTURBATIONS = ("gaussian_noise", "shot_noise", "speckle_noise")


def perturbation_sequence(images_u8: Tensor, name: str, *, generator: torch.Generator,
                          params: str = "cifar") -> Tensor:
    """uint8 (N, 3, H, W) -> uint8 (N, frames, 3, H, W)."""
    if name not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {name!r}; available: {', '.join(PERTURBATIONS)}")
    if params != "cifar":
        raise ValueError(f"params={params!r}: only the CIFAR-P parameters are implemented")
    if images_u8.dtype != torch.uint8 or images_u8.ndim != 4:
        raise ValueError(f"expected uint8 images (N, 3, H, W), got {images_u8.dtype} "
                         f"{tuple(images_u8.shape)}")
    frames = PERTURBATIONS[name](images_u8.float() / 255, generator)
    return torch.floor(torch.stack(frames, 1).clamp(0, 1) * 255).to(torch.uint8)
