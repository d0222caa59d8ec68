"""The model registry: ``create_model(name, num_classes, **kwargs)``, ``list_models()``.

Every model takes float images in [0, 1] (N, 3, H, W) and normalises them in its first
submodule (``Normalize``, buffers not saved, so state dicts stay those of the usual definitions),
and names its mixing points in ``model.stages``: ``"input"`` (the normalised input) then the
outputs of its residual stages, in order.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from noisymix_infra.registry import file_once

__all__ = ["CIFAR_MEAN_STD", "IMAGENET_MEAN_STD", "Normalize", "create_model", "list_models",
           "register_model"]

#: The public NoisyMix/AugMix CIFAR code normalises with mean = std = 0.5.
CIFAR_MEAN_STD = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
IMAGENET_MEAN_STD = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))

_MODELS: dict[str, Callable[..., nn.Module]] = {}


def register_model(name: str) -> Callable[[Callable[..., nn.Module]], Callable[..., nn.Module]]:
    def add(factory: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        return file_once(_MODELS, name, factory, "model")
    return add


def list_models() -> list[str]:
    return sorted(_MODELS)


def create_model(name: str, num_classes: int, **kwargs: object) -> nn.Module:
    if name not in _MODELS:
        raise ValueError(f"unknown model {name!r}; available: {', '.join(list_models())}")
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}")
    options = [p for p in inspect.signature(_MODELS[name]).parameters if p != "num_classes"]
    unknown = sorted(set(kwargs) - set(options))
    if unknown:
        raise ValueError(f"model {name!r} has no option {', '.join(unknown)}; its options: {', '.join(options)}")
    return _MODELS[name](num_classes=num_classes, **kwargs)


class Normalize(nn.Module):
    """(x - mean) / std per channel; the buffers are not part of the state dict."""

    def __init__(self, mean_std: tuple[Sequence[float], Sequence[float]]) -> None:
        super().__init__()
        mean, std = (torch.tensor(v, dtype=torch.float32).view(1, -1, 1, 1) for v in mean_std)
        self.register_buffer("mean", mean, persistent=False)
        self.register_buffer("std", std, persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        return (x - self.mean) / self.std
