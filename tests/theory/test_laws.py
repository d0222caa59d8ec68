"""The finite-support laws that make every expectation an exact sum (theory.laws).

References are independent of theory.laws: scipy.stats Beta moments and scipy.integrate.quad."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

from noisymix import generator_for
from theory.laws import (
    DiscreteLaw,
    NoiseLaw,
    beta_law,
    beta_moments,
    covariance_law,
    independent_noise,
    joint_noise,
    mixture_law,
    point_law,
    vicinal_law,
    vicinal_moments,
)
from theory.problems import random_covariance

shape = st.floats(0.2, 5.0)


@given(alpha=shape, beta=shape, nodes=st.integers(2, 10))
def test_gauss_jacobi_rule_has_the_beta_moments(alpha, beta, nodes):
    law = beta_law(alpha, beta, nodes)
    assert bool(((law.atoms > 0) & (law.atoms < 1)).all())
    assert math.isclose(float(law.weights.sum()), 1.0, abs_tol=1e-12)
    one_minus = stats.beta(beta, alpha)  # 1 - lambda ~ Beta(beta, alpha)
    for k in range(1, min(2 * nodes - 1, 6) + 1):
        # the closed form E[X^k] = prod_{i<k} (b + i) / (a + b + i) of X ~ Beta(b, a): scipy's
        # beta.moment(k) for k >= 5 is off by 2e-7 relative at alpha=1.9004, beta=0.25 (scipy 1.17),
        # where the rule agrees with the closed form to 1e-16
        exact = math.prod((beta + i) / (alpha + beta + i) for i in range(k))
        assert math.isclose(law.one_minus_moment(k), exact, rel_tol=1e-10)
    m1, m2 = beta_moments(alpha, beta)
    assert math.isclose(m1, one_minus.moment(1), rel_tol=1e-12)
    assert math.isclose(m2, one_minus.moment(2), rel_tol=1e-12)


@given(alpha=shape, beta=shape, c=st.floats(-2.0, 2.0))
def test_vicinal_law_is_beta_tilted_by_the_label_weights(alpha, beta, c):
    """tilde-D is defined by E_{tilde-D}[g] = E_{Beta(a,b)}[lambda g(lambda) + (1 - lambda) g(1 - lambda)]."""

    def g(t):
        return math.cos(c * t) + t**3

    pdf = stats.beta(alpha, beta).pdf
    reference, _ = integrate.quad(lambda t: pdf(t) * (t * g(t) + (1 - t) * g(1 - t)), 0, 1, limit=200)
    law = vicinal_law(alpha, beta, 24)
    ours = float(law.expect(torch.cos(c * law.atoms) + law.atoms**3))
    assert math.isclose(ours, reference, rel_tol=1e-6, abs_tol=1e-8)
    m1, m2 = vicinal_moments(alpha, beta)
    assert math.isclose(law.one_minus_moment(1), m1, rel_tol=1e-10)
    assert math.isclose(law.one_minus_moment(2), m2, rel_tol=1e-10)


def test_uniform_reading_of_tilde_d_has_equal_weights():
    law = vicinal_law(2.0, 0.5, 4, uniform=True)
    assert math.isclose(float(law.weights[:4].sum()), 0.5)
    printed = vicinal_law(2.0, 0.5, 4)
    assert math.isclose(float(printed.weights[:4].sum()), 2.0 / 2.5)


@given(dim=st.integers(1, 5), seed=st.integers(0, 10**6), rank=st.integers(0, 5))
def test_covariance_law_has_zero_mean_and_exactly_the_covariance(dim, seed, rank):
    g = generator_for(seed)
    a = torch.randn(dim, min(rank, dim), generator=g, dtype=torch.float64)
    cov = a @ a.T + (0.1 * torch.eye(dim, dtype=torch.float64) if rank == 0 else 0)
    law = covariance_law(cov)
    assert torch.allclose(law.expect(law.atoms), torch.zeros(dim, dtype=torch.float64), atol=1e-14)
    second = torch.einsum("a,ai,aj->ij", law.weights, law.atoms, law.atoms)
    assert torch.allclose(second, cov, atol=1e-12)


def test_independent_and_correlated_noise_laws():
    g = generator_for(3)
    ca, cm = random_covariance(3, g), random_covariance(3, g)
    noise = independent_noise(ca, cm)
    assert torch.allclose(noise.cov_add, ca) and torch.allclose(noise.cov_mult, cm)
    assert torch.allclose(noise.cross, torch.zeros(3, 3, dtype=torch.float64), atol=1e-15)
    joint = random_covariance(6, g)
    corr = joint_noise(joint)
    assert torch.allclose(corr.cross, joint[:3, 3:], atol=1e-12)
    assert torch.allclose(corr.cov_add, joint[:3, :3], atol=1e-12)


def test_point_and_mixture_laws():
    law = mixture_law([point_law(0.25), point_law(1.0)], [0.3, 0.7], "two atoms")
    assert np.isclose(law.one_minus_moment(1), 0.3 * 0.75)


@pytest.mark.parametrize(
    "make",
    [
        lambda: beta_law(0.0, 1.0),
        lambda: beta_law(1.0, -2.0),
        lambda: beta_law(1.0, 1.0, 0),
        lambda: vicinal_law(float("nan"), 1.0),
        lambda: covariance_law(torch.tensor([[1.0, 2.0], [0.0, 1.0]])),
        lambda: covariance_law(torch.tensor([[1.0, 0.0], [0.0, -1.0]])),
        lambda: covariance_law(torch.ones(3)),
        lambda: mixture_law([point_law()], [0.5], "bad"),
        lambda: mixture_law([point_law(), point_law()], [1.0], "bad"),
        lambda: DiscreteLaw(torch.zeros(3), torch.ones(2) / 2, "bad"),
        lambda: NoiseLaw(torch.zeros(2, 3), torch.zeros(2, 2), torch.ones(2) / 2, "bad"),
        lambda: joint_noise(torch.eye(3)),
        lambda: independent_noise(torch.eye(2), torch.eye(3)),
    ],
)
def test_invalid_laws_raise_value_error(make):
    with pytest.raises(ValueError):
        make()
