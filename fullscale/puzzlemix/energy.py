"""Puzzle Mix's graph-cut problem of every pair (steps 2-3 of ``fullscale.puzzlemix``): the unary
terms from the block saliency, the pairwise terms from the colour differences across block
boundaries, the label prior and the code's int32 scaling (the public code's ``neigh_penalty`` and
``graphcut_multi``, github.com/snu-mllab/PuzzleMix ``mixup.py``)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from fullscale.puzzlemix.config import PuzzleMixConfig

__all__ = ["block_costs", "block_saliency"]


def block_saliency(sal: Tensor, size: int) -> Tensor:
    """The saliency (B, W, W) average-pooled to ``size``-pixel blocks and normalised to sum 1 per
    image (the unary terms' and the transport's weights).  An image without any saliency (a
    constant image, all gradients 0) gets uniform weights; the public code divides 0 by 0 there
    and casts the NaN to int32 -2147483648 in the graph cut (issue 23)."""
    pooled = F.avg_pool2d(sal, size)
    total = pooled.reshape(len(pooled), -1).sum(1).reshape(-1, 1, 1)
    uniform = torch.full_like(pooled, 1.0 / pooled[0].numel())
    return torch.where(total > 0, pooled / total.clamp_min(torch.finfo(pooled.dtype).tiny), uniform)


def _neigh_penalty(a: Tensor, b: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Mean |a - b| over colour across each block boundary (rows, columns), averaged along it."""
    pw_x = a[:, :, :-1, :] - b[:, :, 1:, :]
    pw_y = a[:, :, :, :-1] - b[:, :, :, 1:]
    pw_x = pw_x[:, :, k - 1::k, :]
    pw_y = pw_y[:, :, :, k - 1::k]
    pw_x = F.avg_pool2d(pw_x.abs().mean(1), kernel_size=(1, k))
    pw_y = F.avg_pool2d(pw_y.abs().mean(1), kernel_size=(k, 1))
    return pw_x, pw_y


def _prior(alpha: float, n_labels: int, eps: float = 1e-8) -> np.ndarray:
    """-log P(label) of Binomial(L - 1, alpha) (label 0 = all own image), as the code."""
    if n_labels == 2:
        return np.array([-np.log(alpha + eps), -np.log(1 - alpha + eps)])
    if n_labels == 3:
        return np.array([-np.log(alpha**2 + eps), -np.log(2 * alpha * (1 - alpha) + eps),
                         -np.log((1 - alpha)**2 + eps)])
    return np.array([-np.log(alpha**3 + eps), -np.log(3 * alpha**2 * (1 - alpha) + eps),
                     -np.log(3 * alpha * (1 - alpha)**2 + eps), -np.log((1 - alpha)**3 + eps)])


def block_costs(x: Tensor, sal: Tensor, perm: Tensor, lam: float, block_num: int,
                cfg: PuzzleMixConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray, Tensor]:
    """The graph-cut problem of every pair, batched: int32 unary costs (B, n, n, L), vertical and
    horizontal edge weights (B, n-1, n), (B, n, n-1), and the normalised block saliency (B, n, n).

    Same float operations in the same order as the code (float32 on the device, then its numpy
    expressions on the CPU), so the int32 arrays equal the ones its ``graphcut_multi`` passes on.
    """
    x, sal = x.float(), sal.float()
    batch, width = x.shape[0], x.shape[-1]
    block_size = width // block_num
    neigh_size = min(cfg.neigh_size, block_size)
    beta = cfg.beta / block_num / 16

    unary_own = block_saliency(sal, block_size)
    unary_partner = unary_own[perm]

    own = F.avg_pool2d(x, neigh_size)
    partner = own[perm]
    k = block_size // neigh_size
    pw_x = torch.zeros([batch, 2, 2, block_num - 1, block_num], device=x.device)
    pw_y = torch.zeros([batch, 2, 2, block_num, block_num - 1], device=x.device)
    pw_x[:, 0, 0], pw_y[:, 0, 0] = _neigh_penalty(partner, partner, k)
    pw_x[:, 0, 1], pw_y[:, 0, 1] = _neigh_penalty(partner, own, k)
    pw_x[:, 1, 0], pw_y[:, 1, 0] = _neigh_penalty(own, partner, k)
    pw_x[:, 1, 1], pw_y[:, 1, 1] = _neigh_penalty(own, own, k)
    pw_x = beta * cfg.gamma * pw_x
    pw_y = beta * cfg.gamma * pw_y

    u1, u2 = unary_own.clone(), unary_partner.clone()
    u2[:, :-1, :] += (pw_x[:, 1, 0] + pw_x[:, 1, 1]) / 2.
    u1[:, :-1, :] += (pw_x[:, 0, 1] + pw_x[:, 0, 0]) / 2.
    u2[:, 1:, :] += (pw_x[:, 0, 1] + pw_x[:, 1, 1]) / 2.
    u1[:, 1:, :] += (pw_x[:, 1, 0] + pw_x[:, 0, 0]) / 2.
    u2[:, :, :-1] += (pw_y[:, 1, 0] + pw_y[:, 1, 1]) / 2.
    u1[:, :, :-1] += (pw_y[:, 0, 1] + pw_y[:, 0, 0]) / 2.
    u2[:, :, 1:] += (pw_y[:, 0, 1] + pw_y[:, 1, 1]) / 2.
    u1[:, :, 1:] += (pw_y[:, 1, 0] + pw_y[:, 0, 0]) / 2.
    edge_x = (pw_x[:, 1, 0] + pw_x[:, 0, 1] - pw_x[:, 1, 1] - pw_x[:, 0, 0]) / 2
    edge_y = (pw_y[:, 1, 0] + pw_y[:, 0, 1] - pw_y[:, 1, 1] - pw_y[:, 0, 0]) / 2

    # one transfer; then the code's numpy expressions (its graphcut_multi(unary2, unary1, ...))
    u1_np, u2_np = torch.stack([u1, u2]).cpu().numpy()
    ex_np, ey_np = edge_x.cpu().numpy(), edge_y.cpu().numpy()
    large_val = 1000 * block_num**2
    prior = cfg.eta * _prior(lam, cfg.n_labels) / block_num**2
    unary = (large_val * np.stack([(1 - t) * u2_np + t * u1_np + prior[i]
                                   for i, t in enumerate(np.linspace(0, 1, cfg.n_labels))], axis=-1)).astype(np.int32)
    ex_np = (large_val * (ex_np + beta)).astype(np.int32)
    ey_np = (large_val * (ey_np + beta)).astype(np.int32)
    return unary, ex_np, ey_np, unary_own
