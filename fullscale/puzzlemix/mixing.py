"""Puzzle Mix's operator and the trainer's hooks: one step's block count, masks, transport and mixed
images (``puzzle_mix``, steps 1-5 of ``fullscale.puzzlemix``), a training step's inputs with the
saliency pass and the adversarial option (``puzzlemix_batch``, ``puzzlemix_step``), its loss
(``puzzlemix_loss``), and the kind of mixing registered for the trainer (``fullscale.mixings``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fullscale.mixings import Mixing, register_mixing
from fullscale.puzzlemix.config import PuzzleMixConfig, PuzzleMixResult
from fullscale.puzzlemix.energy import block_costs, block_saliency
from fullscale.puzzlemix.gradient import adversarial_noise, adversarial_start, saliency
from fullscale.puzzlemix.masks import solve_masks
from fullscale.puzzlemix.transport import mask_transport, transport_blocks
from noisymix.loss import LossParts, soft_cross_entropy
from noisymix.mixing import MixDraw

__all__ = ["draw_block_num", "puzzle_mix", "puzzlemix_batch", "puzzlemix_loss", "puzzlemix_step"]


def draw_block_num(cfg: PuzzleMixConfig, generator: torch.Generator) -> int:
    return cfg.block_nums[int(torch.randint(len(cfg.block_nums), (1,), generator=generator,
                                            device=generator.device))]


def puzzle_mix(x: Tensor, sal: Tensor, perm: Tensor, lam: float, cfg: PuzzleMixConfig, *,
               generator: torch.Generator | None = None, block_num: int | None = None,
               fill: Tensor | float = 0.0, noise: Tensor | None = None,
               sides: tuple[bool, bool] = (False, False)) -> PuzzleMixResult:
    """Puzzle Mix of ``x`` (B, C, W, W) with ``x[perm]`` (see the module docstring).

    Args:
        sal: (B, W, W) saliency (``saliency``).
        lam: the step's lambda (label prior of the graph cut).
        generator: draws the block count (give ``block_num`` instead to fix it).
        fill: what a block the transport leaves empty holds, per channel (the model's
            normalisation mean is the code's 0).
        noise, sides: the adversarial perturbation and whether the own / partner side takes it
            (``adversarial_start``); the partner takes ``noise[perm]``.
    """
    if x.ndim != 4 or x.shape[-1] != x.shape[-2] or sal.shape != (x.shape[0], *x.shape[-2:]):
        raise ValueError(f"puzzle_mix expects square images (B, C, W, W) and saliency (B, W, W), got "
                         f"{tuple(x.shape)} and {tuple(sal.shape)}")
    if block_num is None:
        if generator is None:
            raise ValueError("puzzle_mix needs a generator (or a fixed block_num)")
        block_num = draw_block_num(cfg, generator)
    batch, width = x.shape[0], x.shape[-1]
    if width % block_num:
        raise ValueError(f"image width {width} is not a multiple of {block_num} blocks")
    x = x.float()
    block_size = width // block_num
    unary, edge_x, edge_y, sal_own = block_costs(x, sal, perm, float(lam), block_num, cfg)
    mask = torch.from_numpy(solve_masks(unary, edge_x, edge_y, workers=cfg.workers)).to(x.device).unsqueeze(1)

    own, partner = x, x[perm]
    if noise is not None and sides[0]:
        own = (own + noise).clamp(0, 1)
    if noise is not None and sides[1]:
        partner = (partner + noise[perm]).clamp(0, 1)

    if cfg.transport:
        t_size = min(cfg.t_size, block_size)
        t_block_num = block_num
        if cfg.t_size != -1 and t_size < block_size:
            t_block_num = width // t_size
            mask = F.interpolate(mask, size=t_block_num)
            sal_own = block_saliency(sal.float(), t_size)
        own = transport_blocks(own, mask_transport(mask, sal_own, cfg.t_eps), t_block_num, fill)
        partner = transport_blocks(partner, mask_transport(1 - mask, sal_own[perm], cfg.t_eps), t_block_num, fill)

    mask = F.interpolate(mask, size=width)
    weights = mask.reshape(batch, -1).mean(-1)
    return PuzzleMixResult(mask * own + (1 - mask) * partner, weights, mask, block_num)


def puzzlemix_batch(model: nn.Module, x: Tensor, y: Tensor, perm: Tensor, lam: float, cfg: PuzzleMixConfig, *,
                    generator: torch.Generator) -> tuple[PuzzleMixResult, Tensor | None]:
    """One training step's inputs, as the code's ``train``: the adversarial start (``adv_p > 0``),
    the saliency pass on ``model`` (the unwrapped network: a per-sample gradient needs no DDP
    sync), the adversarial step, then ``puzzle_mix``.  Returns the result and the clean loss term
    (``clean_lam > 0``, else None)."""
    mean, std = _normalisation(model)
    x = x.float()
    sides, noise = (False, False), None
    if cfg.adv_p > 0:
        drawn, noise = adversarial_start(x, cfg, generator=generator)
        sides = (bool(drawn[0]), bool(drawn[1]))
    adversarial = noise is not None and any(sides)
    sal, grad, clean = saliency(model, (x + noise) if adversarial else x, y, std=std, clean_lam=cfg.clean_lam)
    if adversarial:
        noise = adversarial_noise(noise, grad.sign(), cfg, generator=generator)
    result = puzzle_mix(x, sal, perm, lam, cfg, generator=generator, fill=mean,
                        noise=noise if adversarial else None, sides=sides)
    return result, clean


def puzzlemix_step(model: nn.Module, x: Tensor, y: Tensor, draw: MixDraw, cfg: PuzzleMixConfig, *,
                   generator: torch.Generator) -> tuple[Tensor, MixDraw, Tensor | None]:
    """The trainer's hook: ``puzzlemix_batch`` with the step's partners and lambda; returns the
    mixed images (``x``'s dtype), the draw with each pair's label weight (per-sample lambda = the
    mask's mean) and the clean loss term (or None)."""
    result, clean = puzzlemix_batch(model, x, y, draw.perm, float(draw.lam), cfg, generator=generator)
    return result.images.to(x.dtype), MixDraw(perm=draw.perm, lam=result.weights), clean


def puzzlemix_loss(logits: Tensor, soft_targets: Tensor, clean: Tensor | None, cfg: PuzzleMixConfig) -> LossParts:
    """The step's loss on the mixed batch (``cfg.loss``) plus the clean term; ``jsd`` is 0.

    ``bce_softmax`` is written out (log-probabilities clamped at -100 as torch's BCE) rather than
    ``F.binary_cross_entropy``, which refuses to run under autocast."""
    logits = logits.float()
    if cfg.loss == "bce_softmax":
        log_p = F.log_softmax(logits, -1).clamp_min(-100)
        log_not_p = torch.log1p(-log_p.exp()).clamp_min(-100)
        mixed = -(soft_targets * log_p + (1 - soft_targets) * log_not_p).mean()
        clean = clean / logits.shape[-1] if clean is not None else None
    else:
        mixed = soft_cross_entropy(logits, soft_targets)
    total = mixed if clean is None else mixed + clean
    return LossParts(total=total, cross_entropy=mixed, jsd=mixed.new_zeros(()))


def _normalisation(model: nn.Module) -> tuple[Tensor | float, Tensor | None]:
    """The model's input normalisation (mean, std) as (1, C, 1, 1) tensors, or (0, None)."""
    norm = getattr(model, "normalize", None)
    if norm is None or not hasattr(norm, "mean"):
        return 0.0, None
    return norm.mean, norm.std


# the kind of mixing the trainer runs (``fullscale.mixings``): its options are the ``puzzlemix`` group
# of the training config; per-pair masks, so its seeds are not stacked; joined with nothing else
register_mixing(Mixing("puzzlemix", batch_op=puzzlemix_step, loss=puzzlemix_loss, per_pair=True, combines=False,
                       config=PuzzleMixConfig))
