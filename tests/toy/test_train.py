"""Batched training: each member trains as if alone; zero strengths are the Baseline; the
plain Baseline equals ordinary one-model PyTorch training; the noisy mixing is composed
exactly as ``noisymix.noisy_feature_mixup`` composes it."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from noisymix import draw_mix, generator_for, noisy_feature_mixup, sample_noise
from toy.data import ToyDataConfig
from toy.experiment import make_seed_data
from toy.schemes import COMPONENTS, PAPER_SCHEMES, SCHEMES, SchemeConfig, scheme_config
from toy.train import (
    CHUNK_EPOCHS,
    Member,
    TrainConfig,
    _member_losses,
    _noisy_mix_views,
    _train_group,
    init_params,
    stream_seed,
    train_members,
)

STRENGTHS = {"mix": {"alpha": 0.5}, "noise": {"noise_add": 0.2, "noise_mult": 0.3},
             "jsd": {"jsd_weight": 4.0, "view_sd": 0.05}}
ZERO = {c: dict.fromkeys(keys, 0.0) for c, keys in COMPONENTS.items()}
SMALL = ToyDataConfig(n_points=200, n_train=100)


def _data(seeds):
    return {s: make_seed_data(s, SMALL) for s in seeds}


def _equal(p, q, i, j=0):
    return all(torch.equal(p[k][i], q[k][j]) for k in p)


def test_batched_members_train_exactly_as_alone():
    """Every scheme, three seeds, trained together; then each member alone: same numbers.
    More epochs than CHUNK_EPOCHS, so the noise is drawn in more than one chunk."""
    config = TrainConfig(epochs=CHUNK_EPOCHS + 2, batch_size=25)
    data = _data(range(3))
    members = [Member(scheme_config(n, STRENGTHS), s) for n in PAPER_SCHEMES for s in range(3)]
    together = train_members(members, [data[m.seed] for m in members], config)
    for i in (0, 4, 8, 10, 14, 17):        # every scheme, several seeds
        alone = train_members([members[i]], [data[members[i].seed]], config)
        assert _equal(together, alone, i), members[i]
    # a different neighbourhood (other members, other order) changes nothing either
    mixed = [members[17], members[3], members[9]]
    again = train_members(mixed, [data[m.seed] for m in mixed], config)
    assert _equal(together, again, 17, 0) and _equal(together, again, 9, 2)


def test_members_differ_when_they_should():
    config = TrainConfig(epochs=3, batch_size=25)
    data = _data(range(2))
    noisymix = scheme_config("noisymix", STRENGTHS)
    members = [Member(noisymix, 0), Member(noisymix, 1), Member(SchemeConfig(), 0)]
    p = train_members(members, [data[m.seed] for m in members], config)
    assert not torch.equal(p["w1"][0], p["w1"][1])     # other seed
    assert not torch.equal(p["w1"][0], p["w1"][2])     # other scheme, same seed


@pytest.mark.parametrize("name", PAPER_SCHEMES)
def test_scheme_with_zero_strengths_trains_exactly_like_baseline(name):
    config = TrainConfig(epochs=4, batch_size=25)
    data = _data([5])
    zero = scheme_config(name, ZERO)
    p = train_members([Member(zero, 5), Member(SchemeConfig(), 5)], [data[5], data[5]], config)
    assert _equal(p, p, 0, 1)


def test_zero_strengths_through_the_full_machinery_is_the_baseline():
    """Three views with gamma = 0 and view_sd = 0, mixing with random partners at lambda = 1,
    zero noise tensors at random layers: the loss and gradients equal the plain Baseline's,
    and a short training stays on the Baseline's trajectory."""
    torch.manual_seed(0)
    g, b = 4, 25
    member = [Member(SchemeConfig(), s) for s in range(g)]
    params = init_params(member, TrainConfig())
    for v in params.values():
        v.requires_grad_(True)
    xb, yb = torch.randn(g, b, 2), torch.randint(0, 2, (g, b))
    perm = torch.stack([torch.randperm(b) for _ in range(g)])
    zeros = torch.zeros(g, 3, b, 32)
    total, ce, jsd = _member_losses(params, xb, yb, perm, torch.ones(g), torch.tensor([True, False] * 2),
                                    zeros, zeros, torch.zeros(g, 2, b, 2), torch.zeros(g), 2)
    grads = torch.autograd.grad(total.sum(), list(params.values()))
    # the plain Baseline, written out independently
    logits = torch.relu(xb @ params["w1"] + params["b1"][:, None]) @ params["w2"] + params["b2"][:, None]
    plain = F.cross_entropy(logits.reshape(-1, 2), yb.reshape(-1), reduction="none").reshape(g, b).mean(1)
    plain_grads = torch.autograd.grad(plain.sum(), list(params.values()))
    torch.testing.assert_close(total, plain, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(jsd, torch.zeros(g), rtol=0, atol=1e-7)   # identical views
    assert torch.equal(ce, total)                                          # gamma = 0
    for ours, ref in zip(grads, plain_grads):
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-7)
    # whole training: three views at zero strength against one view (only float summation
    # order differs, so equal to rounding, not bitwise)
    config = TrainConfig(epochs=5, batch_size=25)
    data = _data(range(2))
    members = [Member(SchemeConfig(), s) for s in range(2)]
    one = _train_group(members, [data[0], data[1]], 1, 100, config, torch.device("cpu"), None)
    three = _train_group(members, [data[0], data[1]], 3, 100, config, torch.device("cpu"), None)
    for k in one:
        torch.testing.assert_close(one[k], three[k], rtol=1e-4, atol=1e-5)


def test_plain_baseline_equals_ordinary_pytorch_training():
    """A torch.nn model with the same initial weights and batch order, trained with
    F.cross_entropy and torch.optim.Adam, one model at a time."""
    config = TrainConfig(epochs=6, batch_size=25)
    seed = 11
    data = make_seed_data(seed, SMALL)
    ours = train_members([Member(SchemeConfig(), seed)], [data], config)
    init = init_params([Member(SchemeConfig(), seed)], config)
    model = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    with torch.no_grad():
        model[0].weight.copy_(init["w1"][0].T)
        model[0].bias.copy_(init["b1"][0])
        model[2].weight.copy_(init["w2"][0].T)
        model[2].bias.copy_(init["b2"][0])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    order_g = generator_for(stream_seed("report", seed, "order"))
    order = torch.rand((config.epochs, 100), generator=order_g).argsort(-1)
    x, y = data.x_train, data.y_train
    for epoch in range(config.epochs):
        for i in range(100 // 25):
            idx = order[epoch, i * 25:(i + 1) * 25]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    torch.testing.assert_close(ours["w1"][0], model[0].weight.detach().T, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(ours["w2"][0], model[2].weight.detach().T, rtol=1e-4, atol=1e-5)


def test_noisy_mixing_is_composed_as_noisy_feature_mixup():
    """Our pre-drawn noise applied with noisymix.noisy_mix equals noisy_feature_mixup drawing
    the same numbers from the same generator state (views, partners, index scaling)."""
    views, b, d = 3, 8, 5
    cfg = scheme_config("noisymix", STRENGTHS).mix_config()
    draw = draw_mix(b, cfg, generator=generator_for(1))
    h = torch.randn(views * b, d, generator=generator_for(2))
    expected = noisy_feature_mixup(h, draw, cfg, generator=generator_for(3), views=views)
    scale = torch.arange(1, views + 1, dtype=torch.float32).reshape(views, 1, 1)
    mult, add = sample_noise((1, views, b, d), cfg.noise, generator=generator_for(3), view_dims=2,
                             add_scale=scale)
    ours = _noisy_mix_views(h.reshape(1, views, b, d), draw.perm[None], draw.lam[None], mult, add)
    torch.testing.assert_close(ours.reshape(views * b, d), expected, rtol=1e-6, atol=1e-6)
    assert not torch.allclose(expected, h)


def test_streams_are_separate_per_namespace_seed_and_role():
    seen = {stream_seed(ns, s, r) for ns in ("report", "tune") for s in range(50)
            for r in ("data", "init", "order", "mix", "layer", "noise", "views")}
    assert len(seen) == 2 * 50 * 7
    assert all(0 <= v < 2**63 for v in seen)


def test_train_members_rejects_mismatched_inputs():
    data = _data([0])
    with pytest.raises(ValueError, match="one data set per member"):
        train_members([Member(SchemeConfig(), 0)], [], TrainConfig(epochs=1))
    big = make_seed_data(0, ToyDataConfig(n_points=300, n_train=200))
    with pytest.raises(ValueError, match="same number of training points"):
        train_members([Member(SchemeConfig(), 0)] * 2, [data[0], big], TrainConfig(epochs=1))
    with pytest.raises(ValueError, match="batch_size"):
        train_members([Member(SchemeConfig(), 0)], [data[0]], TrainConfig(epochs=1, batch_size=500))


def test_scheme_registry_and_strength_mapping():
    assert len(PAPER_SCHEMES) == 6 and set(PAPER_SCHEMES) <= set(SCHEMES)
    nm = scheme_config("noisymix", STRENGTHS)
    assert (nm.alpha, nm.noise_add, nm.noise_mult, nm.jsd_weight, nm.view_sd) == (0.5, 0.2, 0.3, 4.0, 0.05)
    mm = scheme_config("manifold_mixup", STRENGTHS)
    assert dataclasses.astuple(mm) == (0.5, 0.0, 0.0, 0.0, 0.0) and mm.views == 1
    assert scheme_config("manifold_mixup_jsd", STRENGTHS).views == 3
    with pytest.raises(ValueError, match="unknown scheme"):
        scheme_config("augmix", STRENGTHS)
    with pytest.raises(ValueError, match="takes"):
        scheme_config("manifold_mixup", {"mix": {"beta": 1.0}})
    with pytest.raises(ValueError, match=">= 0"):
        SchemeConfig(alpha=-1.0)
