"""Tests generated from the corruption registry (``fullscale.corruptions.specs``), as timm's follow
its model registry: every registered corruption, at severities 1 and 5 of both parameter tables,
keeps uint8 and the input's shape and is a function of the generator's seed alone; and every
corruption is registered in its own group file."""

from __future__ import annotations

import pytest
import torch

from fullscale.corruptions import SPECS, corrupt
from fullscale.corruptions.specs import register_corruption, registered
from fullscale.vocabulary import CORRUPTIONS, EXTRA_CORRUPTIONS, category_of

CASES = [(name, severity, params) for name in registered() for severity in (1, 5) for params in ("cifar", "imagenet")]


def _images(n: int = 3, side: int = 32) -> torch.Tensor:
    return torch.randint(0, 256, (n, 3, side, side), generator=torch.Generator().manual_seed(11), dtype=torch.uint8)


@pytest.mark.parametrize(("name", "severity", "params"), CASES)
def test_uint8_shape_and_seed_determinism(name, severity, params):
    x = _images()
    first = corrupt(x, name, severity, generator=torch.Generator().manual_seed(3), params=params)
    again = corrupt(x, name, severity, generator=torch.Generator().manual_seed(3), params=params)
    assert first.dtype == torch.uint8 and first.shape == x.shape
    assert torch.equal(first, again)


def test_the_registry_is_the_vocabulary_in_its_order():
    assert set(registered()) == {*CORRUPTIONS, *EXTRA_CORRUPTIONS}
    assert tuple(SPECS) == (*CORRUPTIONS, *EXTRA_CORRUPTIONS)


@pytest.mark.parametrize("name", list(registered()))
def test_registered_in_its_group_file_with_five_rows_per_table(name):
    spec = registered()[name]
    assert spec.category == category_of(name)
    assert spec.fn.__module__ == f"fullscale.corruptions.{spec.category}"
    assert len(spec.cifar) == len(spec.imagenet) == 5


def test_a_name_registers_once_and_must_be_in_the_vocabulary():
    with pytest.raises(ValueError, match="registered twice"):
        register_corruption("gaussian_noise", cifar=(1,) * 5, imagenet=(1,) * 5)(lambda x, c, g: x)
    with pytest.raises(ValueError, match="unknown corruption"):
        register_corruption("not_a_corruption", cifar=(1,) * 5, imagenet=(1,) * 5)(lambda x, c, g: x)
    assert "not_a_corruption" not in registered()
