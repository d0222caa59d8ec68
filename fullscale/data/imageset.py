"""The in-memory form every reader returns, and the registry of named data sets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from torch import Tensor

Split = Literal["train", "test"]


@dataclass(frozen=True)
class ImageSet:
    """Images and labels, ready to live on a device.

    Attributes:
        images: uint8 tensor (N, 3, H, W), channels first.
        labels: int64 tensor (N,) with values in [0, num_classes).
        num_classes: number of classes.
        name: data set name (``cifar10``, ``cifar100``, ``digits``).
        source: where the data came from (files, or the built-in source), for result files.
    """

    images: Tensor
    labels: Tensor
    num_classes: int
    name: str
    source: str

    def __post_init__(self) -> None:
        if self.images.dtype != torch.uint8 or self.images.ndim != 4 or self.images.shape[1] != 3:
            raise ValueError(f"{self.name}: images must be uint8 (N, 3, H, W), got "
                             f"{self.images.dtype} {tuple(self.images.shape)}")
        if self.labels.shape != (self.images.shape[0],):
            raise ValueError(f"{self.name}: {self.images.shape[0]} images but labels of shape "
                             f"{tuple(self.labels.shape)}")
        if len(self.labels) and (int(self.labels.min()) < 0 or int(self.labels.max()) >= self.num_classes):
            raise ValueError(f"{self.name}: labels outside [0, {self.num_classes})")

    def __len__(self) -> int:
        return self.images.shape[0]

    def to(self, device: torch.device | str) -> ImageSet:
        return ImageSet(self.images.to(device), self.labels.to(device), self.num_classes,
                        self.name, self.source)

    def subset(self, index: Tensor) -> ImageSet:
        return ImageSet(self.images[index], self.labels[index], self.num_classes, self.name, self.source)


def _cifar(kind: str) -> Callable[[Split, Path | None], ImageSet]:
    def load(split: Split, root: Path | None) -> ImageSet:
        from fullscale.data.cifar import read_cifar

        if root is None:
            raise ValueError(f"{kind} needs a data root (--data-root DIR); nothing is downloaded")
        return read_cifar(root, kind, split)
    return load


def _digits(split: Split, root: Path | None) -> ImageSet:
    from fullscale.data.digits import load_digits32

    return load_digits32(split)


DATASETS: dict[str, Callable[[Split, Path | None], ImageSet]] = {
    "cifar10": _cifar("cifar10"),
    "cifar100": _cifar("cifar100"),
    "digits": _digits,
}


def load_dataset(name: str, split: Split, root: str | Path | None = None) -> ImageSet:
    """Load ``split`` ("train" or "test") of a named data set; CIFAR needs ``root``."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    return DATASETS[name](split, None if root is None else Path(root))
