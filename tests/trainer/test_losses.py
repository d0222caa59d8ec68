"""Every method's step loss against a hand-written replay of the step.

The replay draws from generators seeded as the trainer's, in the order the trainer documents
(crop/flip, AugMix views, draw, CutMix box, transform point on the CPU generator, noise), runs
the PreActResNet forward written out by hand with the transform at the replayed stage, and
computes the loss by hand: soft-label cross-entropy of the clean view plus 12 x the exact
Jensen-Shannon divergence of the three views.  The noise itself is replayed with the core's
``noisy_feature_mixup`` (its law is tested with the core); mixing without noise, label mixing,
CutMix's kept area, the views, the stage choice and the loss are computed here independently.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from fullscale.augment import augmix, random_crop_flip, to_float
from fullscale.models import create_model
from fullscale.training.methods import METHODS
from fullscale.training.presets import resolve_config
from fullscale.training.step import step_loss
from noisymix.mixing import MixConfig, NoiseConfig, draw_mix, noisy_feature_mixup

B, K = 6, 10
PREACT_STAGES = ("input", "layer1", "layer2", "layer3")  # public code: k in {0, 1, 2, 3}


def _forward(model, x, stage=None, fn=None):
    """PreActResNet-18 written out: normalise (mean = std = 0.5), conv, four layers, mean pool,
    linear; ``fn`` transforms the features right after ``stage``."""
    h = (x - 0.5) / 0.5
    if stage == "input":
        h = fn(h)
    h = model.conv1(h)
    for name in ("layer1", "layer2", "layer3", "layer4"):
        h = getattr(model, name)(h)
        if stage == name:
            h = fn(h)
    return model.linear(h.mean(dim=(2, 3)))


def _replay(name, cfg, model, x, y, seed):
    method = METHODS[name]
    g = torch.Generator().manual_seed(seed)
    stage_g = torch.Generator().manual_seed(seed + 1)
    crop = random_crop_flip(x, generator=g, padding=4)
    views = 3 if method.jsd else 1
    if not method.augmentations:
        xv = crop.float() / 255
    elif not method.jsd:
        xv = augmix(crop, cfg.augmix, generator=g)
    else:
        xv = torch.cat([to_float(crop), augmix(crop, cfg.augmix, generator=g),
                        augmix(crop, cfg.augmix, generator=g)])
    mixes = method.mixing != "none"
    mix_cfg = MixConfig(alpha=cfg.mix.alpha if mixes else 0.0,
                        noise=cfg.mix.noise if method.noise else NoiseConfig())
    draw = draw_mix(B, mix_cfg, generator=g)
    lam, perm = float(draw.lam), draw.perm
    if not mixes:
        assert lam == 1.0
    stage = fn = None
    if method.mixing == "cutmix":
        before = xv
        from noisymix.mixing import cutmix
        xv, _ = cutmix(xv, draw, generator=g)
        moved = perm != torch.arange(B)
        changed = (xv != before)[moved].any(dim=(0, 1))  # (H, W): where partners' pixels landed
        rows, cols = changed.any(1).nonzero().flatten(), changed.any(0).nonzero().flatten()
        area = 0
        if len(rows):  # the box: the bounding rectangle, all of it pasted from the partners
            r0, r1, c0, c1 = int(rows.min()), int(rows.max()) + 1, int(cols.min()), int(cols.max()) + 1
            torch.testing.assert_close(xv[:, :, r0:r1, c0:c1], before[perm][:, :, r0:r1, c0:c1])
            area = (r1 - r0) * (c1 - c0)
        lam = 1.0 - area / changed.numel()
    elif method.feature_transform:
        stages = PREACT_STAGES if method.mixing != "input" else ("input",)
        stage = stages[int(torch.randint(len(stages), (1,), generator=stage_g))]
        if method.noise:
            def fn(h):
                return noisy_feature_mixup(h, draw, mix_cfg, generator=g, views=views)
        else:
            def fn(h):
                hv = h.reshape(views, B, *h.shape[1:])
                return (lam * hv + (1 - lam) * hv[:, perm]).reshape(h.shape)
    logits = _forward(model, xv, stage, fn)
    one_hot = torch.eye(K)
    targets = lam * one_hot[y] + (1 - lam) * one_hot[y[perm]]
    ce = -(targets * F.log_softmax(logits[:B], dim=1)).sum(1).mean()
    if not method.jsd:
        return ce, torch.zeros(()), stage
    p = F.softmax(logits.reshape(3, B, K), dim=-1)
    m = p.mean(0)
    js = (p * (p.log() - m.log())).sum(-1).mean(0).mean()
    return ce + 12 * js, js, stage


@pytest.mark.parametrize("seed", [0, 5])
# Puzzle Mix's step (saliency pass, graph-cut masks, transport) is replayed against its operator in
# tests/puzzlemix/test_train_puzzlemix.py; this replay writes out the mixing methods built from draw_mix
@pytest.mark.parametrize("name", sorted(m for m in METHODS if m != "puzzlemix"))
def test_step_loss_equals_the_hand_written_replay(name, seed):
    cfg = resolve_config(name, ["width=4"])
    model = create_model("preactresnet18", K, width=4).eval()  # eval: BN without batch statistics
    data_g = torch.Generator().manual_seed(100 + seed)
    x = torch.randint(0, 256, (B, 3, 32, 32), dtype=torch.uint8, generator=data_g)
    y = torch.randint(0, K, (B,), generator=data_g)
    parts = step_loss(model, model, x, y, METHODS[name], cfg, K, torch.Generator().manual_seed(seed),
                  torch.Generator().manual_seed(seed + 1))
    total, js, _ = _replay(name, cfg, model, x, y, seed)
    torch.testing.assert_close(parts.total, total, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(parts.jsd, js, rtol=1e-4, atol=1e-6)
    if METHODS[name].jsd:
        assert float(js.detach()) > 0


def test_manifold_methods_reach_every_stage_and_mixup_only_the_input():
    cfg = resolve_config("nfm", ["width=4"])
    model = create_model("preactresnet18", K, width=4).eval()
    x = torch.randint(0, 256, (B, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    y = torch.arange(B) % K
    seen = {_replay("nfm", cfg, model, x, y, s)[2] for s in range(12)}
    assert seen == set(PREACT_STAGES)
    seen = {_replay("mixup", resolve_config("mixup", []), model, x, y, s)[2] for s in range(4)}
    assert seen == {"input"}


def test_noise_only_rows_inject_noise_but_do_not_mix():
    # ablation row "--N-": M_{1, xi}: the labels stay one-hot, the logits differ from a clean pass
    cfg = resolve_config("ablation---N-", ["width=4"])
    assert cfg.method == "noise" and cfg.mix.noise.add > 0
    torch.manual_seed(0)  # fixed initial weights: unseeded, a tiny net's logits could tie by chance
    model = create_model("preactresnet18", K, width=4).eval()
    x = torch.randint(0, 256, (B, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    y = torch.arange(B) % K
    parts = step_loss(model, model, x, y, METHODS["noise"], cfg, K, torch.Generator().manual_seed(3),
                  torch.Generator().manual_seed(4))
    crop = random_crop_flip(x, generator=torch.Generator().manual_seed(3), padding=4)
    clean = F.cross_entropy(_forward(model, crop.float() / 255), y)
    assert not torch.allclose(parts.total, clean)
