"""CIFAR-10-C/100-C and CIFAR-10-P layouts (also Digits-C/-P from ``noisymix corrupt``).

-C: ``<corruption>.npy`` uint8 (5 N, H, W, 3), severities 1..5 in order, and ``labels.npy``
(5 N,) or (N,) integers; CIFAR-10-C has N = 10000, Digits-C N = 450.
-P: ``<perturbation>.npy`` uint8 (N, frames, H, W, 3), optional ``labels.npy`` (N,) (flip
probabilities need no labels).  Arrays are memory-mapped (``allow_pickle=False``) and every file's
header is checked when the set is opened; a severity block (or a slice of sequences) is copied into
memory only when it is evaluated, so a whole set is never held at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from noisymix_infra.io import printable

__all__ = ["CorruptedSet", "PerturbedSet", "read_c_set", "read_p_set"]

SEVERITIES = 5


def _load(path: Path) -> np.ndarray:
    if not path.is_file():
        raise FileNotFoundError(f"{printable(path)} not found")
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as error:
        # truncated, pickled (refused, never unpickled), not an npy file, a header of absurd size
        # (OverflowError/MemoryError) or one numpy's header parser rejects (tokenize.TokenError, ...)
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{printable(path)} is not a readable .npy array ({detail})") from None


def _labels(path: Path) -> np.ndarray:
    labels = _load(path)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{printable(path)}: expected a 1-D integer array of labels, "
                         f"got {labels.dtype} {labels.shape}")
    return np.asarray(labels).astype(np.int64)


def _check_images(path: Path, array: np.ndarray, ndim: int, expected: str) -> None:
    if array.dtype != np.uint8 or array.ndim != ndim or array.shape[-1] != 3:
        raise ValueError(f"{printable(path)}: expected uint8 {expected}, got {array.dtype} {array.shape}")


def _require(root: Path, names: tuple[str, ...], what: str) -> None:
    if not root.is_dir():
        raise FileNotFoundError(f"{printable(root)} is not a directory with {what}")
    if not names:
        raise ValueError(f"{printable(root)}: no {what} requested")
    missing = [n for n in names if not (root / f"{n}.npy").is_file()]
    if missing:
        raise FileNotFoundError(f"{printable(root)} lacks {', '.join(m + '.npy' for m in missing)}")


@dataclass(frozen=True)
class CorruptedSet:
    """An opened -C set: ``count`` images per severity, their ``labels`` (N,)."""

    root: Path
    names: tuple[str, ...]
    labels: np.ndarray
    count: int

    def path(self, name: str) -> Path:
        return self.root / f"{name}.npy"

    @property
    def image_size(self) -> tuple[int, int]:
        """(H, W) of the images (every file of the set has the same shape)."""
        shape = _load(self.path(self.names[0])).shape
        return int(shape[1]), int(shape[2])

    def images(self, name: str, severity: int) -> torch.Tensor:
        """uint8 (N, 3, H, W) of ``name`` at ``severity`` 1..5: one block of the memory map."""
        if name not in self.names or not 1 <= severity <= SEVERITIES:
            raise ValueError(f"no {name!r} at severity {severity} in {self.root}")
        array = _load(self.path(name))
        block = np.array(array[(severity - 1) * self.count:severity * self.count])  # a copy of one block
        return torch.from_numpy(block).permute(0, 3, 1, 2)


def read_c_set(root: str | Path, names: tuple[str, ...]) -> CorruptedSet:
    """Open the -C set at ``root`` for ``names``, checking every file's dtype, shape and size and the
    labels' count (and, for 5 N labels, that the 5 severity blocks carry the same labels)."""
    root, names = Path(root), tuple(names)
    _require(root, names, "<corruption>.npy files and labels.npy")
    labels = _labels(root / "labels.npy")
    first = _load(root / f"{names[0]}.npy")
    _check_images(root / f"{names[0]}.npy", first, 4, "(5 N, H, W, 3)")
    if first.shape[0] % SEVERITIES or first.shape[0] == 0:
        raise ValueError(f"{printable(root / (names[0] + '.npy'))}: {first.shape[0]} images are not "
                         "5 severities of N images")
    count = first.shape[0] // SEVERITIES
    for name in names[1:]:
        array = _load(root / f"{name}.npy")
        _check_images(root / f"{name}.npy", array, 4, f"{(5 * count, *first.shape[1:])} like {names[0]}.npy")
        if array.shape != first.shape:
            raise ValueError(f"{printable(root / (name + '.npy'))}: expected {first.shape} like {names[0]}.npy, "
                             f"got {array.shape}")
    if labels.shape == (SEVERITIES * count,):
        blocks = labels.reshape(SEVERITIES, count)
        if not (blocks == blocks[:1]).all():
            raise ValueError(f"{printable(root / 'labels.npy')}: the 5 severity blocks have different labels")
        labels = blocks[0]
    elif labels.shape != (count,):
        raise ValueError(f"{printable(root / 'labels.npy')}: expected {SEVERITIES * count} or {count} labels for "
                         f"{names[0]}.npy {first.shape}, got {labels.shape[0]}")
    return CorruptedSet(root, names, labels, count)


@dataclass(frozen=True)
class PerturbedSet:
    """An opened -P set: ``count`` sequences per perturbation, ``frames[name]`` frames each."""

    root: Path
    names: tuple[str, ...]
    count: int
    frames: dict[str, int]
    labels: np.ndarray | None

    def path(self, name: str) -> Path:
        return self.root / f"{name}.npy"

    def sequences(self, name: str, start: int, stop: int) -> torch.Tensor:
        """uint8 (n, frames, 3, H, W) for sequences [start, stop) of ``name``."""
        if name not in self.names:
            raise ValueError(f"no {name!r} in {self.root}")
        array = _load(self.path(name))
        return torch.from_numpy(np.array(array[start:stop])).permute(0, 1, 4, 2, 3)


def read_p_set(root: str | Path, names: tuple[str, ...]) -> PerturbedSet:
    """Open the -P set at ``root`` for ``names``: uint8 (N, frames >= 2, H, W, 3) with the same N
    (and the same N as ``labels.npy`` where present) in every file."""
    root, names = Path(root), tuple(names)
    _require(root, names, "<perturbation>.npy files")
    frames, count = {}, None
    for name in names:
        array = _load(root / f"{name}.npy")
        _check_images(root / f"{name}.npy", array, 5, "(N, frames, H, W, 3)")
        if array.shape[1] < 2 or array.shape[0] == 0:
            raise ValueError(f"{printable(root / (name + '.npy'))}: expected N >= 1 sequences of >= 2 frames, "
                             f"got {array.shape}")
        if count is not None and array.shape[0] != count:
            raise ValueError(f"{printable(root / (name + '.npy'))}: {array.shape[0]} sequences, expected {count} "
                             f"like {names[0]}.npy")
        count = array.shape[0]
        frames[name] = int(array.shape[1])
    labels = None
    if (root / "labels.npy").is_file():
        labels = _labels(root / "labels.npy")
        if labels.shape != (count,):
            raise ValueError(f"{printable(root / 'labels.npy')}: expected {count} labels, got {labels.shape[0]}")
    return PerturbedSet(root, names, int(count), frames, labels)
