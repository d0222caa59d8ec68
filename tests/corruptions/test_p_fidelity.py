"""-P fidelity to the released CIFAR-10-P (issue 17): ImageMagick's motion-blur ties, the affine
centre of torchvision 0.2-0.7, the 20 released set names and spatter's all-black frames."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from corruption_reference import photo
from scipy import ndimage

from fullscale.corruptions._filters import chamfer_distance, equalize_hist_cv2, motion_blur, motion_offsets
from fullscale.corruptions.perturbations import (
    PERTURBATIONS,
    _geometric,
    _rotation,
    _shear,
    perturbation_sequence,
)
from fullscale.corruptions.writer import default_names
from fullscale.metrics import is_noise_sequence


def test_motion_blur_offsets_at_the_tie_angles():
    """ImageMagick computes p = 21 (sin a, cos a) in double: at -30 and -150 degrees p_y / |p| is
    -10.499999999999998 / 21.0, so i p_y / |p| - 1/2 lies just above -(i + 1) / 2 for odd i and
    ceil gives -(i // 2); ceil(i sin a - 1/2) gives -1 at tap 1 instead."""
    for angle in (-30.0, -150.0):
        ox, oy = motion_offsets(10, torch.tensor([angle]))
        assert oy[0].tolist() == [-(i // 2) for i in range(21)], angle
        # cos a = +-0.866...: no ties, round(i cos a) away from the half-way points
        assert ox[0].tolist() == [round(i * (0.8660254 if angle == -30 else -0.8660254)) for i in range(21)]


def test_motion_blur_of_an_impulse_at_the_tie_angle():
    """One bright pixel blurred at -30 degrees (snow's radius 10, sigma 2) against the kernel
    written out by hand: weights exp(-i^2 / 8) normalised, tap i at (round(i cos a), -(i // 2))."""
    x = torch.zeros(1, 1, 32, 32, dtype=torch.float64)
    x[0, 0, 16, 16] = 1
    out = motion_blur(x, 10, 2, torch.tensor([-30.0]))
    k = torch.exp(-torch.arange(21, dtype=torch.float64) ** 2 / 8)
    k = k / k.sum()
    # tap i reads (x + ox_i, y + oy_i): the impulse reaches output (16 - ox_i, 16 - oy_i) with k_i
    expected = torch.zeros(32, 32, dtype=torch.float64)
    for i in range(21):
        ox, oy = round(i * 0.8660254), -(i // 2)
        expected[16 - oy, 16 - ox] += k[i]
    assert torch.allclose(out[0, 0], expected, atol=1e-12)


def test_rotation_turns_about_torchvisions_old_centre():
    """A 90-degree turn of a 4 x 4 image about (w / 2 + 0.5, h / 2 + 0.5) = (2.5, 2.5) (PIL units,
    pixel centres at +0.5): output centre (c + 0.5, r + 0.5) reads the input at
    (2.5 + (r + 0.5 - 2.5), 2.5 - (c + 0.5 - 2.5)) = (r + 0.5, 4.5 - c), i.e. pixel (row 4 - c,
    column r), and nothing (0) for c = 0.  About the modern centre (2, 2) it would be rot90."""
    img = torch.arange(1, 17, dtype=torch.float64).view(1, 1, 4, 4).expand(1, 3, 4, 4) / 255
    (out,) = _geometric([_rotation(90)])(img, torch.Generator())
    expected = torch.zeros(4, 4, dtype=torch.float64)
    for r in range(4):
        for c in range(1, 4):
            expected[r, c] = img[0, 0, 4 - c, r]
    assert torch.allclose(out[0, 0], expected, atol=1e-9)
    (modern,) = _geometric([_rotation(90)], "modern")(img, torch.Generator())
    assert torch.allclose(modern[0, 0], torch.rot90(img[0, 0], -1), atol=1e-9)


@pytest.mark.parametrize("name", ["rotate", "scale", "shear"])
def test_affine_sets_take_the_old_centre_and_the_modern_one_on_request(name):
    """Frame 0 of rotate / scale / shear on a 4 x 4 ramp: our frame against the PIL transform
    about (2.5, 2.5) written out here (bilinear, zeros outside, truncated as PIL's 8-bit output)."""
    img = torch.arange(0, 16 * 15, 15, dtype=torch.uint8).view(1, 1, 4, 4).expand(1, 3, 4, 4).contiguous()
    ours = perturbation_sequence(img, name, generator=torch.Generator())[0, 0, 0].double()
    modern = perturbation_sequence(img, name, generator=torch.Generator(), affine_centre="modern")[0, 0, 0]
    a, b, _, d, e, _ = {"rotate": _rotation(-15), "scale": (100 / 70, 0, 0, 0, 100 / 70, 0),
                        "shear": _shear(-15)}[name]
    src = img[0, 0].double()
    expected = torch.zeros(4, 4, dtype=torch.float64)
    for r in range(4):
        for c in range(4):
            u, v = c + 0.5 - 2.5, r + 0.5 - 2.5
            x, y = a * u + b * v + 2.5 - 0.5, d * u + e * v + 2.5 - 0.5  # pixel-index coordinates
            if not (-0.5 <= x < 3.5 and -0.5 <= y < 3.5):
                continue
            x0, y0 = math.floor(x), math.floor(y)
            fx, fy = x - x0, y - y0
            px = lambda i, j: src[min(max(j, 0), 3), min(max(i, 0), 3)]  # noqa: E731  PIL repeats edges
            value = ((1 - fx) * (1 - fy) * px(x0, y0) + fx * (1 - fy) * px(x0 + 1, y0)
                     + (1 - fx) * fy * px(x0, y0 + 1) + fx * fy * px(x0 + 1, y0 + 1))
            expected[r, c] = math.floor(value + 1e-3)
    assert (ours - expected).abs().max() <= 1, (ours, expected)
    assert not torch.equal(modern.double(), expected)


def test_the_twenty_released_sets():
    released = {"brightness", "gaussian_blur", "gaussian_noise", "gaussian_noise_2", "gaussian_noise_3",
                "motion_blur", "rotate", "scale", "shear", "shot_noise", "shot_noise_2", "shot_noise_3", "snow",
                "spatter", "speckle_noise", "speckle_noise_2", "speckle_noise_3", "tilt", "translate", "zoom_blur"}
    assert len(PERTURBATIONS) == 20 and set(PERTURBATIONS) == released
    names, _ = default_names("p", None)
    assert set(names) == released
    # the public evaluation compares noise sequences with their first frame: these nine
    assert {n for n in released if is_noise_sequence(n)} == {f"{k}_noise{s}" for k in ("gaussian", "shot", "speckle")
                                                             for s in ("", "_2", "_3")}


@pytest.mark.parametrize("name,spread", [("gaussian_noise_2", 0.04), ("gaussian_noise_3", 0.06),
                                         ("speckle_noise_2", 0.07), ("speckle_noise_3", 0.1)])
def test_stronger_noise_strengths(name, spread):
    """make_cifar_p.py's second and third blocks: x + s z and x + x s z at a flat grey of 120."""
    x = torch.full((20, 3, 32, 32), 120, dtype=torch.uint8)
    noise = perturbation_sequence(x, name, generator=torch.Generator().manual_seed(0)).float()[:, 1:] / 255
    scale = spread * (120 / 255 if "speckle" in name else 1)
    assert abs(noise.std() - scale) < 0.05 * scale


@pytest.mark.parametrize("name,photons", [("shot_noise_2", 400), ("shot_noise_3", 200)])
def test_stronger_shot_noise(name, photons):
    x = torch.full((20, 3, 32, 32), 120, dtype=torch.uint8)
    shot = perturbation_sequence(x, name, generator=torch.Generator().manual_seed(0)).float()[:, 1:] / 255
    assert abs(shot.var() - (120 / 255) / photons) < 0.1 * (120 / 255) / photons


def _liquid_layers(noise: np.ndarray) -> list[np.ndarray]:
    """make_cifar_p.py's spatter layer, frame by frame, in numpy/scipy: N(0.6, 0.265) blurred
    (skimage's gaussian: mode nearest, truncate 4), below 0.7 cleared, then each column
    np.convolve'd with (0.2, 0.8), mode 'same', once a frame."""
    layer = ndimage.gaussian_filter(0.6 + 0.265 * noise, 1.75, mode="nearest", truncate=4.0)
    layer[layer < 0.7] = 0
    layers = []
    for _ in range(31):
        layers.append(layer)
        layer = np.apply_along_axis(lambda col: np.convolve(col, [0.2, 0.8], mode="same"), 0, layer)
    return layers


def test_spatter_frames_without_water_are_black_as_released_or_clean_on_request():
    """Where the 8-bit layer (liquid * 255).astype(uint8) is all zero the reference's water is
    0 / 0 = NaN and np.uint8 writes an all-black frame; "clean" gives the image itself there (as it
    does where the layer is not empty but the edge map under it is; no other frame changes)."""
    images = photo(48, 32, 3)
    seed = 4
    noise = torch.randn((48, 1, 32, 32), generator=torch.Generator().manual_seed(seed)).double().numpy()
    black = perturbation_sequence(images, "spatter", generator=torch.Generator().manual_seed(seed))
    clean = perturbation_sequence(images, "spatter", generator=torch.Generator().manual_seed(seed),
                                  empty_spatter="clean")
    empty = 0
    for k in range(48):
        for i, layer in enumerate(_liquid_layers(noise[k, 0])):
            if (layer * 255).astype(np.uint8).max() == 0:
                empty += 1
                assert black[k, i].max() == 0, (k, i)
                assert torch.equal(clean[k, i], images[k]), (k, i)
            elif black[k, i].max() == 0:  # water empty for want of edges under the liquid
                assert torch.equal(clean[k, i], images[k]), (k, i)
            else:
                assert torch.equal(black[k, i], clean[k, i]), (k, i)
    assert empty > 0  # the rule was exercised
    with pytest.raises(ValueError, match="empty_spatter"):
        perturbation_sequence(images, "spatter", generator=torch.Generator(), empty_spatter="nan")


def test_chamfer_distance_has_opencvs_5x5_weights():
    """cv2.distanceTransform(DIST_L2, 5) from one edge pixel: steps (1, 0) = 1, (1, 1) = 1.4,
    (2, 1) = 2.1969, so (3, 1) = 1 + 2.1969 and (4, 2) = 2 x 2.1969, capped at 5 here."""
    mask = torch.zeros(1, 1, 11, 11, dtype=torch.bool)
    mask[0, 0, 5, 5] = True
    d = chamfer_distance(mask, 5.0)[0, 0]
    for (dy, dx), want in {(0, 3): 3.0, (1, 1): 1.4, (1, 2): 2.1969, (2, 1): 2.1969, (1, 3): 3.1969,
                           (2, 4): 4.3938, (2, 2): 2.8, (5, 5): 5.0}.items():
        assert abs(float(d[5 + dy, 5 - dx]) - want) < 1e-5, (dy, dx, float(d[5 + dy, 5 - dx]))


def test_equalize_hist_rounds_the_half_way_level_as_opencv():
    """48 pixels at 0, 488 at 1, 488 at 2: level 1 maps to 488 x float32(255 / 976) = 127.5
    exactly in float32, which OpenCV's cvRound takes to 128 (half to even)."""
    img = torch.tensor([0.0] * 48 + [1.0] * 488 + [2.0] * 488).view(1, 1, 32, 32)
    out = equalize_hist_cv2(img)[0, 0].flatten()
    assert out[0] == 0 and out[48] == 128 and out[-1] == 255
