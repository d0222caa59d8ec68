"""Derivatives with ``torch.func`` and convergence orders.

* ``derivatives``: p(x), grad p(x), grad^2 p(x) at many points (vmap of jacrev / hessian).
* ``taylor``: the Taylor coefficients f(0), f'(0), f''(0)/2, ... of a function of the small
  parameter epsilon, by nested forward-mode ``jvp`` — exact to rounding, the independent witness
  against which each printed coefficient is held.
* ``fit_slope``: the log-log slope of a residual on a geometric grid of epsilon (as devito's and
  torchsde's convergence tests), ignoring points at the rounding floor.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor
from torch.func import hessian, jacrev, jvp, vmap

__all__ = ["derivatives", "eps_grid", "fit_slope", "taylor"]


def derivatives(fn: Callable[[Tensor], Tensor], x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(p, grad p, grad^2 p) at each row of x (n, d).

    For scalar p the shapes are (n,), (n, d), (n, d, d); for vector p with K components
    (n, K), (n, K, d), (n, K, d, d).
    """
    if x.ndim != 2:
        raise ValueError(f"points must be stacked as (n, d), got shape {tuple(x.shape)}")
    return fn(x), vmap(jacrev(fn))(x), vmap(hessian(fn))(x)


def taylor(
    f: Callable[[Tensor], Tensor], order: int = 2, *, dtype: torch.dtype = torch.float64
) -> list[Tensor]:
    """[f(0), f'(0), f''(0)/2!, ..., f^(order)(0)/order!] for f: epsilon (0-dim) -> tensor.

    One pass of ``order`` nested forward-mode ``jvp``s: each level carries the derivatives of the
    level inside it as its primal outputs, so all orders come out of the deepest evaluation.
    """
    if order < 0:
        raise ValueError(f"order must be >= 0, got {order}")
    one = torch.ones((), dtype=dtype)

    def nest(k: int) -> Callable[[Tensor], tuple[Tensor, ...]]:
        if k == 0:
            return lambda e: (f(e),)
        inner = nest(k - 1)

        def derivatives_up_to_k(e: Tensor) -> tuple[Tensor, ...]:
            primals, tangents = jvp(inner, (e,), (one,))
            return (*primals, tangents[-1])

        return derivatives_up_to_k

    values = nest(order)(torch.zeros((), dtype=dtype))
    return [v / math.factorial(k) for k, v in enumerate(values)]


def eps_grid(points: int = 13, low: float = 1e-4, high: float = 1e-1) -> np.ndarray:
    """A geometric grid of epsilon from ``high`` down to ``low``."""
    if points < 3 or not 0 < low < high:
        raise ValueError(f"need >= 3 points and 0 < low < high, got {points}, {low}, {high}")
    return np.geomspace(high, low, points)


def fit_slope(
    eps: np.ndarray, residual: np.ndarray, floor: float = 0.0, *, smallest: int | None = None
) -> float | None:
    """Least-squares slope of log|residual| against log(eps), over the points above ``floor``.

    With ``smallest``: of the points above the floor, only that many of the smallest eps — the
    asymptotic end of the grid — and of those only the run, from the smallest eps up, on which the
    residual keeps one sign (a pre-asymptotic sign change, where the eps^3 and eps^4 terms cancel,
    would fake a low order).  Returns ``None`` when fewer than two such points remain (the
    expansion is exact to rounding: no order to read off).
    """
    e = np.asarray(eps, dtype=float)
    r = np.asarray(residual, dtype=float)
    if e.shape != r.shape or e.ndim != 1:
        raise ValueError(f"eps {e.shape} and residual {r.shape} must be vectors of one length")
    if not np.all(e > 0):
        raise ValueError("eps must be positive")
    above = np.abs(r) > max(floor, 1e-300)
    e, r = e[above], r[above]
    if smallest is not None and len(e):
        order = np.argsort(e)
        e, r = e[order], r[order]
        same = np.sign(r) == np.sign(r[0])
        run = len(r) if same.all() else int(np.argmin(same))
        e, r = e[: min(run, smallest)], r[: min(run, smallest)]
    if len(e) < (2 if smallest is not None else 3):
        return None
    return float(np.polyfit(np.log(e), np.log(np.abs(r)), 1)[0])
