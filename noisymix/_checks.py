"""Argument checks shared by the public functions: one clear ``ValueError`` per mistake."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def _values(value: float | Tensor) -> Tensor:
    return torch.as_tensor(value, dtype=torch.float64).detach().cpu()


def _number(value: float | Tensor) -> float | None:
    """A plain Python number as a float (checked without tensors: no aten op, so a check inside a
    training step costs no host synchronisation); ``None`` for a tensor or a sequence."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def check_positive(name: str, value: float | Tensor) -> None:
    number = _number(value)
    if number is not None:
        if not (math.isfinite(number) and number > 0):
            raise ValueError(f"{name} must be finite and > 0, got {_show(value)}")
        return
    v = _values(value)
    if not bool(torch.isfinite(v).all()) or not bool((v > 0).all()):
        raise ValueError(f"{name} must be finite and > 0, got {_show(value)}")


def check_nonnegative(name: str, value: float | Tensor) -> None:
    number = _number(value)
    if number is not None:
        if not (math.isfinite(number) and number >= 0):
            raise ValueError(f"{name} must be finite and >= 0, got {_show(value)}")
        return
    v = _values(value)
    if not bool(torch.isfinite(v).all()) or not bool((v >= 0).all()):
        raise ValueError(f"{name} must be finite and >= 0, got {_show(value)}")


def check_unit_interval(name: str, value: float | Tensor) -> None:
    number = _number(value)
    if number is not None:
        if not 0 <= number <= 1:
            raise ValueError(f"{name} must lie in [0, 1], got {_show(value)}")
        return
    v = _values(value)
    if not bool(((v >= 0) & (v <= 1)).all()):
        raise ValueError(f"{name} must lie in [0, 1], got {_show(value)}")


def check_simplex(name: str, weights: Tensor, atol: float = 1e-6) -> None:
    """Weights along the last dimension must be non-negative and sum to one."""
    w = _values(weights)
    if w.ndim == 0 or not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        raise ValueError(f"{name} must be non-negative finite weights, got {_show(weights)}")
    if not bool(torch.allclose(w.sum(-1), torch.ones((), dtype=w.dtype), atol=atol, rtol=0)):
        raise ValueError(f"{name} must sum to 1 along the last dimension, got {_show(weights)}")


def _show(value: float | Tensor) -> str:
    if isinstance(value, Tensor):
        if value.numel() <= 6:
            return str(value.detach().cpu().tolist())
        return f"tensor of shape {tuple(value.shape)} (min {value.min().item():.4g})"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return repr(value)
