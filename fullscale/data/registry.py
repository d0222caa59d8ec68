"""The registry of named in-memory data sets: ``load_dataset(name, split, root)``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fullscale.data.cifar import read_cifar
from fullscale.data.digits import load_digits
from fullscale.data.imageset import ImageSet, Split

__all__ = ["BUILT_IN", "DATASETS", "IMAGE_SIDE", "load_dataset"]


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


#: the side of each in-memory data set's images (their -C/-P sets must match it)
IMAGE_SIDE: dict[str, int] = {"cifar10": 32, "cifar100": 32, "digits": 32, "digits16": 16}
DATASETS: dict[str, Callable[[Split, Path | None], ImageSet]] = {
    "cifar10": _cifar("cifar10"),
    "cifar100": _cifar("cifar100"),
    "digits": _digits(IMAGE_SIDE["digits"]),
    "digits16": _digits(IMAGE_SIDE["digits16"]),  # the same digits at a quarter of the pixels (issue 34)
}
#: the data sets that come with the package (no --data-root)
BUILT_IN = frozenset({"digits", "digits16"})


def load_dataset(name: str, split: Split, root: str | Path | None = None) -> ImageSet:
    """Load ``split`` ("train" or "test"; for the built-in digits also "fit", the images only the analogue's
    fits read) of a named data set; CIFAR needs ``root``."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    if split not in ("train", "test") and not (split == "fit" and name in BUILT_IN):
        raise ValueError(f"split must be 'train' or 'test'{' or fit' if name in BUILT_IN else ''}, got {split!r}")
    return DATASETS[name](split, None if root is None else Path(root))
