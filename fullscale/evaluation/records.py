"""What every suite checks and records: the files it read (path, count, sha256; a folder's
listing), the identity a resumed entry is bound to, and the one-line refusals (no images, labels
outside the model's classes, no data root, not a 1000-class model)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from fullscale.data import (
    FolderSet,
)
from fullscale.evaluation.context import Context
from noisymix_infra.io import printable, sha256_file


def file_record(path: Path, count: int) -> dict:
    return {"path": str(path), "count": int(count), "sha256": sha256_file(path)}


def folder_record(data: FolderSet) -> dict:
    return {"path": str(data.root), "count": len(data), "sha256": data.listing_sha256(),
            "sha256_of": "listing (relative path, size, label)"}


def folder_identity(root: Path, samples: list[tuple[Path, int]]) -> str:
    """A cheap identity of image/video folders for resuming: every file's path under ``root``,
    size, modification time and label.  ``listing_sha256`` (the record of what was read) has no
    times, so a file replaced in place by one of the same size would not change it."""
    digest = hashlib.sha256()
    for path, label in samples:
        stat = path.stat()
        digest.update(os.fsencode(path.relative_to(root)) + f"\t{stat.st_size}\t{stat.st_mtime_ns}\t{label}\n".encode())
    return digest.hexdigest()


def nonempty_count(n: int, where: object) -> int:
    """``n``, refused when 0: an accuracy over no images is 0/0, not a number to report."""
    if n <= 0:
        raise ValueError(f"{printable(str(where))} holds no images: nothing to evaluate")
    return n


def check_labels(labels: np.ndarray, num_classes: int, where: Path) -> None:
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"{where}: labels outside [0, {num_classes}) of the run's model")


def need_root(ctx: Context, what: str) -> Path:
    if ctx.data_root is None:
        raise ValueError(f"this suite needs --data-root DIR: {what}")
    if not ctx.data_root.is_dir():
        raise FileNotFoundError(f"{ctx.data_root} is not a directory ({what})")
    return ctx.data_root


def need_imagenet(ctx: Context) -> None:
    if ctx.num_classes != 1000:
        raise ValueError(f"ImageNet suites need a 1000-class model; this run has {ctx.num_classes} classes")

