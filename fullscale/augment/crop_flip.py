"""The standard CIFAR augmentation, batched: zero-pad, random crop, random horizontal flip.

As torchvision's ``RandomCrop(32, padding=4)`` + ``RandomHorizontalFlip()`` of the public code,
but one gather for the whole batch (per-image offsets and flips are index tensors).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from noisymix_infra.devices import to_device

__all__ = ["random_crop_flip", "to_float"]


def to_float(images_u8: Tensor) -> Tensor:
    """uint8 grey levels -> float32 in [0, 1] (models normalise inside)."""
    return images_u8.float().div_(255.0)


def random_crop_flip(images_u8: Tensor, *, generator: torch.Generator, padding: int = 4) -> Tensor:
    """Each image: a random (H, W) window of its zero-padded self, mirrored with probability 1/2."""
    if images_u8.ndim != 4:
        raise ValueError(f"random_crop_flip expects (N, C, H, W), got {tuple(images_u8.shape)}")
    if padding < 0:
        raise ValueError(f"padding must be >= 0, got {padding}")
    n, _, h, w = images_u8.shape
    dev = images_u8.device
    shifts = to_device(torch.randint(0, 2 * padding + 1, (n, 2), generator=generator, device=generator.device), dev)
    flip = to_device(torch.rand(n, generator=generator, device=generator.device) < 0.5, dev)
    padded = F.pad(images_u8, (padding,) * 4)
    rows = shifts[:, :1] + torch.arange(h, device=dev)  # (n, h)
    cols_base = torch.arange(w, device=dev)
    cols = shifts[:, 1:] + torch.where(flip[:, None], w - 1 - cols_base, cols_base)  # (n, w)
    batch = torch.arange(n, device=dev)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]]  # (n, h, w, c)
    return out.permute(0, 3, 1, 2).contiguous()
