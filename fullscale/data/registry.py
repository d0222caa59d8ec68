"""The registry of named in-memory data sets: ``load_dataset(name, split, root)``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fullscale.data.cifar import read_cifar
from fullscale.data.digits import load_digits
from fullscale.data.imageset import ImageSet, Split

__all__ = ["BUILT_IN", "DATASETS", "load_dataset"]


def _cifar(kind: str) -> Callable[[Split, Path | None], ImageSet]:
    def load(split: Split, root: Path | None) -> ImageSet:
        if root is None:
            raise ValueError(f"{kind} needs a data root (--data-root DIR); nothing is downloaded")
        return read_cifar(root, kind, split)
    return load


def _digits(side: int) -> Callable[[Split, Path | None], ImageSet]:
    def load(split: Split, root: Path | None) -> ImageSet:
        return load_digits(split, side)
    return load


DATASETS: dict[str, Callable[[Split, Path | None], ImageSet]] = {
    "cifar10": _cifar("cifar10"),
    "cifar100": _cifar("cifar100"),
    "digits": _digits(32),
    "digits16": _digits(16),  # the main job's data: the same digits at a quarter of the pixels
}
#: the data sets that come with the package (no --data-root), and the side of their images
BUILT_IN = {"digits": 32, "digits16": 16}


def load_dataset(name: str, split: Split, root: str | Path | None = None) -> ImageSet:
    """Load ``split`` ("train" or "test") of a named data set; CIFAR needs ``root``."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    return DATASETS[name](split, None if root is None else Path(root))
