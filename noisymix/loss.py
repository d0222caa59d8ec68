"""The NoisyMix loss L = L_NFM + gamma * L_JSD (paper, Sec. 3.1, Eq. for L^NoisyMix).

L_NFM is the cross-entropy of the clean view's logits against the mixed labels
M_lambda(y, y'); L_JSD is the Jensen–Shannon consistency among the views (clean, aug1,
aug2) with pi = 1/3.  The public code weights the JSD by gamma = 12.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from noisymix._checks import check_nonnegative
from noisymix.jsd import jsd_consistency

__all__ = ["PUBLIC_CODE_JSD_WEIGHT", "LossParts", "noisymix_loss", "soft_cross_entropy"]

PUBLIC_CODE_JSD_WEIGHT = 12.0
"""gamma of the public AugMix and NoisyMix training scripts (hard-coded there)."""


@dataclass(frozen=True)
class LossParts:
    """The loss and its parts, each a scalar tensor (``jsd`` is 0 with a single view)."""

    total: Tensor
    cross_entropy: Tensor
    jsd: Tensor


def soft_cross_entropy(logits: Tensor, soft_targets: Tensor) -> Tensor:
    """Mean over samples of -sum_k y_k log softmax(logits)_k (the loss l of the paper)."""
    if logits.shape != soft_targets.shape:
        raise ValueError(
            f"logits {tuple(logits.shape)} and targets {tuple(soft_targets.shape)} differ in shape"
        )
    return -(soft_targets * F.log_softmax(logits, dim=-1)).sum(-1).mean()


def noisymix_loss(
    logits: Tensor,
    soft_targets: Tensor,
    *,
    views: int = 3,
    gamma: float | Tensor = PUBLIC_CODE_JSD_WEIGHT,
    jsd_variant: Literal["exact", "augmix"] = "exact",
) -> LossParts:
    """L = CE(clean logits, mixed labels) + gamma * JS_{1/V,...,1/V}(views).

    Args:
        logits: ``(views * B, K)``, views concatenated (clean first), as the model sees them.
        soft_targets: ``(B, K)`` mixed labels M_lambda(y, y[perm]) for the clean view
            (one-hot rows when nothing is mixed).
        views: 1 (no stability loss) or the number of views for the JSD (3 in the paper).
        gamma: weight of the stability loss (>= 0): a number or a scalar tensor.  Under
            ``torch.func.vmap`` with one gamma per member (the toy's ensemble step) the value
            cannot be inspected, so the caller checks it before the vmap.
        jsd_variant: ``"exact"`` or the public code's clamped ``"augmix"`` estimate.

    Every check is on shapes or on an unbatched ``gamma``, so the function can be vmapped over
    a leading member dimension (logits ``(G, views * B, K)``, targets ``(G, B, K)``, gamma ``(G,)``).
    """
    if not _vmapped(gamma):
        check_nonnegative("gamma", gamma)
    if views < 1 or logits.shape[0] % views:
        raise ValueError(f"{logits.shape[0]} logit rows cannot be split into {views} views")
    per_view = logits.reshape(views, logits.shape[0] // views, logits.shape[-1])
    ce = soft_cross_entropy(per_view[0], soft_targets)
    if views == 1:
        jsd = ce.new_zeros(())
        return LossParts(total=ce, cross_entropy=ce, jsd=jsd)
    jsd = jsd_consistency(per_view, variant=jsd_variant)
    return LossParts(total=ce + gamma * jsd, cross_entropy=ce, jsd=jsd)


def _vmapped(value: float | Tensor) -> bool:
    """Whether ``value`` is a tensor batched by ``torch.func.vmap`` (its values are not readable there)."""
    return isinstance(value, Tensor) and torch._C._functorch.is_batchedtensor(value)
