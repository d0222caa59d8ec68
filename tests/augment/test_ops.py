"""Batched AugMix ops against PIL (the public code's per-image implementation) and their properties."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageEnhance, ImageOps

from fullscale.augment.ops import OPS, AffineOp, resample

SIZE = 32


def _images(seed: int, n: int = 4, size: int = SIZE, smooth: bool = False) -> torch.Tensor:
    """uint8 test images (N, 3, size, size)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (n, 3, size, size), generator=g).float()
    if smooth:  # natural-image-like: low frequencies dominate, so bilinear rounding matters less
        x = torch.nn.functional.avg_pool2d(torch.nn.functional.pad(x, (2, 2, 2, 2), mode="replicate"), 5, 1)
        x = torch.round(x)
    # vary the dynamic range so autocontrast/equalize see different histograms
    lo = torch.randint(0, 60, (n, 3, 1, 1), generator=g).float()
    x = torch.round(lo + x * (1 - lo / 255) * torch.rand(n, 1, 1, 1, generator=g).clamp_min(0.2))
    return x.to(torch.uint8)


def _pil(img: torch.Tensor) -> Image.Image:
    return Image.fromarray(img.permute(1, 2, 0).numpy())


def _tensor(pil: Image.Image) -> torch.Tensor:
    return torch.from_numpy(np.array(pil.convert("RGB"))).permute(2, 0, 1)


def _levels(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    level = 0.1 + 9.9 * torch.rand(n, generator=g)
    sign = torch.where(torch.rand(n, generator=g) > 0.5, -1.0, 1.0)
    return level, sign


def _pil_reference(name: str, pil: Image.Image, level: float, sign: float) -> Image.Image:
    """The public augmentations.py with the level and sign given instead of drawn."""
    def int_p(maxval: float) -> int:
        return int(level * maxval / 10)
    def float_p(maxval: float) -> float:
        return float(level) * maxval / 10.0
    if name == "autocontrast":
        return ImageOps.autocontrast(pil)
    if name == "equalize":
        return ImageOps.equalize(pil)
    if name == "posterize":
        return ImageOps.posterize(pil, 4 - int_p(4))
    if name == "solarize":
        return ImageOps.solarize(pil, 256 - int_p(256))
    if name == "rotate":
        return pil.rotate(int_p(30) * sign, resample=Image.BILINEAR)
    if name in ("shear_x", "shear_y"):
        s = float_p(0.3) * sign
        coeffs = (1, s, 0, 0, 1, 0) if name == "shear_x" else (1, 0, 0, s, 1, 0)
        return pil.transform((SIZE, SIZE), Image.AFFINE, coeffs, resample=Image.BILINEAR)
    if name in ("translate_x", "translate_y"):
        t = int_p(SIZE / 3) * sign
        coeffs = (1, 0, t, 0, 1, 0) if name == "translate_x" else (1, 0, 0, 0, 1, t)
        return pil.transform((SIZE, SIZE), Image.AFFINE, coeffs, resample=Image.BILINEAR)
    enhancer = {"color": ImageEnhance.Color, "contrast": ImageEnhance.Contrast,
                "brightness": ImageEnhance.Brightness, "sharpness": ImageEnhance.Sharpness}[name]
    return enhancer(pil).enhance(float_p(1.8) + 0.1)


EXACT = ("autocontrast", "equalize", "posterize", "solarize", "translate_x", "translate_y",
         "brightness", "contrast", "color", "sharpness")
# (worst mean abs diff per image, max abs diff) in grey levels.  float32 grid_sample against PIL's
# double-precision bilinear: a value sitting within ~1e-4 of an integer can truncate the other way.
# Measured over 320 images (smooth and noise): max 1 everywhere, worst per-image mean 0.015.
TOLERANT = {"rotate": (0.02, 1), "shear_x": (0.02, 1), "shear_y": (0.02, 1)}


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize("seed", range(3))
def test_ops_equal_pil_exactly(name, seed):
    x = _images(seed, n=6, smooth=seed == 2)
    level, sign = _levels(6, seed)
    ours = OPS[name](x, level, sign)
    for i in range(6):
        ref = _tensor(_pil_reference(name, _pil(x[i]), float(level[i]), float(sign[i])))
        assert torch.equal(ours[i], ref), (name, i, (ours[i].float() - ref.float()).abs().max())


@pytest.mark.parametrize("name", sorted(TOLERANT))
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("smooth", [True, False])
def test_rotate_and_shear_agree_with_pil_bilinear(name, seed, smooth):
    x = _images(seed, n=6, smooth=smooth)
    level, sign = _levels(6, seed)
    ours = OPS[name](x, level, sign)
    mean_tol, max_tol = TOLERANT[name]
    for i in range(6):
        ref = _tensor(_pil_reference(name, _pil(x[i]), float(level[i]), float(sign[i])))
        diff = (ours[i].float() - ref.float()).abs()
        assert diff.mean() <= mean_tol, (name, i, float(diff.mean()))
        assert diff.max() <= max_tol, (name, i, float(diff.max()))


@settings(max_examples=25)
@given(name=st.sampled_from(sorted(OPS)), seed=st.integers(0, 10_000), n=st.integers(1, 5),
       size=st.sampled_from([8, 13, 32]))
def test_ops_keep_shape_and_uint8_and_the_pixel_ops_equal_pil_at_any_size(name, seed, n, size):
    x = _images(seed, n=n, size=size)
    level, sign = _levels(n, seed)
    out = OPS[name](x, level, sign)
    assert out.shape == x.shape and out.dtype == torch.uint8
    if not isinstance(OPS[name], AffineOp):  # (the affine ops follow PIL at 32 x 32 above)
        for i in range(n):
            assert torch.equal(out[i], _tensor(_pil_reference(name, _pil(x[i]), float(level[i]), float(sign[i]))))


@settings(max_examples=20)
@given(name=st.sampled_from(sorted(OPS)), seed=st.integers(0, 10_000))
def test_each_image_depends_only_on_itself(name, seed):
    x = _images(seed, n=4)
    level, sign = _levels(4, seed)
    out = OPS[name](x, level, sign)
    y = x.clone()
    y[0] = 255 - y[0]
    out2 = OPS[name](y, level, sign)
    assert torch.equal(out[1:], out2[1:])
    for i in range(4):  # batch == one image at a time with the same parameters
        assert torch.equal(out[i:i + 1], OPS[name](x[i:i + 1], level[i:i + 1], sign[i:i + 1]))


# the level at which each op with a strength does nothing: int_parameter == 0 (rotate below 1/3,
# translate below 0.94, solarize below 0.04), shear at 0, the ImageEnhance ops at factor 1 (level 5)
ZERO_STRENGTH = {"rotate": 0.3, "shear_x": 0.0, "shear_y": 0.0, "translate_x": 0.9, "translate_y": 0.9,
                 "solarize": 0.03, "brightness": 5.0, "contrast": 5.0, "color": 5.0, "sharpness": 5.0}


@pytest.mark.parametrize("name", sorted(ZERO_STRENGTH))
def test_zero_strength_is_identity(name):
    # (not posterize: at level 0 the public code still keeps 4 bits; autocontrast/equalize have none)
    x = _images(0, n=3)
    x[:, :, 0, 0] = 255  # solarize must see its top level
    level = torch.full((3,), ZERO_STRENGTH[name])
    for sign in (1.0, -1.0):
        assert torch.equal(OPS[name](x, level, torch.full((3,), sign)), x)
    # and a little more strength does something
    assert not torch.equal(OPS[name](x, level + 1.0, torch.ones(3)), x)


@pytest.mark.parametrize("shift", [-0.5, 0.5, -31.5, 31.5])
def test_resample_follows_pil_exactly_on_the_image_border(shift):
    # X = u + shift lands exactly on 0 or W (PIL: 0 inside, W outside) and on half pixels (weights 1/2)
    x = _images(4, n=2)
    for coeffs in ((1, 0, shift, 0, 1, 0), (1, 0, 0, 0, 1, shift)):
        ours = resample(x, torch.tensor([coeffs] * 2, dtype=torch.float64))
        for i in range(2):
            ref = _tensor(_pil(x[i]).transform((SIZE, SIZE), Image.AFFINE, coeffs, resample=Image.BILINEAR))
            assert torch.equal(ours[i], ref)


def test_each_kind_of_op_is_registered_in_public_order():
    assert list(OPS)[:9] == ["autocontrast", "equalize", "posterize", "rotate", "solarize", "shear_x",
                             "shear_y", "translate_x", "translate_y"]
    assert list(OPS)[9:] == ["color", "contrast", "brightness", "sharpness"]
    assert all(isinstance(OPS[n], AffineOp) for n in ("rotate", "shear_x", "shear_y", "translate_x", "translate_y"))
