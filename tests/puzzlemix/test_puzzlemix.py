"""Puzzle Mix (fullscale.puzzlemix): properties, exactness of the graph cut, and agreement with the
public code's formulation (``puzzlemix_reference``, the reference definition)."""

from __future__ import annotations

import importlib
import itertools
import os
import sys
import warnings

import numpy as np
import pytest
import torch
from torch import nn

pytest.importorskip("gco", reason="Puzzle Mix needs gco-wrapper (pip install 'noisymix[puzzlemix]')")

from puzzlemix_reference import reference_mask, reference_plan, reference_transport

from fullscale.models.registry import Normalize
from fullscale.puzzlemix import (
    PuzzleMixConfig,
    block_costs,
    mask_transport,
    puzzle_mix,
    puzzlemix_batch,
    puzzlemix_loss,
    saliency,
    solve_masks,
    transport_blocks,
)

MEAN = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
STD = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)


def _batch(seed: int, b: int = 6, w: int = 32):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(b, 3, w, w, generator=g)
    # a bump at a random place per image plus noise: masks that use several labels
    centre = torch.rand(b, 2, 1, 1, generator=g) * w
    r = torch.arange(w, dtype=torch.float32)
    dist2 = (r.view(1, w, 1) - centre[:, 0]) ** 2 + (r.view(1, 1, w) - centre[:, 1]) ** 2
    sal = torch.exp(-dist2 / (2 * (w / 6) ** 2)) + 0.05 * torch.rand(b, w, w, generator=g)
    perm = torch.randperm(b, generator=g)
    return x, sal, perm


@pytest.mark.parametrize("transport", [False, True])
@pytest.mark.parametrize("block_num", [2, 4, 8, 16])
def test_label_weight_is_the_mask_mean(transport, block_num):
    x, sal, perm = _batch(block_num)
    cfg = PuzzleMixConfig(transport=transport)
    r = puzzle_mix(x, sal, perm, 0.3, cfg, block_num=block_num)
    # exact: mask values are multiples of 1/(n_labels - 1) = 1/2 over 32 x 32 pixels, so every partial
    # sum and the division by 1024 are exact in float32, in any order
    torch.testing.assert_close(r.weights, r.mask.reshape(len(x), -1).mean(-1), rtol=0, atol=0)
    if not transport:  # then the images are the plain mask mix of the pair
        torch.testing.assert_close(r.images, r.mask * x + (1 - r.mask) * x[perm])


@pytest.mark.parametrize("n_labels", [2, 3, 4])
@pytest.mark.parametrize("block_num", [2, 4, 8])
def test_mask_values_lie_in_the_label_set_at_block_resolution(n_labels, block_num):
    x, sal, perm = _batch(10 * n_labels + block_num)
    cfg = PuzzleMixConfig(n_labels=n_labels, transport=False)
    mask = puzzle_mix(x, sal, perm, 0.45, cfg, block_num=block_num).mask
    allowed = torch.tensor([1 - l / (n_labels - 1) for l in range(n_labels)])
    assert torch.isin(mask, allowed).all()
    s = 32 // block_num
    blocks = mask[:, :, ::s, ::s]
    # a copy of discrete labels: exact
    torch.testing.assert_close(mask, blocks.repeat_interleave(s, -1).repeat_interleave(s, -2), rtol=0, atol=0)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_transport_moves_each_block_at_most_once_as_the_code(n):
    g = torch.Generator().manual_seed(n)
    mask = (torch.rand(5, 1, n, n, generator=g) * 3).floor() / 2
    sal = torch.rand(5, n, n, generator=g) ** 3
    sal = sal / sal.sum((1, 2), keepdim=True)
    plan = mask_transport(mask, sal, eps=0.8)
    assert set(plan.unique().tolist()) <= {0.0, 1.0}
    assert (plan.sum(-1) <= 1).all() and (plan.sum(-2) <= 1).all()
    torch.testing.assert_close(plan, reference_plan(mask, sal, 0.8), rtol=0, atol=0)  # 0/1 plans: exact
    images = torch.rand(5, 3, 32, 32, generator=g)
    moved = transport_blocks(images, plan, n, fill=0.0)
    torch.testing.assert_close(moved, reference_transport(images, plan, n))
    # a destination no block moves to holds the fill value
    filled = transport_blocks(images, plan, n, fill=MEAN)
    empty = (plan.sum(-2) == 0).reshape(5, 1, n, n).repeat_interleave(32 // n, -1).repeat_interleave(32 // n, -2)
    torch.testing.assert_close(filled, torch.where(empty, MEAN.expand_as(images), moved))


def test_same_seed_same_masks_and_images():
    x, sal, perm = _batch(3, b=8)
    cfg = PuzzleMixConfig(block_nums=(4, 8))
    runs = [puzzle_mix(x, sal, perm, 0.6, cfg, generator=torch.Generator().manual_seed(s)) for s in (7, 7)]
    assert runs[0].block_num == runs[1].block_num
    # exact: the same op sequence on the same inputs in one process (determinism, not two code paths)
    torch.testing.assert_close(runs[0].mask, runs[1].mask, rtol=0, atol=0)
    torch.testing.assert_close(runs[0].images, runs[1].images, rtol=0, atol=0)
    drawn = {puzzle_mix(x, sal, perm, 0.6, cfg, generator=torch.Generator().manual_seed(s)).block_num
             for s in range(12)}
    assert drawn == {4, 8}


def _energy(unary: np.ndarray, ex: np.ndarray, ey: np.ndarray, labels: np.ndarray, n_labels: int) -> np.ndarray:
    """E(labels) for all candidate labellings (K, n, n): unary + w (l - l')^2 / (L-1)^2 per edge."""
    n = unary.shape[0]
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    data = unary[rows, cols, labels].sum((1, 2)).astype(np.float64)
    scale = (n_labels - 1) ** 2
    vert = (ex * (labels[:, 1:, :] - labels[:, :-1, :]) ** 2 / scale).sum((1, 2))
    horiz = (ey * (labels[:, :, 1:] - labels[:, :, :-1]) ** 2 / scale).sum((1, 2))
    return data + vert + horiz


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n", [3, 4])
def test_two_label_cut_reaches_the_brute_force_minimum(n, seed):
    x, sal, perm = _batch(100 + seed, b=3, w=4 * n)
    cfg = PuzzleMixConfig(n_labels=2)
    lam = [0.2, 0.5, 0.7, 0.9][seed]
    unary, ex, ey, _ = block_costs(x, sal, perm, lam, n, cfg)
    masks = solve_masks(unary, ex, ey, workers=2)
    every = np.array(list(itertools.product([0, 1], repeat=n * n))).reshape(-1, n, n)
    for i in range(len(x)):
        labels = np.rint((1 - masks[i]) * 1).astype(int)
        best = _energy(unary[i], ex[i], ey[i], every, 2).min()
        assert _energy(unary[i], ex[i], ey[i], labels[None], 2)[0] == best


@pytest.mark.parametrize("block_num", [2, 4, 8, 16])
@pytest.mark.parametrize("lam", [0.15, 0.5, 0.8])
def test_masks_and_images_equal_the_public_codes(block_num, lam):
    x, sal, perm = _batch(block_num + int(100 * lam), b=8)
    cfg = PuzzleMixConfig()  # the recipe: 3 labels, transport at 4 pixels
    ours = puzzle_mix(x, sal, perm, lam, cfg, block_num=block_num, fill=MEAN)
    mask, unary1 = reference_mask(x, sal, perm, block_num, lam)
    mask = mask.unsqueeze(1)
    # their transport, in normalised space
    normed = (x - MEAN) / STD
    t_size = min(4, 32 // block_num)
    t_num = 32 // t_size
    if t_num != block_num:
        mask = torch.nn.functional.interpolate(mask, size=t_num)
        pool = torch.nn.functional.avg_pool2d(sal, t_size)
        unary1 = pool / pool.reshape(len(x), -1).sum(1).reshape(len(x), 1, 1)
    own = reference_transport(normed, reference_plan(mask, unary1, 0.8), t_num)
    partner = reference_transport(normed[perm], reference_plan(1 - mask, unary1[perm], 0.8), t_num)
    mask = torch.nn.functional.interpolate(mask, size=32)
    mixed = (mask * own + (1 - mask) * partner) * STD + MEAN
    torch.testing.assert_close(ours.mask, mask, rtol=0, atol=0)  # labels of a discrete set, copied: exact
    torch.testing.assert_close(ours.images, mixed, rtol=1e-5, atol=1e-5)
    assert len(ours.mask.unique()) > 1 or block_num == 2  # the inputs do exercise the labels


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.normalize = Normalize(([0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616]))
        self.body = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5))

    def forward(self, x):
        return self.body(self.normalize(x))


def test_saliency_is_the_normalised_input_gradient_in_eval_mode():
    torch.manual_seed(0)
    model = _Tiny().train()
    x = torch.rand(4, 3, 8, 8)
    y = torch.tensor([0, 1, 2, 3])
    sal, grad, clean = saliency(model, x, y, std=model.normalize.std)
    assert model.training and clean is None
    assert all(p.grad is None for p in model.parameters())
    # the code: the gradient w.r.t. the normalised input, BN in eval mode
    model.eval()
    z = ((x - MEAN) / STD).requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(model.body(z), y)
    loss.backward()
    torch.testing.assert_close(sal, z.grad.pow(2).mean(1).sqrt())
    torch.testing.assert_close(grad, z.grad)


def test_adversarial_batch_is_reproducible_and_inside_the_ball():
    torch.manual_seed(0)
    model = _Tiny()
    x = torch.rand(6, 3, 8, 8)
    y = torch.arange(6) % 5
    perm = torch.randperm(6)
    cfg = PuzzleMixConfig(adv_p=1.0, block_nums=(2,), transport=False)
    a, _ = puzzlemix_batch(model, x, y, perm, 0.5, cfg, generator=torch.Generator().manual_seed(1))
    b, _ = puzzlemix_batch(model, x, y, perm, 0.5, cfg, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(a.images, b.images, rtol=0, atol=0)  # same ops, same inputs: determinism
    plain = a.mask * x + (1 - a.mask) * x[perm]
    assert (a.images - plain).abs().max() <= 10 / 255 + 1e-6
    assert (a.images - plain).abs().max() > 0
    assert a.images.min() >= 0 and a.images.max() <= 1


def test_clean_lam_keeps_the_clean_loss_for_the_step():
    model = _Tiny()
    x, y = torch.rand(4, 3, 8, 8), torch.tensor([0, 1, 2, 3])
    _, _, clean = saliency(model, x, y, clean_lam=1.0)
    clean.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_missing_library_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gco", None)
    x, sal, perm = _batch(0, b=2)
    with pytest.raises(ImportError, match=r"noisymix\[puzzlemix\]"):
        puzzle_mix(x, sal, perm, 0.5, PuzzleMixConfig(), block_num=4)


@pytest.mark.parametrize("bad", [{"n_labels": 5}, {"adv_p": 1.5}, {"block_nums": ()}, {"t_size": 0}])
def test_bad_config_is_refused(bad):
    with pytest.raises(ValueError, match="puzzlemix"):
        PuzzleMixConfig(**bad)


def test_bce_softmax_loss_is_torchs_bce_on_softmax_and_ce_the_soft_cross_entropy():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 10, generator=g) * 3
    targets = torch.softmax(torch.randn(6, 10, generator=g), -1)
    clean = torch.tensor(2.0)
    bce = puzzlemix_loss(logits, targets, clean, PuzzleMixConfig(loss="bce_softmax"))
    expected = torch.nn.functional.binary_cross_entropy(torch.softmax(logits, -1), targets)
    torch.testing.assert_close(bce.cross_entropy, expected)
    torch.testing.assert_close(bce.total, expected + clean / 10)  # the code's 2 clean_lam CE / K
    ce = puzzlemix_loss(logits, targets, None, PuzzleMixConfig())
    torch.testing.assert_close(ce.total, -(targets * torch.log_softmax(logits, -1)).sum(-1).mean())


@pytest.mark.skipif(not os.environ.get("PUZZLEMIX_PUBLIC_CODE"),
                    reason="set PUZZLEMIX_PUBLIC_CODE to a folder holding the public PuzzleMix mixup.py")
@pytest.mark.parametrize("block_num", [2, 4, 8, 16])
def test_equal_to_the_public_code_itself(block_num, monkeypatch):
    """Side by side with the public code's own ``mixup_graph`` (not shipped; CPU, its recipe)."""
    monkeypatch.syspath_prepend(os.environ["PUZZLEMIX_PUBLIC_CODE"])
    public = importlib.import_module("mixup")
    for seed in range(3):
        x, sal, perm = _batch(1000 * block_num + seed, b=16)
        lam = 0.1 + 0.25 * seed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out, ratio = public.mixup_graph((x - MEAN) / STD, sal, perm.numpy(), block_num=block_num, alpha=lam,
                                            beta=1.2, gamma=0.5, eta=0.2, neigh_size=4, n_labels=3, mean=MEAN,
                                            std=STD, transport=True, t_eps=0.8, t_size=4, device="cpu")
        ours = puzzle_mix(x, sal, perm, lam, PuzzleMixConfig(), block_num=block_num, fill=MEAN)
        # exact for the same reason as test_label_weight_is_the_mask_mean (halves over 1024 pixels)
        torch.testing.assert_close(ours.weights, ratio, rtol=0, atol=0)
        torch.testing.assert_close(ours.images, out * STD + MEAN, rtol=0, atol=1e-6)


def test_an_image_without_saliency_gets_uniform_weights_and_a_valid_cut():
    """Issue 23: constant images (all-zero saliency) gave 0/0 = NaN unary costs, cast to int32
    -2147483648 with a RuntimeWarning; now uniform weights, finite costs, no warning."""
    import warnings

    from fullscale.puzzlemix import block_costs, block_saliency

    sal = torch.zeros(2, 32, 32)
    sal[1, :4, :4] = 1.0  # the second image has saliency in one corner block
    weights = block_saliency(sal, 8)
    torch.testing.assert_close(weights[0], torch.full((4, 4), 1 / 16))
    expected = torch.zeros(4, 4)
    expected[0, 0] = 1.0
    torch.testing.assert_close(weights[1], expected)
    x = torch.full((1, 3, 32, 32), 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the RuntimeWarning of the NaN cast would raise here
        unary, *_ = block_costs(x, torch.zeros(1, 32, 32), torch.tensor([0]), 0.5, 4, PuzzleMixConfig())
    assert np.isfinite(unary).all() and unary.min() > np.iinfo(np.int32).min
