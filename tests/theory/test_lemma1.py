"""Lemma 1: mixing with lambda ~ Beta(alpha, beta) and mixed labels has the same loss as lambda ~
tilde-D and the anchor's label alone (any loss linear in the label)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from theory.calculus import eps_grid, fit_slope
from theory.laws import beta_law, covariance_law, independent_noise, vicinal_law
from theory.models import build_model
from theory.nfm import nfm_loss
from theory.problems import Family, make_data

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def _examples(default_share: int) -> int:
    """A share of the active hypothesis profile (40 examples by default; 500 with 'thorough')."""
    return max(default_share, settings.default.max_examples * default_share // 40)


@st.composite
def problems(draw):
    dim = draw(st.integers(1, 3))
    classes = draw(st.sampled_from([None, 2, 3, 4]))
    model = build_model(
        draw(st.sampled_from(["tanh-mlp", "softplus-mlp"])),
        dim,
        classes,
        seed=draw(st.integers(0, 1000)),
        width=4,
    )
    data = make_data(draw(st.integers(2, 4)), dim, classes=classes or 2, seed=draw(st.integers(0, 1000)))
    g = torch.Generator().manual_seed(draw(st.integers(0, 1000)))
    a = torch.randn(dim, dim, generator=g, dtype=torch.float64)
    noise = independent_noise(
        a @ a.T + 0.1 * torch.eye(dim, dtype=torch.float64), torch.eye(dim, dtype=torch.float64)
    )
    return (
        model,
        data,
        noise,
        draw(st.floats(0.3, 4.0)),
        draw(st.floats(0.3, 4.0)),
        draw(st.floats(0, 1.5)),
        draw(st.floats(0, 1.5)),
    )


@settings(max_examples=_examples(25))
@given(problems())
def test_label_mixing_with_beta_equals_the_vicinal_law_without(problem):
    model, data, noise, alpha, beta, s_add, s_mult = problem
    mixed = nfm_loss(
        model, data, Family(beta_law(alpha, beta, 64), noise, s_add, s_mult), 1.0, label_mixing=True
    )
    vicinal = nfm_loss(model, data, Family(vicinal_law(alpha, beta, 64), noise, s_add, s_mult), 1.0)
    assert math.isclose(float(mixed), float(vicinal), rel_tol=1e-9)


def test_lemma1_against_a_plain_loop_with_scipy_quadrature():
    """The left side computed the obvious way: for every pair (i, j) and noise atom, integrate
    l(p(M_{lambda,xi}(x_i, x_j)), M_lambda(y_i, y_j)) against the Beta density with scipy."""
    alpha, beta, s_add, s_mult = 2.0, 1.3, 0.5, 0.3
    n = 2
    model = build_model("tanh-mlp", 2, seed=4, width=5)
    data = make_data(n, 2, seed=4)
    xi = covariance_law(torch.tensor([[1.0, 0.3], [0.3, 0.5]], dtype=torch.float64))
    noise = independent_noise(xi_cov := torch.tensor([[1.0, 0.3], [0.3, 0.5]], dtype=torch.float64), xi_cov)
    x, y = data.x.numpy(), data.labels.numpy().astype(float)
    pdf = stats.beta(alpha, beta).pdf
    total = 0.0
    for i in range(n):
        for j in range(n):
            for add in xi.atoms.numpy():
                for mult in xi.atoms.numpy():

                    def integrand(lam, i=i, j=j, add=add, mult=mult):
                        point = (1 + s_mult * mult) * (lam * x[i] + (1 - lam) * x[j]) + s_add * add
                        z = float(model(torch.as_tensor(point)))
                        label = lam * y[i] + (1 - lam) * y[j]
                        return pdf(lam) * (math.log1p(math.exp(z)) - label * z)

                    value, _ = integrate.quad(integrand, 0, 1, epsabs=1e-12, epsrel=1e-11)
                    total += value / (n**2 * len(xi.atoms) ** 2)
    vicinal = nfm_loss(model, data, Family(vicinal_law(alpha, beta, 32), noise, s_add, s_mult), 1.0)
    assert math.isclose(total, float(vicinal), rel_tol=1e-8)
    uniform = nfm_loss(
        model, data, Family(vicinal_law(alpha, beta, 32, uniform=True), noise, s_add, s_mult), 1.0
    )
    assert not math.isclose(
        total, float(uniform), rel_tol=1e-4
    )  # 'uniform mixture' is wrong for alpha != beta


def test_uniform_reading_is_right_only_for_equal_parameters():
    model = build_model("softplus-mlp", 2, 3, seed=2, width=4)
    data = make_data(4, 2, classes=3, seed=2)
    noise = independent_noise(torch.eye(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64))
    for alpha, beta, same in ((1.7, 1.7, True), (1.7, 0.4, False)):
        mixed = nfm_loss(
            model, data, Family(beta_law(alpha, beta, 32), noise, 0.3, 0.2), 1.0, label_mixing=True
        )
        uniform = nfm_loss(
            model, data, Family(vicinal_law(alpha, beta, 32, uniform=True), noise, 0.3, 0.2), 1.0
        )
        assert math.isclose(float(mixed), float(uniform), rel_tol=1e-9) is same


def test_rescaling_before_the_identity_changes_the_family_at_first_order():
    model = build_model("tanh-mlp", 2, seed=1, width=4)
    data = make_data(4, 2, seed=1)
    noise = independent_noise(torch.eye(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64))
    eps = eps_grid(5, 1e-3, 1e-1)
    gap = [
        float(nfm_loss(model, data, Family(beta_law(2.0, 0.7, 16), noise, 0.3, 0.2), e, label_mixing=True))
        - float(nfm_loss(model, data, Family(vicinal_law(2.0, 0.7, 16), noise, 0.3, 0.2), e))
        for e in eps
    ]
    assert abs(fit_slope(eps, np.array(gap)) - 1.0) < 0.15


def test_k_class_loss_is_the_cross_entropy_linear_in_the_label():
    model = build_model("tanh-mlp", 2, 3, seed=0, width=4)
    data = make_data(3, 2, classes=3, seed=0)
    noise = independent_noise(torch.eye(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64))
    loss = nfm_loss(model, data, Family(beta_law(1.0, 1.0, 4), noise, 0.0, 0.0), 0.0)
    expected = F.cross_entropy(model(data.x), data.labels)
    assert math.isclose(float(loss), float(expected), rel_tol=1e-12)
