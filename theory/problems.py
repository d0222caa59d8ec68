"""Training sets and the exact perturbation grids of the epsilon-families.

After the paper's rescaling 1 - lambda -> eps (1 - lambda), sigma -> eps sigma, the input that
the loss sees for anchor i, partner r, lambda and noise xi is (Lemma 1, Lemma 2)

    M_{1 - eps(1 - lambda), eps xi}(z_i, z_r)
        = (1 + eps sigma_mult xi_mult) ⊙ (z_i + eps(1 - lambda)(z_r - z_i)) + eps sigma_add xi_add
        = z_i + eps e_i,

computed here with the core's ``noisymix.noisy_mix`` (the eps of the noise is carried by the xi
argument so that forward-mode derivatives in eps flow through it).  ``points`` stacks every atom
of (i, r, lambda, xi) — shape (n, n, m, A, d) — with its exact probability (1/n)(1/n) w_lambda w_xi.

A(x_i), a random augmentation in the paper, is one fixed realisation per training point: the
training set Z_n of the paper holds such fixed pairs (A(x_i), y_i), and every statement is
conditional on them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor

from noisymix import generator_for, noisy_mix
from theory import _args
from theory.laws import DiscreteLaw, NoiseLaw, independent_noise
from theory.models import build_model

__all__ = [
    "Data",
    "Family",
    "Instance",
    "grid_weights",
    "independent_family",
    "make_data",
    "points",
    "random_covariance",
    "sphere_data",
]

DTYPE = torch.float64


@dataclass(frozen=True)
class Data:
    """Inputs x (n, d), integer labels (n,), and one fixed augmentation A(x_i) per point (n, d)."""

    x: Tensor
    labels: Tensor
    aug: Tensor

    def __post_init__(self) -> None:
        n = self.x.shape[0]
        if self.x.ndim != 2 or self.aug.shape != self.x.shape or self.labels.shape != (n,):
            raise ValueError(
                f"data shapes disagree: x {tuple(self.x.shape)}, aug {tuple(self.aug.shape)}, labels "
                f"{tuple(self.labels.shape)}"
            )
        if n < 2:
            raise ValueError(f"need at least 2 training points, got {n}")

    @property
    def n(self) -> int:
        return self.x.shape[0]

    @property
    def dim(self) -> int:
        return self.x.shape[1]


@dataclass(frozen=True)
class Family:
    """The epsilon-family's randomness: the law of lambda, the noise law and its levels."""

    lam: DiscreteLaw
    noise: NoiseLaw
    sigma_add: float
    sigma_mult: float
    shared_noise: bool = True  # clean and augmented arguments share xi (the paper's L^JSD)
    name: str = ""

    def __post_init__(self) -> None:
        _args.nonnegative("sigma_add", self.sigma_add)
        _args.nonnegative("sigma_mult", self.sigma_mult)

    @property
    def mixes(self) -> bool:
        """Whether lambda leaves 1 (the family mixes at all; else its lambda moments are 0)."""
        return self.lam.atoms.numel() > 1 or float(self.lam.atoms[0]) != 1.0


def random_covariance(dim: int, generator: torch.Generator, scale: float = 1.0) -> Tensor:
    """A generic positive-definite d x d covariance (not diagonal, so structure errors show)."""
    a = torch.randn(dim, dim, generator=generator, dtype=DTYPE)
    return scale * (a @ a.T / dim + 0.3 * torch.eye(dim, dtype=DTYPE))


def make_data(n: int, dim: int, *, classes: int = 2, seed: int = 0, aug_scale: float = 0.4) -> Data:
    """Gaussian inputs with a non-zero mean, random labels, A(x_i) = x_i + a fixed perturbation."""
    _args.count("n", n, 2)
    _args.count("dim", dim)
    _args.count("classes", classes, 2)
    _args.nonnegative("aug_scale", aug_scale)
    g = generator_for(seed)
    shift = 0.5 * torch.randn(dim, generator=g, dtype=DTYPE)
    x = torch.randn(n, dim, generator=g, dtype=DTYPE) + shift
    labels = torch.randint(0, classes, (n,), generator=g)
    aug = x + aug_scale * torch.randn(n, dim, generator=g, dtype=DTYPE)
    return Data(x, labels, aug)


def sphere_data(pairs: int, dim: int, *, radius: float = 1.0, aug_scale: float = 0.3, seed: int = 0) -> Data:
    """Theorem 3's setting: points ±u_j on a sphere (so E_r[x_r] = 0 and ||x_i|| = c_x sqrt(d) for
    every i) and A(x) = T x for a fixed matrix T near the identity (so E_r[A(x_r)] = 0 too).
    Labels are set by the caller from the model's sign (theta in Theta)."""
    _args.count("pairs", pairs)
    _args.count("dim", dim)
    _args.positive("radius", radius)
    g = generator_for(seed)
    u = torch.randn(pairs, dim, generator=g, dtype=DTYPE)
    u = radius * u / u.norm(dim=1, keepdim=True)
    x = torch.cat([u, -u])
    t = torch.eye(dim, dtype=DTYPE) + aug_scale * torch.randn(dim, dim, generator=g, dtype=DTYPE) / dim**0.5
    return Data(x, torch.zeros(2 * pairs, dtype=torch.long), x @ t.T)


def independent_family(
    dim: int, lam: DiscreteLaw, *, sigma_add: float, sigma_mult: float, seed: int = 0, name: str = ""
) -> Family:
    """A family with independent xi_add, xi_mult of generic covariances."""
    g = generator_for(seed + 1000)
    noise = independent_noise(random_covariance(dim, g), random_covariance(dim, g, 0.5))
    return Family(lam, noise, sigma_add, sigma_mult, name=name)


def points(
    anchor: Tensor,
    partner: Tensor,
    family: Family,
    eps: Tensor,
    noise_atoms: tuple[Tensor, Tensor] | None = None,
) -> Tensor:
    """z_i + eps e_i for every atom: shape (n, n, m, A, d) (anchor i, partner r, lambda, xi).

    ``eps`` is a scalar or a vector of E values (then the shape is (E, n, n, m, A, d): a whole eps
    grid in one pass).  ``noise_atoms`` overrides the (add, mult) atoms, e.g. to give the
    augmented argument its own, independent xi.
    """
    n, d = anchor.shape
    eps = torch.as_tensor(eps, dtype=anchor.dtype)
    if eps.ndim > 1:
        raise ValueError(f"eps must be a scalar or a vector, got shape {tuple(eps.shape)}")
    lead = tuple(eps.shape)
    lam = family.lam.atoms
    add, mult = noise_atoms if noise_atoms is not None else (family.noise.add, family.noise.mult)
    m, a = lam.shape[0], add.shape[0]
    shape = (*lead, n, n, m, a, d)
    z_i = anchor.reshape(n, 1, 1, 1, d).expand(shape)
    z_r = partner.reshape(1, n, 1, 1, d).expand(shape)
    e = eps.reshape(*lead, 1, 1, 1, 1)
    lam_eps = (1 - e * (1 - lam).reshape(m, 1)).expand(shape[:-1])
    xi_add = (e[..., None] * add.reshape(a, d)).expand(shape)
    xi_mult = (e[..., None] * mult.reshape(a, d)).expand(shape)
    return noisy_mix(
        z_i,
        z_r,
        lam_eps,
        xi_mult=xi_mult,
        xi_add=xi_add,
        sigma_mult=family.sigma_mult,
        sigma_add=family.sigma_add,
    )


def grid_weights(n: int, family: Family) -> Tensor:
    """Probabilities (1/n)(1/n) w_lambda w_xi of the atoms of ``points``, shape (n, n, m, A)."""
    w = family.lam.weights[:, None] * family.noise.weights[None, :]
    return (w / n**2)[None, None].expand(n, n, *w.shape)


@dataclass(frozen=True)
class Instance:
    """One test problem of the verifier: a model family of ``theory.models`` on ``dim`` inputs
    with ``classes`` outputs (``None``: the model's own default), six data points of ``make_data``
    from ``seed``, and the Beta(alpha, beta) law of lambda."""

    model: str
    dim: int
    classes: int | None
    seed: int
    alpha: float
    beta: float

    def shifted(self, seed: int) -> Instance:
        """The same instance with its seed moved by the run's ``--seed``."""
        return replace(self, seed=self.seed + seed)

    def build(self):
        model = build_model(self.model, self.dim, self.classes, seed=self.seed)
        data = make_data(6, self.dim, classes=self.classes or 2, seed=self.seed)
        return model, data
