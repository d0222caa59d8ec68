"""M_lambda, the noisy mixing operator M_{lambda,xi}, label mixing and the step sampler."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from noisymix import (
    MixConfig,
    MixDraw,
    NoiseConfig,
    cutmix,
    draw_mix,
    generator_for,
    mix,
    mix_targets,
    noisy_feature_mixup,
    noisy_mix,
    perturb,
    sample_noise,
)
from noisymix.loss import soft_cross_entropy

shapes = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


@given(shapes, st.integers(0, 2**31 - 1))
def test_lambda_one_and_no_noise_is_the_identity(shape, seed):
    gen = generator_for(seed)
    a, b = torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)
    assert torch.equal(noisy_mix(a, b, 1.0), a)
    assert torch.equal(noisy_mix(a, b, 0.0), b)
    xi = torch.randn(shape, generator=gen)
    assert torch.equal(noisy_mix(a, b, 1.0, xi_mult=xi, xi_add=xi, sigma_mult=0.0, sigma_add=0.0), a)


@given(shapes, st.floats(0, 1), st.floats(0, 2), st.floats(0, 2), st.integers(0, 2**31 - 1))
def test_noisy_mix_is_the_papers_formula(shape, lam, s_mult, s_add, seed):
    gen = generator_for(seed)
    a, b, xm, xa = (torch.randn(shape, generator=gen, dtype=torch.float64) for _ in range(4))
    expected = (1 + s_mult * xm) * (lam * a + (1 - lam) * b) + s_add * xa
    got = noisy_mix(a, b, lam, xi_mult=xm, xi_add=xa, sigma_mult=s_mult, sigma_add=s_add)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def test_per_sample_lambda_broadcasts_over_trailing_dims():
    a, b = torch.ones(3, 2, 2), torch.zeros(3, 2, 2)
    lam = torch.tensor([0.0, 0.5, 1.0])
    out = mix(a, b, lam)
    assert out[:, 0, 0].tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match="leading dimensions"):
        mix(a, b, torch.ones(2))
    with pytest.raises(ValueError, match="cannot mix"):
        mix(a, torch.zeros(3, 2), 0.5)


@given(st.integers(1, 6), st.integers(2, 7), st.floats(0, 1), st.integers(0, 2**31 - 1))
def test_label_mixing_is_linear_in_the_labels(batch, k, lam, seed):
    gen = generator_for(seed)
    logits = torch.randn(batch, k, generator=gen, dtype=torch.float64)
    y = torch.randint(0, k, (batch,), generator=gen)
    perm = torch.randperm(batch, generator=gen)
    draw = MixDraw(perm=perm, lam=torch.tensor(lam, dtype=torch.float64))
    expected = lam * F.cross_entropy(logits, y) + (1 - lam) * F.cross_entropy(logits, y[perm])
    soft = mix_targets(y, draw, k)
    assert soft_cross_entropy(logits, soft).item() == pytest.approx(expected.item(), abs=1e-12)
    torch.testing.assert_close(soft.sum(-1), torch.ones(batch, dtype=torch.float64))


def test_soft_cross_entropy_checks_shapes():
    with pytest.raises(ValueError, match="differ in shape"):
        soft_cross_entropy(torch.zeros(2, 3), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="num_classes"):
        mix_targets(torch.zeros(2, dtype=torch.long), MixDraw(torch.arange(2), torch.tensor(0.5)))


@given(st.integers(1, 8), st.sampled_from([1, 3]), st.integers(0, 2**31 - 1))
def test_feature_mixup_without_noise_mixes_each_view_with_the_same_partners(batch, views, seed):
    gen = generator_for(seed)
    cfg = MixConfig(alpha=1.0, noise=NoiseConfig())
    draw = draw_mix(batch, cfg, generator=gen)
    h = torch.randn(views * batch, 4, 2, generator=gen)
    out = noisy_feature_mixup(h, draw, cfg, generator=gen, views=views)
    for v in range(views):
        block = h[v * batch:(v + 1) * batch]
        expected = draw.lam * block + (1 - draw.lam) * block[draw.perm]
        torch.testing.assert_close(out[v * batch:(v + 1) * batch], expected)
    assert sorted(draw.perm.tolist()) == list(range(batch))


def test_alpha_zero_means_no_mixing():
    gen = generator_for(0)
    cfg = MixConfig(alpha=0.0)
    draw = draw_mix(5, cfg, generator=gen)
    h = torch.randn(5, 3, generator=gen)
    assert draw.lam.item() == 1.0
    assert torch.equal(noisy_feature_mixup(h, draw, cfg, generator=gen), h)


def test_groups_get_their_own_partners_and_lambdas():
    gen = generator_for(1)
    cfg = MixConfig(alpha=1.0)
    draw = draw_mix(6, cfg, generator=gen, groups=(4,))
    assert draw.perm.shape == (4, 6) and draw.lam.shape == (4,)
    h = torch.randn(4, 12, 3, generator=gen)
    out = noisy_feature_mixup(h, draw, cfg, generator=gen, views=2)
    for g in range(4):
        single = MixDraw(perm=draw.perm[g], lam=draw.lam[g])
        torch.testing.assert_close(out[g], noisy_feature_mixup(h[g], single, cfg, generator=gen, views=2))
    assert len({tuple(p.tolist()) for p in draw.perm}) > 1


def _noise_only(views: int, batch: int, noise: NoiseConfig, seed: int = 0) -> torch.Tensor:
    """Output minus input with lambda = 1: the additive noise of each view."""
    gen = generator_for(seed)
    cfg = MixConfig(alpha=0.0, noise=noise)
    draw = draw_mix(batch, cfg, generator=gen)
    h = torch.zeros(views * batch, 64)
    return noisy_feature_mixup(h, draw, cfg, generator=gen, views=views).reshape(views, batch, 64)


def test_public_code_scales_the_additive_level_by_the_split_index():
    noise = NoiseConfig(add=0.5, magnitude="fixed", split_add_scaling="index")
    stds = _noise_only(3, 400, noise).std(dim=(1, 2))
    torch.testing.assert_close(stds, torch.tensor([0.5, 1.0, 1.5]), rtol=0.03, atol=0)
    plain = NoiseConfig(add=0.5, magnitude="fixed", split_add_scaling="none")
    torch.testing.assert_close(_noise_only(3, 400, plain).std(dim=(1, 2)), torch.full((3,), 0.5),
                               rtol=0.03, atol=0)


def test_shared_noise_is_identical_across_views_and_independent_noise_is_not():
    shared = _noise_only(3, 50, NoiseConfig(add=0.3, split_add_scaling="none", split_noise="shared"))
    assert torch.equal(shared[0], shared[1]) and torch.equal(shared[0], shared[2])
    fresh = _noise_only(3, 50, NoiseConfig(add=0.3, split_add_scaling="none"))
    assert not torch.equal(fresh[0], fresh[1])


@given(st.floats(0.05, 0.95))
def test_sparse_level_is_the_fraction_left_without_noise(sparse):
    gen = generator_for(7)
    mult, add = sample_noise((20000,), NoiseConfig(add=1.0, mult=1.0, sparse=sparse), generator=gen)
    for term in (mult, add):
        assert (term == 0).float().mean().item() == pytest.approx(sparse, abs=0.02)


def test_multiplicative_noise_law_and_beta25_magnitude():
    gen = generator_for(3)
    fixed = NoiseConfig(mult=0.6, magnitude="fixed")
    mult, add = sample_noise((100000,), fixed, generator=gen)
    assert add is None
    assert mult.abs().max().item() <= 0.6
    assert mult.var().item() == pytest.approx(0.36 / 3, rel=0.03)  # U(-1, 1) has variance 1/3
    # Beta(2, 5) magnitudes: one per view, mean 2/7 of the level.
    beta = NoiseConfig(add=1.0, magnitude="beta25")
    mags = torch.stack([sample_noise((2, 4000), beta, generator=gen, view_dims=1)[1].std(dim=1)
                        for _ in range(300)])
    assert mags.mean().item() == pytest.approx(2 / 7, rel=0.05)
    assert (mags[:, 0] != mags[:, 1]).all()


def test_perturb_leaves_the_input_alone_without_noise():
    x = torch.randn(4, 3)
    assert torch.equal(perturb(x, NoiseConfig(), generator=generator_for(0)), x)


@pytest.mark.parametrize("field, value", [("add", -0.1), ("mult", -1.0), ("sparse", 1.5),
                                          ("magnitude", "gauss"), ("split_noise", "both")])
def test_invalid_noise_settings_raise(field, value):
    with pytest.raises(ValueError):
        dataclasses.replace(NoiseConfig(), **{field: value})


def test_invalid_mixing_arguments_raise():
    with pytest.raises(ValueError, match="alpha"):
        MixConfig(alpha=-1.0)
    with pytest.raises(ValueError, match="sigma_add"):
        noisy_mix(torch.ones(2), torch.ones(2), 0.5, sigma_add=-1.0)
    with pytest.raises(ValueError, match="batch_size"):
        draw_mix(0, MixConfig(), generator=generator_for(0))
    with pytest.raises(ValueError, match="views"):
        noisy_feature_mixup(torch.ones(7, 2), draw_mix(3, MixConfig(), generator=generator_for(0)),
                            MixConfig(), generator=generator_for(0), views=3)


def test_cutmix_keeps_the_outside_and_reports_the_kept_area():
    gen = generator_for(5)
    x = torch.arange(2 * 1 * 8 * 8, dtype=torch.float32).reshape(2, 1, 8, 8)
    draw = MixDraw(perm=torch.tensor([1, 0]), lam=torch.tensor(0.75))
    out, new = cutmix(x, draw, generator=gen)
    changed = (out != x).float().mean().item()
    assert 1 - new.lam.item() == pytest.approx(changed, abs=1e-6)
    assert torch.equal(out[0][out[0] != x[0]], x[1][out[0] != x[0]])


@pytest.mark.parametrize("split_noise", ["independent", "shared"])
def test_sampled_noise_enters_with_its_sign_in_the_documented_draw_order(split_noise):
    # The laws above are symmetric in xi, so a flipped sign would pass them; here the draws are
    # replayed by hand in the documented order (xi_add ~ N(0, 1) first, then xi_mult ~ U(-1, 1);
    # "fixed" magnitudes draw nothing), one xi per view or one shared, additive level x view index.
    views, b = 3, 4
    h = torch.randn(views * b, 5, generator=generator_for(0))
    draw = MixDraw(perm=torch.tensor([2, 0, 3, 1]), lam=torch.tensor(0.7))
    noise = NoiseConfig(add=0.4, mult=0.2, magnitude="fixed", split_noise=split_noise)
    out = noisy_feature_mixup(h, draw, MixConfig(noise=noise), generator=generator_for(9), views=views)
    hv = h.reshape(views, b, 5)
    mixed = 0.7 * hv + 0.3 * hv[:, [2, 0, 3, 1]]
    g = generator_for(9)
    rows = views if split_noise == "independent" else 1
    xi_add = torch.randn(rows, b, 5, generator=g)
    xi_mult = 2 * torch.rand(rows, b, 5, generator=g) - 1
    index = torch.tensor([1.0, 2.0, 3.0]).view(3, 1, 1)
    expected = (1 + 0.2 * xi_mult) * mixed + 0.4 * index * xi_add
    torch.testing.assert_close(out, expected.reshape(views * b, 5))


def test_partners_are_a_uniform_random_permutation():
    # each of the 4! = 24 orders of a batch of 4 is drawn with probability 1/24
    gen = generator_for(11)
    counts: dict[tuple[int, ...], int] = {}
    for _ in range(4800):
        perm = tuple(draw_mix(4, MixConfig(), generator=gen).perm.tolist())
        counts[perm] = counts.get(perm, 0) + 1
    assert len(counts) == 24
    assert all(abs(c - 200) < 5 * 200 ** 0.5 for c in counts.values())  # binomial sd ~ 13.9
