"""ImageNet class identities: the 1000 wnids in the standard class-index order, and the 200 of
ImageNet-R as a mask over 1000-way logits.

Facts copied from hendrycks/imagenet-r ``eval.py`` (``all_wnids``, sorted, = the torchvision
class-index order; ``imagenet_r_wnids``) into ``imagenet_wnids.json`` / ``imagenet_r_wnids.json``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import torch

__all__ = ["imagenet_r_indices", "imagenet_r_mask", "imagenet_r_wnids", "imagenet_wnids"]

_HERE = Path(__file__).parent


@cache
def imagenet_wnids() -> tuple[str, ...]:
    """The 1000 ImageNet-1k wnids; position = class index of a 1000-way model."""
    return tuple(json.loads((_HERE / "imagenet_wnids.json").read_text()))


@cache
def imagenet_r_wnids() -> tuple[str, ...]:
    """ImageNet-R's 200 wnids in class-index order (sorted, as ``ImageFolder`` labels them)."""
    return tuple(json.loads((_HERE / "imagenet_r_wnids.json").read_text()))


def imagenet_r_mask() -> torch.Tensor:
    """bool (1000,): the logits of ImageNet-R's classes (the public ``imagenet_r_mask``)."""
    keep = set(imagenet_r_wnids())
    return torch.tensor([w in keep for w in imagenet_wnids()])


def imagenet_r_indices() -> torch.Tensor:
    """long (200,): 1000-way class index of ImageNet-R's class k; ``logits[:, idx]`` is 200-way."""
    return imagenet_r_mask().nonzero().flatten()
