"""The noise group of the common corruptions (gaussian, shot, impulse) and the extra speckle noise:
per-pixel draws from the caller's generator (``make_cifar_c.py`` / ``make_imagenet_c.py``), each
registered with its parameter rows (``specs.register_corruption``)."""

from __future__ import annotations

import torch
from torch import Tensor

from fullscale.corruptions._draws import cast_like, randn_like
from fullscale.corruptions.specs import away_from, register_corruption


@register_corruption("gaussian_noise", cifar=(0.04, 0.06, 0.08, 0.09, 0.10),
                     imagenet=(0.08, 0.12, 0.18, 0.26, 0.38), strengthen=lambda c, k: c * k)
def gaussian_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return x + c * randn_like(x, g)


# the noise's sd is sqrt(x / c): k times the sd is c / k^2 photons
@register_corruption("shot_noise", cifar=(500, 250, 100, 75, 50), imagenet=(60, 25, 12, 5, 3),
                     strengthen=lambda c, k: c / k ** 2)
def shot_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return cast_like(x, torch.poisson(x.to(g.device) * c, generator=g)) / c


@register_corruption("impulse_noise", cifar=(0.01, 0.02, 0.03, 0.05, 0.07),
                     imagenet=(0.03, 0.06, 0.09, 0.17, 0.27), strengthen=lambda c, k: away_from(0, c, k, high=1))
def impulse_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    """skimage random_noise(mode='s&p', amount=c): a fraction c of the values set to 0 or 1,
    half each."""
    hit = cast_like(x, torch.rand(x.shape, generator=g, device=g.device)) < c
    salt = cast_like(x, torch.rand(x.shape, generator=g, device=g.device)) < 0.5
    return torch.where(hit, salt.to(x.dtype), x)


@register_corruption("speckle_noise", cifar=(0.06, 0.1, 0.12, 0.16, 0.2),
                     imagenet=(0.15, 0.2, 0.35, 0.45, 0.6), strengthen=lambda c, k: c * k)
def speckle_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return x + x * c * randn_like(x, g)
