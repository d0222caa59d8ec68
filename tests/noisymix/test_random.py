"""Generator-driven Beta / Dirichlet / Gamma draws and Lemma 1's vicinal law."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from noisymix import generator_for, sample_beta, sample_dirichlet, vicinal_components
from noisymix.random import _log_gamma

N = 200_000


@given(st.floats(0.2, 5.0), st.floats(0.2, 5.0))
def test_beta_moments(a, b):
    x = sample_beta(a, b, (N,), generator=generator_for(0), dtype=torch.float64)
    mean = a / (a + b)
    var = a * b / ((a + b) ** 2 * (a + b + 1))
    assert x.min().item() >= 0 and x.max().item() <= 1
    assert x.mean().item() == pytest.approx(mean, abs=4 * (var / N) ** 0.5 + 1e-4)
    assert x.var().item() == pytest.approx(var, rel=0.05)


def test_same_seed_same_draws_other_seed_other_draws():
    one = sample_beta(1.0, 1.0, (10,), generator=generator_for(42))
    two = sample_beta(1.0, 1.0, (10,), generator=generator_for(42))
    three = sample_beta(1.0, 1.0, (10,), generator=generator_for(43))
    assert torch.equal(one, two) and not torch.equal(one, three)


def test_tiny_concentrations_put_beta_mass_at_the_endpoints():
    x = sample_beta(1e-3, 1e-3, (20000,), generator=generator_for(1), dtype=torch.float64)
    assert torch.isfinite(x).all()
    assert ((x < 1e-6) | (x > 1 - 1e-6)).float().mean().item() > 0.95
    assert (x > 0.5).float().mean().item() == pytest.approx(0.5, abs=0.03)


def test_dirichlet_on_the_simplex_with_the_right_mean():
    conc = torch.tensor([1.0, 2.0, 3.0])
    w = sample_dirichlet(conc, (N,), generator=generator_for(0), dtype=torch.float64)
    assert w.shape == (N, 3)
    torch.testing.assert_close(w.sum(-1), torch.ones(N, dtype=torch.float64))
    torch.testing.assert_close(w.mean(0), (conc / conc.sum()).double(), atol=3e-3, rtol=0)


def test_gamma_draws_have_the_gamma_mean_and_variance():
    # Gamma(a, 1): mean a, variance a (the draws behind the Beta and Dirichlet samplers)
    x = _log_gamma(2.5, (N,), generator_for(2)).exp()
    assert x.mean().item() == pytest.approx(2.5, rel=0.01)
    assert x.var().item() == pytest.approx(2.5, rel=0.03)


def test_vicinal_components_are_lemma_1s_law():
    # a/(a+b) Beta(a+1, b) + b/(a+b) Beta(b+1, a), written out for a = 2, b = 0.7.
    first, second = vicinal_components(2.0, 0.7)
    assert first == pytest.approx((2 / 2.7, 3.0, 0.7)) and second == pytest.approx((0.7 / 2.7, 1.7, 2.0))


@pytest.mark.parametrize("call", [
    lambda g: sample_beta(0.0, 1.0, generator=g),
    lambda g: sample_beta(1.0, -2.0, generator=g),
    lambda g: _log_gamma(float("nan"), (), g),
    lambda g: sample_dirichlet([1.0], generator=g),
    lambda g: sample_dirichlet([1.0, 0.0], generator=g),
])
def test_invalid_parameters_raise(call):
    with pytest.raises(ValueError):
        call(generator_for(0))
