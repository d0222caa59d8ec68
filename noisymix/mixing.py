"""Mixing and noise: M_lambda, the noisy mixing operator M_{lambda,xi}, label mixing.

Paper, Sec. 3.1:

    M_lambda(a, b)            = lambda a + (1 - lambda) b
    M_{lambda,xi}(x, x')      = (1 + sigma_mult xi_mult) ⊙ M_lambda(x, x') + sigma_add xi_add

applied to inputs or hidden features of any shape, with the labels mixed by M_lambda(y, y')
and lambda ~ Beta(alpha, beta).  ``noisy_mix`` is the operator itself with the noise given;
``noisy_feature_mixup`` draws everything a training step needs from a ``torch.Generator``
and applies it to a batch of concatenated views (clean, aug1, aug2).

Where the public NoisyMix code samples differently from the paper's formula, each difference
is a named option of ``NoiseConfig`` (defaults follow the public code):

* ``magnitude="beta25"``: each noise level is multiplied by a Beta(2, 5) draw, one per view;
  ``"fixed"`` uses sigma itself (the paper).
* ``sparse``: each element is left noise-free with this probability (``sparse_level``).
* ``split_add_scaling="index"``: the additive level of view s = 1, 2, 3 is multiplied by s;
  ``"none"`` uses one level for all views (the paper).
* ``split_noise="independent"``: fresh xi per view; ``"shared"`` uses one xi for all views,
  as the paper's L^JSD, where clean and augmented inputs share xi.

One permutation (the mixing partners) and one lambda are shared by all views, as in both.
Leading "group" dimensions index independent experiments (e.g. seeds trained together):
each group gets its own permutation, lambda and noise magnitudes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor

from noisymix._checks import check_nonnegative, check_positive, check_unit_interval
from noisymix.random import sample_beta

__all__ = [
    "MixConfig",
    "MixDraw",
    "NoiseConfig",
    "cutmix",
    "draw_mix",
    "feature_noise",
    "mix",
    "mix_targets",
    "noisy_feature_mixup",
    "noisy_mix",
    "perturb",
    "sample_noise",
    "vicinal_components",
]


# --------------------------------------------------------------------------- the operators
def _lead(lam: Tensor | float, like: Tensor) -> Tensor | float:
    """Reshape lambda of shape (L1, ..., Lk) to broadcast over the leading dims of ``like``."""
    if not isinstance(lam, Tensor) or lam.ndim == 0:
        return lam
    if tuple(like.shape[: lam.ndim]) != tuple(lam.shape):
        raise ValueError(
            f"lambda of shape {tuple(lam.shape)} does not match the leading dimensions of a "
            f"tensor of shape {tuple(like.shape)}"
        )
    return lam.reshape(*lam.shape, *([1] * (like.ndim - lam.ndim)))


def mix(a: Tensor, b: Tensor, lam: Tensor | float) -> Tensor:
    """M_lambda(a, b) = lambda a + (1 - lambda) b.

    ``lam`` is a scalar or a tensor matching the leading dimensions of ``a`` (e.g. one lambda
    per sample, shape (B,)).
    """
    if a.shape != b.shape:
        raise ValueError(f"cannot mix tensors of shapes {tuple(a.shape)} and {tuple(b.shape)}")
    lam = _lead(lam, a)
    return lam * a + (1 - lam) * b


def noisy_mix(
    a: Tensor,
    b: Tensor,
    lam: Tensor | float,
    *,
    xi_mult: Tensor | None = None,
    xi_add: Tensor | None = None,
    sigma_mult: float = 0.0,
    sigma_add: float = 0.0,
) -> Tensor:
    """M_{lambda,xi}(a, b) = (1 + sigma_mult xi_mult) ⊙ M_lambda(a, b) + sigma_add xi_add.

    Deterministic given the noise: the theory checks pass exact xi values, the samplers pass
    draws.  A missing xi (or a zero sigma) means no noise of that kind.
    """
    check_nonnegative("sigma_mult", sigma_mult)
    check_nonnegative("sigma_add", sigma_add)
    out = mix(a, b, lam)
    if xi_mult is not None and sigma_mult != 0:
        out = (1 + sigma_mult * xi_mult) * out
    if xi_add is not None and sigma_add != 0:
        out = out + sigma_add * xi_add
    return out


# ----------------------------------------------------------------------------- the noise
@dataclass(frozen=True)
class NoiseConfig:
    """The noise of M_{lambda,xi}; see the module docstring for the public-code options.

    Attributes:
        add: sigma_add, the additive level (xi_add ~ N(0, 1)).
        mult: sigma_mult, the multiplicative level (xi_mult ~ U(-1, 1), as the public code).
        sparse: probability that an element receives no noise (public ``sparse_level``).
        magnitude: ``"beta25"`` scales each level by a Beta(2, 5) draw per view; ``"fixed"``.
        split_add_scaling: ``"index"`` multiplies view s's additive level by s; ``"none"``.
        split_noise: ``"independent"`` xi per view, or ``"shared"`` across views.
    """

    add: float = 0.0
    mult: float = 0.0
    sparse: float = 0.0
    magnitude: Literal["beta25", "fixed"] = "beta25"
    split_add_scaling: Literal["index", "none"] = "index"
    split_noise: Literal["independent", "shared"] = "independent"

    def __post_init__(self) -> None:
        check_nonnegative("noise add level", self.add)
        check_nonnegative("noise mult level", self.mult)
        check_unit_interval("sparse level", self.sparse)
        _check_choice("magnitude", self.magnitude, ("beta25", "fixed"))
        _check_choice("split_add_scaling", self.split_add_scaling, ("index", "none"))
        _check_choice("split_noise", self.split_noise, ("independent", "shared"))

    @property
    def active(self) -> bool:
        return (self.add > 0 or self.mult > 0) and self.sparse < 1


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _magnitude(config: NoiseConfig, level: float, shape: tuple[int, ...], generator: torch.Generator,
               dtype: torch.dtype) -> Tensor:
    """sigma times, for ``"beta25"``, a Beta(2, 5) draw per entry of ``shape``."""
    if config.magnitude == "fixed":
        return torch.full(shape, level, dtype=dtype, device=generator.device)
    return level * sample_beta(2.0, 5.0, shape, generator=generator, dtype=dtype)


#: ``(mult_term, add_term)`` of ``sample_noise``; either ``None`` when that noise is off
NoiseTerms = tuple[Tensor | None, Tensor | None]


def sample_noise(
    shape: tuple[int, ...],
    config: NoiseConfig,
    *,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
    view_dims: int = 0,
    add_scale: Tensor | float = 1.0,
) -> tuple[Tensor | None, Tensor | None]:
    """Draw sigma_mult xi_mult and sigma_add xi_add (magnitudes and sparsity applied).

    Args:
        shape: shape of the tensor to perturb.
        view_dims: how many leading dimensions index separate views/groups; each index of
            them gets its own Beta(2, 5) magnitude, as each call of the public ``_noise``.
        add_scale: extra factor on the additive level, broadcastable to ``shape`` (the
            public code's split index).

    Returns:
        ``(mult_term, add_term)``; either is ``None`` when that noise is off.  The perturbed
        tensor is ``(1 + mult_term) * x + add_term``.
    """
    device = generator.device
    mag_shape = tuple(shape[:view_dims]) + (1,) * (len(shape) - view_dims)
    mult_term = add_term = None
    # each term written in place into its one fresh tensor (fewer full-size passes: on a GPU these are
    # memory-bound); xi_add, its sparsity mask, xi_mult, its mask: drawn in that order
    if config.add > 0:
        level = _magnitude(config, config.add, mag_shape, generator, dtype)
        add_term = torch.randn(shape, generator=generator, device=device, dtype=dtype).mul_(level * add_scale)
        if config.sparse > 0:
            drop = torch.rand(shape, generator=generator, device=device, dtype=dtype) < config.sparse
            add_term.masked_fill_(drop, 0.0)
    if config.mult > 0:
        level = _magnitude(config, config.mult, mag_shape, generator, dtype)
        # U(-1, 1) as 2 U(0, 1) - 1: the same numbers as ``2 * torch.rand(...) - 1``
        mult_term = torch.empty(shape, device=device, dtype=dtype).uniform_(-1.0, 1.0, generator=generator)
        mult_term.mul_(level)
        if config.sparse > 0:
            drop = torch.rand(shape, generator=generator, device=device, dtype=dtype) < config.sparse
            mult_term.masked_fill_(drop, 0.0)
    return mult_term, add_term


def perturb(x: Tensor, config: NoiseConfig, *, generator: torch.Generator | None, view_dims: int = 0,
            add_scale: Tensor | float = 1.0, terms: NoiseTerms | None = None) -> Tensor:
    """x -> (1 + sigma_mult xi_mult) ⊙ x + sigma_add xi_add, with freshly drawn noise, or with
    ``terms`` drawn beforehand by ``sample_noise`` with the same arguments (left unchanged)."""
    fresh = terms is None  # our own tensors: 1 + mult in place; the caller's: out of place, the same numbers
    mult_term, add_term = terms if terms is not None else sample_noise(
        tuple(x.shape), config, generator=generator, dtype=x.dtype, view_dims=view_dims, add_scale=add_scale)
    if mult_term is not None:
        mult_term = mult_term.add_(1.0) if fresh else mult_term + 1.0
    if mult_term is not None and add_term is not None:  # one fused pass: add + x (1 + mult)
        return torch.addcmul(add_term, x, mult_term)
    if mult_term is not None:
        x = x * mult_term
    if add_term is not None:
        x = x + add_term
    return x


# ------------------------------------------------------------------ a training step's draw
@dataclass(frozen=True)
class MixConfig:
    """Feature mixing plus noise, as one training step applies it.

    Attributes:
        alpha: lambda ~ Beta(alpha, beta); ``alpha = 0`` switches mixing off (lambda = 1).
        beta: second Beta parameter; ``None`` means ``alpha`` (symmetric, as the code).
        noise: the noise of M_{lambda,xi}.
        lam_per_sample: one lambda per sample instead of one per batch (the public code).
    """

    alpha: float = 1.0
    beta: float | None = None
    noise: NoiseConfig = field(default_factory=NoiseConfig)
    lam_per_sample: bool = False

    def __post_init__(self) -> None:
        check_nonnegative("alpha", self.alpha)
        if self.beta is not None:
            check_positive("beta", self.beta)

    @property
    def mixes(self) -> bool:
        return self.alpha > 0


@dataclass(frozen=True)
class MixDraw:
    """The randomness of one mixing step: partners and lambda, shared by all views.

    ``perm`` has shape ``groups + (B,)``; ``lam`` has shape ``groups`` (one per batch) or
    ``groups + (B,)`` (one per sample).  Sample i is mixed with sample ``perm[i]``.
    """

    perm: Tensor
    lam: Tensor


def draw_mix(batch_size: int, config: MixConfig, *, generator: torch.Generator,
             groups: tuple[int, ...] = (), dtype: torch.dtype = torch.float32) -> MixDraw:
    """Draw the partner permutation(s) and lambda(s) for one step."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    device = generator.device
    n_groups = math.prod(groups)
    keys = torch.rand((n_groups, batch_size), generator=generator, device=device)
    perm = keys.argsort(dim=-1).reshape(*groups, batch_size)
    lam_shape = (*groups, batch_size) if config.lam_per_sample else groups
    if config.mixes:
        beta = config.alpha if config.beta is None else config.beta
        lam = sample_beta(config.alpha, beta, lam_shape, generator=generator, dtype=dtype)
    else:
        lam = torch.ones(lam_shape, dtype=dtype, device=device)
    return MixDraw(perm=perm, lam=lam)


def _partners(x: Tensor, perm: Tensor) -> Tensor:
    """x[..., perm[...], ...]: rows of dim ``perm.ndim - 1`` permuted within each group."""
    g = perm.ndim - 1
    if tuple(x.shape[: g + 1]) != tuple(perm.shape):
        raise ValueError(
            f"permutation of shape {tuple(perm.shape)} does not match the leading dimensions of "
            f"a tensor of shape {tuple(x.shape)}"
        )
    if g == 0:
        return x[perm]
    index = perm.reshape(*perm.shape, *([1] * (x.ndim - g - 1))).expand_as(x)
    return torch.gather(x, g, index)


def noisy_feature_mixup(
    h: Tensor,
    draw: MixDraw,
    config: MixConfig,
    *,
    generator: torch.Generator | None,
    views: int = 1,
    terms: NoiseTerms | None = None,
) -> Tensor:
    """Apply M_{lambda,xi} to a batch of ``views`` concatenated views of B samples each.

    Args:
        h: inputs or features of shape ``groups + (views * B, ...)``, views concatenated as
            the public code does (clean, aug1, aug2).
        draw: partners and lambda from ``draw_mix(B, ...)``; shared by all views.
        views: number of concatenated views.
        terms: the noise drawn beforehand by ``feature_noise`` (same shape, config, views,
            dtype and generator state: the same numbers as drawn here); ``None``: drawn here from
            ``generator``.  Stacked members in a CUDA graph draw it outside the graph (issue 53).

    Returns:
        The mixed, noised tensor, same shape as ``h``.  Sample i of view s is mixed with
        sample ``perm[i]`` of the same view.
    """
    g = draw.perm.ndim - 1
    groups, n = tuple(h.shape[:g]), h.shape[g]
    b = draw.perm.shape[-1]
    if n != views * b:
        raise ValueError(f"batch of {n} rows is not {views} views of {b} samples")
    rest = tuple(h.shape[g + 1:])
    hv = h.reshape(*groups, views, b, *rest).movedim(g, 0)  # (views, *groups, B, ...)
    lam = draw.lam
    # every view's partners in one gather (one permutation without groups: one index_select)
    partners = (hv.index_select(1, draw.perm) if g == 0
                else torch.stack([_partners(v, draw.perm) for v in hv]))
    # M_lambda(h, partner) = partner + lambda (h - partner): one kernel (lerp) instead of four
    out = torch.lerp(partners, hv, _lead(lam.expand(views, *lam.shape).to(hv.dtype), hv))
    noise = config.noise
    if noise.active:
        add_scale: Tensor | float = 1.0
        if noise.split_add_scaling == "index":
            add_scale = torch.arange(1, views + 1, dtype=h.dtype, device=h.device)
            add_scale = add_scale.reshape(views, *([1] * (out.ndim - 1)))
        if noise.split_noise == "independent":
            out = perturb(out, noise, generator=generator, view_dims=1 + g, add_scale=add_scale, terms=terms)
        else:
            mult_term, add_term = terms if terms is not None else sample_noise(
                (1, *out.shape[1:]), noise, generator=generator, dtype=h.dtype, view_dims=1 + g)
            if mult_term is not None:
                out = (1 + mult_term) * out
            if add_term is not None:
                out = out + add_term * add_scale
    return out.movedim(0, g).reshape(h.shape)


def feature_noise(shape: tuple[int, ...], config: MixConfig, *, generator: torch.Generator, views: int = 1,
                  dtype: torch.dtype = torch.float32) -> NoiseTerms:
    """The noise ``noisy_feature_mixup`` draws for features of ``shape`` (``(views * B, ...)``, no
    group dimensions), drawn here instead: the same calls on ``generator`` in the same order, so
    ``noisy_feature_mixup(h, ..., terms=feature_noise(h.shape, ...))`` is the call without ``terms``
    from the same generator state.  Only its shape, not the features' values, decides what is drawn,
    so it can be drawn before the forward pass (stacked members in one CUDA graph, issue 53)."""
    noise = config.noise
    if not noise.active:
        return None, None
    b = shape[0] // views
    out_shape = (views, b, *shape[1:])
    if noise.split_noise == "independent":
        add_scale: Tensor | float = 1.0
        if noise.split_add_scaling == "index":
            add_scale = torch.arange(1, views + 1, dtype=dtype, device=generator.device)
            add_scale = add_scale.reshape(views, *([1] * (len(out_shape) - 1)))
        return sample_noise(out_shape, noise, generator=generator, dtype=dtype, view_dims=1, add_scale=add_scale)
    return sample_noise((1, *out_shape[1:]), noise, generator=generator, dtype=dtype, view_dims=1)


# --------------------------------------------------------------------------------- labels
def mix_targets(targets: Tensor, draw: MixDraw, num_classes: int | None = None) -> Tensor:
    """M_lambda(y, y[perm]) as soft targets of shape ``groups + (B, K)``.

    ``targets`` are class indices (give ``num_classes``) or soft/one-hot rows.
    """
    if not targets.is_floating_point():
        if num_classes is None:
            raise ValueError("num_classes is needed to one-hot encode integer targets")
        # a scatter, not F.one_hot: one_hot reads the labels' min and max back to the host on the
        # CPU (two synchronisations a step); labels are checked where the data is read
        targets = torch.zeros(*targets.shape, num_classes, dtype=draw.lam.dtype, device=targets.device).scatter_(
            -1, targets.unsqueeze(-1), 1.0)
    return mix(targets, _partners(targets, draw.perm), draw.lam)


# ------------------------------------------------------------------------------- Lemma 1
def vicinal_components(alpha: float, beta: float) -> tuple[tuple[float, float, float], ...]:
    """Lemma 1's law tilde-D_lambda = a/(a+b) Beta(a+1, b) + b/(a+b) Beta(b+1, a), as its two
    components ``(weight, a', b')`` of Beta(a', b').  The one definition of the law: the verifier's
    quadrature and closed-form moments (``theory.laws.vicinal_law``, ``vicinal_moments``) read
    it from here.

    The weights are a/(a+b) and b/(a+b): the mixture is uniform only when a = b (the paper
    calls it uniform throughout).
    """
    return ((alpha / (alpha + beta), alpha + 1, beta), (beta / (alpha + beta), beta + 1, alpha))


# --------------------------------------------------------------------------------- CutMix
def cutmix(x: Tensor, draw: MixDraw, *, generator: torch.Generator) -> tuple[Tensor, MixDraw]:
    """CutMix (Yun et al., 2019) on images (B, C, H, W): paste a box of area ~(1 - lam) from
    the partner.  Returns the images and the draw with lambda set to the exact kept area,
    so ``mix_targets`` weights the labels by the pixels actually kept."""
    if x.ndim != 4 or draw.perm.ndim != 1:
        raise ValueError("cutmix expects images (B, C, H, W) and one permutation of B")
    if draw.lam.ndim != 0:
        raise ValueError("cutmix uses one lambda per batch (one box for the batch, as CutMix)")
    h, w = x.shape[-2:]
    cut = math.sqrt(1.0 - float(draw.lam))
    ch, cw = int(h * cut), int(w * cut)
    cy, cx = (torch.randint(0, n, (1,), generator=generator, device=generator.device).item()
              for n in (h, w))
    y0, y1 = max(cy - ch // 2, 0), min(cy + ch // 2, h)
    x0, x1 = max(cx - cw // 2, 0), min(cx + cw // 2, w)
    out = x.clone()
    out[:, :, y0:y1, x0:x1] = x[draw.perm][:, :, y0:y1, x0:x1]
    kept = 1.0 - (y1 - y0) * (x1 - x0) / (h * w)
    return out, MixDraw(perm=draw.perm, lam=torch.full_like(draw.lam, kept))
