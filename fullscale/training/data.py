"""The training data: an in-memory set on the device, or ImageNet streamed from disk, and its identity.

The training set lives on the device as uint8 (N, 3, H, W); batches are slices of a ``randperm``
drawn from the run's order generator (no DataLoader), augmented on the device
(``fullscale.augment``; the airbench way).

``dataset=imagenet`` streams ``data_root/train/<wnid>/*.JPEG`` (``fullscale.data.imagenet``):
DataLoader workers decode and crop (RandomResizedCrop ``image_size`` + flip, drawn per (seed,
epoch, image)) and hand uint8 batches over in pinned memory; the views, AugMix, mixing and the
normalisation happen on the device as for the in-memory sets (no second crop/flip there).

The run records the identity of its training data (``data_sha256``: the images and labels as
trained on; streamed ImageNet: its listing), and ``resume`` refuses data that changed in place
since (``checkpoint.check_same_data``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Iterator

import torch
from torch import Tensor

from fullscale.augment import random_crop_flip, random_resized_crop_flip
from fullscale.data import ImageSet, load_dataset
from fullscale.data.imagenet import StreamingImageNet, TrainCrop
from fullscale.training.config import TrainConfig
from fullscale.training.process import Process

__all__ = ["STREAMED", "DeviceTransform", "InMemoryData", "content_sha256", "data_sha256", "device_transform",
           "training_data", "view_shape"]

# data sets streamed from disk, cropped and flipped by the loader (fullscale.data.imagenet)
STREAMED = ("imagenet",)


@dataclasses.dataclass(frozen=True)
class InMemoryData:
    """A training set held on the device as uint8 (N, 3, H, W) with its labels; an epoch's
    batches are slices of one ``randperm`` from the order generator, the same on every rank,
    each rank taking every ``world``-th image of a batch.

    The loop asks a training set for ``num_classes``, ``len``, ``steps_per_epoch(batch_size)``
    and ``batches(order_g, batch_size, process, epoch=, start_step=)`` (uint8 images and labels on
    the device) only: the streaming ``StreamingImageNet`` gives the same four answers."""

    images: Tensor
    labels: Tensor
    num_classes: int
    source: str
    sha256: str = ""  # the images and labels as read (``content_sha256``), recorded as ``data_sha256``

    def __len__(self) -> int:
        return self.labels.shape[0]

    def steps_per_epoch(self, batch_size: int) -> int:
        return math.ceil(len(self) / batch_size)

    def batches(self, order_g: torch.Generator, batch_size: int, process: Process, *, epoch: int = 0,
                start_step: int = 0) -> Iterator[tuple[Tensor, Tensor]]:
        """The epoch's batches from ``start_step`` (the permutation is drawn whole either way)."""
        del epoch  # the order comes from order_g
        perm = torch.randperm(len(self), generator=order_g, device=self.images.device)
        for step in range(start_step, self.steps_per_epoch(batch_size)):
            index = perm[step * batch_size:(step + 1) * batch_size][process.rank::process.world]
            yield self.images[index], self.labels[index]


def training_data(cfg: TrainConfig, process: Process) -> tuple[InMemoryData | StreamingImageNet, ImageSet | None]:
    """The training set on the device and the held-out part (``heldout`` last images), if any."""
    device = process.device
    if cfg.data.dataset in STREAMED:
        if not cfg.data.data_root:
            raise ValueError("dataset=imagenet needs data_root=DIR, the ImageNet root with train/<wnid>/*.JPEG")
        if cfg.data.train_subset or cfg.data.heldout:
            raise ValueError("train_subset and heldout are for in-memory data sets, not dataset=imagenet")
        crop = TrainCrop(size=cfg.data.image_size, decoder=cfg.data.decoder)
        return StreamingImageNet(cfg.data.data_root, seed=cfg.seed, crop=crop, workers=cfg.data.workers, device=device,
                                 world=process.world, max_bad_fraction=cfg.data.max_bad_fraction), None
    data = load_dataset(cfg.data.dataset, "train", cfg.data.data_root or None)
    if cfg.data.train_subset:
        data = data.subset(torch.arange(min(cfg.data.train_subset, len(data))))
    digest = content_sha256(data.images, data.labels)  # before the held-out split: all the run reads
    heldout = None
    if cfg.data.heldout:
        if cfg.data.heldout >= len(data):
            raise ValueError(f"heldout={cfg.data.heldout} leaves no training images out of {len(data)}")
        heldout = data.subset(torch.arange(len(data) - cfg.data.heldout, len(data))).to(device)
        data = data.subset(torch.arange(len(data) - cfg.data.heldout))
    return (InMemoryData(data.images.to(device), data.labels.to(device), data.num_classes, data.source, digest),
            heldout)


def content_sha256(images: Tensor, labels: Tensor) -> str:
    """sha256 of the images and labels (shapes, then bytes; on the CPU, before they move): the
    data's identity, not its path, so a CIFAR batch replaced in place is told from the original
    (about 0.3 s for CIFAR's 150 MB)."""
    digest = hashlib.sha256(f"{tuple(images.shape)}|{images.dtype}|{tuple(labels.shape)}|{labels.dtype}|".encode())
    for tensor in (images, labels):
        digest.update(tensor.detach().cpu().contiguous().numpy().data)
    return digest.hexdigest()


def data_sha256(data: InMemoryData | StreamingImageNet) -> str:
    """The training data's identity: in memory, its content; streamed from an ImageNet tree, its
    listing (relative path and label of every file: reading 140 GB to hash it is out of question)."""
    if isinstance(data, InMemoryData):
        return data.sha256
    return data.files.listing_sha256()



def view_shape(cfg: TrainConfig, data: InMemoryData | StreamingImageNet) -> tuple[int, ...]:
    """(C, H, W) of one view the network sees: ``image_size`` for transfer runs (upsampled on the
    device) and streamed ImageNet (cropped by the loader), the stored images' otherwise."""
    if cfg.is_transfer or not isinstance(data, InMemoryData):
        return (3, cfg.data.image_size, cfg.data.image_size)
    return tuple(data.images.shape[1:])


#: a data source's transform of a training batch on the device: ``(uint8 images, generator) ->``
#: uint8 images (the views are made from them) or float images in [0, 1] (the network's input)
DeviceTransform = Callable[[Tensor, torch.Generator], Tensor]


def device_transform(cfg: TrainConfig) -> DeviceTransform:
    """What the training data does to a batch on the device before the method's views, so the step
    never asks where its data came from: the in-memory sets' random crop (``data.crop_padding``) and
    flip, as torchvision's ``RandomCrop`` + ``RandomHorizontalFlip`` of the public code; a transfer
    run's RandomResizedCrop + flip upsampled to ``image_size`` (float: transfer runs take no AugMix
    views); nothing for streamed ImageNet, whose loader crops and flips."""
    if cfg.is_transfer:
        return lambda x, g: random_resized_crop_flip(x, cfg.data.image_size, generator=g)
    if cfg.data.dataset in STREAMED:
        return lambda x, g: x
    return lambda x, g: random_crop_flip(x, generator=g, padding=cfg.data.crop_padding)
