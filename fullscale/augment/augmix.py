"""AugMix (Hendrycks et al.), batched: one augmented view per image, all images at once.

Per image, as ``aug()`` of the public AugMix/NoisyMix code: ``width`` chains, each of ``depth``
ops (``depth = -1``: 1..3 drawn per chain), each op drawn uniformly from the op list with its own
level ``Uniform(0.1, severity)`` and sign; chain weights ``w ~ Dirichlet(alpha 1)``; the result
``(1 - m) x + m sum_i w_i chain_i(x)`` with ``m ~ Beta(alpha, alpha)``.  The public code writes
this with ``m`` on the augmented part (``mixed = (1 - m) * x + m * mix``), the AugMix paper with
``m`` on the clean image; for Beta(alpha, alpha) the two laws coincide.

Instead of looping over images we loop over (depth step, op): every op is applied once per step
to the sub-batch of chains that drew it.  Random numbers come from the caller's generator (on
its device) and the work runs on the images' device.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from fullscale.augment.ops import BASIC_OPS, OPS
from noisymix.random import sample_beta, sample_dirichlet

__all__ = ["AugMixConfig", "augmix", "draw_chains"]

_MAX_DEPTH = 3  # the public code's np.random.randint(1, 4)


@dataclass(frozen=True)
class AugMixConfig:
    """The public code's ``--mixture-width``, ``--mixture-depth``, ``--aug-severity``, ``--all-ops``
    and the Dirichlet/Beta coefficient (1 in the NoisyMix code)."""

    width: int = 3
    depth: int = -1
    severity: int = 3
    alpha: float = 1.0
    all_ops: bool = False

    def __post_init__(self) -> None:
        if self.width < 1:
            raise ValueError(f"AugMix width must be >= 1, got {self.width}")
        if self.depth == 0 or self.depth < -1:
            raise ValueError(f"AugMix depth must be -1 (random 1..3) or >= 1, got {self.depth}")
        if not 1 <= self.severity <= 10:
            raise ValueError(f"AugMix severity must be in 1..10, got {self.severity}")
        if self.alpha <= 0:
            raise ValueError(f"AugMix alpha must be > 0, got {self.alpha}")

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(OPS) if self.all_ops else BASIC_OPS


@dataclass(frozen=True)
class Chains:
    """The random choices of one AugMix view for ``n`` images (chains flattened image-major)."""

    op_index: Tensor  # (n * width, max_depth) int64 into config.ops
    active: Tensor  # (n * width, max_depth) bool: step < depth of that chain
    level: Tensor  # (n * width, max_depth)
    sign: Tensor  # (n * width, max_depth) of +-1
    chain_weights: Tensor  # (n, width)
    clean_weight: Tensor  # (n,): 1 - m


def draw_chains(n: int, config: AugMixConfig, *, generator: torch.Generator) -> Chains:
    dev = generator.device
    chains = n * config.width
    steps = _MAX_DEPTH if config.depth < 0 else config.depth
    if config.depth < 0:
        depth = torch.randint(1, _MAX_DEPTH + 1, (chains, 1), generator=generator, device=dev)
    else:
        depth = torch.full((chains, 1), config.depth, device=dev)
    op_index = torch.randint(0, len(config.ops), (chains, steps), generator=generator, device=dev)
    level = 0.1 + (config.severity - 0.1) * torch.rand(chains, steps, generator=generator, device=dev)
    sign = torch.where(torch.rand(chains, steps, generator=generator, device=dev) > 0.5, -1.0, 1.0)
    weights = sample_dirichlet([config.alpha] * config.width, (n,), generator=generator) \
        if config.width > 1 else torch.ones(n, 1, device=dev)
    m = sample_beta(config.alpha, config.alpha, (n,), generator=generator)
    active = torch.arange(steps, device=dev)[None, :] < depth
    return Chains(op_index, active, level, sign, weights, 1 - m)


def apply_chains(images_u8: Tensor, config: AugMixConfig, chains: Chains) -> Tensor:
    """The view defined by ``chains``: float32 (N, 3, H, W) in [0, 1]."""
    n = images_u8.shape[0]
    dev = images_u8.device
    x = images_u8.float().repeat_interleave(config.width, dim=0)  # (n * width, 3, H, W), grey levels
    op_index, active = chains.op_index.to(dev), chains.active.to(dev)
    level, sign = chains.level.to(dev), chains.sign.to(dev)
    for step in range(op_index.shape[1]):
        for k, name in enumerate(config.ops):
            rows = torch.nonzero(active[:, step] & (op_index[:, step] == k)).squeeze(1)
            if rows.numel():
                x[rows] = OPS[name](x[rows], level[rows, step], sign[rows, step])
    mixed = (x.view(n, config.width, *x.shape[1:]) * chains.chain_weights.to(dev).view(n, -1, 1, 1, 1)).sum(1)
    clean = chains.clean_weight.to(dev).view(n, 1, 1, 1)
    # a convex mix of values in [0, 255]; the clamp only absorbs float rounding (1 + 1e-7)
    return ((clean * images_u8.float() + (1 - clean) * mixed) / 255.0).clamp_(0, 1)


def augmix(images_u8: Tensor, config: AugMixConfig, *, generator: torch.Generator) -> Tensor:
    """One AugMix view of every image: float32 (N, 3, H, W) in [0, 1].  Call twice for JSD's two views."""
    if images_u8.dtype != torch.uint8 or images_u8.ndim != 4 or images_u8.shape[1] != 3:
        raise ValueError(f"augmix expects uint8 images (N, 3, H, W), got {images_u8.dtype} "
                         f"{tuple(images_u8.shape)}")
    return apply_chains(images_u8, config, draw_chains(images_u8.shape[0], config, generator=generator))
