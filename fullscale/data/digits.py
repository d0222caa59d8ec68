"""The built-in real data set for CPU runs: scikit-learn's bundled handwritten digits.

1,797 greyscale 8x8 images (values 0-16) of 10 classes, shipped inside scikit-learn, so
no download is needed.  They are upscaled bilinearly to 32x32, scaled to 0-255 and repeated
over three channels, so every CIFAR model, augmentation and corruption applies unchanged.
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


@functools.lru_cache(maxsize=1)
def _all_digits() -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    small = torch.from_numpy(bunch.images.astype(np.float32) / 16.0)[:, None]  # (N, 1, 8, 8)
    big = F.interpolate(small, size=(32, 32), mode="bilinear", align_corners=False)
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
    images, labels, is_test = _all_digits()
    mask = torch.from_numpy(is_test if split == "test" else ~is_test)
    return ImageSet(images=images[mask].clone(), labels=labels[mask].clone(), num_classes=10,
                    name="digits", source="sklearn.datasets.load_digits (upscaled to 32x32x3)")
