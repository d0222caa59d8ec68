"""The full-width CIFAR NoisyMix recipe on natural images stays finite (issue: a full-size step
diverged).  PreActResNet-18 at width 64 with the ``cifar10-preactresnet18-noisymix`` preset (AugMix
views, noisy feature mixup at a random stage, JSD weight 12, SGD Nesterov with weight decay) on
32x32 colour crops of scikit-learn's sample photographs, batches cycled.

Side by side with the public NoisyMix step (its preactresnet18, _noise, do_noisy_mixup and clamped
JSD, run on the same initial weights, batches and AugMix views), at lr 0.1 with four batches of 128
cycled, both runs met a NaN gradient with a finite loss (the public one at update 5, ours at update
7): the clamped JSD's F.kl_div differentiates ln p as xlogy(p, p), 0/0 where a softmax probability
underflows to 0.  Our clamped JSD now takes ln p from log_softmax (same value, finite gradient);
numbers in benchmarks/RESULTS.md.  The slow test is exactly that run (it fails at update 7 on the
old code); the cheap ones are the cause alone and the recipe's first updates on smaller batches.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fullscale.models import create_model
from fullscale.training.methods import get_method
from fullscale.training.presets import resolve_config
from fullscale.training.step import step_loss
from noisymix import generator_for

sklearn_datasets = pytest.importorskip("sklearn.datasets")


def _crops(n: int, seed: int = 0) -> torch.Tensor:
    """``n`` random 32x32 crops of the sample photographs (china.jpg, flower.jpg), uint8 (n, 3, 32, 32)."""
    photos = sklearn_datasets.load_sample_images().images
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        im = photos[k % len(photos)]
        top, left = rng.integers(0, im.shape[0] - 32), rng.integers(0, im.shape[1] - 32)
        out.append(im[top:top + 32, left:left + 32])
    return torch.from_numpy(np.stack(out)).permute(0, 3, 1, 2).contiguous()


def _run(batch: int, batches: int, steps: int, lr: float) -> list[float]:
    cfg = resolve_config("cifar10-preactresnet18-noisymix", [f"lr={lr}", "device=cpu"])
    method = get_method(cfg.method)
    assert method.feature_transform and method.jsd and method.noise  # the full recipe
    torch.manual_seed(0)
    model = create_model("preactresnet18", 10, width=64)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.optim.lr, momentum=cfg.optim.momentum, nesterov=cfg.optim.nesterov,
                          weight_decay=cfg.optim.weight_decay)
    x, y = _crops(batch * batches), torch.arange(batch * batches) % 10
    g, stage_g = generator_for(1), generator_for(2)
    losses = []
    for step in range(steps):
        s = slice((step % batches) * batch, (step % batches + 1) * batch)
        parts = step_loss(model, model, x[s], y[s], method, cfg, 10, g, stage_g)
        opt.zero_grad()
        parts.total.backward()
        losses.append(float(parts.total))
        assert math.isfinite(losses[-1]), f"loss {losses[-1]} at update {step + 1}"
        for name, p in model.named_parameters():
            assert torch.isfinite(p.grad).all(), f"non-finite gradient of {name} at update {step + 1}"
        opt.step()
    return losses


def test_clamped_jsd_has_finite_gradients_when_a_probability_underflows():
    """The cause of the NaN: the public clamped JSD, F.kl_div(log mixture, p), differentiates
    ln p as xlogy(p, p), so its gradient is 0/0 where softmax underflows to exactly 0 (a logit
    gap above ~104 in float32).  Value: the public formula in float64 (no underflow there)."""
    import torch.nn.functional as F

    from noisymix.jsd import jsd_consistency

    z = torch.tensor([[[0.0, 120.0, -5.0], [1.0, 2.0, 3.0]],
                      [[130.0, 0.0, 1.0], [0.5, 0.0, -0.5]],
                      [[2.0, 2.0, 2.0], [3.0, 1.0, 0.0]]], requires_grad=True)
    assert (F.softmax(z.detach(), -1) == 0).any()  # the float32 underflow the run met
    value = jsd_consistency(z, variant="augmix")
    value.backward()
    assert torch.isfinite(z.grad).all()
    p = F.softmax(z.detach().double(), -1)
    log_m = p.mean(0).clamp(1e-7, 1).log()
    expected = sum(F.kl_div(log_m, q, reduction="batchmean") for q in p) / 3
    assert float(value) == pytest.approx(float(expected), rel=1e-5)


def test_full_width_recipe_first_updates_stay_finite():
    """Cheap: width 64, batches of 16 crops, three updates at the recipe's lr 0.1."""
    losses = _run(batch=16, batches=3, steps=3, lr=0.1)
    assert losses[0] == pytest.approx(math.log(10), abs=0.5)  # untrained: about ln K


@pytest.mark.slow
def test_full_width_recipe_on_natural_images_stays_finite():
    """Width 64, batch 128, four batches cycled, eight updates at the recipe's lr 0.1 (the old
    clamped JSD gave a NaN gradient at update 7 of this very run)."""
    _run(batch=128, batches=4, steps=8, lr=0.1)
