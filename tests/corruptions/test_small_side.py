"""-C and -P sets at another side than the parameter table's (issue 34): ``pixel_scaled`` rows,
``noisymix corrupt --size`` and the built-in 16x16 digits.

The contracts of a -C/-P set at 16x16 are those of CIFAR-10-C at 32x32: uint8, the images' shape,
the same bytes from the same seed, and a corruption that grows with its severity (the published
rows' order, where the published rows have one)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fullscale.corruptions.perturbations import FRAMES, PERTURBATIONS, perturbation_sequence
from fullscale.corruptions.registry import CORRUPTIONS, PIXEL_FIELDS, SPECS, corrupt, pixel_scaled
from fullscale.data import load_dataset

# Not every published CIFAR row grows with severity in mean change: elastic transform's affine
# jitter shrinks from 0.08 x 32 to 0.03 x 32 while its field grows (21, 19, 16, 15, 12 grey levels
# at 32x32), and frost's severity 4 (image weight 0.85) changes less than its severity 3 (0.9, a
# weaker frost).  So the order asked of a 16x16 set is the one the published rows give at 32x32.


@pytest.fixture(scope="module")
def digits16() -> torch.Tensor:
    return load_dataset("digits16", "test").images[:32]


@pytest.fixture(scope="module")
def digits32() -> torch.Tensor:
    return load_dataset("digits", "test").images[:32]


def _changes(images: torch.Tensor, name: str, scale: float) -> list[float]:
    return [(corrupt(images, name, s, generator=torch.Generator().manual_seed(7), pixel_scale=scale).float()
             - images.float()).abs().mean().item() for s in range(1, 6)]


def test_digits16_is_the_same_split_at_a_quarter_of_the_pixels():
    small, big = load_dataset("digits16", "test"), load_dataset("digits", "test")
    assert small.images.shape[1:] == (3, 16, 16) and small.images.dtype == torch.uint8
    assert torch.equal(small.labels, big.labels) and len(load_dataset("digits16", "train").labels) == 1347
    # the 16x16 image is the 8x8 digit upscaled: its 2x2 box mean is close to the 8x8 original,
    # as is the 32x32 image's 4x4 box mean (independent of how either was made)
    from sklearn.datasets import load_digits

    pooled = torch.nn.functional.avg_pool2d(small.images[:, :1].float(), 2) / 255 * 16
    pooled32 = torch.nn.functional.avg_pool2d(big.images[:, :1].float(), 4) / 255 * 16
    assert (pooled - pooled32).abs().mean() < 0.6
    assert set(np.unique(load_digits().target)) == set(small.labels.tolist())


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(SPECS)), severity=st.integers(1, 5),
       scale=st.floats(0.1, 8.0, allow_nan=False))
def test_pixel_scaled_scales_exactly_the_lengths(name, severity, scale):
    row = SPECS[name].row("cifar", severity)
    out = pixel_scaled(name, row, scale)
    fields = PIXEL_FIELDS.get(name, {})
    if fields and not isinstance(row, tuple):  # a bare length (gaussian blur's sigma)
        assert fields == {0: "float"} and out == pytest.approx(float(row) * scale)
        return
    if not fields:
        assert out is row
        return
    mud = name == "spatter" and row[5]
    for i, (before, after) in enumerate(zip(row, out, strict=True)):
        kind = fields.get(i, "float" if (mud and i == 4) else None)
        if kind is None:
            assert after == before, (name, i)
        elif kind == "int":
            # rounded, and at least 1 (a pixel count): the registry's documented rule
            assert isinstance(after, int) and after == max(1, round(before * scale))
        else:
            assert after == pytest.approx(before * scale)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_scale_one_is_the_published_row(name):
    row = SPECS[name].row("cifar", 3)
    assert pixel_scaled(name, row, 1.0) is row


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_a_16x16_set_keeps_the_contracts(name, digits16, digits32):
    for severity in (1, 5):
        first = corrupt(digits16, name, severity, generator=torch.Generator().manual_seed(7), pixel_scale=0.5)
        again = corrupt(digits16, name, severity, generator=torch.Generator().manual_seed(7), pixel_scale=0.5)
        assert first.dtype == torch.uint8 and first.shape == digits16.shape
        assert torch.equal(first, again)  # determinism: the bytes come from the generator alone
    changes, published = _changes(digits16, name, 0.5), _changes(digits32, name, 1.0)
    assert changes[-1] > 0.5, (name, changes)  # every corruption changes the images at severity 5
    # wherever the published rows at 32x32 grow by more than 2 grey levels from one severity to the
    # next, the 16x16 rows grow too (up to a level: tied rows such as glass blur 1-3 stay tied)
    for k in range(4):
        if published[k + 1] > published[k] + 2.0:
            assert changes[k + 1] > changes[k] - 1.0, (name, k + 1, changes, published)
    if published[-1] > published[0] + 2.0:
        assert changes[-1] > changes[0] + 1.0, (name, changes, published)


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_a_16x16_p_set_keeps_the_contracts(name, digits16):
    x = digits16[:8]
    first = perturbation_sequence(x, name, generator=torch.Generator().manual_seed(3), pixel_scale=0.5)
    again = perturbation_sequence(x, name, generator=torch.Generator().manual_seed(3), pixel_scale=0.5)
    assert first.dtype == torch.uint8 and first.shape == (8, FRAMES.get(name, 31), 3, 16, 16)
    assert torch.equal(first, again)


def test_translate_moves_by_half_the_pixels_at_half_the_side():
    # one bright pixel: make_cifar_p.py's translate moves it by i - 7 pixels at 32x32, (i - 7) / 2 at 16x16
    x = torch.zeros(1, 3, 16, 16, dtype=torch.uint8)
    x[0, :, 8, 4] = 255
    frames = perturbation_sequence(x, "translate", generator=torch.Generator().manual_seed(0), pixel_scale=0.5)
    columns = (frames[0, :, 0].float() * torch.arange(16.0)).sum((1, 2)) / frames[0, :, 0].float().sum((1, 2))
    shifts = columns - 4
    expected = (torch.arange(16.0) - 7) / 2
    visible = (4 + expected >= 0) & (4 + expected <= 15)
    assert torch.allclose(shifts[visible], expected[visible], atol=0.05)


def test_corrupt_size_writes_a_scaled_set_and_refuses_to_mix_sides(tmp_path, capsys):
    from noisymix_app.cli import main

    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(out), "--size", "16",
                 "--corruptions", "motion_blur,gaussian_noise", "--limit", "20"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["size"] == 16 and manifest["pixel_scale"] == 0.5
    data = np.load(out / "motion_blur.npy", allow_pickle=False)
    assert data.shape == (100, 16, 16, 3) and data.dtype == np.uint8
    # the same folder at the data set's own side is another set: refused in one line, nothing written
    assert main(["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(out),
                 "--corruptions", "motion_blur", "--limit", "20"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "source_sha256" in err[0]
    assert np.array_equal(np.load(out / "motion_blur.npy", allow_pickle=False), data)


def test_corrupt_size_is_checked_before_any_work(tmp_path, capsys):
    from noisymix_app.cli import main

    assert main(["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(tmp_path / "x"), "--size", "-3"]) != 0
    assert "--size" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_digits16_c_set_is_evaluated_as_the_digits16_suite(tmp_path):
    from fullscale.data.registry import IMAGE_SIDE
    from fullscale.evaluation import SUITES

    assert IMAGE_SIDE["digits16"] == 16 and "digits16-c" in SUITES and "digits16-p" in SUITES


def test_a_folder_tree_at_another_size_is_refused_in_one_line(tmp_path, capsys):
    """A folder tree is made at ImageNet-C's 224x224: ``--size 16`` is one line, nothing written."""
    from fullscale.data.imagenet_fixture import write_imagenet_tree
    from noisymix_app.cli import main

    tree = write_imagenet_tree(tmp_path / "imagenet", n_train=1, n_val=1, side=(24, 32)) / "val"
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", str(tree), "--out", str(out), "--corruptions", "contrast",
                 "--size", "16"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--size 16" in err[0] and "224" in err[0]
    assert not (out / "manifest.json").exists() and not (out / "contrast").exists()
