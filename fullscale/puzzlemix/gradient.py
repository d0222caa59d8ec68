"""Puzzle Mix's gradient pass: the saliency of the clean loss (the unary terms' and the transport's
weights) and, in the adversarial variant of its CIFAR recipe (``adv_p > 0``), the FGSM-like
perturbation built from that same gradient (the public code's ``adv_mix_coef``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fullscale.puzzlemix.config import PuzzleMixConfig

__all__ = ["adversarial_noise", "adversarial_start", "saliency"]


def saliency(model: nn.Module, x: Tensor, y: Tensor, *, std: Tensor | None = None,
             clean_lam: float = 0.0) -> tuple[Tensor, Tensor, Tensor | None]:
    """sqrt(mean_c (dCE/dx_c)^2) of the batch-mean clean loss, (B, H, W); that gradient
    (B, C, H, W), in the normalised space; and the clean loss term.

    The code differentiates with respect to the normalised input; ``std`` (the model's per-channel
    normalisation, (1, C, 1, 1)) converts our [0, 1] input's gradient to that one.  With
    ``clean_lam == 0`` the pass runs in eval mode and no parameter gradient is kept (the code zeroes
    them); otherwise in train mode and the returned ``2 clean_lam CE`` keeps its graph for the step.
    """
    was_training = model.training
    x = x.detach().requires_grad_(True)
    if clean_lam == 0:
        model.eval()
    try:
        logits = model(x).float()
    finally:
        model.train(was_training)
    loss = F.cross_entropy(logits, y)
    (grad,) = torch.autograd.grad(loss, x, retain_graph=clean_lam > 0)
    grad = grad.float()
    if std is not None:
        grad = grad * std.to(grad)
    unary = grad.pow(2).mean(1).sqrt()
    return unary, grad, (2 * clean_lam * loss if clean_lam > 0 else None)


def adversarial_start(x: Tensor, cfg: PuzzleMixConfig, *, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Whether each side (own, partner) is perturbed this step, (2,) bool, and the uniform start
    noise in the ``adv_eps / 255`` ball, clipped so that ``x + noise`` stays in [0, 1]."""
    sides = torch.rand(2, generator=generator, device=generator.device) < cfg.adv_p
    eps = cfg.adv_eps / 255.0
    noise = torch.rand(x.shape, generator=generator, device=generator.device).to(x) * (2 * eps) - eps
    return sides.to(x.device), (x + noise).clamp(0, 1) - x


def adversarial_noise(noise: Tensor, grad_sign: Tensor, cfg: PuzzleMixConfig, *,
                      generator: torch.Generator) -> Tensor:
    """One signed-gradient step of (adv_eps + 2) / 255 from ``noise``, clipped to the ball, times a
    uniform coefficient (the code's ``adv_mix_coef``)."""
    eps = cfg.adv_eps / 255.0
    noise = (noise + (cfg.adv_eps + 2) / 255.0 * grad_sign).clamp(-eps, eps)
    return noise * torch.rand((), generator=generator, device=generator.device).to(noise)
