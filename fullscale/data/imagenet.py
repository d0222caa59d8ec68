"""ImageNet-1k on disk, streamed: the listing (``imagenet_files``), per-sample random crops decoded
at reduced size (``imagenet_crops``) in DataLoader workers, a sharded resumable sampler, and
bad-file accounting (this module, which also hands on the names of the other two).

Bad input: a file that cannot be decoded (unreadable, truncated, over the pixel limit checked
from its header: ``fullscale.data.image_files``) becomes a hole in its batch (the batch is
shorter) and is reported in ``Batch.bad``; ``BadFiles`` counts them and stops the run with the
list when they exceed ``max_bad_fraction`` of the listing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from fullscale.data.folders import Preprocess, decode
from fullscale.data.imagenet_crops import (
    DECODERS,
    TrainCrop,
    crop_box,
    decode_train,
    resize_crop,
    sample_seed,
)
from fullscale.data.imagenet_files import ImageNetFiles, read_imagenet, read_val_folder
from noisymix_infra.workers import worker_init_exiting_with_this_process

__all__ = ["DECODERS", "BadFiles", "Batch", "ImageNetFiles", "RunSampler", "StreamingImageNet", "TrainCrop",
           "crop_box", "decode_train", "read_imagenet", "read_val_folder", "resize_crop", "sample_seed",
           "train_loader", "val_loader"]


class _TrainSet(Dataset):
    """Items are addressed by (dataset index, epoch); a bad file gives (None, label, path)."""

    def __init__(self, files: ImageNetFiles, crop: TrainCrop, seed: int) -> None:
        self.files, self.crop, self.seed = files, crop, seed

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, key: tuple[int, int]) -> tuple[torch.Tensor | None, int, str | None]:
        index, epoch = key
        path, label = self.files.samples[index]
        try:
            return decode_train(path, self.crop, sample_seed(self.seed, epoch, index)), label, None
        except ValueError:
            return None, label, str(path)


class _ValSet(Dataset):
    def __init__(self, files: ImageNetFiles, preprocess: Preprocess) -> None:
        self.files, self.preprocess = files, preprocess

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> tuple[torch.Tensor | None, int, str | None]:
        path, label = self.files.samples[index]
        try:
            return decode(path, self.preprocess), label, None
        except ValueError:
            return None, label, str(path)


@dataclass
class Batch:
    """uint8 (B, 3, S, S) images, long (B,) labels, and the paths of the files that failed to decode."""

    images: torch.Tensor
    labels: torch.Tensor
    bad: list[str] = field(default_factory=list)

    def pin_memory(self) -> Batch:  # called by DataLoader(pin_memory=True) for custom batch types
        return Batch(self.images.pin_memory(), self.labels.pin_memory(), self.bad)


def _collate(items: list[tuple[torch.Tensor | None, int, str | None]]) -> Batch:
    crops = [x for x, _, _ in items if x is not None]
    labels = torch.tensor([y for x, y, _ in items if x is not None], dtype=torch.long)
    bad = [p for _, _, p in items if p is not None]
    if not crops:
        return Batch(torch.empty(0, 3, 0, 0, dtype=torch.uint8), labels, bad)
    out = None
    if torch.utils.data.get_worker_info() is not None:
        # In a worker, stack straight into shared memory (as torch's default_collate does): a
        # heap-allocated batch is copied to shared memory to cross the queue, and those heap
        # buffers were measured to stay resident (+130 KB per image and worker, unbounded).
        storage = crops[0].untyped_storage()._new_shared(len(crops) * crops[0].nbytes)
        out = crops[0].new(storage).view(len(crops), *crops[0].shape)
    return Batch(torch.stack(crops, out=out), labels, bad)


def epoch_permutation(n: int, seed: int, epoch: int) -> torch.Tensor:
    """The order of epoch ``epoch``: a permutation of ``n`` drawn from a hash of (seed, epoch)."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(sample_seed(seed, epoch, -1)))


class RunSampler(Sampler):
    """Batches of (index, epoch) keys for rank ``rank`` of ``world``, from (``start_epoch``,
    ``start_step``) to the end of epoch ``epochs - 1``.

    Each epoch is reshuffled by (seed, epoch) (``epoch_permutation``), rank r takes every
    ``world``-th entry from r (truncated to ``n // world`` so every rank runs the same number of
    steps), cut into ``batch_size`` batches, the last incomplete one dropped.  Resuming at
    ``start_step`` yields exactly the batches the uninterrupted run would have from there."""

    def __init__(self, n: int, batch_size: int, seed: int, epochs: int, *, rank: int = 0, world: int = 1,
                 start_epoch: int = 0, start_step: int = 0) -> None:
        if not 0 <= rank < world:
            raise ValueError(f"need 0 <= rank < world, got rank {rank}, world {world}")
        self.n, self.batch_size, self.seed, self.epochs = n, batch_size, seed, epochs
        self.rank, self.world, self.start_epoch, self.start_step = rank, world, start_epoch, start_step
        if self.steps_per_epoch < 1:
            raise ValueError(f"{n} files over {world} ranks make no batch of {batch_size}")
        if not 0 <= start_step < self.steps_per_epoch:
            raise ValueError(f"start_step {start_step} outside [0, {self.steps_per_epoch})")

    @property
    def steps_per_epoch(self) -> int:
        return (self.n // self.world) // self.batch_size

    def __len__(self) -> int:
        return max(self.epochs - self.start_epoch, 0) * self.steps_per_epoch - self.start_step

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        per_rank = self.n // self.world
        for epoch in range(self.start_epoch, self.epochs):
            mine = epoch_permutation(self.n, self.seed, epoch)[self.rank::self.world][:per_rank].tolist()
            first = self.start_step if epoch == self.start_epoch else 0
            for step in range(first, self.steps_per_epoch):
                yield [(i, epoch) for i in mine[step * self.batch_size:(step + 1) * self.batch_size]]


def _loader(dataset: Dataset, workers: int, pin: bool | None, prefetch: int, **kwargs: Any) -> DataLoader:
    extra = {"prefetch_factor": prefetch, "persistent_workers": False} if workers > 0 else {}
    return DataLoader(dataset, num_workers=workers, collate_fn=_collate,
                      worker_init_fn=worker_init_exiting_with_this_process(),
                      pin_memory=torch.cuda.is_available() if pin is None else pin, **extra, **kwargs)


def train_loader(files: ImageNetFiles, crop: TrainCrop, sampler: RunSampler, *, workers: int, seed: int,
                 pin: bool | None = None, prefetch: int = 4) -> DataLoader:
    """Batches (``Batch``) of uint8 crops in the sampler's order, decoded by ``workers`` processes
    (0: in this process), pinned when CUDA is present, ``prefetch`` batches ahead per worker."""
    return _loader(_TrainSet(files, crop, seed), workers, pin, prefetch, batch_sampler=sampler)


def val_loader(files: ImageNetFiles, batch_size: int, *, workers: int, size: int = 224,
               pin: bool | None = None, prefetch: int = 4) -> DataLoader:
    """Batches (``Batch``) in file order: resize ``round(size * 256 / 224)``, centre crop ``size``."""
    preprocess = Preprocess(resize=round(size * 256 / 224), crop=size)
    return _loader(_ValSet(files, preprocess), workers, pin, prefetch, batch_size=batch_size, shuffle=False)


class BadFiles:
    """Counts the files that failed to decode; raises with the list once there are more than
    ``max_fraction`` of ``total`` (so a damaged copy of the data set stops the run early)."""

    def __init__(self, total: int, max_fraction: float = 0.001) -> None:
        self.total, self.max_fraction, self.paths = total, max_fraction, []

    @property
    def count(self) -> int:
        return len(self.paths)

    def add(self, paths: Sequence[str]) -> None:
        self.paths += [p for p in paths if p not in self.paths]
        if self.count > self.max_fraction * self.total:
            raise ValueError(f"{self.count} of {self.total} files could not be decoded (more than "
                             f"max_bad_fraction={self.max_fraction}): {', '.join(self.paths[:20])}"
                             + (" ..." if self.count > 20 else ""))



class StreamingImageNet:
    """The training set of ``root/train`` for the trainer, streamed: the same four answers as the
    trainer's in-memory set (``num_classes``, ``len``, ``steps_per_epoch``, ``batches``) plus
    ``epoch``/``start_step`` (mid-epoch resume), the data-wait time of the last epoch and the
    bad-file count.

    Every rank reads ``batch_size // world`` images per step from its shard (``RunSampler``); the
    order and the crops depend on (seed, epoch, index) only, never on ``order_g``, the number of
    workers or a resume.  Batches arrive as uint8 crops in pinned memory and are copied to
    ``device`` without blocking; the float conversion and everything after happen there."""

    def __init__(self, root: str | Path, *, seed: int, crop: TrainCrop, workers: int, device: torch.device,
                 world: int = 1, max_bad_fraction: float = 0.001, prefetch: int = 4) -> None:
        self.files = read_imagenet(root, "train")
        self.world = world
        self.seed, self.crop, self.workers, self.device, self.prefetch = seed, crop, workers, device, prefetch
        self.bad = BadFiles(len(self.files), max_bad_fraction)
        self.wait_seconds = 0.0
        self.source = str(self.files.root)

    @property
    def num_classes(self) -> int:
        return len(self.files.classes)

    def __len__(self) -> int:
        return len(self.files)

    @staticmethod
    def _per_rank(batch_size: int, world: int) -> int:
        if batch_size % world:
            raise ValueError(f"batch_size={batch_size} must be a multiple of the {world} processes")
        return batch_size // world

    def steps_per_epoch(self, batch_size: int) -> int:
        return (len(self) // self.world) // self._per_rank(batch_size, self.world)

    def batches(self, order_g: torch.Generator, batch_size: int, process: Any, *, epoch: int = 0,
                start_step: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Epoch ``epoch``'s batches of this rank from step ``start_step``: uint8 (B, 3, S, S) and
        labels on the device (B < batch_size / world when a file of the batch could not be read)."""
        del order_g  # the order is a function of (seed, epoch): see epoch_permutation
        sampler = RunSampler(len(self), self._per_rank(batch_size, process.world), self.seed, epoch + 1,
                             rank=process.rank, world=process.world, start_epoch=epoch, start_step=start_step)
        loader = train_loader(self.files, self.crop, sampler, workers=self.workers, seed=self.seed,
                              pin=self.device.type == "cuda", prefetch=self.prefetch)
        self.wait_seconds = 0.0
        iterator = iter(loader)
        while True:
            start = time.perf_counter()
            batch = next(iterator, None)
            self.wait_seconds += time.perf_counter() - start
            if batch is None:
                return
            self.bad.add(batch.bad)
            if not len(batch.labels):  # a step cannot run on no images (and under DDP must not be skipped)
                raise ValueError(f"a whole batch of epoch {epoch} could not be decoded: {', '.join(batch.bad[:5])}")
            yield (batch.images.to(self.device, non_blocking=True),
                   batch.labels.to(self.device, non_blocking=True))
