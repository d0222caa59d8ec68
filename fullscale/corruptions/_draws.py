"""Random draws shared by the corruption groups: every draw from the caller's generator, on its
device, then moved to the images' device and dtype (so CPU and CUDA runs of one seed draw alike)."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["cast_like", "randn_like", "to_u8", "uniform"]


def uniform(shape: tuple[int, ...], low: float, high: float, g: torch.Generator) -> Tensor:
    return low + (high - low) * torch.rand(shape, generator=g, device=g.device)


def cast_like(x: Tensor, t: Tensor) -> Tensor:
    return t.to(device=x.device, dtype=x.dtype)


def randn_like(x: Tensor, g: torch.Generator, shape: tuple[int, ...] | None = None) -> Tensor:
    return cast_like(x, torch.randn(shape or x.shape, generator=g, device=g.device))


def to_u8(x: Tensor) -> Tensor:
    """np.uint8(np.clip(x, 0, 1) * 255): truncation; the 1e-3 keeps values that are whole levels
    in exact arithmetic (k / 255 * 255 in float32) from dropping a level."""
    return x.mul(255).add_(1e-3).clamp_(0, 255).floor_().to(torch.uint8)
