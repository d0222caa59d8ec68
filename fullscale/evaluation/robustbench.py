"""RobustBench's corruption protocol (``--protocol robustbench``), so that our number is the
leaderboard's.  Its definitions, from RobustBench's ``robustbench/data.py`` and ``eval.py``:

* ImageNet-C: in every ``<corruption>/<severity>`` folder only the 5,000 images listed in
  ``robustbench/helper_files/imagenet_test_image_ids.txt`` (``<wnid>/<file>`` per line; shipped
  with the robustbench package, not with ours: give its path as ``--image-list``), preprocessed
  ``Res224``: resized to 224 x 224 (``eval.py`` since April 2023: "for corruptions we use only
  resizing to 224x224"; on ImageNet-C's 224 x 224 files the identity), float32;
* ImageNet clean: the same 5,000 images of the validation set, ``Res256Crop224`` (resize the
  shorter side to 256, centre crop 224: the model zoo's ``preprocessing`` of the ResNet-50 entries);
* CIFAR-10-C / CIFAR-100-C: all 10,000 images x 15 corruptions x 5 severities, no extras, float32;
* the number: the mean accuracy over the 15 x 5 (corruption, severity) cells.

Where ours differ: ImageNet-C on all 50,000 images per set, resized to 256 and centre cropped to
224 (AugMix's ``test_c``: a 1.14x zoom of the stored 224 x 224 images); the four extra
corruptions evaluated (reported apart); bf16 autocast on CUDA.  Labels: RobustBench indexes the
class folders present, which on the full set is our wnid order.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from fullscale.data import FolderSet, Preprocess
from noisymix_infra.io import printable

__all__ = ["RES224", "RES256_CROP224", "SUITES", "check_protocol", "listed_images", "read_image_list",
           "robustbench_summary"]

#: the suites RobustBench's corruption leaderboards define (clean: CIFAR in memory, ImageNet listed)
SUITES = ("clean", "cifar10-c", "cifar100-c", "imagenet-c")

#: RobustBench's ``Res224`` (its corruption sets) and ``Res256Crop224`` (ImageNet clean)
RES224 = Preprocess(224, 224, exact=True)
RES256_CROP224 = Preprocess(256, 224)
_LINE = re.compile(r"n\d{8}/[^/\\]+")


def check_protocol(suite: str, protocol: str, image_list: str | None, imagenet: bool) -> None:
    """Before any model is loaded: RobustBench's protocol is for its suites, and on ImageNet needs
    the list (one line each)."""
    if protocol != "robustbench":
        if image_list:  # ignored otherwise: every image would be scored and the list recorded nowhere (issue 48)
            raise ValueError("--image-list is for --protocol robustbench (its 5,000 ImageNet images); without it "
                             "every image is scored: add --protocol robustbench or drop --image-list")
        return
    if suite not in SUITES:
        raise ValueError(f"--protocol robustbench is defined for {', '.join(SUITES)}; not for --suite {suite}")
    if imagenet:
        read_image_list(image_list)
    elif image_list:
        raise ValueError(f"--image-list names ImageNet images; --suite {suite} here scores all of its images "
                         "(RobustBench's protocol lists none): drop --image-list")


def read_image_list(path: str | Path | None) -> list[str]:
    """The ``<wnid>/<file>`` lines of RobustBench's image list (one line each, in its order)."""
    if not path:
        raise ValueError("--protocol robustbench on ImageNet needs --image-list FILE: robustbench's "
                         "robustbench/helper_files/imagenet_test_image_ids.txt (5,000 lines <wnid>/<file>)")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--image-list {printable(str(path))} not found")
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError:
        raise ValueError(f"--image-list {printable(str(path))}: not UTF-8 text") from None
    bad = [line for line in lines if not _LINE.fullmatch(line)]
    if bad or not lines:
        raise ValueError(f"--image-list {printable(str(path))}: expected lines <wnid>/<file>, "
                         + (f"got {_excerpt(bad[0])!r}" if bad else "got none"))
    # a file name no file system holds (NAME_MAX, 255 bytes) fails deep in the reading (issue 54): here
    too_long = next((line for line in lines if len(line.split("/", 1)[1].encode()) > 255), None)
    if too_long is not None:
        raise ValueError(f"--image-list {printable(str(path))}: a file name longer than 255 bytes, "
                         f"{_excerpt(too_long)!r}")
    if len(set(lines)) != len(lines):
        raise ValueError(f"--image-list {printable(str(path))}: lists an image twice")
    return lines


def _excerpt(text: str, limit: int = 80) -> str:
    """``text`` printable and cut to ``limit`` characters: a line of 100,000 characters quoted whole
    made a 100,078-byte error line (issue 48)."""
    return printable(text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)")


def listed_images(root: Path, names: list[str], wnids: list[str], preprocess: Preprocess) -> FolderSet:
    """The images of ``root`` (class folders) that the list names, in its order; one missing is an
    error naming how many and the first (RobustBench would stop there too)."""
    index = {wnid: i for i, wnid in enumerate(wnids)}
    samples = [(root / name, index[name.split("/", 1)[0]]) for name in names if name.split("/", 1)[0] in index]
    if len(samples) != len(names):
        raise ValueError(f"--image-list names classes that are not ImageNet wnids "
                         f"({len(names) - len(samples)} lines)")
    missing = [p for p, _ in samples if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{printable(str(root))} lacks {len(missing)} of the {len(names)} listed images "
                                f"(first: {printable(str(missing[0].relative_to(root)))})")
    return FolderSet(root, samples, preprocess)


def robustbench_summary(results: dict, names: tuple[str, ...], count: int, preprocessing: str) -> dict:
    """The leaderboard's number: mean accuracy over the (corruption, severity) cells."""
    cells = [results[c][str(s)]["accuracy"] for c in names for s in range(1, 6)]
    return {"corruptions_accuracy": float(np.mean(cells)), "cells": len(cells), "images_per_set": count,
            "preprocessing": preprocessing}
