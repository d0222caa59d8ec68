"""The in-memory form every in-memory reader returns (CIFAR, digits): uint8 images and labels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

Split = Literal["train", "test", "fit"]  # "fit": the digits only (fullscale.data.digits)


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
