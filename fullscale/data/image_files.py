"""Image files as every reader takes them (ImageNet train/val, class folders, `corrupt --dataset
TREE`): regular files only, the decoded size bounded from the header, every failure one
``ValueError`` naming the file.

- Listing (``list_images``): an entry named like an image that is not a regular file (a FIFO,
  which would block ``open`` forever; a folder named ``x.JPEG``; a broken or looping link) is
  skipped, and the reader reports the skipped entries in one line (``report_skipped``), as bad
  files are reported.  A link to a regular file is a regular file.
- Opening (``open_image``, ``read_regular``): the descriptor is checked to be a regular file
  before a byte is read, so a FIFO that appears after the listing cannot block either.
- Decoded size: ``MAX_IMAGE_PIXELS`` is checked on the header's width x height before anything
  is decoded, for every decoder (a 12000 x 12000 1-bit PNG is 17.5 kB on disk and 1.8 GB once
  decoded and converted).  Over it, the file is a bad file.
- Truncated files are bad: PIL's ``ImageFile.LOAD_TRUNCATED_IMAGES`` stays off (nothing here
  sets it; tests/data/test_imagenet.py checks it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
from PIL import Image, UnidentifiedImageError

from noisymix_infra.io import printable

__all__ = [
    "MAX_IMAGE_PIXELS",
    "BadImage",
    "check_pixels",
    "file_sha256",
    "list_images",
    "open_image",
    "read_regular",
    "report_skipped",
    "to_rgb",
]

MAX_IMAGE_PIXELS = 89_478_485
"""Width x height above which a file is a bad file, read from its header before decoding: PIL's
own warning threshold (``PIL.Image.MAX_IMAGE_PIXELS``, 256 MiB of 24-bit pixels, ~270 MB once
decoded to RGB).  ImageNet's largest photographs are under a third of it; it bounds what one
DataLoader worker can be made to allocate by a small file."""

# what PIL raises on a file it cannot read: damaged data (OSError, SyntaxError), an unknown
# format (UnidentifiedImageError), bad fields (ValueError, struct errors arrive as SyntaxError),
# more than twice its own pixel limit at open (DecompressionBombError)
_DECODE_ERRORS = (OSError, UnidentifiedImageError, ValueError, SyntaxError, Image.DecompressionBombError)


class BadImage(ValueError):
    """A file that is not a usable image; the message names it (printable, one line)."""


def _detail(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def list_images(folder: Path, suffixes: Iterable[str]) -> tuple[list[Path], list[Path]]:
    """(images, skipped) of ``folder``, sorted: the regular files (links followed) whose suffix is
    one of ``suffixes`` (lower case), and the other entries with such a suffix."""
    wanted = tuple(suffixes)
    images, skipped = [], []
    for path in sorted(folder.iterdir()):
        if path.suffix.lower() not in wanted:
            continue
        try:
            regular = stat.S_ISREG(os.stat(path).st_mode)
        except OSError:  # a broken or looping link, or gone since the listing
            regular = False
        (images if regular else skipped).append(path)
    return images, skipped


def report_skipped(skipped: Sequence[Path], where: Path) -> None:
    """One line on stderr for the entries ``list_images`` skipped under ``where`` (none: nothing)."""
    if skipped:
        print(f"warning: {len(skipped)} entries of {printable(where)} named like images are not regular files "
              f"(FIFOs, folders, broken or looping links) and are skipped, e.g. {printable(skipped[0])}",
              file=sys.stderr)


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading, refused unless it is a regular file.  O_NONBLOCK makes opening
    a FIFO return at once (it has no effect on a regular file), so the check comes first."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise BadImage(f"{printable(path)}: cannot be read ({error.strerror or _detail(error)})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadImage(f"{printable(path)}: not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (``BadImage`` for anything else)."""
    with _open_regular(path) as handle:
        return handle.read()


def file_sha256(path: Path) -> str:
    """The SHA-256 of the regular file ``path``, read in 1 MiB blocks (``BadImage`` for anything else)."""
    digest = hashlib.sha256()
    with _open_regular(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_pixels(path: Path, width: int, height: int) -> None:
    """``BadImage`` when a ``width`` x ``height`` header is over ``MAX_IMAGE_PIXELS``."""
    if width * height > MAX_IMAGE_PIXELS:
        raise BadImage(f"{printable(path)}: {width} x {height} = {width * height} pixels, over the limit of "
                       f"{MAX_IMAGE_PIXELS} (MAX_IMAGE_PIXELS in fullscale.data.image_files): a decompression "
                       "bomb, or far larger than any photograph of the data sets")


def to_rgb(image: Image.Image, path: Path) -> Image.Image:
    """``image.convert("RGB")`` with 16-bit pixels scaled to 8 bits: PIL's convert clips a 16-bit
    greyscale PNG (mode ``I;16``) at 255, so every pixel above 255 of 65535 became white (issue 41).
    32-bit integer and float images (modes ``I``, ``F``) have no scale to assume: a ``BadImage``."""
    mode = image.mode
    if mode.startswith("I;16"):
        wide = np.asarray(image, dtype=np.uint16).astype(np.uint32)
        return Image.fromarray(((wide * 255 + 32767) // 65535).astype(np.uint8), "L").convert("RGB")
    if mode in ("I", "F"):
        raise BadImage(f"{printable(path)}: a {mode} image ({'32-bit integer' if mode == 'I' else 'float'} pixels) "
                       "has no 8-bit scale to assume; save it as an 8- or 16-bit image")
    return image.convert("RGB")


@contextlib.contextmanager
def open_image(path: Path) -> Iterator[Image.Image]:
    """The PIL image of the regular file ``path``, its header read and its size checked
    (``check_pixels``), nothing decoded yet.  Any failure, opening it or decoding it inside the
    ``with`` block, is a ``BadImage`` naming the file."""
    with _open_regular(path) as handle:
        try:
            with warnings.catch_warnings():
                # PIL warns from its pixel limit up to twice it; check_pixels decides instead
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                image = Image.open(handle)
            with image:
                check_pixels(path, *image.size)
                yield image
        except BadImage:
            raise
        except _DECODE_ERRORS as error:
            raise BadImage(f"{printable(path)}: not a decodable image ({_detail(error)})") from None
