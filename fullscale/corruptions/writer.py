"""Write -C / -P sets in the standard layouts, chunked, atomically and resumably.

* ``.npy`` sets (CIFAR-10-C / CIFAR-10-P layout): ``<corruption>.npy`` uint8 (5 N, H, W, 3),
  severities 1..5 in order, and ``labels.npy`` uint8 (5 N,) (the clean labels repeated 5 times,
  as CIFAR-10-C ships them; int64 when there are more than 256 classes);
  ``<perturbation>.npy`` uint8 (N, frames, H, W, 3) and ``labels.npy`` (N,).  Each array is
  streamed into a temporary file chunk by chunk and renamed into place when complete, so a rerun
  skips finished files and memory stays at one chunk.
* ImageNet-C folders: ``<corruption>/<severity>/<wnid>/<file>.JPEG`` (JPEG quality 85, as
  ``make_imagenet_c.py`` saves them) from a class-folder tree, after Resize(256) and
  CenterCrop(224); a finished (corruption, severity) folder gets a ``.complete`` marker.  The
  tree's files are taken and opened as ``fullscale.data.image_files`` says (regular files only,
  the pixel limit checked from the header); ``check_tree`` decodes every image once before
  anything is written, so a bad one is refused with the count of them all, not met mid-set, and
  hashes the tree's content (names, sizes, bytes) for the manifest.

Every chunk draws from its own generator, seeded from (seed, name, severity, chunk index), so
the result does not depend on which corruptions are made, in which order, or on resuming.
"""

from __future__ import annotations

import hashlib
import io
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from fullscale.corruptions.frost import check_frost_photographs, find_frost_dir
from fullscale.corruptions.perturbations import FRAMES, PERTURBATIONS, perturbation_sequence
from fullscale.corruptions.registry import CORRUPTIONS, SPECS, corrupt
from fullscale.data.image_files import file_sha256, list_images, open_image, report_skipped, to_rgb
from noisymix.random import generator_for
from noisymix_infra.io import atomic_write, printable, save_npy, write_bytes, write_json
from noisymix_infra.progress import progress

__all__ = ["IMAGE_SUFFIXES", "check_names", "check_tree", "chunk_generator", "default_names", "write_imagenet_c",
           "write_npy_set"]

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png", ".bmp", ".ppm", ".webp")


def chunk_generator(seed: int, name: str, severity: int, chunk: int, device: torch.device | str) -> torch.Generator:
    """The generator of one chunk: a stable hash of (seed, name, severity, chunk index)."""
    return generator_for(zlib.crc32(f"{seed}:{name}:{severity}:{chunk}".encode()), device)


def default_names(kind: str, frost_dir: str | None) -> tuple[list[str], str | None]:
    """The 15 corruptions (or the 20 sets of the released CIFAR-10-P); frost is left out, with the reason returned,
    when no frost photographs can be found (asking for frost by name raises instead)."""
    if kind == "p":
        return list(PERTURBATIONS), None
    try:
        find_frost_dir(frost_dir)
    except FileNotFoundError as error:
        return [n for n in CORRUPTIONS if n != "frost"], f"frost skipped: {error}"
    return list(CORRUPTIONS), None


def check_names(kind: str, names: list[str], frost_dir: str | None = None) -> None:
    table = SPECS if kind == "c" else PERTURBATIONS
    unknown = [n for n in names if n not in table]
    if unknown:
        raise ValueError(f"unknown {'corruptions' if kind == 'c' else 'perturbations'} {unknown}; "
                         f"available: {', '.join(table)}")
    if kind == "c" and "frost" in names:
        check_frost_photographs(frost_dir)  # fail before any work: no folder, or a photograph that is no image


def _complete(path: Path, shape: tuple[int, ...]) -> bool:
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return False
    return array.dtype == np.uint8 and array.shape == shape


def write_npy_set(images: torch.Tensor, labels: torch.Tensor, kind: str, out: str | Path, names: list[str], *,
                  severities: tuple[int, ...] = (1, 2, 3, 4, 5), seed: int = 0, chunk: int = 1000,
                  params: str = "cifar", frost_dir: str | None = None, device: str = "cpu",
                  pixel_scale: float = 1.0) -> list[str]:
    """Write the ``.npy`` set of ``images`` (N, 3, H, W) uint8; returns the names written now.
    ``pixel_scale``: the parameter rows' lengths in pixels scaled for images of another side than
    the table's (``noisymix corrupt --size``)."""
    check_names(kind, names, frost_dir)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    n, _, h, w = images.shape
    reps = len(severities) if kind == "c" else 1
    label_dtype = np.uint8 if not labels.numel() or int(labels.max()) < 256 else np.int64
    save_npy(out / "labels.npy", np.tile(labels.numpy(), reps).astype(label_dtype))
    written = []
    for name in progress(names, desc=f"corrupt -{kind}", unit="set"):
        target = out / f"{name}.npy"
        shape = (reps * n, h, w, 3) if kind == "c" else (n, FRAMES.get(name, 31), h, w, 3)
        if target.exists() and _complete(target, shape):
            continue
        with atomic_write(target) as handle:
            np.lib.format.write_array_header_1_0(handle, {"descr": "|u1", "fortran_order": False, "shape": shape})
            for block in _blocks(images, kind, name, severities, seed, chunk, params, frost_dir, device, pixel_scale):
                handle.write(np.ascontiguousarray(block).tobytes())
        written.append(name)
    return written


def _blocks(images: torch.Tensor, kind: str, name: str, severities: tuple[int, ...], seed: int, chunk: int,
            params: str, frost_dir: str | None, device: str, pixel_scale: float = 1.0) -> Iterator[np.ndarray]:
    for severity in severities if kind == "c" else (0,):
        for index, start in enumerate(range(0, len(images), chunk)):
            batch = images[start:start + chunk].to(device)
            g = chunk_generator(seed, name, severity, index, device)
            if kind == "c":
                y = corrupt(batch, name, severity, generator=g, params=params, frost_dir=frost_dir,
                            pixel_scale=pixel_scale)
                yield y.permute(0, 2, 3, 1).cpu().numpy()
            else:
                y = perturbation_sequence(batch, name, generator=g, params=params, pixel_scale=pixel_scale)
                yield y.permute(0, 1, 3, 4, 2).cpu().numpy()


def _tree(root: Path) -> tuple[list[tuple[str, Path]], list[Path]]:
    """((wnid, image) of the class-folder tree ``root``, the entries skipped: ``list_images``)."""
    if not root.is_dir():
        raise FileNotFoundError(f"{printable(root)} is not a directory")
    files, skipped = [], []
    for cls in sorted(p for p in root.iterdir() if p.is_dir()):
        images, odd = list_images(cls, IMAGE_SUFFIXES)
        files += [(cls.name, f) for f in images]
        skipped += odd
    if not files:
        raise FileNotFoundError(f"{printable(root)}: no class folders with images ({', '.join(IMAGE_SUFFIXES)})")
    return files, skipped


def check_tree(root: str | Path) -> tuple[int, str]:
    """(the number of images of the class-folder tree ``root`` that ``write_imagenet_c`` reads, a
    SHA-256 of their content), each image decoded once as it will be (a progress bar): a bad one
    (damaged, empty, over the pixel limit) is one ``ValueError`` counting them all and naming them,
    before anything is written (an ImageNet-C set needs every image of its clean set).  Entries
    that are not regular files are reported in one line and left out.

    The digest binds every image's relative name, size and bytes, as the CIFAR batches are bound
    (``source_sha256`` of the manifest): a tree changed in place (an image replaced, added,
    removed or renamed) is another source, and a rerun into the old set is refused instead of
    mixing old and new images.  The bytes are read anyway to be decoded: hashing them costs little."""
    root = Path(root)
    files, skipped = _tree(root)
    report_skipped(skipped, root)
    bad = []
    digest = hashlib.sha256()
    for _, path in progress(files, desc="check images", unit="image"):
        try:
            _load_224(path)
            size, sha = path.stat().st_size, file_sha256(path)
        except (ValueError, OSError) as error:
            bad.append((path, str(error) if isinstance(error, ValueError) else f"{printable(path)}: {error.strerror}"))
            continue
        digest.update(os.fsencode(path.relative_to(root)) + f"\0{size}\0{sha}\n".encode())
    if bad:
        others = ", ".join(printable(p) for p, _ in bad[1:5]) + (" ..." if len(bad) > 5 else "")
        raise ValueError(f"{len(bad)} of {len(files)} images of {printable(root)} cannot be used (remove or replace "
                         f"them: ImageNet-C needs every image): {bad[0][1]}" + (f"; also {others}" if others else ""))
    return len(files), digest.hexdigest()


def _load_224(path: Path) -> np.ndarray:
    """torchvision Resize(256) + CenterCrop(224) on the PIL image, as make_imagenet_c.py; a
    ``ValueError`` naming the file when it cannot be used (``open_image``)."""
    with open_image(path) as img:
        img = to_rgb(img, path)  # 16-bit pixels scaled, not clipped (issue 41)
        w, h = img.size
        short, long = (w, h) if w <= h else (h, w)
        size_long = int(256 * long / short)
        img = img.resize((256, size_long) if w <= h else (size_long, 256), Image.BILINEAR)
        w, h = img.size
        top, left = round((h - 224) / 2), round((w - 224) / 2)
        return np.asarray(img.crop((left, top, left + 224, top + 224)))


def write_imagenet_c(root: str | Path, out: str | Path, names: list[str], *,
                     severities: tuple[int, ...] = (1, 2, 3, 4, 5), seed: int = 0, chunk: int = 100,
                     frost_dir: str | None = None, device: str = "cpu") -> int:
    """ImageNet-C from a class-folder tree ``root/<wnid>/*.JPEG``; returns the image count."""
    check_names("c", names, frost_dir)
    files, _ = _tree(Path(root))  # the skipped entries were reported by check_tree
    out = Path(out)
    jobs = [(name, s) for name in names for s in severities]
    for name, severity in progress(jobs, desc="corrupt imagenet-c", unit="set"):
        folder = out / name / str(severity)
        if (folder / ".complete").exists():
            continue
        for index, start in enumerate(range(0, len(files), chunk)):
            part = files[start:start + chunk]
            targets = [folder / wnid / path.name for wnid, path in part]
            if all(t.exists() for t in targets):
                continue
            batch = torch.from_numpy(np.stack([_load_224(p) for _, p in part])).permute(0, 3, 1, 2).to(device)
            g = chunk_generator(seed, name, severity, index, device)
            y = corrupt(batch, name, severity, generator=g, params="imagenet", frost_dir=frost_dir)
            for target, img in zip(targets, y.permute(0, 2, 3, 1).cpu().numpy(), strict=True):
                write_bytes(target, _jpeg_bytes(img))
        write_json(folder / ".complete", {"images": len(files), "seed": seed, "chunk": chunk})
    return len(files)


def _jpeg_bytes(img: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(img).save(buffer, "JPEG", quality=85, optimize=True)
    return buffer.getvalue()
