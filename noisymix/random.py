"""Random draws that take an explicit ``torch.Generator``.

``torch.distributions`` draws from the global RNG, so a run could not be replayed from its
seed alone.  Every stochastic function of the toolkit draws through these helpers instead:
the same generator state gives the same numbers, on CPU and on GPU alike.
"""

from __future__ import annotations

import torch
from torch import Tensor

from noisymix._checks import check_positive

__all__ = ["generator_for", "sample_beta", "sample_dirichlet"]


def generator_for(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """A fresh generator on ``device`` seeded with ``seed``."""
    generator = torch.Generator(device=device)
    generator.manual_seed(int(seed))
    return generator


def _concentration(value: float | Tensor, shape: tuple[int, ...], generator: torch.Generator,
                   dtype: torch.dtype) -> Tensor:
    device = generator.device
    if isinstance(value, Tensor):
        return value.to(device=device, dtype=dtype).expand(shape).contiguous()
    return torch.full(shape, float(value), device=device, dtype=dtype)


def _log_gamma(concentration: float | Tensor, shape: tuple[int, ...],
               generator: torch.Generator) -> Tensor:
    """log of Gamma(a, 1) draws, in float64, exact also for tiny a.

    Uses Gamma(a) = Gamma(a + 1) * U^(1/a) in log space: torch's sampler clamps tiny draws to
    the smallest normal double, which would bias Beta(a, b) for a, b << 1.
    """
    if not isinstance(concentration, Tensor):  # a number: checked in Python; a tensor: by the caller
        check_positive("concentration", concentration)
    conc = _concentration(concentration, shape, generator, torch.float64)
    boosted = torch._standard_gamma(conc + 1, generator=generator)
    u = torch.rand(shape, generator=generator, device=generator.device, dtype=torch.float64)
    return boosted.log() + u.clamp_min(torch.finfo(torch.float64).tiny).log() / conc


def sample_beta(alpha: float | Tensor, beta: float | Tensor, shape: tuple[int, ...] = (), *,
                generator: torch.Generator, dtype: torch.dtype = torch.float32) -> Tensor:
    """Beta(alpha, beta) draws as X / (X + Y) for X ~ Gamma(alpha), Y ~ Gamma(beta).

    Computed as sigmoid(log X - log Y), which stays exact when both draws underflow.
    """
    check_positive("alpha", alpha)
    check_positive("beta", beta)
    log_x = _log_gamma(alpha, shape, generator)
    log_y = _log_gamma(beta, shape, generator)
    return torch.sigmoid(log_x - log_y).to(dtype)


def sample_dirichlet(concentration: Tensor | list[float], shape: tuple[int, ...] = (), *,
                     generator: torch.Generator, dtype: torch.dtype = torch.float32) -> Tensor:
    """Dirichlet draws of shape ``shape + (K,)`` for a length-K concentration vector."""
    if isinstance(concentration, Tensor):
        check_positive("concentration", concentration)
    else:  # a list of numbers: checked without tensors (no aten op inside a training step)
        for value in concentration:
            check_positive("concentration", value)
    conc = torch.as_tensor(concentration, dtype=torch.float64)
    if conc.ndim != 1 or conc.numel() < 2:
        raise ValueError(f"Dirichlet concentration must be a vector of length >= 2, got {conc}")
    log_gammas = _log_gamma(conc, (*shape, conc.numel()), generator)
    return torch.softmax(log_gammas, dim=-1).to(dtype)
