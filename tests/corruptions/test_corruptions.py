"""Corruptions against per-image references written from make_cifar_c.py, and their properties."""

from __future__ import annotations

import colorsys
import io
import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from scipy import ndimage

from fullscale.corruptions import (
    CORRUPTIONS,
    EXTRA_CORRUPTIONS,
    PERTURBATIONS,
    corrupt,
    perturbation_sequence,
)
from fullscale.corruptions._filters import disk_kernel
from fullscale.data import load_dataset
from noisymix.cli import main

ALL = {**CORRUPTIONS, **EXTRA_CORRUPTIONS}


@pytest.fixture(scope="module")
def digits() -> torch.Tensor:
    return load_dataset("digits", "test").images[:24]


def _photo(n: int = 6, seed: int = 0) -> torch.Tensor:
    """Smooth colourful images (digits are grey): low-pass random fields."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, 8, 8, generator=g)
    x = torch.nn.functional.interpolate(x, size=(32, 32), mode="bilinear", align_corners=False)
    return (x * 255).round().to(torch.uint8)


def _np(x: torch.Tensor) -> np.ndarray:
    return x.permute(0, 2, 3, 1).numpy().astype(np.float64) / 255


def _close(ours: torch.Tensor, ref: np.ndarray, mean_tol: float = 1.0, max_tol: float = 255) -> None:
    ref_u8 = np.uint8(np.clip(ref, 0, 1) * 255)
    diff = np.abs(ours.permute(0, 2, 3, 1).numpy().astype(np.float64) - ref_u8)
    assert diff.mean() <= mean_tol, diff.mean()
    assert diff.max() <= max_tol, diff.max()


@pytest.mark.parametrize("severity", range(1, 6))
def test_contrast_matches_reference(severity):
    x = _photo()
    c = [0.75, 0.5, 0.4, 0.3, 0.15][severity - 1]
    a = _np(x)
    ref = (a - a.mean(axis=(1, 2), keepdims=True)) * c + a.mean(axis=(1, 2), keepdims=True)
    _close(corrupt(x, "contrast", severity, generator=torch.Generator()), ref, 0.01, 1)


@pytest.mark.parametrize("severity", range(1, 6))
def test_brightness_and_saturate_match_colorsys_hsv(severity):
    x = _photo(2)
    a = _np(x)
    add_v = [0.05, 0.1, 0.15, 0.2, 0.3][severity - 1]
    mul_s, add_s = [(0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2)][severity - 1]
    for name, fn in (("brightness", lambda h, s, v: (h, s, min(v + add_v, 1))),
                     ("saturate", lambda h, s, v: (h, min(max(s * mul_s + add_s, 0), 1), v))):
        ref = np.array([[[colorsys.hsv_to_rgb(*fn(*colorsys.rgb_to_hsv(*px))) for px in row] for row in img]
                        for img in a])
        # float32 vs float64 HSV: truncation to uint8 flips by one level on ~10% of values
        _close(corrupt(x, name, severity, generator=torch.Generator()), ref, 0.2, 1)


@pytest.mark.parametrize("severity", range(1, 6))
def test_gaussian_blur_matches_scipy(severity):
    x = _photo()
    sigma = [0.4, 0.6, 0.7, 0.8, 1.0][severity - 1]
    ref = np.stack([ndimage.gaussian_filter(a, sigma=(sigma, sigma, 0), mode="nearest", truncate=4.0)
                    for a in _np(x)])
    _close(corrupt(x, "gaussian_blur", severity, generator=torch.Generator()), ref, 0.05, 1)


@pytest.mark.parametrize("severity", range(1, 6))
def test_defocus_blur_matches_scipy_convolution(severity):
    x = _photo()
    radius, alias = [(0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1)][severity - 1]
    k = disk_kernel(radius, alias).numpy().astype(np.float64)
    assert abs(k.sum() - 1) < 1e-5
    ref = np.stack([np.stack([ndimage.correlate(a[..., ch], k, mode="mirror") for ch in range(3)], -1)
                    for a in _np(x)])
    _close(corrupt(x, "defocus_blur", severity, generator=torch.Generator()), ref, 0.05, 1)


@pytest.mark.parametrize("severity", range(1, 6))
def test_pixelate_and_jpeg_match_pil(severity):
    x = _photo()
    c = [0.95, 0.9, 0.85, 0.75, 0.65][severity - 1]
    q = [80, 65, 58, 50, 40][severity - 1]
    pix, jpg = [], []
    for img in x.permute(0, 2, 3, 1).numpy():
        p = Image.fromarray(img)
        pix.append(np.asarray(p.resize((int(32 * c),) * 2, Image.BOX).resize((32, 32), Image.BOX)) / 255)
        buf = io.BytesIO()
        p.save(buf, "JPEG", quality=q)
        jpg.append(np.asarray(Image.open(buf)) / 255)
    _close(corrupt(x, "pixelate", severity, generator=torch.Generator()), np.stack(pix) + 0.5 / 255, 0.6, 2)
    ours = corrupt(x, "jpeg_compression", severity, generator=torch.Generator())
    _close(ours, np.stack(jpg) + 0.5 / 255, 0.0, 0)


def test_gaussian_noise_has_the_reference_spread():
    x = torch.full((200, 3, 32, 32), 128, dtype=torch.uint8)
    for severity, c in enumerate([0.04, 0.06, 0.08, 0.09, 0.10], start=1):
        y = corrupt(x, "gaussian_noise", severity, generator=torch.Generator().manual_seed(severity)).float()
        # floor(255 (0.502 + c z)) has mean 128 - 0.5 + ... and sd 255 c (no clipping at mid-grey)
        assert abs(y.std() / 255 - c) < 0.002
        assert abs(y.mean() - (128 - 0.5)) < 0.2


def test_impulse_noise_hits_the_reference_fraction():
    x = torch.full((100, 3, 32, 32), 100, dtype=torch.uint8)
    y = corrupt(x, "impulse_noise", 5, generator=torch.Generator().manual_seed(0))
    changed = (y != x).float().mean()
    assert abs(changed - 0.07) < 0.005
    assert set(torch.unique(y[y != x]).tolist()) <= {0, 255}


@settings(max_examples=12)
@given(name=st.sampled_from(sorted(ALL)), severity=st.integers(1, 5), seed=st.integers(0, 100))
def test_every_corruption_shape_dtype_and_determinism(name, severity, seed):
    x = _photo(3, seed)
    a = corrupt(x, name, severity, generator=torch.Generator().manual_seed(seed))
    b = corrupt(x, name, severity, generator=torch.Generator().manual_seed(seed))
    assert a.shape == x.shape and a.dtype == torch.uint8
    assert torch.equal(a, b)


MONOTONE = ("gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "motion_blur", "zoom_blur",
            "fog", "brightness", "contrast", "pixelate", "jpeg_compression", "speckle_noise", "gaussian_blur")


@pytest.mark.parametrize("name", MONOTONE)
def test_strength_grows_with_severity(name, digits):
    x = torch.cat([digits, _photo(24)])
    change = [float((corrupt(x, name, s, generator=torch.Generator().manual_seed(0)).float() - x.float())
                    .abs().mean()) for s in range(1, 6)]
    assert all(b >= a - 0.05 for a, b in itertools.pairwise(change)), change
    assert change[-1] > change[0]


def test_bad_input_is_refused(digits):
    with pytest.raises(ValueError, match="unknown corruption"):
        corrupt(digits, "rain", 1, generator=torch.Generator())
    with pytest.raises(ValueError, match="severity"):
        corrupt(digits, "fog", 6, generator=torch.Generator())
    with pytest.raises(ValueError, match="uint8"):
        corrupt(digits.float(), "fog", 1, generator=torch.Generator())


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_perturbation_sequences(name, digits):
    seq = perturbation_sequence(digits[:4], name, generator=torch.Generator().manual_seed(0))
    assert seq.dtype == torch.uint8 and seq.shape[0] == 4 and seq.shape[2:] == (3, 32, 32)
    assert seq.shape[1] in (16, 21, 31)
    if name in ("gaussian_noise", "shot_noise", "speckle_noise", "zoom_blur"):
        assert torch.equal(seq[:, 0], digits[:4])  # these sequences start at the clean image


def test_corrupt_command_writes_the_standard_layout_and_resumes(tmp_path):
    out = tmp_path / "digits-c"
    args = ["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(out),
            "--corruptions", "fog,contrast", "--limit", "20"]
    assert main(args) == 0
    fog = np.load(out / "fog.npy", allow_pickle=False)
    labels = np.load(out / "labels.npy", allow_pickle=False)
    assert fog.shape == (100, 32, 32, 3) and fog.dtype == np.uint8
    clean = load_dataset("digits", "test").labels[:20].numpy()
    assert labels.shape == (100,) and (labels.reshape(5, 20) == clean).all()
    mtime = (out / "fog.npy").stat().st_mtime_ns
    assert main(args) == 0 and (out / "fog.npy").stat().st_mtime_ns == mtime  # finished files are kept
    assert main(["corrupt", "--dataset", "digits", "--out", str(out), "--corruptions", "rain"]) == 2
    assert main(["corrupt", "--dataset", "digits", "--kind", "p", "--out", str(tmp_path / "p"),
                 "--corruptions", "translate", "--limit", "5"]) == 0
    assert np.load(tmp_path / "p" / "translate.npy").shape == (5, 16, 32, 32, 3)
