"""The noise group of the common corruptions (gaussian, shot, impulse) and the extra speckle noise:
per-pixel draws from the caller's generator (``make_cifar_c.py`` / ``make_imagenet_c.py``)."""

from __future__ import annotations

import torch
from torch import Tensor

from fullscale.corruptions._draws import cast_like, randn_like


def gaussian_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return x + c * randn_like(x, g)


def shot_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return cast_like(x, torch.poisson(x.to(g.device) * c, generator=g)) / c


def impulse_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    """skimage random_noise(mode='s&p', amount=c): a fraction c of the values set to 0 or 1,
    half each."""
    hit = cast_like(x, torch.rand(x.shape, generator=g, device=g.device)) < c
    salt = cast_like(x, torch.rand(x.shape, generator=g, device=g.device)) < 0.5
    return torch.where(hit, salt.to(x.dtype), x)


def speckle_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return x + x * c * randn_like(x, g)
