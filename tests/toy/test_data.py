"""The toy data generator: sizes, split, class balance, random band labels, determinism.

References are independent of ``toy.data``: matplotlib's ``Path.contains_points`` for the
inside test, a dense NumPy sampling of each edge for the band distance, and a fine grid over
the disk for the expected class balance.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.path import Path

from noisymix import generator_for
from toy.data import (
    INSIDE,
    ON_BAND,
    OUTSIDE,
    POLYGON,
    ToyDataConfig,
    band_distance,
    inside_polygon,
    make_toy_data,
)

POLY = np.array(POLYGON)


def _edge_distance_reference(points: np.ndarray) -> np.ndarray:
    """Distance to the boundary by sampling every edge at 1001 points (error <= 1.5e-3)."""
    t = np.linspace(0, 1, 1001)[:, None]
    samples = np.concatenate([a + t * (b - a) for a, b in zip(POLY, np.roll(POLY, -1, axis=0))])
    return np.min(np.linalg.norm(points[:, None, :] - samples[None], axis=-1), axis=1)


def _numpy_distance(points: np.ndarray) -> np.ndarray:
    """Distance to the boundary, closed-form segment projection in float64 NumPy (checked
    against the sampled reference above)."""
    a, b = POLY, np.roll(POLY, -1, axis=0)
    d = b - a
    rel = points[:, None, :] - a[None]
    t = np.clip((rel * d).sum(-1) / (d * d).sum(-1), 0, 1)
    return np.linalg.norm(rel - t[..., None] * d, axis=-1).min(1)


def test_numpy_distance_matches_the_sampled_reference():
    pts = np.random.default_rng(2).uniform(-2, 2, size=(500, 2))
    np.testing.assert_allclose(_numpy_distance(pts), _edge_distance_reference(pts), atol=2e-3)


@functools.lru_cache
def _expected_class1_fraction(cfg: ToyDataConfig, n: int = 801) -> float:
    """P(y = 1) = (area inside and off the band + area of the band / 2) / disk area, by a
    midpoint grid over the disk with the matplotlib / NumPy references."""
    axis = (np.arange(n) + 0.5) / n * 2 * cfg.radius - cfg.radius
    xx, yy = np.meshgrid(axis, axis)
    pts = np.stack([xx.ravel(), yy.ravel()], 1)
    pts = pts[(pts**2).sum(1) <= cfg.radius**2]
    inside = Path(POLY).contains_points(pts)
    band = _numpy_distance(pts) <= cfg.band_halfwidth
    return float(((inside & ~band).sum() + 0.5 * band.sum()) / pts.shape[0])


def test_polygon_is_concave_and_simple_enough():
    cross = []
    for i in range(len(POLY)):
        a, b, c = POLY[i - 1], POLY[i], POLY[(i + 1) % len(POLY)]
        u, v = b - a, c - b
        cross.append(u[0] * v[1] - u[1] * v[0])
    signs = np.sign(cross)
    assert (signs > 0).sum() >= 1 and (signs < 0).sum() >= 1          # a reflex vertex: concave
    # simple (no self-crossing): the shoelace area equals the area inside, by Monte Carlo with
    # matplotlib's inside test
    shoelace = abs(sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(POLY, np.roll(POLY, -1, axis=0)))) / 2
    rng = np.random.default_rng(0)
    pts = rng.uniform(-2, 2, size=(400_000, 2))
    assert shoelace == pytest.approx(Path(POLY).contains_points(pts).mean() * 16, rel=0.02)


def test_inside_and_distance_match_independent_references():
    rng = np.random.default_rng(1)
    pts = rng.uniform(-2, 2, size=(1000, 2))
    ours_inside = inside_polygon(torch.tensor(pts)).numpy()
    assert np.array_equal(ours_inside, Path(POLY).contains_points(pts))
    ours_distance = band_distance(torch.tensor(pts)).numpy()
    np.testing.assert_allclose(ours_distance, _edge_distance_reference(pts), atol=2e-3)


@settings(max_examples=30)
@given(seed=st.integers(0, 2**40), n_points=st.integers(2, 700), data=st.data())
def test_sizes_and_split(seed, n_points, data):
    n_train = data.draw(st.integers(1, n_points - 1))
    cfg = ToyDataConfig(n_points=n_points, n_train=n_train)
    d = make_toy_data(cfg, generator=generator_for(seed))
    assert d.x.shape == (n_points, 2) and d.x.dtype == torch.float32
    assert d.y.shape == (n_points,) and set(d.y.unique().tolist()) <= {0, 1}
    assert d.train.numel() == n_train and d.test.numel() == n_points - n_train
    assert sorted(torch.cat([d.train, d.test]).tolist()) == list(range(n_points))   # a partition
    assert d.x_train.shape == (n_train, 2) and d.y_test.shape == (n_points - n_train,)


@settings(max_examples=20)
@given(seed=st.integers(0, 2**40), n_points=st.integers(2, 300))
def test_deterministic_per_generator_seed(seed, n_points):
    cfg = ToyDataConfig(n_points=n_points, n_train=1)
    a = make_toy_data(cfg, generator=generator_for(seed))
    b = make_toy_data(cfg, generator=generator_for(seed))
    for name in ("x", "y", "clean", "region", "train", "test"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    c = make_toy_data(cfg, generator=generator_for(seed + 1))
    assert not torch.equal(a.x, c.x)


def test_paper_sizes_by_default():
    d = make_toy_data(generator=generator_for(0))
    assert d.x.shape == (500, 2) and d.train.numel() == 250 and d.test.numel() == 250


@settings(max_examples=10)
@given(seed=st.integers(0, 2**40))
def test_class_balance_within_binomial_bounds(seed):
    cfg = ToyDataConfig(n_points=4000, n_train=2000)
    expected = _expected_class1_fraction(cfg)
    d = make_toy_data(cfg, generator=generator_for(seed))
    bound = 5 * math.sqrt(expected * (1 - expected) / cfg.n_points)
    assert abs(d.y.double().mean().item() - expected) < bound
    assert 0.15 < expected < 0.35                   # the two classes are both well represented


def test_labels_follow_the_regions_and_band_labels_are_coin_flips():
    cfg = ToyDataConfig(n_points=40_000, n_train=20_000)
    d = make_toy_data(cfg, generator=generator_for(7))
    clean = (d.clean / cfg.scale).double().numpy()       # back to the shape frame
    inside = Path(POLY).contains_points(clean)
    distance = _numpy_distance(clean)
    band = distance <= cfg.band_halfwidth
    sure = np.abs(distance - cfg.band_halfwidth) > 1e-6   # not on the band's rim (float ties)
    y, region = d.y.numpy(), d.region.numpy()
    assert np.array_equal((region == ON_BAND)[sure], band[sure])
    off = ~band & sure
    assert np.array_equal(y[off], inside[off].astype(int))                      # off the band
    assert np.array_equal(region[off], np.where(inside[off], INSIDE, OUTSIDE))
    on = band & sure
    n_band = on.sum()
    assert n_band > 3000
    for part in (on, on & inside, on & ~inside):          # fair coin on both sides of the edge
        k = part.sum()
        assert abs(y[part].mean() - 0.5) < 5 * math.sqrt(0.25 / k)


def test_noise_and_scale():
    cfg = ToyDataConfig(n_points=20_000, n_train=10_000)
    d = make_toy_data(cfg, generator=generator_for(3))
    residual = (d.x - d.clean).double()
    sd = cfg.scale * cfg.noise_sd
    assert residual.mean(0).abs().max().item() < 5 * sd / math.sqrt(cfg.n_points)
    np.testing.assert_allclose(residual.std(0).numpy(), [sd, sd], rtol=0.03)
    assert d.clean.norm(dim=1).max().item() <= cfg.scale * cfg.radius + 1e-6


@pytest.mark.parametrize("kwargs", [dict(n_points=1), dict(n_train=0), dict(n_train=500),
                                    dict(scale=0.0), dict(noise_sd=-1.0), dict(polygon=((0, 0), (1, 1)))])
def test_bad_config_is_a_value_error(kwargs):
    with pytest.raises(ValueError):
        ToyDataConfig(**kwargs)
