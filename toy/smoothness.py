"""How smooth is a decision boundary?  Three numbers per model, computed on a fixed grid.

The paper's claim is visual ("NoisyMix is most effective at smoothing the decision
boundary").  We measure it with the quantities Theorems 1-2 say the NFM and stability losses
regularize — the input gradient and input Hessian of the predicted probability — plus the
length of the decision boundary itself:

* ``grad_norm``: mean over the grid of ||grad_x p(x)||_2, p(x) = softmax(f(x))_1;
* ``hessian_norm``: mean over the grid of ||Hess_x p(x)||_F.  For a ReLU network this is the
  almost-everywhere Hessian (ReLU's second derivative is zero off its kinks, which have
  measure zero and are never hit by the grid), i.e. sigma''(u) grad u grad u^T with
  u = f_1 - f_0;
* ``contour_length``: total length of the p = 0.5 level set on the grid (marching squares,
  ``contourpy``): a wigglier or fragmented boundary is longer.

Both derivatives come from ``torch.func`` (jacrev; jacrev of jacrev for the Hessian), vmapped
over grid points and over the stacked models, so all models are measured in a few batched calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import contourpy
import numpy as np
import torch
from torch import Tensor

from toy.train import Params, forward

__all__ = ["GRID_LIMIT", "Grid", "contour_length", "make_grid", "probability_field", "smoothness"]

GRID_LIMIT = 1.3
"""The grid covers [-1.3, 1.3]^2: the sampling disk (radius 1 after scaling) plus three noise
standard deviations (3 x 0.1), i.e. where the data lie."""


@dataclass(frozen=True)
class Grid:
    """A square grid: ``axis`` (n,) and the points (n*n, 2) in row-major (y, x) order."""

    axis: Tensor
    points: Tensor

    @property
    def size(self) -> int:
        return int(self.axis.numel())


def make_grid(size: int = 101, limit: float = GRID_LIMIT, device: torch.device | str = "cpu") -> Grid:
    if size < 2:
        raise ValueError(f"grid size must be >= 2, got {size}")
    axis = torch.linspace(-limit, limit, size, device=device)
    yy, xx = torch.meshgrid(axis, axis, indexing="ij")
    return Grid(axis=axis, points=torch.stack([xx.reshape(-1), yy.reshape(-1)], dim=-1))


def probability_field(params: Params, grid: Grid) -> Tensor:
    """p(class 1) on the grid for every model: (G, size, size), rows indexed by y."""
    with torch.no_grad():
        p = forward(params, grid.points).softmax(-1)[..., 1]
    return p.reshape(-1, grid.size, grid.size)


def _prob_one(params: Params, x: Tensor) -> Tensor:
    """p(class 1 | x) for one model (unbatched weights) and one point x (2,)."""
    h = torch.relu(x @ params["w1"] + params["b1"])
    return torch.softmax(h @ params["w2"] + params["b2"], dim=-1)[1]


def _over_models_and_points(fn: Callable[[Params, Tensor], Tensor]) -> Callable[[Params, Tensor], Tensor]:
    return torch.func.vmap(torch.func.vmap(fn, in_dims=(None, 0)), in_dims=(0, None))


def contour_length(field: np.ndarray, axis: np.ndarray, level: float = 0.5) -> float:
    """Total length of the ``level`` set of a field sampled on ``axis`` x ``axis``."""
    lines = contourpy.contour_generator(axis, axis, field).lines(level)
    return float(sum(np.linalg.norm(np.diff(line, axis=0), axis=1).sum() for line in lines))


def smoothness(params: Params, grid: Grid, *, chunk: int = 16) -> dict[str, Tensor]:
    """``grad_norm``, ``hessian_norm`` and ``contour_length``, each (G,) float64."""
    grad_fn = _over_models_and_points(torch.func.jacrev(_prob_one, argnums=1))
    # reverse over reverse: forward-mode AD (torch.func.hessian) would load torch's deprecated
    # TorchScript decompositions; for a 2-D input both cost the same
    hess_fn = _over_models_and_points(
        torch.func.jacrev(torch.func.jacrev(_prob_one, argnums=1), argnums=1))
    n_models = params["w1"].shape[0]
    grads, hessians = [], []
    for start in range(0, n_models, chunk):  # bounds memory: chunk x points x hidden
        piece = {name: value[start:start + chunk].detach() for name, value in params.items()}
        grads.append(grad_fn(piece, grid.points).norm(dim=-1).mean(-1))
        hessians.append(hess_fn(piece, grid.points).flatten(-2).norm(dim=-1).mean(-1))
    fields = probability_field(params, grid).double().cpu().numpy()
    axis = grid.axis.double().cpu().numpy()
    lengths = torch.tensor([contour_length(f, axis) for f in fields], dtype=torch.float64)
    return {"grad_norm": torch.cat(grads).double().cpu(),
            "hessian_norm": torch.cat(hessians).double().cpu(),
            "contour_length": lengths}
