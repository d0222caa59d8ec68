"""The built-in real data set for CPU runs: scikit-learn's bundled handwritten digits.

1,797 greyscale 8x8 images (values 0-16) of 10 classes, shipped inside scikit-learn, so
no download is needed.  They are upscaled bilinearly to 32x32 (``digits``), scaled to 0-255 and
repeated over three channels, so every CIFAR model, augmentation and corruption applies unchanged.
``digits16`` is the same at 16x16: a quarter of the pixels for the same 8x8 of information (issue
34: measured as a cheaper main job and not taken, benchmarks/RESULTS.md; its -C/-P sets scale the
CIFAR rows' lengths in pixels by 1/2, ``fullscale.corruptions.registry.PIXEL_FIELDS``).
The train/test split is fixed: a stratified 75/25 split by a seeded permutation (seed 0),
1,347 / 450 images.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F

from fullscale.data.imageset import ImageSet, Split

SPLIT_SEED = 0
TEST_FRACTION = 0.25


@functools.lru_cache(maxsize=2)
def _all_digits(side: int = 32) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    small = torch.from_numpy(bunch.images.astype(np.float32) / 16.0)[:, None]  # (N, 1, 8, 8)
    big = F.interpolate(small, size=(side, side), mode="bilinear", align_corners=False)
    images = (big.clamp(0, 1) * 255).round().to(torch.uint8).expand(-1, 3, -1, -1).contiguous()
    labels = torch.from_numpy(bunch.target.astype(np.int64))
    rng = np.random.default_rng(SPLIT_SEED)
    is_test = np.zeros(len(labels), dtype=bool)
    for k in range(10):
        members = np.flatnonzero(bunch.target == k)
        chosen = rng.permutation(members)[: round(TEST_FRACTION * len(members))]
        is_test[chosen] = True
    return images, labels, is_test


def load_digits32(split: Split) -> ImageSet:
    """The ``split`` of the 32x32x3 digits (train 1,347 / test 450 images)."""
    return load_digits(split, 32)


def load_digits(split: Split, side: int) -> ImageSet:
    """The ``split`` of the digits upscaled to ``side`` x ``side`` x 3 (the same split at every side)."""
    images, labels, is_test = _all_digits(side)
    mask = torch.from_numpy(is_test if split == "test" else ~is_test)
    name = "digits" if side == 32 else f"digits{side}"
    return ImageSet(images=images[mask].clone(), labels=labels[mask].clone(), num_classes=10,
                    name=name, source=f"sklearn.datasets.load_digits (upscaled to {side}x{side}x3)")
