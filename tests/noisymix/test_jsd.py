"""The generalized JSD and the stability loss (paper Sec. 3.1 / end of Sec. 3.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from noisymix import (
    entropy,
    js_divergence,
    js_divergence_from_logits,
    jsd_consistency,
    max_js_divergence,
)


def _simplex(draw, k: int, allow_zeros: bool = False) -> list[float]:
    lo = 0.0 if allow_zeros else 1e-3
    # No subnormal draws: a probability below ~1e-320 times its weight underflows to 0 in the
    # float64 mixture, and p log(p / 0) is inf in any implementation of the probability form
    # (the logit form, js_divergence_from_logits, is the stable one there).
    raw = draw(st.lists(st.floats(lo, 1.0, allow_subnormal=False), min_size=k, max_size=k))
    if sum(raw) == 0:
        raw[0] = 1.0
    total = sum(raw)
    return [r / total for r in raw]


@st.composite
def distributions(draw, allow_zeros: bool = False):
    m = draw(st.integers(1, 5))
    k = draw(st.integers(2, 6))
    probs = torch.tensor([_simplex(draw, k, allow_zeros) for _ in range(m)], dtype=torch.float64)
    weights = torch.tensor(_simplex(draw, m, allow_zeros=False), dtype=torch.float64)
    return probs, weights


def _numpy_jsd(probs: np.ndarray, weights: np.ndarray) -> float:
    """The definition, written out with numpy: H(sum pi p) - sum pi H(p)."""
    def h(p):
        p = p[p > 0]
        return float(-(p * np.log(p)).sum())
    return h(weights @ probs) - sum(w * h(p) for w, p in zip(weights, probs))


@given(distributions(allow_zeros=True))
def test_entropy_and_kl_forms_agree_with_the_definition(case):
    probs, weights = case
    expected = _numpy_jsd(probs.numpy(), weights.numpy())
    assert js_divergence(probs, weights, form="entropy").item() == pytest.approx(expected, abs=1e-12)
    assert js_divergence(probs, weights, form="kl").item() == pytest.approx(expected, abs=1e-12)


@given(distributions())
def test_from_logits_equals_from_probabilities(case):
    probs, weights = case
    logits = probs.log() + torch.randn(probs.shape[0], 1, dtype=torch.float64)  # softmax-invariant shift
    assert js_divergence_from_logits(logits, weights).item() == pytest.approx(
        js_divergence(probs, weights).item(), abs=1e-12)


@given(distributions(allow_zeros=True))
def test_nonnegative_and_bounded_by_the_entropy_of_the_weights(case):
    probs, weights = case
    value = js_divergence(probs, weights).item()
    assert -1e-12 <= value <= max_js_divergence(weights) + 1e-12


@given(distributions())
def test_zero_iff_all_distributions_equal(case):
    probs, weights = case
    same = probs[:1].expand_as(probs)
    assert js_divergence(same, weights).item() == pytest.approx(0.0, abs=1e-14)
    if probs.shape[0] > 1 and not torch.allclose(probs, same, atol=1e-6):
        positive_weights = (weights > 1e-6).sum() > 1
        if positive_weights:
            differs = [not torch.allclose(p, probs[0], atol=1e-6) and w > 1e-6
                       for p, w in zip(probs[1:], weights[1:])]
            if any(differs) and weights[0] > 1e-6:
                assert js_divergence(probs, weights).item() > 0


@given(distributions(), st.randoms(use_true_random=False))
def test_symmetric_for_equal_weights(case, rnd):
    probs, _ = case
    order = list(range(probs.shape[0]))
    rnd.shuffle(order)
    assert js_divergence(probs[order]).item() == pytest.approx(js_divergence(probs).item(), abs=1e-13)


def test_two_distributions_match_scipy():
    # scipy's jensenshannon is the square root of JS_{1/2,1/2} in nats: an independent witness.
    gen = torch.Generator().manual_seed(3)
    for _ in range(20):
        p, q = torch.softmax(torch.randn(2, 7, generator=gen, dtype=torch.float64), -1)
        expected = jensenshannon(p.numpy(), q.numpy()) ** 2
        assert js_divergence(torch.stack([p, q])).item() == pytest.approx(expected, rel=1e-9)


def test_disjoint_supports_reach_the_bound():
    probs = torch.eye(3, dtype=torch.float64)
    weights = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    assert js_divergence(probs, weights).item() == pytest.approx(max_js_divergence(weights), rel=1e-12)
    assert max_js_divergence([1 / 3] * 3) == pytest.approx(math.log(3))


def test_batched_over_leading_dimensions():
    gen = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(3, 4, 5, 6, generator=gen, dtype=torch.float64), -1)
    batched = js_divergence(probs)
    assert batched.shape == (4, 5)
    assert batched[2, 3].item() == pytest.approx(js_divergence(probs[:, 2, 3]).item(), abs=1e-15)


def test_saturated_logits_stay_finite():
    logits = torch.tensor([[[1000.0, -1000.0]], [[-1000.0, 1000.0]]], dtype=torch.float64)
    value = js_divergence_from_logits(logits)
    assert torch.isfinite(value).all()
    assert value.item() == pytest.approx(math.log(2), rel=1e-12)


def test_entropy_of_uniform():
    assert entropy(torch.full((8,), 1 / 8, dtype=torch.float64)).item() == pytest.approx(math.log(8))


def _public_augmix_loss(z: torch.Tensor) -> torch.Tensor:
    """The public AugMix/NoisyMix training script's JSD term, written out as there."""
    p_clean, p_aug1, p_aug2 = (F.softmax(v, dim=1) for v in z)
    p_mixture = torch.clamp((p_clean + p_aug1 + p_aug2) / 3.0, 1e-7, 1).log()
    return (F.kl_div(p_mixture, p_clean, reduction="batchmean")
            + F.kl_div(p_mixture, p_aug1, reduction="batchmean")
            + F.kl_div(p_mixture, p_aug2, reduction="batchmean")) / 3.0


@given(st.integers(1, 8), st.integers(2, 10), st.floats(0.1, 3.0), st.integers(0, 2**31 - 1))
def test_consistency_variants_agree_where_the_clamp_is_inactive(batch, k, scale, seed):
    gen = torch.Generator().manual_seed(seed)
    z = scale * torch.randn(3, batch, k, generator=gen, dtype=torch.float64)
    exact = jsd_consistency(z, variant="exact")
    public = jsd_consistency(z, variant="augmix")
    assert public.item() == pytest.approx(_public_augmix_loss(z).item(), abs=1e-12)
    mixture_min = torch.softmax(z, -1).mean(0).min().item()
    assume_inactive = mixture_min >= 1e-7
    if assume_inactive:
        assert exact.item() == pytest.approx(public.item(), abs=1e-10)


def test_consistency_variants_differ_where_the_clamp_bites():
    # One view gives class 1 probability 2e-8, the others ~e-87: the mixture there is ~6.7e-9,
    # below the public clamp of 1e-7.  Exactly, that class contributes
    # (2e-8 / 3) ln(2e-8 / 6.67e-9) > 0; the clamped estimate makes it negative.
    tiny = math.log(2e-8 / (1 - 2e-8) * 2)
    z = torch.tensor([[[0.0, -200.0, 0.0]], [[0.0, -200.0, 0.0]], [[0.0, tiny, 0.0]]], dtype=torch.float64)
    exact = jsd_consistency(z, variant="exact").item()
    public = jsd_consistency(z, variant="augmix").item()
    p = 2e-8
    expected_term = p / 3 * math.log(p / (p / 3))
    assert exact == pytest.approx(expected_term, rel=1e-3)
    assert public < 0 < exact


@pytest.mark.parametrize("bad", [[0.5, 0.6], [1.2, -0.2], [float("nan"), 1.0], [0.5, 0.5, 0.0]])
def test_weights_must_be_on_the_simplex(bad):
    probs = torch.full((2, 3), 1 / 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="weights"):
        js_divergence(probs, bad)


def test_shapes_that_disagree_raise():
    with pytest.raises(ValueError, match="same shape"):
        js_divergence([torch.ones(3) / 3, torch.ones(4) / 4])
    with pytest.raises(ValueError, match="form"):
        js_divergence(torch.full((2, 3), 1 / 3), form="cosine")
    with pytest.raises(ValueError, match=r"\(M, B, K\)"):
        jsd_consistency(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="variant"):
        jsd_consistency(torch.zeros(3, 2, 4), variant="mean")
