"""CIFAR-10-C/100-C and CIFAR-10-P layouts (also Digits-C/-P from ``noisymix corrupt``).

-C: ``<corruption>.npy`` uint8 (5 N, H, W, 3), severities 1..5 in order, ``labels.npy`` (5 N,)
(or (N,)); -P: ``<perturbation>.npy`` uint8 (N, frames, H, W, 3), ``labels.npy`` (N,).
Arrays are memory-mapped (``allow_pickle=False``): a severity block is read only when used.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

__all__ = ["CorruptedSet", "PerturbedSet", "read_c_set", "read_p_set"]


def _load(path: Path) -> np.ndarray:
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as error:  # truncated or not an npy file
        raise ValueError(f"{path} is not a readable .npy array ({error})") from None


@dataclass(frozen=True)
class CorruptedSet:
    root: Path
    names: tuple[str, ...]
    labels: np.ndarray  # (N,)
    count: int  # N per severity

    def images(self, name: str, severity: int) -> torch.Tensor:
        """uint8 (N, 3, H, W) of ``name`` at ``severity`` (one block of the memory map)."""
        array = _load(self.root / f"{name}.npy")
        if array.dtype != np.uint8 or array.ndim != 4 or array.shape[-1] != 3 or array.shape[0] != 5 * self.count:
            raise ValueError(f"{self.root / (name + '.npy')}: expected uint8 (5 x {self.count}, H, W, 3), "
                             f"got {array.dtype} {array.shape}")
        block = np.array(array[(severity - 1) * self.count:severity * self.count])  # a writable copy
        return torch.from_numpy(block).permute(0, 3, 1, 2)

    def path(self, name: str) -> Path:
        return self.root / f"{name}.npy"


def read_c_set(root: str | Path, names: tuple[str, ...]) -> CorruptedSet:
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory with <corruption>.npy and labels.npy")
    labels = np.asarray(_load(root / "labels.npy")).astype(np.int64)
    missing = [n for n in names if not (root / f"{n}.npy").is_file()]
    if missing:
        raise FileNotFoundError(f"{root} lacks {', '.join(m + '.npy' for m in missing)}")
    first = _load(root / f"{names[0]}.npy")
    if first.shape[0] % 5:
        raise ValueError(f"{root / (names[0] + '.npy')}: {first.shape[0]} images are not 5 severities")
    count = first.shape[0] // 5
    if labels.shape == (5 * count,):
        blocks = labels.reshape(5, count)
        if not (blocks == blocks[:1]).all():
            raise ValueError(f"{root / 'labels.npy'}: the 5 severity blocks have different labels")
        labels = blocks[0]
    elif labels.shape != (count,):
        raise ValueError(f"{root / 'labels.npy'}: expected {5 * count} or {count} labels, got {labels.shape}")
    return CorruptedSet(root, tuple(names), labels, count)


@dataclass(frozen=True)
class PerturbedSet:
    root: Path
    names: tuple[str, ...]
    labels: np.ndarray

    def sequences(self, name: str, start: int, stop: int) -> torch.Tensor:
        """uint8 (n, frames, 3, H, W) for sequences [start, stop)."""
        array = _load(self.root / f"{name}.npy")
        if array.dtype != np.uint8 or array.ndim != 5 or array.shape[0] != len(self.labels):
            raise ValueError(f"{self.root / (name + '.npy')}: expected uint8 ({len(self.labels)}, frames, H, W, 3),"
                             f" got {array.dtype} {array.shape}")
        return torch.from_numpy(np.array(array[start:stop])).permute(0, 1, 4, 2, 3)

    def path(self, name: str) -> Path:
        return self.root / f"{name}.npy"


def read_p_set(root: str | Path, names: tuple[str, ...]) -> PerturbedSet:
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory with <perturbation>.npy files")
    missing = [n for n in names if not (root / f"{n}.npy").is_file()]
    if missing:
        raise FileNotFoundError(f"{root} lacks {', '.join(m + '.npy' for m in missing)}")
    labels_path = root / "labels.npy"
    if labels_path.is_file():
        labels = np.asarray(_load(labels_path)).astype(np.int64)
    else:
        labels = np.full(_load(root / f"{names[0]}.npy").shape[0], -1)
    return PerturbedSet(root, tuple(names), labels)
