"""Argument checks of the verifier's public functions: one clear ``ValueError`` per mistake."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def positive(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def nonnegative(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def count(name: str, value: int, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def simplex(name: str, weights: Tensor | list[float] | tuple[float, ...], atol: float = 1e-9) -> Tensor:
    w = torch.as_tensor(weights, dtype=torch.float64)
    if w.ndim != 1 or w.numel() < 1 or not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        raise ValueError(f"{name} must be a vector of non-negative finite weights, got {w.tolist()}")
    if abs(float(w.sum()) - 1.0) > atol:
        raise ValueError(f"{name} must sum to 1, got sum {float(w.sum())!r}")
    return w


def covariance(name: str, cov: Tensor, dim: int | None = None) -> Tensor:
    c = torch.as_tensor(cov, dtype=torch.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or (dim is not None and c.shape[0] != dim):
        want = f"({dim}, {dim})" if dim is not None else "square"
        raise ValueError(f"{name} must be a {want} matrix, got shape {tuple(c.shape)}")
    if not bool(torch.isfinite(c).all()) or not torch.allclose(c, c.T, atol=1e-12, rtol=0):
        raise ValueError(f"{name} must be a finite symmetric matrix")
    if float(torch.linalg.eigvalsh(c).min()) < -1e-12:
        raise ValueError(f"{name} must be positive semi-definite")
    return c
