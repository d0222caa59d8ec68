"""Properties of every corruption, both parameter tables: shape, dtype, range, determinism per
generator, batch = per-image, growing strength over severities, frost from texture files."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from corruption_reference import photo
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from fullscale.corruptions import CATEGORIES, CORRUPTIONS, EXTRA_CORRUPTIONS, SPECS, corrupt, find_frost_dir
from fullscale.data import load_dataset


@pytest.fixture(scope="module")
def frost_dir(tmp_path_factory) -> str:
    """Synthetic frost "photographs" (never the real ones): five 300x400 textures whose pixels
    encode their own position, so a crop can be located."""
    folder = tmp_path_factory.mktemp("frost")
    rows, cols = np.meshgrid(np.arange(300), np.arange(400), indexing="ij")
    for k in range(6):
        img = np.stack([rows % 256, cols % 256, np.full_like(rows, 40 * k)], -1).astype(np.uint8)
        Image.fromarray(img).save(folder / f"frost{k + 1}.png")
    return str(folder)


ALL = tuple(SPECS)


def test_registry_names_and_categories():
    assert CORRUPTIONS == ("gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur",
                           "motion_blur", "zoom_blur", "snow", "frost", "fog", "brightness", "contrast",
                           "elastic_transform", "pixelate", "jpeg_compression")
    assert EXTRA_CORRUPTIONS == ("speckle_noise", "gaussian_blur", "spatter", "saturate")
    assert sum(CATEGORIES.values(), ()) == CORRUPTIONS
    assert all(len(s.cifar) == len(s.imagenet) == 5 for s in SPECS.values())


@settings(max_examples=25)
@given(name=st.sampled_from(ALL), severity=st.integers(1, 5), seed=st.integers(0, 2 ** 16),
       params=st.sampled_from(("cifar", "imagenet")), size=st.sampled_from((32, 40)))
def test_shape_dtype_determinism(name, severity, seed, params, size, frost_dir):
    x = photo(3, size, seed % 7)
    a = corrupt(x, name, severity, generator=torch.Generator().manual_seed(seed), params=params, frost_dir=frost_dir)
    b = corrupt(x, name, severity, generator=torch.Generator().manual_seed(seed), params=params, frost_dir=frost_dir)
    assert a.shape == x.shape and a.dtype == torch.uint8
    assert torch.equal(a, b)
    if name not in ("contrast",) and severity > 1:
        assert not torch.equal(a, x)


DETERMINISTIC = ("brightness", "saturate", "contrast", "gaussian_blur", "defocus_blur", "zoom_blur", "pixelate",
                 "jpeg_compression")


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_batch_equals_per_image_for_deterministic_corruptions(name):
    x = photo(4, 32, 3)
    batch = corrupt(x, name, 4, generator=torch.Generator(), params="cifar")
    for i in range(4):
        assert torch.equal(batch[i], corrupt(x[i:i + 1], name, 4, generator=torch.Generator(), params="cifar")[0])


STOCHASTIC = tuple(n for n in ALL if n not in DETERMINISTIC)


@pytest.mark.parametrize("name", STOCHASTIC)
def test_batch_equals_per_image_in_distribution(name, frost_dir):
    """48 copies of one image in one batch vs 48 single-image calls with their own seeds: the
    per-image mean |change| has the same mean and spread."""
    x = photo(1, 32, 5)
    batch = corrupt(x.expand(48, -1, -1, -1).contiguous(), name, 3, generator=torch.Generator().manual_seed(0),
                    frost_dir=frost_dir)
    single = torch.cat([corrupt(x, name, 3, generator=torch.Generator().manual_seed(s + 1), frost_dir=frost_dir)
                        for s in range(48)])
    a = (batch.float() - x.float()).abs().mean(dim=(1, 2, 3))
    b = (single.float() - x.float()).abs().mean(dim=(1, 2, 3))
    spread = float(torch.cat([a, b]).std()) + 0.05
    assert abs(float(a.mean() - b.mean())) <= 4 * spread / 48 ** 0.5 + 0.02, (float(a.mean()), float(b.mean()))
    assert abs(float(a.std() - b.std())) <= spread, (float(a.std()), float(b.std()))
    assert len({tuple(im.flatten()[:64].tolist()) for im in batch}) > 1 or name in ("motion_blur",)


def _sharpness(y: torch.Tensor) -> float:
    y = y.float()
    return float((y[..., 1:, :] - y[..., :-1, :]).abs().mean() + (y[..., :, 1:] - y[..., :, :-1]).abs().mean())


def _change(x: torch.Tensor):
    return lambda y: float((y.float() - x.float()).abs().mean())


# Not monotone in the reference's own tables, so not tested for it: frost (image weight falls
# while the frost weight stays), elastic (the sets of (alpha, sigma) are not ordered), saturate
# (severities 1-2 desaturate, 3-5 saturate), CIFAR glass blur (sigma 0.05, .25, .4, .25, .4) and
# CIFAR spatter (water for 1-3, mud for 4-5).
BLURS = ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur", "pixelate", "gaussian_blur")
CHANGES = ("gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise", "snow", "fog", "brightness",
           "contrast", "jpeg_compression", "spatter")
SKIP = {("glass_blur", "cifar"), ("spatter", "cifar")}


@pytest.mark.parametrize("params", ["cifar", "imagenet"])
@pytest.mark.parametrize("name", BLURS + CHANGES)
def test_strength_grows_with_severity(name, params):
    if (name, params) in SKIP:
        pytest.skip("not monotone in the reference's table")
    g = torch.Generator().manual_seed(9)
    if params == "cifar":
        x = torch.cat([load_dataset("digits", "test").images[:12], photo(12, 32, 1),
                       torch.randint(0, 256, (12, 3, 32, 32), generator=g, dtype=torch.uint8)])
    else:
        x = torch.cat([photo(3, 224, 2), torch.randint(0, 256, (1, 3, 224, 224), generator=g, dtype=torch.uint8)])
    measure = _sharpness if name in BLURS else _change(x)
    values = [measure(corrupt(x, name, s, generator=torch.Generator().manual_seed(0), params=params))
              for s in range(1, 6)]
    sign = -1 if name in BLURS else 1  # blurs lose sharpness, the rest move further from the image
    steps = [sign * (b - a) for a, b in itertools.pairwise(values)]
    assert all(step >= -0.05 * max(values) for step in steps), values
    assert sign * (values[-1] - values[0]) > 0.1 * max(values), values


def test_frost_blends_a_crop_of_one_texture(frost_dir):
    """On black images frost is b * texture: the constant third channel names the photograph
    (one of the first five), and at full scale the crop is a window of it."""
    x = torch.zeros(8, 3, 32, 32, dtype=torch.uint8)
    for params, severity in (("cifar", 5), ("imagenet", 2)):
        _, b, scale = SPECS["frost"].row(params, severity)
        y = corrupt(x, "frost", severity, generator=torch.Generator().manual_seed(0), params=params,
                    frost_dir=frost_dir).numpy().astype(int)
        picked = set()
        for img in y:
            k = [k for k in range(6) if np.all(img[2] == np.floor(b * 40 * k + 1e-3))]
            assert len(k) == 1 and k[0] < 5, img[2, 0, 0]
            picked.add(k[0])
            if scale == 1.0:  # some top row t and left column l give exactly these values
                tops = np.floor(b * ((np.arange(268)[:, None] + np.arange(32)) % 256) + 1e-3)
                lefts = np.floor(b * ((np.arange(368)[:, None] + np.arange(32)) % 256) + 1e-3)
                assert (tops == img[0, :, 0]).all(1).any() and (lefts == img[1, 0]).all(1).any()
        assert len(picked) > 1


def test_frost_without_photographs_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="frost"):
        find_frost_dir(tmp_path)  # empty folder
    monkeypatch.setattr("fullscale.corruptions.frost._BUNDLED", tmp_path / "none")
    with pytest.raises(FileNotFoundError, match="frost_dir"):
        corrupt(photo(1, 32), "frost", 1, generator=torch.Generator())


def test_bundled_photographs_are_the_public_release():
    """The shipped files are byte-identical to the reference's frost1.png .. frost5.jpg (their
    md5 sums as released in imagecorruptions 1.1.2), and they are what frost reads by default."""
    import hashlib

    folder = find_frost_dir()
    md5 = {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(folder.glob("frost*"))}
    assert md5 == {"frost1.png": "6ead634ace1f366d77e87078b465863c", "frost2.png": "98f0d2b1d74a048d3bc9c7ecfd886939",
                   "frost3.png": "b3ed8eb147824261888e730f916c0d8b", "frost4.jpg": "d70b9d6aa0b1fe7bd8133b113787e078",
                   "frost5.jpg": "50984ae2c871b7df2c28f1d71ca460a0"}
    assert (folder / "LICENSE").read_text().lstrip().startswith("Apache License")
    default = corrupt(photo(2, 32), "frost", 3, generator=torch.Generator().manual_seed(0))
    named = corrupt(photo(2, 32), "frost", 3, generator=torch.Generator().manual_seed(0), frost_dir=str(folder))
    assert torch.equal(default, named) and not torch.equal(default, photo(2, 32))


def test_bad_input_is_refused():
    x = photo(2, 32)
    with pytest.raises(ValueError, match="unknown corruption"):
        corrupt(x, "rain", 1, generator=torch.Generator())
    with pytest.raises(ValueError, match="severity"):
        corrupt(x, "fog", 6, generator=torch.Generator())
    with pytest.raises(ValueError, match="params"):
        corrupt(x, "fog", 1, generator=torch.Generator(), params="svhn")
    with pytest.raises(ValueError, match="uint8"):
        corrupt(x.float(), "fog", 1, generator=torch.Generator())
    assert corrupt(x[:0], "fog", 1, generator=torch.Generator()).shape == (0, 3, 32, 32)
