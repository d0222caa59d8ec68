"""Spatter's water step (``weather.water``) piece by piece against independent definitions:
OpenCV itself where installed (Canny, blur, filter2D), scipy's exact Euclidean distance, and
hysteresis written as the textbook dilation loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import ndimage

from fullscale.corruptions._filters import canny_cv2, capped_distance, gaussian_blur, hysteresis
from fullscale.corruptions.weather import _box3, _emboss


def _liquid_u8(n: int, size: int, seed: int) -> torch.Tensor:
    """Spatter-like 8-bit layers: blurred noise, cleared below a threshold (sharp rims)."""
    g = torch.Generator().manual_seed(seed)
    liquid = gaussian_blur(0.65 + 0.3 * torch.randn(n, 1, size, size, generator=g), 2.0)
    liquid = torch.where(liquid < 0.68, torch.zeros_like(liquid), liquid)
    return torch.floor((liquid * 255).clamp(0, 255))


def test_canny_equals_opencv_when_installed():
    cv2 = pytest.importorskip("cv2")
    for seed, size in ((0, 32), (1, 224), (2, 57)):
        u8 = _liquid_u8(3, size, seed)
        for engine in ("auto", "torch"):  # numpy on the CPU; the torch code accelerators run
            ours = canny_cv2(u8, 50, 150, engine=engine)
            for k in range(3):
                ref = cv2.Canny(u8[k, 0].numpy().astype(np.uint8), 50, 150) > 0
                assert np.array_equal(ours[k, 0].numpy(), ref), (engine, seed, size, k)


def test_hysteresis_is_the_dilation_fixed_point():
    g = torch.Generator().manual_seed(3)
    candidate = torch.rand(4, 1, 40, 50, generator=g) < 0.45
    strong = candidate & (torch.rand(4, 1, 40, 50, generator=g) < 0.02)
    edges = strong
    while True:  # grow 8-connected within the candidates until nothing changes
        grown = candidate & (F.max_pool2d(edges.float(), 3, stride=1, padding=1) > 0)
        if torch.equal(grown, edges):
            break
        edges = grown
    assert torch.equal(hysteresis(candidate, strong), edges)
    assert edges.sum() > strong.sum()  # the case grows (the test could fail)


@pytest.mark.parametrize("cap", [1, 5, 20])
def test_capped_distance_is_scipys_exact_distance_capped(cap):
    g = torch.Generator().manual_seed(cap)
    mask = torch.rand(3, 1, 37, 61, generator=g) < 0.01
    mask[2] = False  # an image without any True pixel: the cap everywhere
    ours = capped_distance(mask, cap)
    other = capped_distance(mask, cap, engine="torch")
    # The contract of the two engines is the exact integer squared distance; only the final float32
    # sqrt differs: numpy's is the correctly rounded hardware instruction; torch's CPU sqrt calls
    # MKL's vector sqrt, whose generic kernel (taken on non-Intel CPUs) is off by one ulp for 142 of
    # the integers 0..800 on an AMD EPYC, whatever ATEN_CPU_CAPABILITY or MKL_CBWR say; it was exact
    # on the machine this test was first written on.  So: squares exactly, roots to 2 ulp (each
    # within 1 ulp of the true root; ulp(v) <= v * 2**-23).
    torch.testing.assert_close(other.double().square().round(), ours.double().square().round(), rtol=0, atol=0)
    torch.testing.assert_close(other, ours, rtol=2**-22, atol=0)
    for k in range(3):
        if mask[k].any():
            ref = np.minimum(ndimage.distance_transform_edt(~mask[k, 0].numpy()), cap)
        else:
            ref = np.full(mask.shape[2:], float(cap))
        np.testing.assert_allclose(ours[k, 0].numpy(), ref, atol=1e-5)


def test_box_and_emboss_equal_opencv_when_installed():
    cv2 = pytest.importorskip("cv2")
    x = _liquid_u8(2, 48, 5)
    ker = np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]], dtype=np.float32)
    for k in range(2):
        a = x[k, 0].numpy().astype(np.float32)
        np.testing.assert_allclose(_box3(x)[k, 0].numpy(), cv2.blur(a, (3, 3)), atol=1e-4)
        np.testing.assert_allclose(_emboss(x)[k, 0].numpy(), cv2.filter2D(a, -1, ker), atol=1e-4)
