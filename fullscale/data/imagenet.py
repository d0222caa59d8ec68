"""ImageNet-1k on disk, streamed: the train/val listing, per-sample random crops decoded at
reduced size in DataLoader workers, a sharded resumable sampler, and bad-file accounting.

Layouts read (``root`` is the ImageNet root):

- ``root/train/<wnid>/*.JPEG`` (class folders, the only train layout distributed);
- ``root/val/<wnid>/*.JPEG`` (class folders), or a flat ``root/val/*.JPEG`` with Kaggle's
  ``LOC_val_solution.csv`` (``ImageId,PredictionString``; the first token of the prediction
  string is the wnid) in ``root`` or up to three folders above it.

Class index = position of the wnid in the sorted list of train folders, the order torchvision's
``ImageFolder`` and every public checkpoint use; with all 1000 folders present it is checked to
be ``fullscale.data.wnids.imagenet_wnids()``.

Train transform (public ``imagenet.py`` of google-research/augmix and erichson/NoisyMix:
``RandomResizedCrop(224)`` then ``RandomHorizontalFlip()``): torchvision's crop-box rule
(``crop_box``: scale 0.08–1 of the area, log-uniform aspect ratio 3/4–4/3, 10 attempts, then the
centre-crop fallback), a bilinear antialiased resize of the box to ``size`` (``resize_crop``), a
flip with probability 1/2.  Unlike torchvision, the randomness of sample ``i`` in epoch ``e`` comes from a
generator seeded by a hash of ``(seed, e, i)`` (``sample_seed``), never from a worker's RNG: an
epoch's crops are the same for any number of workers or ranks, and a run resumed mid-epoch sees
the same crops.

Reduced-size decoding (``decoder="pil-draft"`` / ``"simplejpeg"``): the JPEG is decoded with
DCT scaling by the largest factor (1/2, 1/4, 1/8) that still leaves the crop box at least
``DRAFT_MARGIN * size`` pixels on each side, and the same box, mapped into the reduced image
(fractional coordinates), is resized to ``size``.  The crop box is drawn on the full-size
dimensions first, so the draws are identical for every decoder.  ``tests/data/test_imagenet.py``
checks the crops stay >= 35 dB PSNR of full-size decoding on real photos.

Bad input: a file that cannot be decoded (unreadable, truncated, over the pixel limit checked
from its header: ``fullscale.data.image_files``) becomes a hole in its batch (the batch is
shorter) and is reported in ``Batch.bad``; ``BadFiles`` counts them and stops the run with the
list when they exceed ``max_bad_fraction`` of the listing.  Entries named like images that are
not regular files (FIFOs, folders, broken links) are left out of the listing and reported in one
line.  Grayscale, CMYK and PNG-inside-``.JPEG`` files are converted to RGB (PIL
``convert("RGB")``, as ``ImageFolder``).

What is bad does not depend on the decoder: PIL decides, as in the public code.  libjpeg reports
some damage only as a warning (a scan cut short but closed by an end marker: PIL decodes it,
grey below the cut, and Pillow does not expose the warning); simplejpeg, run strict, raises on
such a warning, and the file is then decoded by PIL on the same crop box.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import math
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset, Sampler

from fullscale.data.folders import IMAGE_SUFFIXES, FolderSet, Preprocess, decode, read_class_folders
from fullscale.data.image_files import check_pixels, list_images, open_image, read_regular, report_skipped
from fullscale.data.wnids import imagenet_wnids
from infra.io import printable
from infra.workers import worker_init_exiting_with_this_process

__all__ = ["DECODERS", "BadFiles", "Batch", "ImageNetFiles", "RunSampler", "StreamingImageNet", "TrainCrop",
           "crop_box", "decode_train", "read_imagenet", "read_val_folder", "resize_crop", "sample_seed",
           "train_loader", "val_loader"]

DECODERS = ("pil", "pil-draft", "simplejpeg")


# ---- listing ------------------------------------------------------------------------------------

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


# ---- per-sample randomness and the crop box -----------------------------------------------------

def sample_seed(seed: int, epoch: int, index: int) -> int:
    """A 63-bit seed hashed from (run seed, epoch, sample index): the sample's own random stream."""
    digest = hashlib.blake2b(f"{int(seed)}/{int(epoch)}/{int(index)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def _uniform(g: torch.Generator, low: float, high: float) -> float:
    return float(torch.empty(1, dtype=torch.float64).uniform_(low, high, generator=g))


def crop_box(width: int, height: int, scale: tuple[float, float], ratio: tuple[float, float],
             generator: torch.Generator) -> tuple[int, int, int, int]:
    """(top, left, h, w) of torchvision's ``RandomResizedCrop.get_params``: up to 10 draws of a
    target area fraction in ``scale`` and a log-uniform aspect ratio in ``ratio``; the first box
    that fits is placed uniformly; otherwise a centre crop clamped to ``ratio``."""
    area = width * height
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        target = area * _uniform(generator, scale[0], scale[1])
        aspect = math.exp(_uniform(generator, log_lo, log_hi))
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = int(torch.randint(0, height - h + 1, (1,), generator=generator))
            left = int(torch.randint(0, width - w + 1, (1,), generator=generator))
            return top, left, h, w
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, round(width / min(ratio))
    elif in_ratio > max(ratio):
        w, h = round(height * max(ratio)), height
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


# ---- decoding -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrainCrop:
    """The train transform: ``size`` output side; torchvision's ``scale``/``ratio``; ``flip`` prob;
    ``decoder``: "pil" (full size), "pil-draft" (PIL DCT-scaled), "simplejpeg" (libjpeg-turbo,
    DCT-scaled; non-JPEG and CMYK files fall back to PIL), "auto": simplejpeg where installed (the
    optional extra ``imagenet``; ~1.5x faster per core than PIL, benchmarks/RESULTS.md), else
    pil-draft.  Pillow's wheels decode with libjpeg-turbo too: the two gave identical crops on
    the bundled photos, so "auto" does not make a run depend on what is installed."""

    size: int = 224
    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip: float = 0.5
    decoder: str = "auto"

    def __post_init__(self) -> None:
        if self.decoder == "auto":
            has_simplejpeg = importlib.util.find_spec("simplejpeg") is not None
            object.__setattr__(self, "decoder", "simplejpeg" if has_simplejpeg else "pil-draft")
        if self.size < 1:
            raise ValueError(f"crop size must be >= 1, got {self.size}")
        if not (0 < self.scale[0] <= self.scale[1] <= 1) or not (0 < self.ratio[0] <= self.ratio[1]):
            raise ValueError(f"need 0 < scale[0] <= scale[1] <= 1 and 0 < ratio[0] <= ratio[1], "
                             f"got {self.scale}, {self.ratio}")
        if self.decoder not in DECODERS:
            raise ValueError(f"unknown decoder {self.decoder!r}; known: auto, {', '.join(DECODERS)}")
        if self.decoder == "simplejpeg":
            _simplejpeg()


def _simplejpeg() -> Any:
    try:
        import simplejpeg
    except ImportError:
        raise ValueError("decoder 'simplejpeg' needs the optional extra: pip install simplejpeg") from None
    return simplejpeg


# The reduced box must keep this many times the output side: at 1.0 (never upsample) the DCT-scaled
# decode loses up to 1.5 dB against the 35 dB bound on the bundled photos; at 1.25 the worst of
# 60 crops is 36.9 dB (1.5: 42.5 dB, but half as many images decode reduced).
DRAFT_MARGIN = 1.25


def _draft_factor(box_h: int, box_w: int, size: int) -> int:
    """The largest JPEG DCT scale 1/s (s in 1, 2, 4, 8) keeping the box >= DRAFT_MARGIN * ``size``."""
    need = DRAFT_MARGIN * size
    s = 8
    while s > 1 and (box_h / s < need or box_w / s < need):
        s //= 2
    return s


def _pil_reduced(path: Path, box: Any, size: int, draft: bool) -> tuple[np.ndarray, float, tuple]:
    """(RGB uint8 (H', W', 3), factor, crop box): the file decoded at 1/s size when ``draft`` (JPEG
    only).  ``box`` maps (width, height) -> (top, left, h, w); it is called once the header is read,
    so the box is drawn on the full-size dimensions whatever the decoder.  ``open_image`` refuses
    what is not a regular file or is over the pixel limit before anything is decoded."""
    with open_image(path) as image:
        width, height = image.size
        top, left, h, w = box(width, height)
        factor = 1.0
        if draft and image.format == "JPEG":
            s = _draft_factor(h, w, size)
            # DCT scaling maps full-size pixel x to x / s exactly (the ceil of the size only adds
            # an edge pixel); draft() returns None when it cannot scale (e.g. a progressive file).
            if s > 1 and image.draft("RGB", (width // s, height // s)) is not None:
                factor = 1.0 / s
        array = np.array(image.convert("RGB"))  # writable (torch.from_numpy warns on read-only)
    return array, factor, (top, left, h, w)


def _simplejpeg_reduced(path: Path, box: Any, size: int) -> tuple[np.ndarray, float, tuple]:
    sj = _simplejpeg()
    data = read_regular(path)
    try:
        height, width, colorspace, _ = sj.decode_jpeg_header(data)
    except ValueError:
        return _pil_reduced(path, box, size, draft=True)  # PNG inside .JPEG, or damaged: PIL decides
    if colorspace not in ("RGB", "YCbCr", "Gray"):  # CMYK/YCCK: PIL converts as ImageFolder does
        return _pil_reduced(path, box, size, draft=True)
    check_pixels(path, width, height)  # the limit of every decoder, from the same header
    region = box(width, height)
    # Only the power-of-two factors of PIL's draft: libjpeg-turbo also offers n/8, but its
    # non-SIMD scaled IDCTs for those were measured slower than decoding at full size.
    s = _draft_factor(region[2], region[3], size)
    try:
        array = sj.decode_jpeg(data, colorspace="RGB", min_width=math.ceil(width / s),
                               min_height=math.ceil(height / s), strict=True)
    except ValueError:
        # damage libjpeg may only warn about: PIL decides (the module's docstring), on the box drawn
        return _pil_reduced(path, lambda *_: region, size, draft=True)
    # libjpeg-turbo's 1/s output is ceil(W / s) wide and maps pixel x to x / s
    factor = 1.0 / s if array.shape[1] == math.ceil(width / s) else array.shape[1] / width
    return array, factor, region


def resize_crop(array: np.ndarray, box: tuple[int, int, int, int], factor: float, size: int) -> torch.Tensor:
    """uint8 (3, size, size): the full-size ``box`` (top, left, h, w) of an image decoded at
    ``factor`` x full size, resized bilinearly with antialiasing.  At full size: torch's
    ``interpolate(antialias=True)`` (made to agree with PIL's ``BILINEAR`` resize; on uint8 ~3x
    faster than going through PIL).  On a reduced image the box has fractional coordinates, which
    only PIL's ``resize(box=...)`` takes (rounding them to whole pixels costs ~5 dB)."""
    top, left, h, w = box
    if factor != 1.0:
        region = (left * factor, top * factor, (left + w) * factor, (top + h) * factor)
        out = np.asarray(Image.fromarray(array).resize((size, size), Image.Resampling.BILINEAR, box=region))
        return torch.from_numpy(out.copy()).permute(2, 0, 1)
    region = torch.from_numpy(array[top:top + h, left:left + w]).permute(2, 0, 1)[None]
    return F.interpolate(region, size=(size, size), mode="bilinear", align_corners=False, antialias=True)[0]


def decode_train(path: Path, crop: TrainCrop, seed: int) -> torch.Tensor:
    """uint8 (3, size, size): the random resized crop (then flip) of one file, drawn from ``seed``.

    Raises ValueError naming the file when it cannot be decoded (``image_files.BadImage``)."""
    g = torch.Generator().manual_seed(seed)

    def box(width: int, height: int) -> tuple[int, int, int, int]:
        return crop_box(width, height, crop.scale, crop.ratio, g)

    if crop.decoder == "simplejpeg":
        array, factor, region = _simplejpeg_reduced(path, box, crop.size)
    else:
        array, factor, region = _pil_reduced(path, box, crop.size, crop.decoder == "pil-draft")
    out = resize_crop(array, region, factor, crop.size)
    if float(torch.rand((), generator=g)) < crop.flip:
        out = out.flip(-1)
    return out.contiguous()


# ---- datasets, sampler, batches -----------------------------------------------------------------

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
