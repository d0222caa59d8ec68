"""The six training schemes of fig:toy_example, as data: each is a set of components.

A scheme switches on some of three components, each with its own strengths:

* ``mix`` — Manifold Mixup: lambda ~ Beta(alpha, alpha), inputs or hidden features mixed with
  a partner, labels mixed by M_lambda (Sec. 3.1, L^NFM with sigma = 0);
* ``noise`` — the noise of M_{lambda,xi}: (1 + sigma_mult xi_mult) ⊙ h + sigma_add xi_add at the
  same layer (with ``mix`` off, lambda = 1: plain noise injection);
* ``jsd`` — stability training: gamma * JS(p(view_1), p(view_2), p(view_3)) (Sec. 3.1,
  L^JSD with pi = 1/3).  AugMix's operations (rotate, posterize, ...) mean nothing for points
  in R^2 (the paper says so), so the views are what AugMix's A(x) = x + delta x reduces to
  without image operations: independently noise-perturbed copies, A(x) = x + s * eps with
  eps ~ N(0, I) — the Gaussian-perturbation stability training of Zheng et al. (2016), which
  the paper cites for L^stability.  The clean view is unperturbed.

The schemes are then Baseline = {}, Noise injection = {noise}, Manifold Mixup = {mix},
NFM = {mix, noise}, Manifold Mixup + JSD = {mix, jsd}, NoisyMix = {mix, noise, jsd}.  The
tuning-only scheme ``stability`` = {jsd} is where the JSD's strengths are chosen (see
``toy.tuning``).  A component's strengths are the same in every scheme that uses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from noisymix import MixConfig, NoiseConfig
from noisymix_infra.config import config_from_dict

__all__ = [
    "COMPONENTS",
    "PAPER_ACCURACY",
    "PAPER_SCHEMES",
    "SCHEMES",
    "Scheme",
    "SchemeConfig",
    "Strengths",
    "check_schemes",
    "scheme_config",
]

COMPONENTS: dict[str, tuple[str, ...]] = {
    "mix": ("alpha",),
    "noise": ("noise_add", "noise_mult"),
    "jsd": ("jsd_weight", "view_sd"),
}
"""Each component and the ``SchemeConfig`` fields (strengths) it owns."""


@dataclass(frozen=True)
class MixStrengths:
    """``mix``: lambda ~ Beta(alpha, alpha)."""

    alpha: float


@dataclass(frozen=True)
class NoiseStrengths:
    """``noise``: sigma_add and sigma_mult of M_{lambda,xi}."""

    noise_add: float
    noise_mult: float


@dataclass(frozen=True)
class JsdStrengths:
    """``jsd``: gamma and the views' perturbation sd."""

    jsd_weight: float
    view_sd: float


@dataclass(frozen=True)
class Strengths:
    """Every component's strengths, as a config dataclass: ``noisymix toy --set KEY=VALUE``
    overrides them with ``noisymix_infra.config.apply_overrides``, the dialect of ``noisymix train
    --set`` (keys ``mix.alpha``, ``noise.noise_add``, ``noise.noise_mult``, ``jsd.jsd_weight``,
    ``jsd.view_sd``)."""

    mix: MixStrengths
    noise: NoiseStrengths
    jsd: JsdStrengths

    @classmethod
    def from_dict(cls, strengths: Mapping[str, Mapping[str, Any]]) -> Strengths:
        """From ``{"mix": {"alpha": ...}, ...}`` (``toy/tuned.json``'s ``strengths``); every
        component and strength must be there."""
        missing = [f"{c}.{k}" for c, keys in COMPONENTS.items() for k in keys if k not in strengths.get(c, {})]
        if missing:
            raise ValueError(f"the toy's strengths lack {', '.join(missing)}")
        return config_from_dict(cls, {c: {k: float(v) for k, v in strengths[c].items()} for c in COMPONENTS})


@dataclass(frozen=True)
class SchemeConfig:
    """The strengths of one training scheme; every strength 0 is the Baseline.

    Attributes:
        alpha: mixing, lambda ~ Beta(alpha, alpha); 0 = no mixing (lambda = 1).
        noise_add: sigma_add of M_{lambda,xi} (xi_add ~ N(0, 1)).
        noise_mult: sigma_mult of M_{lambda,xi} (xi_mult ~ U(-1, 1)).
        jsd_weight: gamma, the weight of the JSD stability loss; 0 = one view, no JSD.
        view_sd: sd of the Gaussian perturbation that makes the two extra views.
    """

    alpha: float = 0.0
    noise_add: float = 0.0
    noise_mult: float = 0.0
    jsd_weight: float = 0.0
    view_sd: float = 0.0

    def __post_init__(self) -> None:
        for name in ("alpha", "noise_add", "noise_mult", "jsd_weight", "view_sd"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and value >= 0 and value == value
                    and value != float("inf")):
                raise ValueError(f"scheme strength {name} must be a finite number >= 0, got {value!r}")

    @property
    def views(self) -> int:
        """3 views (clean, two perturbed copies) when the JSD is on, as in the paper; else 1."""
        return 3 if self.jsd_weight > 0 else 1

    def mix_config(self) -> MixConfig:
        """The ``noisymix`` config of M_{lambda,xi}: one lambda per batch; the public code's
        noise (Beta(2, 5) magnitudes, additive level times the view index, fresh xi per view),
        no sparsity — a mask over two input coordinates has no meaning here."""
        noise = NoiseConfig(add=self.noise_add, mult=self.noise_mult, sparse=0.0, magnitude="beta25",
                            split_add_scaling="index", split_noise="independent")
        return MixConfig(alpha=self.alpha, noise=noise, lam_per_sample=False)

    def view_noise_config(self) -> NoiseConfig:
        """The views' perturbation A(x) = x + view_sd * eps: Gaussian, fixed level."""
        return NoiseConfig(add=self.view_sd, magnitude="fixed", split_add_scaling="none",
                           split_noise="independent")


@dataclass(frozen=True)
class Scheme:
    """A named scheme: a display label and the components it switches on."""

    label: str
    components: tuple[str, ...]


SCHEMES: dict[str, Scheme] = {
    "baseline": Scheme("Baseline", ()),
    "noise": Scheme("Noise injection", ("noise",)),
    "manifold_mixup": Scheme("Manifold Mixup", ("mix",)),
    "nfm": Scheme("NFM", ("mix", "noise")),
    "manifold_mixup_jsd": Scheme("Manifold Mixup + JSD", ("mix", "jsd")),
    "noisymix": Scheme("NoisyMix", ("mix", "noise", "jsd")),
    "stability": Scheme("Stability training (JSD)", ("jsd",)),
}

PAPER_SCHEMES: tuple[str, ...] = (
    "baseline", "noise", "manifold_mixup", "nfm", "manifold_mixup_jsd", "noisymix",
)
"""The six panels of fig:toy_example, in the paper's order."""

PAPER_ACCURACY: dict[str, float] = {
    "baseline": 0.868, "noise": 0.868, "manifold_mixup": 0.874, "nfm": 0.876,
    "manifold_mixup_jsd": 0.880, "noisymix": 0.888,
}
"""The paper's single-seed test accuracies (fig:toy_example captions)."""


def check_schemes(names: Iterable[str]) -> tuple[str, ...]:
    """The names as a tuple; an unknown or repeated name raises ``ValueError``."""
    names = tuple(names)
    if not names:
        raise ValueError(f"at least one scheme is needed; known schemes: {', '.join(SCHEMES)}")
    for name in names:
        if name not in SCHEMES:
            raise ValueError(f"unknown scheme {name!r}; known schemes: {', '.join(SCHEMES)}")
    if len(set(names)) != len(names):
        raise ValueError(f"schemes must not repeat, got {list(names)}")
    return names


def scheme_config(name: str, strengths: Mapping[str, Mapping[str, Any]]) -> SchemeConfig:
    """The ``SchemeConfig`` of scheme ``name`` with each of its components' strengths taken
    from ``strengths[component]`` (e.g. ``{"mix": {"alpha": 0.5}, ...}``)."""
    check_schemes([name])
    values: dict[str, float] = {}
    for component in SCHEMES[name].components:
        if component not in strengths:
            raise ValueError(f"no strengths given for component {component!r} of scheme {name!r}")
        given = dict(strengths[component])
        if set(given) != set(COMPONENTS[component]):
            raise ValueError(f"component {component!r} takes {list(COMPONENTS[component])}, "
                             f"got {sorted(given)}")
        values.update({k: float(v) for k, v in given.items()})
    return SchemeConfig(**values)
