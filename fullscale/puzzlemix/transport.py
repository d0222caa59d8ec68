"""Puzzle Mix's transport (step 4 of ``fullscale.puzzlemix``; the public code's ``mask_transport`` and
``transport_image``, github.com/snu-mllab/PuzzleMix ``mixup.py``): at ``t_size``-pixel blocks, each
image's salient blocks move to where its mask keeps it, by the code's greedy assignment
(``mask_transport``), then the blocks are moved (``transport_blocks``).  Handed on by
``fullscale.puzzlemix``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch
from torch import Tensor

__all__ = ["mask_transport", "transport_blocks"]


@lru_cache(maxsize=16)
def _cost_matrix(width: int, device: str) -> Tensor:
    """|i - j|^2 between the cells of a (width, width) grid, over (width - 1)^2, float32."""
    r = torch.arange(width * width)
    i, j = r // width, r % width
    cost = ((i[:, None] - i[None, :]).abs()**2 + (j[:, None] - j[None, :]).abs()**2).float()
    return (cost / (width - 1)**2).to(device)


def mask_transport(mask: Tensor, sal_blocks: Tensor, eps: float) -> Tensor:
    """The code's transport plan (B, n^2, n^2), 0/1: plan[b, i, j] = 1 moves block i to j.

    ``n`` rounds on cost ``eps * |i - j|^2 / (n - 1)^2 - saliency_i * [mask_j > 0]``: each source
    block picks its cheapest destination; each destination goes to the first row of least value
    in the code's ``(plan * cost).min(-2)``, where rows that did not pick it count 0 -- so a
    destination whose claimants all cost more than 0 goes to nobody, and one whose best claimant
    costs exactly 0 goes to it only if no non-claimant comes first; each loser's cost of its pick
    grows by 1.  The plan of the last round: every row and column holds at most one 1.

    The same rounds as the code's, computed per row and column (O(n^2) per round after the
    row minimum) rather than on dense (n^2, n^2) plans."""
    n = mask.shape[-1]
    cells = n * n
    cost_matrix = _cost_matrix(n, str(mask.device)).unsqueeze(0)
    z = (mask > 0).float()
    cost = eps * cost_matrix - sal_blocks.reshape(-1, cells, 1) * z.reshape(-1, 1, cells)
    batch, device = cost.shape[0], cost.device
    rows = torch.arange(cells, device=device).expand(batch, cells)
    none = torch.full((batch, cells), cells, device=device)
    for _ in range(n):
        value, pick = cost.min(-1)  # (B, rows): each row's cheapest column
        claim_min = torch.full((batch, cells), math.inf, device=device).scatter_reduce(1, pick, value, "amin")
        claims = torch.zeros(batch, cells, dtype=torch.long, device=device).scatter_add_(1, pick, torch.ones_like(pick))
        # the least value in each column of plan * cost: non-claimants add a 0
        least = torch.where(claims < cells, claim_min.clamp_max(0), claim_min)
        first = none.scatter_reduce(1, pick, torch.where(value == least.gather(1, pick), rows, none), "amin")
        # the first row not claiming column j: 0, unless j is row 0's pick: the length of the
        # leading run of rows that picked it (cells when every row did)
        run = (pick == pick[:, :1]).long().cumprod(1).sum(1, keepdim=True)
        first_other = torch.zeros_like(pick).scatter_(1, pick[:, :1], run)
        taken = (first < cells) & ((least < 0) | (first < first_other))
        wins = taken.gather(1, pick) & (first.gather(1, pick) == rows)
        cost.scatter_add_(2, pick.unsqueeze(-1), (~wins).to(cost.dtype).unsqueeze(-1))
    return torch.zeros_like(cost).scatter_(2, pick.unsqueeze(-1), wins.to(cost.dtype).unsqueeze(-1))


def transport_blocks(images: Tensor, plan: Tensor, block_num: int, fill: Tensor | float = 0.0) -> Tensor:
    """Move the (block_num x block_num) blocks of ``images`` by ``plan``; a destination no block
    moves to holds ``fill`` (the code's 0 in normalised space).  A gather, not the code's matmul:
    the same result, since each column of the plan holds at most one 1."""
    b, c, h, w = images.shape
    s = h // block_num
    patches = images.reshape(b, c, block_num, s, block_num, s).permute(0, 2, 4, 1, 3, 5).reshape(b, block_num**2, -1)
    source = plan.argmax(-2)  # (B, n^2): the source of each destination
    moved = patches.gather(1, source.unsqueeze(-1).expand(-1, -1, patches.shape[-1]))
    filled = torch.as_tensor(fill, dtype=images.dtype, device=images.device).reshape(1, -1, 1, 1)
    filled = filled.expand(1, c, s, s).reshape(1, 1, -1)
    moved = torch.where(plan.sum(-2, keepdim=True).transpose(-2, -1) > 0, moved, filled)
    return moved.reshape(b, block_num, block_num, c, s, s).permute(0, 3, 1, 4, 2, 5).reshape(b, c, h, w)
