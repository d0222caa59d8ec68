"""The built-in real data set for CPU runs: scikit-learn's bundled handwritten digits.

1,797 greyscale 8x8 images (values 0-16) of 10 classes, shipped inside scikit-learn, so
no download is needed.  They are upscaled bilinearly to 32x32 (``digits``), scaled to 0-255 and
repeated over three channels, so every CIFAR model, augmentation and corruption applies unchanged.
``digits16`` is the same at 16x16: a quarter of the pixels for the same 8x8 of information (issue
34: measured as a cheaper main job and not taken, benchmarks/RESULTS.md; its -C/-P sets scale the
CIFAR rows' lengths in pixels by 1/2, ``fullscale.corruptions.registry.PIXEL_FIELDS``).
The split is fixed: a stratified 75/25 train/held-out split by a seeded permutation (seed 0),
1,347 / 450 images, and the held-out 450 split again by class into the **test** split (300 images,
two thirds of each class) that every evaluation reads (clean, -C, -P, calibration) and the **fit**
split (150 images) that only the analogue's fits read (``noisymix fit-analogue``: the strengths of the
difficulty-matched Digits-C and Digits-P are fitted on images no evaluated set is made from; issue 57,
goal 4: the fit had bisected on the very 450 images the evaluated set was made from).
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F

from fullscale.data.imageset import ImageSet, Split

SPLIT_SEED = 0
TEST_FRACTION = 0.25  # held out from training: the test and fit splits together
FIT_FRACTION = 1 / 3  # of each class's held-out images: the fit split's share
#: the splits of the digits: which images each holds (``_all_digits``' roles)
ROLES = {"train": 0, "test": 1, "fit": 2}


@functools.lru_cache(maxsize=2)
def _all_digits(side: int = 32) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    small = torch.from_numpy(bunch.images.astype(np.float32) / 16.0)[:, None]  # (N, 1, 8, 8)
    big = F.interpolate(small, size=(side, side), mode="bilinear", align_corners=False)
    images = (big.clamp(0, 1) * 255).round().to(torch.uint8).expand(-1, 3, -1, -1).contiguous()
    labels = torch.from_numpy(bunch.target.astype(np.int64))
    rng = np.random.default_rng(SPLIT_SEED)
    role = np.full(len(labels), ROLES["train"], dtype=np.int8)
    for k in range(10):
        members = np.flatnonzero(bunch.target == k)
        held = rng.permutation(members)[: round(TEST_FRACTION * len(members))]
        fit = round(FIT_FRACTION * len(held))
        role[held[: len(held) - fit]] = ROLES["test"]
        role[held[len(held) - fit:]] = ROLES["fit"]  # the last third of each class's held-out draw
    return images, labels, role


def load_digits32(split: Split) -> ImageSet:
    """The ``split`` of the 32x32x3 digits (train 1,347 / test 300 / fit 150 images)."""
    return load_digits(split, 32)


def load_digits(split: Split, side: int) -> ImageSet:
    """The ``split`` of the digits upscaled to ``side`` x ``side`` x 3 (the same split at every side)."""
    if split not in ROLES:
        raise ValueError(f"the digits' splits are {', '.join(ROLES)}, not {split!r}")
    images, labels, role = _all_digits(side)
    mask = torch.from_numpy(role == ROLES[split])  # in the data set's order
    name = "digits" if side == 32 else f"digits{side}"
    return ImageSet(images=images[mask].clone(), labels=labels[mask].clone(), num_classes=10,
                    name=name, source=f"sklearn.datasets.load_digits (upscaled to {side}x{side}x3)")
