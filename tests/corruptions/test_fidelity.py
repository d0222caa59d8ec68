"""The batched corruptions against the slow per-image references in ``_reference.py``.

Deterministic corruptions: within 1 grey level mean absolute difference (most far closer).
Stochastic ones: exactly, when the test feeds the reference the same random draws (their
order is part of the implementation), else in distribution (mean and spread of the change)."""

from __future__ import annotations

import corruption_reference as R
import numpy as np
import pytest
import torch

from fullscale.corruptions import SPECS, corrupt
from fullscale.corruptions._draws import uniform as _uniform
from fullscale.corruptions._filters import motion_blur
from fullscale.corruptions.jpeg import jpeg_roundtrip, quant_tables


def _floats(x: torch.Tensor) -> np.ndarray:
    return x.permute(0, 2, 3, 1).numpy().astype(np.float64) / 255


def _diff(ours: torch.Tensor, ref_u8: np.ndarray) -> tuple[float, float]:
    d = np.abs(ours.permute(0, 2, 3, 1).numpy().astype(np.float64) - ref_u8.astype(np.float64))
    return float(d.mean()), float(d.max())


CASES = [("cifar", 32, 4), ("imagenet", 224, 2)]


def _check(name, params, size, n, severity, reference, mean_tol=1.0):
    x = R.photo(n, size, severity)
    ours = corrupt(x, name, severity, generator=torch.Generator().manual_seed(0), params=params)
    c = SPECS[name].row(params, severity)
    ref = np.stack([reference(img, c, u8) for img, u8 in zip(_floats(x), x.permute(0, 2, 3, 1).numpy(),
                                                              strict=True)])
    mean, worst = _diff(ours, ref)
    assert mean <= mean_tol and worst <= 1, (name, params, severity, mean, worst)
    return mean


DETERMINISTIC = {
    "brightness": lambda a, c, u8: R.to_u8(R.brightness(a, c)),
    "saturate": lambda a, c, u8: R.to_u8(R.saturate(a, c)),
    "contrast": lambda a, c, u8: R.to_u8(R.contrast(a, c)),
    "gaussian_blur": lambda a, c, u8: R.to_u8(R.gaussian_blur(a, c)),
    "defocus_blur": lambda a, c, u8: R.to_u8(R.defocus_blur(a, c)),
    "zoom_blur": lambda a, c, u8: R.to_u8(R.zoom_blur(a, c)),
    "pixelate": lambda a, c, u8: R.pixelate(u8, c),
    "jpeg_compression": lambda a, c, u8: R.jpeg(u8, c),
}


@pytest.mark.parametrize("params,size,n", CASES)
@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_deterministic_corruptions_match_the_reference(name, params, size, n):
    for severity in range(1, 6):
        # float32 vs float64 before truncation to uint8: one level, on a few percent of values
        _check(name, params, size, n, severity, DETERMINISTIC[name], mean_tol=0.2)


@pytest.mark.parametrize("angle", [-45.0, -20.0, 0.0, 17.0, 44.0, -100.0, -135.0])
@pytest.mark.parametrize("radius,sigma", [(6, 2.0), (15, 5.0), (20, 15.0)])
def test_motion_blur_filter_equals_the_numpy_reimplementation(radius, sigma, angle):
    a = _floats(R.photo(1, 48, 3))[0]
    ours = motion_blur(torch.from_numpy(a).permute(2, 0, 1)[None].float(), radius, sigma, torch.tensor([angle]))
    ref = R.motion_blur(a, radius, sigma, angle)
    assert np.abs(ours[0].permute(1, 2, 0).numpy() - ref).max() < 1e-5


def test_motion_blur_equals_imagecorruptions_when_installed():
    from noisymix_app.bench.bench_corruptions import _load_imagecorruptions

    if _load_imagecorruptions() is None:
        pytest.skip("imagecorruptions (and scikit-image, OpenCV) not installed")
    import imagecorruptions.corruptions as ic

    a = R.photo(1, 64, 4)[0].permute(1, 2, 0).numpy()
    for angle in (-40.0, 10.0, 33.0):
        ref = ic._motion_blur(a, radius=10, sigma=3, angle=angle)
        ours = motion_blur(torch.from_numpy(a).permute(2, 0, 1)[None].float(), 10, 3, torch.tensor([angle]))
        assert np.abs(ours[0].permute(1, 2, 0).numpy() - ref).max() < 1e-3


def _check_with_the_same_draws(name, params, size, n, severities, seed, reference, mean_tol, max_tol=None):
    """``corrupt`` (generator seeded ``seed``) against ``reference(x, c, g)``: the reference's uint8
    images of the photos ``x`` with the severity's parameters ``c``, fed the same random draws
    replayed from ``g``, a generator seeded the same.  The mean absolute difference must stay below
    ``mean_tol`` and, where given, the largest at most ``max_tol``."""
    for severity in severities:
        x = R.photo(n, size, severity)
        ours = corrupt(x, name, severity, generator=torch.Generator().manual_seed(seed), params=params)
        ref = reference(x, SPECS[name].row(params, severity), torch.Generator().manual_seed(seed))
        mean, mx = _diff(ours, ref)
        assert mean < mean_tol and (max_tol is None or mx <= max_tol), (severity, mean, mx)


@pytest.mark.parametrize("params,size,n", CASES)
def test_motion_blur_corruption_with_the_same_angle(params, size, n):
    def reference(x, c, g):
        angles = _uniform((n,), -45, 45, g).double().numpy()
        radius, sigma = c
        return np.stack([np.round(np.clip(R.motion_blur(a, radius, sigma, t), 0, 1) * 255)
                         for a, t in zip(_floats(x), angles, strict=True)])

    _check_with_the_same_draws("motion_blur", params, size, n, (1, 5), 1, reference, mean_tol=0.01, max_tol=1)


@pytest.mark.parametrize("params,size,n,severities", [("cifar", 32, 3, (1, 2, 3, 4, 5)), ("imagenet", 96, 2, (2,))])
def test_glass_blur_runs_the_reference_swap_loop(params, size, n, severities):
    """Same randint draws -> the same pixels swapped, in the same order, as the Python loop."""
    def reference(x, c, g):
        _, delta, iterations = c
        steps = (size - 2 * delta) ** 2
        draws = [torch.randint(-delta, delta, (steps, n, 2), generator=g).numpy() for _ in range(iterations)]
        return np.stack([R.to_u8(R.glass_blur(a, c, np.stack([d[:, i] for d in draws])))
                         for i, a in enumerate(_floats(x))])

    # the same permutation; float32 vs float64 blurs move a few truncations by one level
    _check_with_the_same_draws("glass_blur", params, size, n, severities, 2, reference, mean_tol=0.1, max_tol=1)


def _replay(n: int, mapsize: int, decay: float, g: torch.Generator) -> list:
    """The batched fractal's draws, split per image, in the order the reference asks for them."""
    shapes = []
    R.plasma_fractal(mapsize, decay, lambda s: shapes.append(s) or np.zeros(s))
    draws = [torch.rand((n, *s), generator=g, dtype=torch.float32).double().numpy() for s in shapes]
    return [iter([d[i] for d in draws]) for i in range(n)]


@pytest.mark.parametrize("params,size,n", [("cifar", 32, 3), ("imagenet", 224, 1)])
def test_fog_is_the_reference_plasma_fractal(params, size, n):
    def reference(x, c, g):
        mapsize = 32 if size == 32 else 256
        streams = _replay(n, mapsize, c[1], g)
        return np.stack([R.to_u8(R.fog(a, c, R.plasma_fractal(mapsize, c[1], lambda s, it=it: next(it))))
                         for a, it in zip(_floats(x), streams, strict=True)])

    _check_with_the_same_draws("fog", params, size, n, (1, 3, 5), 3, reference, mean_tol=0.05)


@pytest.mark.parametrize("params,size,n", [("cifar", 32, 4), ("imagenet", 128, 2)])
def test_elastic_transform_with_the_same_draws(params, size, n):
    def reference(x, c, g):
        pts = _uniform((n, 3, 2), -c[2], c[2], g).double().numpy()
        field = _uniform((n, 2, size, size), -1, 1, g).double().numpy()
        return np.stack([R.to_u8(R.elastic(a, c, p, f)) for a, p, f in zip(_floats(x), pts, field, strict=True)])

    _check_with_the_same_draws("elastic_transform", params, size, n, range(1, 6), 4, reference, mean_tol=0.1)


@pytest.mark.parametrize("params,size,n", [("cifar", 32, 4), ("imagenet", 224, 1)])
def test_snow_with_the_same_draws(params, size, n):
    def reference(x, c, g):
        noise = torch.randn((n, 1, size, size), generator=g).double().numpy()[:, 0]
        angles = _uniform((n,), -135, -45, g).double().numpy()
        return np.stack([R.to_u8(R.snow(a, c, z, t)) for a, z, t in zip(_floats(x), noise, angles, strict=True)])

    _check_with_the_same_draws("snow", params, size, n, range(1, 6), 5, reference, mean_tol=0.5)


# ------------------------------------------------------------------- noise, in distribution

def _noise_change(name: str, params: str, severity: int, x: torch.Tensor) -> np.ndarray:
    y = corrupt(x, name, severity, generator=torch.Generator().manual_seed(severity), params=params)
    return y.numpy().astype(np.float64) - x.numpy().astype(np.float64)


NUMPY_NOISE = {
    "gaussian_noise": lambda a, c, rng: a + rng.normal(size=a.shape, scale=c),
    "shot_noise": lambda a, c, rng: rng.poisson(a * c) / c,
    "speckle_noise": lambda a, c, rng: a + a * rng.normal(size=a.shape, scale=c),
    "impulse_noise": lambda a, c, rng: np.where(rng.random(a.shape) < c, (rng.random(a.shape) < 0.5) * 1.0, a),
}


@pytest.mark.parametrize("params", ["cifar", "imagenet"])
@pytest.mark.parametrize("name", sorted(NUMPY_NOISE))
def test_noise_matches_numpy_in_distribution(name, params):
    x = R.photo(40, 32, 7)
    rng = np.random.default_rng(0)
    for severity in (1, 3, 5):
        ours = _noise_change(name, params, severity, x)
        c = SPECS[name].row(params, severity)
        a = x.numpy().astype(np.float64) / 255
        ref = R.to_u8(NUMPY_NOISE[name](a, c, rng)).astype(np.float64) - x.numpy()
        # the mean change within 5 standard errors; spread and mean |change| within 5 % (impulse
        # noise at 1 % hits ~1,200 values here: its spread is the noisiest estimate)
        assert abs(ours.mean() - ref.mean()) <= 5 * ref.std() * np.sqrt(2 / ref.size) + 1e-9, severity
        assert abs(ours.std() - ref.std()) <= 0.05 * ref.std() + 0.05, (severity, ours.std(), ref.std())
        assert abs(np.abs(ours).mean() - np.abs(ref).mean()) <= 0.05 * np.abs(ref).mean() + 0.05, severity


@pytest.mark.parametrize("params,size,n", [("cifar", 32, 6), ("imagenet", 224, 2), ("cifar", 40, 2)])
def test_batched_jpeg_is_close_to_libjpeg(params, size, n):
    """The tensor JPEG (used on accelerators) against PIL: float vs integer DCT moves a few
    quantised coefficients by one step, so whole blocks can differ a little; the mean stays below
    one grey level (measured 0.1 - 0.85)."""
    for severity in (1, 3, 5):
        x = R.photo(n, size, severity)
        quality = SPECS["jpeg_compression"].row(params, severity)
        ours = torch.floor(jpeg_roundtrip(x.float() / 255, quality) * 255 + 0.5).to(torch.uint8)
        ref = np.stack([R.jpeg(im, quality) for im in x.permute(0, 2, 3, 1).numpy()])
        mean, _ = _diff(ours, ref)
        assert mean < 1.0, (quality, mean)


def test_quant_tables_follow_libjpeg_scaling():
    luma, chroma = quant_tables(50)
    assert luma[0, 0] == 16 and chroma[7, 7] == 99  # quality 50 = the standard tables
    luma, _ = quant_tables(80)  # scale 40: (16 * 40 + 50) // 100 = 6
    assert luma[0, 0] == 6
    luma, _ = quant_tables(7)  # scale 714: capped at 255
    assert luma.max() == 255 and luma[0, 1] == (11 * 714 + 50) // 100
    with pytest.raises(ValueError, match="quality"):
        quant_tables(0)


@pytest.mark.parametrize("name", ["spatter", "snow", "fog", "motion_blur", "gaussian_noise", "impulse_noise"])
def test_imagenet_parameters_match_imagecorruptions_in_distribution(name):
    """The public package (make_imagenet_c.py's definitions; its motion blur is the numpy port of
    ImageMagick's) on the same 224x224 images: the same mean |change| and spread of the change."""
    from noisymix_app.bench.bench_corruptions import _load_imagecorruptions

    ic = _load_imagecorruptions()
    if ic is None:
        pytest.skip("imagecorruptions (and scikit-image, OpenCV) not installed")
    x = R.photo(10, 224, 3)
    arrays = x.permute(0, 2, 3, 1).numpy()
    np.random.seed(0)  # noqa: NPY002 (the package draws from numpy's global generator)
    for severity in (1, 3, 5):
        ours = corrupt(x, name, severity, generator=torch.Generator().manual_seed(severity), params="imagenet")
        ours = ours.permute(0, 2, 3, 1).numpy().astype(np.float64) - arrays
        theirs = np.stack([ic.corrupt(a, severity=severity, corruption_name=name) for a in arrays])
        theirs = theirs.astype(np.float64) - arrays
        for stat in (lambda d: np.abs(d).mean(), np.std):
            assert abs(stat(ours) - stat(theirs)) <= 0.1 * stat(theirs) + 0.3, (severity, stat(ours), stat(theirs))


@pytest.mark.parametrize("params,size,n", CASES)
def test_batched_pixelate_is_bit_exact_with_pil(params, size, n):
    """The tensor pixelate (used on accelerators; ``corrupt`` calls PIL itself on the CPU)."""
    from fullscale.corruptions._draws import to_u8
    from fullscale.corruptions.digital import pixelate

    for severity in range(1, 6):
        x = R.photo(n, size, severity)
        c = SPECS["pixelate"].row(params, severity)
        ours = to_u8(pixelate(x.float() / 255, c, torch.Generator()))
        ref = np.stack([R.pixelate(im, c) for im in x.permute(0, 2, 3, 1).numpy()])
        assert _diff(ours, ref) == (0.0, 0.0), severity


@pytest.mark.parametrize("name", ["pixelate", "jpeg_compression"])
@pytest.mark.parametrize("params", ["cifar", "imagenet"])
@pytest.mark.parametrize("h,w", [(32, 32), (224, 224), (45, 70)])
def test_cpu_pixelate_and_jpeg_are_bit_identical_with_pil(name, params, h, w):
    """``corrupt`` on the CPU (PIL per image without transpositions, the JPEG decoded into a
    shared buffer, pixelate's upsizing as a gather) against the reference's own PIL calls."""
    g = torch.Generator().manual_seed(h * w)
    x = torch.nn.functional.interpolate(torch.rand(3, 3, h // 4, w // 4, generator=g), size=(h, w), mode="bilinear")
    x = (x * 255).round().to(torch.uint8)
    reference = R.pixelate if name == "pixelate" else R.jpeg
    for severity in range(1, 6):
        c = SPECS[name].row(params, severity)
        ours = corrupt(x, name, severity, generator=torch.Generator(), params=params)
        ref = np.stack([reference(im, c) for im in x.permute(0, 2, 3, 1).contiguous().numpy()])
        assert ours.shape == x.shape and ours.dtype == torch.uint8
        assert np.array_equal(ours.permute(0, 2, 3, 1).numpy(), ref), (name, params, severity)


def _reference_loop_on_indices(h: int, w: int, delta: int, offsets: np.ndarray) -> np.ndarray:
    """The reference's pixel loop, its line verbatim, on an (H, W, 3) image whose pixel k holds
    (k, k, k): what ends up at each position is the index of its source pixel."""
    x = np.repeat(np.arange(h * w, dtype=np.int64).reshape(h, w, 1), 3, axis=2)
    R.glass_pixel_loop(x, delta, offsets)
    assert (x == x[:, :, :1]).all()
    return x[:, :, 0].reshape(-1)


def test_glass_pixel_line_copies_and_does_not_swap():
    """3x3, delta 1: the only position is (2, 2); (dx, dy) = (-1, -1) copies pixel (1, 1) = 4
    into (2, 2) = 8 and leaves (1, 1) as it was (a swap would put 8 at position 4)."""
    from fullscale.corruptions.blur import _glass_sources

    expected = np.arange(9)
    expected[8] = 4
    assert (_reference_loop_on_indices(3, 3, 1, np.array([[[-1, -1]]])) == expected).all()
    assert (_glass_sources(np.array([[[[-1, -1]]]]), 3, 3, 1)[0] == expected).all()


@pytest.mark.parametrize("size,delta,iterations", [(5, 1, 2), (6, 2, 1), (7, 1, 3)])
def test_glass_sources_follow_the_reference_line_on_a_fixed_sequence(size, delta, iterations):
    """A small image and a fixed sequence of (dx, dy) draws, two images per batch: the batched
    bookkeeping puts the same source pixel at every position as the reference's loop."""
    from fullscale.corruptions.blur import _glass_sources

    steps = (size - 2 * delta) ** 2
    rng = np.random.default_rng(size * 10 + delta)
    offsets = rng.integers(-delta, delta, size=(iterations, steps, 2, 2))  # (it, step, image, dx/dy)
    ours = _glass_sources(offsets, size, size, delta)
    for i in range(2):
        assert (ours[i] == _reference_loop_on_indices(size, size, delta, offsets[:, :, i])).all()
