"""-P sequences: frame counts, the clean frame where the reference has one, and frames against
per-image PIL / scipy / numpy references written from make_cifar_p.py."""

from __future__ import annotations

import corruption_reference as R
import numpy as np
import pytest
import torch
from corruption_reference import photo
from PIL import Image
from scipy import ndimage

from fullscale.corruptions import PERTURBATIONS, perturbation_sequence
from fullscale.corruptions.perturbations import FRAMES, _tilt_matrix
from fullscale.vocabulary import P_COLUMNS


@pytest.fixture(scope="module")
def images() -> torch.Tensor:
    return photo(3, 32, 11)


def _seq(images, name, seed=0):
    return perturbation_sequence(images, name, generator=torch.Generator().manual_seed(seed))


def _hwc(t: torch.Tensor) -> np.ndarray:
    return t.permute(1, 2, 0).numpy()


def test_registry_has_the_papers_ten_and_spatter():
    assert set(P_COLUMNS) <= set(PERTURBATIONS)
    assert "spatter" in PERTURBATIONS


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_shapes_and_determinism(name, images):
    seq = _seq(images, name)
    assert seq.dtype == torch.uint8 and seq.shape == (3, FRAMES.get(name, 31), 3, 32, 32)
    assert torch.equal(seq, _seq(images, name))
    changes = (seq[:, 1:].float() - seq[:, :-1].float()).abs().mean(dim=(2, 3, 4))
    assert (changes.mean(1) > 0).all()  # the sequence moves


@pytest.mark.parametrize("name,clean_frame", [("gaussian_noise", 0), ("shot_noise", 0), ("speckle_noise", 0),
                                              ("zoom_blur", 0), ("translate", 7), ("rotate", 15), ("scale", 15),
                                              ("shear", 15)])
def test_the_reference_clean_frame(name, clean_frame, images):
    frame = _seq(images, name)[:, clean_frame].float()
    assert (frame - images.float()).abs().max() <= 1


def test_geometric_frames_match_pil(images):
    for name, pil_frame in (
        # torchvision (2019) turned positive angles clockwise, PIL's rotate turns them
        # anticlockwise; both about torchvision 0.2-0.7's centre (w / 2 + 0.5, h / 2 + 0.5)
        ("rotate", lambda im, i: im.rotate(15 - i, resample=Image.BILINEAR, center=(16.5, 16.5))),
        ("translate", lambda im, i: im.transform(im.size, Image.AFFINE, (1, 0, -(i - 7), 0, 1, 0))),
        ("scale", lambda im, i: im.transform(im.size, Image.AFFINE, _scale(i), resample=Image.BILINEAR)),
    ):
        seq = _seq(images, name)
        for i in range(seq.shape[1]):
            ref = np.stack([np.asarray(pil_frame(Image.fromarray(_hwc(im)), i)) for im in images])
            d = np.abs(seq[:, i].permute(0, 2, 3, 1).numpy().astype(float) - ref)
            # off-by-one grey levels where PIL's fixed-point bilinear truncates on the other side
            assert d.mean() < 0.03 and d.max() <= 1, (name, i, d.mean(), d.max())


def _scale(i: int) -> tuple:
    s = 100 / (2 * i + 70)  # torchvision 0.2-0.7's scale (2i + 70) / 100 about (16.5, 16.5)
    return (s, 0, 16.5 - 16.5 * s, 0, s, 16.5 - 16.5 * s)


def test_tilt_matches_a_scipy_warp_perspective(images):
    """cv2.warpPerspective with the reference's matrix (which shrinks by f / (1 + f) even at 0
    degrees: P1 puts the image plane at z = 1)."""
    seq = _seq(images, "tilt")
    ys, xs = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    for i in (0, 7, 22, 30):
        inv = np.linalg.inv(_tilt_matrix(32, 32, 0.75 * (i - 15)))
        src = inv @ np.stack([xs.ravel(), ys.ravel(), np.ones(32 * 32)])
        px, py = src[0] / src[2], src[1] / src[2]
        for k, im in enumerate(images):
            a = _hwc(im).astype(float)
            ref = np.stack([ndimage.map_coordinates(a[..., c], [py, px], order=1, mode="grid-constant", cval=0)
                            for c in range(3)], -1).reshape(32, 32, 3)
            d = np.abs(_hwc(seq[k, i]).astype(float) - np.round(ref))
            assert d.mean() < 0.1 and d.max() <= 1, (i, d.mean())


def test_motion_blur_and_gaussian_blur_frames(images):
    motion, blur = _seq(images, "motion_blur"), _seq(images, "gaussian_blur")
    for k, im in enumerate(images):
        a = _hwc(im) / 255
        for i in (0, 10, 20):
            ref = np.round(np.clip(R.motion_blur(a, 6, 1.8, (i - 20) * 9), 0, 1) * 255)
            assert np.abs(_hwc(motion[k, i]) - ref).max() <= 1
        for i in (0, 15, 30):
            ref = R.to_u8(R.gaussian_blur(a, 0.3 + 0.015 * i, truncate=7.0))
            assert np.abs(_hwc(blur[k, i]).astype(int) - ref).max() <= 1


def test_noise_frames_have_the_reference_spread():
    x = torch.full((20, 3, 32, 32), 120, dtype=torch.uint8)
    seq = _seq(x, "gaussian_noise").float()
    noise = seq[:, 1:] - 120
    assert abs(noise.std() / 255 - 0.02) < 0.001  # x + 0.02 z, no clipping at 120
    shot = _seq(x, "shot_noise").float()[:, 1:] / 255
    # Poisson(700 x) / 700: variance x / 700
    assert abs(shot.var() - (120 / 255) / 700) < 0.1 * (120 / 255) / 700


def test_snow_and_spatter_move_smoothly(images):
    for name in ("snow", "spatter"):
        seq = _seq(images, name).float()
        step = (seq[:, 1:] - seq[:, :-1]).abs().mean()
        total = (seq[:, 0] - images.float()).abs().mean()
        assert 0 < step < 5 and total > 0.2, (name, float(step), float(total))


def test_bad_input_is_refused(images):
    with pytest.raises(ValueError, match="unknown perturbation"):
        _seq(images, "rain")
    with pytest.raises(ValueError, match="CIFAR-10-P"):
        perturbation_sequence(images, "rotate", generator=torch.Generator(), params="imagenet")
    with pytest.raises(ValueError, match="uint8"):
        perturbation_sequence(images.float(), "rotate", generator=torch.Generator())
