"""ImageNet-1k's listing on disk: the train and validation files and their labels
(``read_imagenet``), and the validation set as an evaluation ``FolderSet`` (``read_val_folder``).

Layouts read (``root`` is the ImageNet root):

- ``root/train/<wnid>/*.JPEG`` (class folders, the only train layout distributed);
- ``root/val/<wnid>/*.JPEG`` (class folders), or a flat ``root/val/*.JPEG`` with Kaggle's
  ``LOC_val_solution.csv`` (``ImageId,PredictionString``; the first token of the prediction
  string is the wnid) in ``root`` or up to three folders above it.

Class index = position of the wnid in the sorted list of train folders, the order torchvision's
``ImageFolder`` and every public checkpoint use; with all 1000 folders present it is checked to
be ``fullscale.data.wnids.imagenet_wnids()``.  Entries named like images that are not regular
files (FIFOs, folders, broken links) are left out of the listing and reported in one line.
"""

from __future__ import annotations

import csv
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fullscale.data.folders import IMAGE_SUFFIXES, FolderSet, Preprocess, read_class_folders
from fullscale.data.image_files import list_images, report_skipped
from fullscale.data.wnids import imagenet_wnids
from noisymix_infra.io import printable

__all__ = ["ImageNetFiles", "read_imagenet", "read_val_folder"]


@dataclass(frozen=True)
class ImageNetFiles:
    """One split's files: ``samples`` of (path, label); ``classes`` the wnids by class index."""

    root: Path
    samples: tuple[tuple[Path, int], ...]
    classes: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.samples)

    def listing_sha256(self) -> str:
        """Digest of (relative path, label): changes when a file is added, removed or moved."""
        digest = hashlib.sha256()
        for path, label in self.samples:  # names as the bytes on disk: any name, UTF-8 or not
            digest.update(os.fsencode(path.relative_to(self.root)) + f"\t{label}\n".encode())
        return digest.hexdigest()


def _class_folders(split_dir: Path) -> tuple[dict[str, list[Path]], list[Path]]:
    """({wnid: images}, entries skipped: ``list_images``) of the class folders of ``split_dir``."""
    folders = sorted(p for p in split_dir.iterdir() if p.is_dir())
    listing, skipped = {}, []
    for folder in folders:
        listing[folder.name], odd = list_images(folder, IMAGE_SUFFIXES)
        skipped += odd
    empty = [str(split_dir / name) for name, files in listing.items() if not files]
    if empty:
        raise ValueError(f"empty class folders (no {', '.join(IMAGE_SUFFIXES)} files): "
                         f"{', '.join(printable(e) for e in empty)}")
    return listing, skipped


def _solution_csv(root: Path) -> Path | None:
    for folder in (root, *list(root.parents)[:3]):
        candidate = folder / "LOC_val_solution.csv"
        if candidate.is_file():
            return candidate
    return None


def _read_solution(table: Path) -> dict[str, str]:
    """{ImageId: wnid} of Kaggle's ``LOC_val_solution.csv``; a file that is not such a table (not
    UTF-8, a field over the csv module's limit of 128 KiB: the real fields are < 1 kB, an ImageId
    labelled twice) is one ``ValueError`` naming it."""
    wnid_of: dict[str, str] = {}
    try:
        with open(table, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None or [h.strip() for h in header[:2]] != ["ImageId", "PredictionString"]:
                raise ValueError(f"{printable(table)}: expected the header ImageId,PredictionString, "
                                 f"got {printable(header)}")
            line_of: dict[str, int] = {}
            for row in reader:
                if len(row) >= 2 and row[1].split():
                    image_id = row[0].strip()
                    if image_id in line_of:  # the last row would win without a word: which label is right?
                        raise ValueError(f"{printable(table)} line {reader.line_num}: ImageId {printable(image_id)} "
                                         f"is labelled again (first on line {line_of[image_id]}); "
                                         "keep one row per image")
                    line_of[image_id] = reader.line_num
                    wnid_of[image_id] = row[1].split()[0]
    except (csv.Error, UnicodeDecodeError) as error:
        where = f" line {reader.line_num}" if isinstance(error, csv.Error) else ""
        raise ValueError(f"{printable(table)}{where}: not a readable LOC_val_solution.csv "
                         f"({str(error).splitlines()[0]})") from None
    return wnid_of


def _flat_val(val_dir: Path, root: Path) -> tuple[dict[str, list[Path]], list[Path]]:
    table = _solution_csv(root)
    if table is None:
        raise ValueError(f"{printable(val_dir)} has images but no class folders, and no LOC_val_solution.csv was found "
                         f"in {printable(root)} or above it")
    wnid_of = _read_solution(table)
    listing: dict[str, list[Path]] = {}
    missing = []
    images, skipped = list_images(val_dir, IMAGE_SUFFIXES)
    for path in images:
        wnid = wnid_of.get(path.stem)
        if wnid is None:
            missing.append(path.name)
        else:
            listing.setdefault(wnid, []).append(path)
    if missing:
        raise ValueError(f"{printable(table)}: no label for {len(missing)} images of {printable(val_dir)}, "
                         f"e.g. {printable(missing[:5])}")
    return listing, skipped


def _check_wnids(classes: Sequence[str], where: Path) -> None:
    known = imagenet_wnids()
    unknown = [c for c in classes if c not in set(known)]
    if unknown:
        raise ValueError(f"{printable(where)}: folders {unknown[:5]} are not ImageNet-1k wnids")
    if len(classes) == len(known) and tuple(classes) != known:  # pragma: no cover - sorted() makes them equal
        raise ValueError(f"{printable(where)}: class order differs from the standard ImageNet class index")


def read_imagenet(root: str | Path, split: str) -> ImageNetFiles:
    """The ``split`` ("train" or "val") of the ImageNet root ``root``; labels follow the train folders.

    Errors (one ``ValueError`` each, naming the folders): no split directory, an empty class
    folder, folder names that are not ImageNet wnids, train and val class sets that differ."""
    root = Path(root)
    if split not in ("train", "val"):
        raise ValueError(f"split must be 'train' or 'val', got {split!r}")
    train_dir = root / "train"
    if not train_dir.is_dir():
        raise ValueError(f"{printable(root)} is not an ImageNet root: no {printable(train_dir)} (train/<wnid>/*.JPEG)")
    train, skipped = _class_folders(train_dir)
    if not train:
        raise ValueError(f"{printable(train_dir)} has no class folders (<wnid>/*.JPEG)")
    classes = tuple(sorted(train))
    _check_wnids(classes, train_dir)
    if split == "train":
        listing, split_dir = train, train_dir
    else:
        split_dir = root / "val"
        if not split_dir.is_dir():
            raise ValueError(f"{printable(root)}: no {printable(split_dir)} "
                             "(val/<wnid>/*.JPEG, or val/*.JPEG with LOC_val_solution.csv)")
        listing, skipped = _class_folders(split_dir)
        if not listing:
            listing, skipped = _flat_val(split_dir, root)
        only_train = sorted(set(classes) - set(listing))
        only_val = sorted(set(listing) - set(classes))
        if only_train or only_val:
            raise ValueError(f"train/val class mismatch: {len(only_train)} classes only in {printable(train_dir)} "
                             f"({printable(', '.join(only_train[:5]))}), {len(only_val)} only in "
                             f"{printable(split_dir)} "
                             f"({printable(', '.join(only_val[:5]))})")
    report_skipped(skipped, split_dir)
    index = {wnid: i for i, wnid in enumerate(classes)}
    samples = tuple((path, index[wnid]) for wnid in sorted(listing) for path in listing[wnid])
    return ImageNetFiles(split_dir, samples, classes)


def read_val_folder(root: str | Path, classes: Sequence[str], preprocess: Preprocess | None = None) -> FolderSet:
    """ImageNet's validation images for evaluation, in either layout: class folders
    ``root/<wnid>/*.JPEG`` (``read_class_folders``), or the flat ``root/*.JPEG`` labelled by
    ``LOC_val_solution.csv`` (in ``root`` or up to three folders above); labels index ``classes``."""
    root, preprocess = Path(root), preprocess or Preprocess()
    if not root.is_dir() or any(p.is_dir() for p in root.iterdir()) or not list_images(root, IMAGE_SUFFIXES)[0]:
        return read_class_folders(root, classes, preprocess)
    index = {wnid: i for i, wnid in enumerate(classes)}
    listing, skipped = _flat_val(root, root)
    report_skipped(skipped, root)
    unknown = sorted(set(listing) - set(index))
    if unknown:
        raise ValueError(f"{printable(root)}: wnids {unknown[:5]} of LOC_val_solution.csv are not among the "
                         f"{len(classes)} classes")
    samples = sorted((path, index[wnid]) for wnid, paths in listing.items() for path in paths)
    return FolderSet(root, samples, preprocess)

