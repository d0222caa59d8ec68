"""ImageNet-style class folders: ImageNet val and ImageNet-R (``<root>/<wnid>/*.JPEG``) and
ImageNet-C (``<root>/<corruption>/<severity>/<wnid>/*.JPEG``).

Images are decoded with PIL in DataLoader workers and preprocessed as the public evaluations do
(ImageNet-R ``eval.py``, AugMix ``imagenet.py``): resize the shorter side to 256 (bilinear,
torchvision's size rule), centre crop 224 (torchvision's rounding, zero padding if smaller).
Batches are uint8 (B, 3, 224, 224); the model normalises.  Labels are the position of the
folder's wnid in the given class list (so a missing class folder never shifts the others).

Files are taken and opened as ``fullscale.data.image_files`` says (regular files only, entries
skipped reported in one line, the pixel limit checked from the header).  A file that cannot be
decoded ends the batches with a ``ValueError`` naming it, raised in this process whatever the
number of workers (an evaluation over a test set must not quietly drop an image).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, default_collate

from fullscale.data.image_files import list_images, open_image, report_skipped, to_rgb
from noisymix_infra.io import printable
from noisymix_infra.workers import worker_init_exiting_with_this_process

__all__ = ["IMAGE_SUFFIXES", "FolderSet", "Preprocess", "decode", "read_class_folders"]

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png")


@dataclass(frozen=True)
class Preprocess:
    """``resize``: shorter side in pixels (0: keep); ``crop``: centre crop side; ``exact``: resize
    to ``resize`` x ``resize`` whatever the aspect (torchvision's ``Resize([s, s])``, RobustBench's
    ``Res224`` for its corruption sets) instead of the shorter side."""

    resize: int = 256
    crop: int = 224
    exact: bool = False

    def __post_init__(self) -> None:
        if self.resize < 0 or self.crop < 1:
            raise ValueError(f"need resize >= 0 and crop >= 1, got {self.resize}, {self.crop}")


def decode(path: Path, preprocess: Preprocess) -> torch.Tensor:
    """One image file -> uint8 (3, crop, crop); a ``ValueError`` naming the file when it cannot be
    used (``fullscale.data.image_files.open_image``)."""
    with open_image(path) as image:
        image = to_rgb(image, path)  # 16-bit pixels scaled, not clipped
        if preprocess.resize and preprocess.exact:
            image = image.resize((preprocess.resize, preprocess.resize), Image.Resampling.BILINEAR)
        elif preprocess.resize:
            w, h = image.size
            short, long = (w, h) if w <= h else (h, w)
            new_short, new_long = preprocess.resize, int(preprocess.resize * long / short)
            size = (new_short, new_long) if w <= h else (new_long, new_short)
            image = image.resize(size, Image.Resampling.BILINEAR)
        array = np.asarray(image)
    c = preprocess.crop
    h, w = array.shape[:2]
    if h < c or w < c:  # torchvision pads symmetrically with zeros before cropping
        top, left = max(c - h, 0) // 2, max(c - w, 0) // 2
        array = np.pad(array, ((top, max(c - h, 0) - top), (left, max(c - w, 0) - left), (0, 0)))
        h, w = array.shape[:2]
    top, left = round((h - c) / 2.0), round((w - c) / 2.0)
    return torch.from_numpy(array[top:top + c, left:left + c].copy()).permute(2, 0, 1)


class FolderSet(Dataset):
    """(path, label) samples of class folders; items are (uint8 (3, crop, crop), label)."""

    def __init__(self, root: Path, samples: Sequence[tuple[Path, int]], preprocess: Preprocess) -> None:
        self.root, self.samples, self.preprocess = root, list(samples), preprocess

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path, label = self.samples[index]
        return decode(path, self.preprocess), label

    @property
    def labels(self) -> np.ndarray:
        return np.array([label for _, label in self.samples], dtype=np.int64)

    def listing_sha256(self) -> str:
        """A digest of the file listing (relative path, size, label), cheap for 50,000 JPEGs: it
        changes when a file is added, removed, moved or resized.  Names are hashed as the bytes
        on disk (a name that is not UTF-8 is a name like any other)."""
        digest = hashlib.sha256()
        for path, label in self.samples:
            name = os.fsencode(path.relative_to(self.root))
            digest.update(name + f"\t{path.stat().st_size}\t{label}\n".encode())
        return digest.hexdigest()

    def batches(self, batch_size: int, workers: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """uint8 (B, 3, crop, crop) and long (B,) batches in order, decoded by ``workers`` processes.
        A file that cannot be decoded is a ``ValueError`` naming it, raised here: a worker passes
        the message back with its batch (an error raised in a worker would reach this process as
        "Caught ValueError in DataLoader worker process 0.", the file named only further down)."""
        loader = DataLoader(_Decoded(self), batch_size=batch_size, shuffle=False, num_workers=workers,
                            collate_fn=_collate_or_error, pin_memory=torch.cuda.is_available(),
                            persistent_workers=False,
                            worker_init_fn=worker_init_exiting_with_this_process() if workers else None)
        for images, labels, error in loader:
            if error is not None:
                raise ValueError(error)
            yield images, labels


class _Decoded(Dataset):
    """Items (image, label, None), or (None, label, message) for a file that cannot be decoded."""

    def __init__(self, data: FolderSet) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> tuple[torch.Tensor | None, int, str | None]:
        path, label = self.data.samples[index]
        try:
            return decode(path, self.data.preprocess), label, None
        except ValueError as error:
            return None, label, str(error)


def _collate_or_error(items: list[tuple[Any, int, str | None]]) -> tuple[Any, Any, str | None]:
    errors = [e for _, _, e in items if e is not None]
    if errors:
        return None, None, errors[0]
    images, labels = default_collate([(x, y) for x, y, _ in items])
    return images, labels, None


def read_class_folders(root: str | Path, classes: Sequence[str], preprocess: Preprocess = Preprocess(),
                       ) -> FolderSet:
    """Class folders ``root/<wnid>/<image>``; the label of ``<wnid>`` is ``classes.index(wnid)``.

    A folder that is not one of ``classes``, a root without class folders and a class folder
    without images are errors naming the path."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{printable(root)} is not a directory of class folders (<wnid>/*.JPEG)")
    index = {wnid: i for i, wnid in enumerate(classes)}
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    if not folders:
        raise FileNotFoundError(f"{printable(root)} has no class folders (<wnid>/*.JPEG)")
    unknown = [p.name for p in folders if p.name not in index]
    if unknown:
        raise ValueError(f"{printable(root)}: folders {unknown[:5]} are not among the {len(classes)} expected wnids")
    samples, skipped = [], []
    for folder in folders:
        files, odd = list_images(folder, IMAGE_SUFFIXES)
        skipped += odd
        if not files:
            raise FileNotFoundError(f"{printable(folder)} has no images ({', '.join(IMAGE_SUFFIXES)})")
        samples += [(f, index[folder.name]) for f in files]
    report_skipped(skipped, root)
    return FolderSet(root, samples, preprocess)
