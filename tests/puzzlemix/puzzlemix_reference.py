"""REFERENCE DEFINITION (test-only): Puzzle Mix's mask and transport as its public code states them.

A short re-statement of ``mixup_graph`` / ``graphcut_multi`` / ``mask_transport`` /
``transport_image`` of github.com/snu-mllab/PuzzleMix (``mixup.py``), in its own shape: images in
normalised space, the energy built with the same tensor operations, ONE graph cut per image in a
loop, the transport plan by explicit loops over blocks, the images moved by the plan's matrix
product.  ``fullscale.puzzlemix`` must give the same masks and images; nothing here is used by it.
"""

from __future__ import annotations

import gco
import numpy as np
import torch
import torch.nn.functional as F


def graphcut_one(unary_a, unary_b, pw_x, pw_y, alpha, beta, eta, n_labels):
    """One image's graph cut (their ``graphcut_multi(unary2[i], unary1[i], ...)``)."""
    eps = 1e-8
    block_num = unary_a.shape[0]
    large_val = 1000 * block_num**2
    binom = [[alpha, 1 - alpha], [alpha**2, 2 * alpha * (1 - alpha), (1 - alpha)**2],
             [alpha**3, 3 * alpha**2 * (1 - alpha), 3 * alpha * (1 - alpha)**2, (1 - alpha)**3]][n_labels - 2]
    prior = eta * np.array([-np.log(p + eps) for p in binom]) / block_num**2
    unary = (large_val * np.stack([(1 - lam) * unary_a + lam * unary_b + prior[i]
                                   for i, lam in enumerate(np.linspace(0, 1, n_labels))], axis=-1)).astype(np.int32)
    smooth = np.array([[(i - j)**2 / (n_labels - 1)**2 for j in range(n_labels)] for i in range(n_labels)],
                      dtype=np.float32)
    pw_x = (large_val * (pw_x + beta)).astype(np.int32)
    pw_y = (large_val * (pw_y + beta)).astype(np.int32)
    labels = gco.cut_grid_graph(unary, smooth, pw_x, pw_y, algorithm="swap")
    return 1.0 - labels.reshape(block_num, block_num) / (n_labels - 1)


def _boundary(a, b, k):
    pw_x = (a[:, :, :-1, :] - b[:, :, 1:, :])[:, :, k - 1::k, :]
    pw_y = (a[:, :, :, :-1] - b[:, :, :, 1:])[:, :, :, k - 1::k]
    return (F.avg_pool2d(pw_x.abs().mean(1), kernel_size=(1, k)),
            F.avg_pool2d(pw_y.abs().mean(1), kernel_size=(k, 1)))


def reference_mask(images, grad, indices, block_num, alpha, *, beta=1.2, gamma=0.5, eta=0.2, neigh_size=4,
                   n_labels=3):
    """Their graph-cut masks (B, n, n) for pixel-space ``images`` (= input * std + mean) and saliency."""
    batch, width = images.shape[0], images.shape[-1]
    block_size = width // block_num
    neigh_size = min(neigh_size, block_size)
    beta = beta / block_num / 16
    pool = F.avg_pool2d(grad, block_size)
    unary1 = pool / pool.reshape(batch, -1).sum(1).reshape(batch, 1, 1)
    unary2 = unary1[indices]
    in1 = F.avg_pool2d(images, neigh_size)
    in2 = in1[indices]
    k = block_size // neigh_size
    pw_x = torch.zeros([batch, 2, 2, block_num - 1, block_num])
    pw_y = torch.zeros([batch, 2, 2, block_num, block_num - 1])
    for a, first in ((0, in2), (1, in1)):
        for b, second in ((0, in2), (1, in1)):
            pw_x[:, a, b], pw_y[:, a, b] = _boundary(first, second, k)
    pw_x, pw_y = beta * gamma * pw_x, beta * gamma * pw_y
    u1, u2 = unary1.clone(), unary2.clone()
    u2[:, :-1, :] += (pw_x[:, 1, 0] + pw_x[:, 1, 1]) / 2.
    u1[:, :-1, :] += (pw_x[:, 0, 1] + pw_x[:, 0, 0]) / 2.
    u2[:, 1:, :] += (pw_x[:, 0, 1] + pw_x[:, 1, 1]) / 2.
    u1[:, 1:, :] += (pw_x[:, 1, 0] + pw_x[:, 0, 0]) / 2.
    u2[:, :, :-1] += (pw_y[:, 1, 0] + pw_y[:, 1, 1]) / 2.
    u1[:, :, :-1] += (pw_y[:, 0, 1] + pw_y[:, 0, 0]) / 2.
    u2[:, :, 1:] += (pw_y[:, 0, 1] + pw_y[:, 1, 1]) / 2.
    u1[:, :, 1:] += (pw_y[:, 1, 0] + pw_y[:, 0, 0]) / 2.
    ex = ((pw_x[:, 1, 0] + pw_x[:, 0, 1] - pw_x[:, 1, 1] - pw_x[:, 0, 0]) / 2).numpy()
    ey = ((pw_y[:, 1, 0] + pw_y[:, 0, 1] - pw_y[:, 1, 1] - pw_y[:, 0, 0]) / 2).numpy()
    u1, u2 = u1.numpy(), u2.numpy()
    masks = [graphcut_one(u2[i], u1[i], ex[i], ey[i], alpha, beta, eta, n_labels) for i in range(batch)]
    return torch.tensor(np.stack(masks), dtype=torch.float32), unary1


def reference_plan(mask, sal_blocks, eps):
    """Their ``mask_transport``, one image at a time in numpy (ties: the first index)."""
    batch, n = mask.shape[0], mask.shape[-1]
    cells = [(i // n, i % n) for i in range(n * n)]
    cost_matrix = np.array([[(a[0] - b[0])**2 + (a[1] - b[1])**2 for b in cells] for a in cells],
                           dtype=np.float32) / np.float32((n - 1)**2)
    plans = []
    for b in range(batch):
        z = (mask[b].reshape(-1).numpy() > 0).astype(np.float32)
        s = sal_blocks[b].reshape(-1).numpy()
        cost = (np.float32(eps) * cost_matrix - s[:, None] * z[None, :]).astype(np.float32)
        rows = np.arange(n * n)
        for _ in range(n):
            pick = cost.argmin(1)  # each block's cheapest destination
            claimed = pick[:, None] == rows[None, :]
            # per destination: the row of least (claimed cost, 0 where not claimed)
            i_best = np.where(claimed, cost, np.float32(0)).argmin(0)
            win = np.zeros_like(cost)
            won = pick[i_best] == rows
            win[i_best[won], rows[won]] = 1
            lost = win[rows, pick] == 0
            cost[rows[lost], pick[lost]] += 1
        plans.append(win)
    return torch.tensor(np.stack(plans))


def reference_transport(img, plan, block_num):
    """Their ``transport_image``: destination blocks = plan^T @ source blocks (zero where none)."""
    b, c, w, _ = img.shape
    s = w // block_num
    patches = img.reshape(b, c, block_num, s, block_num, s).permute(0, 1, 2, 4, 3, 5).reshape(b, c, block_num**2, -1)
    moved = torch.einsum("bij,bcip->bcjp", plan, patches)
    return moved.reshape(b, c, block_num, block_num, s, s).permute(0, 1, 2, 4, 3, 5).reshape(b, c, w, w)
