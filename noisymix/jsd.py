"""The generalized Jensen–Shannon divergence and the stability (consistency) loss.

Paper, Sec. 3.1 and the end of Sec. 3.2 (Lin, 1991):

    JS_pi(p_1, ..., p_M) = H(sum_m pi_m p_m) - sum_m pi_m H(p_m)
                         = sum_m pi_m KL(p_m || sum_j pi_j p_j).

The training loss uses M = 3 (clean, AugMix view 1, AugMix view 2) with pi_m = 1/3, as in
AugMix.  Everything here is batched over leading dimensions; the M distributions are stacked
along dimension 0 and the K classes along the last dimension.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from noisymix._checks import check_positive, check_simplex

__all__ = [
    "AUGMIX_MIXTURE_CLAMP",
    "entropy",
    "js_divergence",
    "js_divergence_from_logits",
    "jsd_consistency",
    "kl_divergence",
    "max_js_divergence",
]

AUGMIX_MIXTURE_CLAMP = 1e-7
"""The public AugMix/NoisyMix code clamps the mixture distribution to [1e-7, 1] before its log."""

JSDForm = Literal["entropy", "kl"]


def entropy(p: Tensor) -> Tensor:
    """Shannon entropy H(p) = -sum_k p_k ln p_k over the last dimension (0 ln 0 = 0)."""
    return -torch.special.xlogy(p, p).sum(-1)


def kl_divergence(p: Tensor, q: Tensor) -> Tensor:
    """KL(p || q) = sum_k p_k (ln p_k - ln q_k) over the last dimension (0 ln 0 = 0)."""
    return (torch.special.xlogy(p, p) - torch.special.xlogy(p, q)).sum(-1)


def _stacked(dists: Tensor | Sequence[Tensor], what: str) -> Tensor:
    if isinstance(dists, Tensor):
        stacked = dists
    else:
        dists = list(dists)
        shapes = {tuple(d.shape) for d in dists}
        if len(shapes) != 1:
            raise ValueError(f"all {what} must have the same shape, got {sorted(shapes)}")
        stacked = torch.stack(dists)
    if stacked.ndim < 2 or stacked.shape[0] < 1:
        raise ValueError(
            f"{what} must be stacked as (M, ..., K) with M >= 1 and K classes last, "
            f"got shape {tuple(stacked.shape)}"
        )
    return stacked


def _weights(weights: Tensor | Sequence[float] | None, m: int, like: Tensor) -> Tensor:
    """Mixture weights pi as a tensor of shape (M, 1, ..., 1) that broadcasts against (M, ..., K)."""
    if weights is None:
        w = torch.full((m,), 1.0 / m, dtype=like.dtype, device=like.device)
    else:
        w = torch.as_tensor(weights, dtype=like.dtype, device=like.device)
        if w.shape != (m,):
            raise ValueError(f"weights must have shape ({m},) for {m} distributions, got {tuple(w.shape)}")
        check_simplex("weights", w)
    return w.reshape(m, *([1] * (like.ndim - 1)))


def js_divergence(
    probs: Tensor | Sequence[Tensor],
    weights: Tensor | Sequence[float] | None = None,
    *,
    form: JSDForm = "kl",
) -> Tensor:
    """JS_pi(p_1, ..., p_M) from probabilities stacked as (M, ..., K); returns shape (...).

    Args:
        probs: M distributions over K classes, stacked on dim 0 (or a list of M tensors).
        weights: the mixture weights pi on the simplex; uniform 1/M when omitted.
        form: ``"entropy"`` evaluates H(mixture) - sum pi H(p_m); ``"kl"`` evaluates
            sum pi KL(p_m || mixture).  They agree exactly in real arithmetic.
    """
    p = _stacked(probs, "probability vectors")
    pi = _weights(weights, p.shape[0], p)
    mixture = (pi * p).sum(0)
    if form == "entropy":
        return entropy(mixture) - (pi.squeeze(-1) * entropy(p)).sum(0)
    if form == "kl":
        per_component = kl_divergence(p, mixture.unsqueeze(0).expand_as(p))
        # A zero-weight component may put mass where the mixture has none (KL = inf);
        # its term is 0 * inf, which the definition takes to be 0.
        per_component = torch.where(pi.squeeze(-1) > 0, per_component, 0.0)
        return (pi.squeeze(-1) * per_component).sum(0)
    raise ValueError(f"form must be 'entropy' or 'kl', got {form!r}")


def js_divergence_from_logits(
    logits: Tensor | Sequence[Tensor],
    weights: Tensor | Sequence[float] | None = None,
) -> Tensor:
    """JS_pi of softmax(logits_m), computed in log space (stable for saturated logits)."""
    z = _stacked(logits, "logit vectors")
    pi = _weights(weights, z.shape[0], z)
    log_p = F.log_softmax(z, dim=-1)
    log_pi = torch.log(pi)  # -inf for zero weights: such components leave the mixture
    log_mixture = torch.logsumexp(log_pi + log_p, dim=0, keepdim=True)
    per_component = (log_p.exp() * (log_p - log_mixture)).sum(-1)
    per_component = torch.where(pi.squeeze(-1) > 0, per_component, 0.0)
    # Rounding can leave about -1e-9 for identical views; the divergence itself is >= 0.
    return (pi.squeeze(-1) * per_component).sum(0).clamp_min(0.0)


def jsd_consistency(
    logits: Tensor | Sequence[Tensor],
    *,
    variant: Literal["exact", "augmix"] = "exact",
    clamp: float = AUGMIX_MIXTURE_CLAMP,
) -> Tensor:
    """The stability loss L^JSD of a batch: mean over samples of JS_{1/M,...,1/M}(p_1..p_M).

    Training uses M = 3 views (clean, aug1, aug2), each of shape (B, K).

    Args:
        logits: the M views' logits, stacked as (M, B, K) or a sequence of (B, K) tensors.
        variant: ``"exact"`` is the divergence itself, computed in log space.  ``"augmix"``
            reproduces the public AugMix/NoisyMix code: probabilities are averaged, the
            mixture is clamped to [clamp, 1] before its log, and the loss is the mean of
            ``F.kl_div(log mixture, p_m, reduction="batchmean")``.  Both agree wherever every
            mixture probability is at least ``clamp``.
        clamp: the mixture floor of the ``"augmix"`` variant.
    """
    z = _stacked(logits, "logit vectors")
    if z.ndim != 3:
        raise ValueError(f"consistency logits must be (M, B, K), got shape {tuple(z.shape)}")
    if variant == "exact":
        return js_divergence_from_logits(z).mean()
    if variant == "augmix":
        check_positive("clamp", clamp)
        log_p = F.log_softmax(z, dim=-1)
        probs = log_p.exp()
        log_mixture = probs.mean(0).clamp(clamp, 1.0).log()
        # The public F.kl_div(log_mixture, p) = sum p (ln p - log_mixture), with the same value
        # here; but F.kl_div takes ln p as xlogy(p, p), whose gradient p / p is NaN wherever a
        # probability underflows to 0 (a logit gap above ~104 in float32): a full-width run
        # at lr 0.1 hit exactly that, in the public code too.  ln p from log_softmax is finite.
        kls = (probs * (log_p - log_mixture)).sum(-1).sum(-1) / z.shape[1]  # batchmean, per view
        return kls.mean()
    raise ValueError(f"variant must be 'exact' or 'augmix', got {variant!r}")


def max_js_divergence(weights: Tensor | Sequence[float]) -> float:
    """The upper bound H(pi) of JS_pi, reached by distributions with disjoint supports."""
    w = torch.as_tensor(weights, dtype=torch.float64)
    check_simplex("weights", w)
    return float(entropy(w))
