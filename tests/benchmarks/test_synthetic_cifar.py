"""The synthetic CIFAR-shaped set of ``noisymix bench official-loop`` (issue 47): learnable, but not by
its colour.

The tests' fixture was separable by each image's mean colour; the bench's set must carry its label
in the texture only.  Checked with probes written here: a nearest-class-mean classifier on the mean
colour (and on the colour's spread) scores at chance on held-out images, while one on the
translation-invariant Fourier magnitudes of the image (what a texture is) scores far above it.
"""

from __future__ import annotations

import numpy as np
import torch

from fullscale.data import load_dataset
from noisymix_app.bench.bench_official_loop import CLASS_TEXTURES, synthetic_cifar_images, write_synthetic_cifar

CLASSES = len(CLASS_TEXTURES)
TRAIN, TEST = 2000, 1000
# chance is 1/10; 3 binomial standard errors over 1000 test images: 0.1 + 3 * 0.0095
AT_CHANCE = 0.1 + 3 * np.sqrt(0.1 * 0.9 / TEST)


def _nearest_mean_accuracy(train: np.ndarray, train_y: np.ndarray, test: np.ndarray, test_y: np.ndarray) -> float:
    mu, sd = train.mean(0), train.std(0) + 1e-9
    train, test = (train - mu) / sd, (test - mu) / sd
    means = np.stack([train[train_y == c].mean(0) for c in range(CLASSES)])
    guess = ((test[:, None] - means[None]) ** 2).sum(-1).argmin(1)
    return float((guess == test_y).mean())


def _colour(x: np.ndarray) -> np.ndarray:
    flat = x.reshape(len(x), 3, -1).astype(float)
    return np.concatenate([flat.mean(-1), flat.std(-1)], axis=1)


def _texture(x: np.ndarray) -> np.ndarray:
    grey = x.astype(float).mean(1)
    return np.log1p(np.abs(np.fft.fft2(grey))[:, :8, :8].reshape(len(x), -1))


def test_the_label_is_in_the_texture_not_the_colour():
    x, y = synthetic_cifar_images(TRAIN, 0)
    xt, yt = synthetic_cifar_images(TEST, 1)
    assert x.shape == (TRAIN, 3, 32, 32) and x.dtype == np.uint8 and set(np.unique(y)) == set(range(CLASSES))
    assert _nearest_mean_accuracy(_colour(x), y, _colour(xt), yt) < AT_CHANCE
    assert _nearest_mean_accuracy(_texture(x), y, _texture(xt), yt) > 0.35
    # the images use the range: not a constant, not saturated
    assert 30 < x.std() < 80 and (x == 0).mean() < 0.01 and (x == 255).mean() < 0.01


def test_a_class_survives_the_horizontal_flip_of_the_recipe():
    """The plaid is symmetric under a horizontal flip: a flipped image's texture features are those of
    its class, so the recipe's flips do not move images between classes."""
    x, y = synthetic_cifar_images(TRAIN, 0)
    xt, yt = synthetic_cifar_images(TEST, 1)
    flipped = xt[..., ::-1]
    assert _nearest_mean_accuracy(_texture(x), y, _texture(flipped), yt) > 0.35


def test_the_folder_reads_back_as_cifar10_with_the_same_images(tmp_path):
    write_synthetic_cifar(tmp_path, n_train=120, n_test=30, seed=4)
    train, test = load_dataset("cifar10", "train", tmp_path), load_dataset("cifar10", "test", tmp_path)
    x, y = synthetic_cifar_images(120, 4)
    assert torch.equal(train.images, torch.from_numpy(x)) and train.labels.tolist() == y.tolist()
    assert len(test) == 30
