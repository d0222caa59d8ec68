"""The geometric AugMix ops at ImageNet's 224 x 224 against PIL with the public ImageNet scripts'
``augmentations.IMAGE_SIZE = 224`` (translate moves up to 224 / 3 pixels; shear and rotate take
the same levels at every size, in pixel units about PIL's origin / centre)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from fullscale.augment.ops import OPS

SIZE = 224


def _reference(name: str, image: Image.Image, level: float, sign: float) -> Image.Image:
    if name == "rotate":
        return image.rotate(int(level * 30 / 10) * sign, resample=Image.BILINEAR)
    if name in ("shear_x", "shear_y"):
        s = level * 0.3 / 10 * sign
        coeffs = (1, s, 0, 0, 1, 0) if name == "shear_x" else (1, 0, 0, s, 1, 0)
    else:
        t = int(level * SIZE / 3 / 10) * sign
        coeffs = (1, 0, t, 0, 1, 0) if name == "translate_x" else (1, 0, 0, 0, 1, t)
    return image.transform((SIZE, SIZE), Image.AFFINE, coeffs, resample=Image.BILINEAR)


@pytest.mark.parametrize("name", ["translate_x", "translate_y", "shear_x", "shear_y", "rotate"])
def test_geometric_ops_at_224_follow_the_public_code(name):
    from sklearn.datasets import load_sample_image

    photo = load_sample_image("china.jpg")[100:100 + SIZE, 200:200 + SIZE]
    x = torch.from_numpy(np.ascontiguousarray(photo)).permute(2, 0, 1)[None].repeat(3, 1, 1, 1)
    level, sign = torch.tensor([9.7, 5.0, 2.3]), torch.tensor([1.0, -1.0, 1.0])
    ours = OPS[name](x, level, sign)
    for i in range(3):
        ref = _reference(name, Image.fromarray(photo), float(level[i]), float(sign[i]))
        expected = torch.from_numpy(np.array(ref)).permute(2, 0, 1)
        diff = (ours[i].float() - expected.float()).abs()
        if name.startswith("translate"):  # whole pixels: exact
            assert torch.equal(ours[i], expected), (name, i)
        else:  # float32 grid_sample vs PIL's double bilinear: rounding only
            assert diff.mean() <= 0.02 and diff.max() <= 1, (name, i, float(diff.mean()), float(diff.max()))
    if name == "translate_x":  # level 9.7 at 224: int(9.7 * 224 / 3 / 10) = 72 pixels
        assert torch.equal(ours[0, :, :, 72:], x[0, :, :, :SIZE - 72]) or torch.equal(
            ours[0, :, :, :SIZE - 72], x[0, :, :, 72:])
