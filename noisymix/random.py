"""Random draws that take an explicit ``torch.Generator``.

``torch.distributions`` draws from the global RNG, so a run could not be replayed from its
seed alone.  Every stochastic function of the toolkit draws through these helpers instead:
the same generator state gives the same numbers, on CPU and on GPU alike.
"""

from __future__ import annotations

import torch
from torch import Tensor

from noisymix._checks import check_positive

__all__ = ["generator_for", "sample_beta", "sample_dirichlet", "sample_gamma"]


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


def sample_gamma(concentration: float | Tensor, shape: tuple[int, ...] = (), *,
                 generator: torch.Generator, dtype: torch.dtype = torch.float32) -> Tensor:
    """Gamma(concentration, 1) draws of ``shape`` from ``generator``'s device."""
    check_positive("concentration", concentration)
    conc = _concentration(concentration, shape, generator, dtype)
    # float64 keeps tiny concentrations (alpha << 1) from underflowing to exact zeros.
    draws = torch._standard_gamma(conc.double(), generator=generator)
    return draws.to(dtype)


def sample_beta(alpha: float | Tensor, beta: float | Tensor, shape: tuple[int, ...] = (), *,
                generator: torch.Generator, dtype: torch.dtype = torch.float32) -> Tensor:
    """Beta(alpha, beta) draws as a ratio of Gamma draws: X / (X + Y)."""
    check_positive("alpha", alpha)
    check_positive("beta", beta)
    x = sample_gamma(alpha, shape, generator=generator, dtype=torch.float64)
    y = sample_gamma(beta, shape, generator=generator, dtype=torch.float64)
    total = x + y
    # Both Gamma draws can underflow to 0 for tiny alpha and beta; Beta(a, b) then puts its
    # mass at the endpoints with odds a : b, which a uniform draw against a/(a+b) reproduces.
    # Drawn unconditionally: branching on the data would cost a GPU sync per call.
    degenerate = total == 0
    a = _concentration(alpha, shape, generator, torch.float64)
    b = _concentration(beta, shape, generator, torch.float64)
    u = torch.rand(shape, generator=generator, device=generator.device, dtype=torch.float64)
    ratio = torch.where(degenerate, (u < a / (a + b)).double(), x / total.clamp_min(1e-300))
    return ratio.to(dtype)


def sample_dirichlet(concentration: Tensor | list[float], shape: tuple[int, ...] = (), *,
                     generator: torch.Generator, dtype: torch.dtype = torch.float32) -> Tensor:
    """Dirichlet draws of shape ``shape + (K,)`` for a length-K concentration vector."""
    conc = torch.as_tensor(concentration, dtype=torch.float64)
    if conc.ndim != 1 or conc.numel() < 2:
        raise ValueError(f"Dirichlet concentration must be a vector of length >= 2, got {conc}")
    check_positive("concentration", conc)
    gammas = sample_gamma(conc, (*shape, conc.numel()), generator=generator, dtype=torch.float64)
    total = gammas.sum(-1, keepdim=True)
    return (gammas / total.clamp_min(torch.finfo(torch.float64).tiny)).to(dtype)
