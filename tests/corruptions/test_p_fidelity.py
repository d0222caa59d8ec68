"""-P fidelity to the released CIFAR-10-P (issue 17): ImageMagick's motion-blur ties, the affine
centre of torchvision 0.2-0.7, the 20 released set names and spatter's all-black frames."""

from __future__ import annotations

import torch

from fullscale.corruptions._filters import motion_blur, motion_offsets


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
