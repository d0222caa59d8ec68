"""Finite-support laws, so that every expectation of the theorems is an exact sum.

The theorems only assume that xi = (xi_add, xi_mult) has zero mean and finite second moments,
that x_r is drawn from the empirical law of the training inputs, and that lambda follows
Beta(alpha, beta) (Lemma 1's tilde-D_lambda after the label-mixing identity; the law itself is
``noisymix.vicinal_components``).  We pick laws with
finitely many atoms that satisfy exactly these hypotheses:

* **lambda** — the m-point Gauss–Jacobi rule of Beta(a, b) is itself a probability law on (0, 1)
  whose first 2m - 1 moments equal those of Beta(a, b).  The expansions involve E[1 - lambda] and
  E[(1 - lambda)^2] only (the remainder's leading term E[(1 - lambda)^3]), so for m >= 2 every
  coefficient is the Beta one; the only place where the rule approximates rather than equals
  Beta is Lemma 1's identity, where it converges geometrically in m (the integrand is analytic).
* **xi** — atoms ±sqrt(D) L e_j (j = 1..D, probability 1/(2D) each) for a factor L L^T = Sigma:
  zero mean and covariance exactly Sigma, for any positive semi-definite Sigma.  A joint law of
  (xi_add, xi_mult) built this way from a 2d x 2d covariance may correlate the two (the paper does
  not exclude it); the product of two such laws makes them independent.
* **x_r** — the n training inputs, probability 1/n each, as D_x in the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import roots_jacobi
from torch import Tensor

from noisymix import vicinal_components
from theory import _args

__all__ = [
    "DiscreteLaw",
    "NoiseLaw",
    "beta_law",
    "beta_moments",
    "covariance_law",
    "independent_noise",
    "joint_noise",
    "mixture_law",
    "point_law",
    "vicinal_law",
    "vicinal_moments",
]

DTYPE = torch.float64


@dataclass(frozen=True)
class DiscreteLaw:
    """A law with finitely many atoms: ``atoms`` of shape (m, ...) with probabilities ``weights`` (m,)."""

    atoms: Tensor
    weights: Tensor
    name: str

    def __post_init__(self) -> None:
        if self.weights.ndim != 1 or self.atoms.shape[:1] != self.weights.shape:
            raise ValueError(
                f"atoms {tuple(self.atoms.shape)} and weights {tuple(self.weights.shape)} disagree"
            )
        _args.simplex(f"weights of {self.name}", self.weights, atol=1e-9)

    def expect(self, values: Tensor) -> Tensor:
        """E[g] for values g(atom) stacked along dim 0."""
        w = self.weights.reshape(-1, *([1] * (values.ndim - 1)))
        return (w * values).sum(0)

    def one_minus_moment(self, k: int) -> float:
        """E[(1 - lambda)^k] of a law on lambda."""
        return float(self.expect((1 - self.atoms) ** k))


def beta_law(alpha: float, beta: float, nodes: int = 8) -> DiscreteLaw:
    """The ``nodes``-point Gauss–Jacobi rule of Beta(alpha, beta), as a law on lambda in (0, 1).

    The Beta density is proportional to lambda^(alpha-1) (1-lambda)^(beta-1); with lambda = (1+t)/2
    this is the Jacobi weight (1-t)^(beta-1) (1+t)^(alpha-1) on (-1, 1).
    """
    a = _args.positive("alpha", alpha)
    b = _args.positive("beta", beta)
    m = _args.count("nodes", nodes)
    with np.errstate(invalid="ignore", divide="ignore"):  # scipy evaluates an unused 0/0 branch at k = 1
        t, w = roots_jacobi(m, b - 1.0, a - 1.0)
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(w))):
        raise ValueError(f"Gauss-Jacobi rule of Beta({a:g}, {b:g}) with {m} nodes is not finite")
    lam = torch.as_tensor((1.0 + t) / 2.0, dtype=DTYPE)
    weights = torch.as_tensor(w / w.sum(), dtype=DTYPE)
    return DiscreteLaw(lam, weights, f"Beta({a:g},{b:g})[{m}-point Gauss-Jacobi]")


def point_law(value: float = 1.0) -> DiscreteLaw:
    """lambda = value almost surely (value 1: no mixing)."""
    return DiscreteLaw(
        torch.tensor([float(value)], dtype=DTYPE), torch.ones(1, dtype=DTYPE), f"delta({value:g})"
    )


def mixture_law(laws: list[DiscreteLaw], weights: list[float], name: str) -> DiscreteLaw:
    """The mixture sum_j weights_j laws_j."""
    w = _args.simplex("mixture weights", weights)
    if len(laws) != w.numel():
        raise ValueError(f"{len(laws)} laws but {w.numel()} mixture weights")
    atoms = torch.cat([law.atoms for law in laws])
    probs = torch.cat([wj * law.weights for wj, law in zip(w, laws)])
    return DiscreteLaw(atoms, probs, name)


def vicinal_law(alpha: float, beta: float, nodes: int = 8, *, uniform: bool = False) -> DiscreteLaw:
    """Lemma 1's tilde-D_lambda (``noisymix.vicinal_components``: a/(a+b) Beta(a+1, b) + b/(a+b)
    Beta(b+1, a)), each component by quadrature.

    ``uniform=True`` gives the reading suggested by the paper's notation section, which calls
    tilde-D_lambda "a uniform mixture": weights 1/2, 1/2 (equal to the above only when a = b).
    """
    a = _args.positive("alpha", alpha)
    b = _args.positive("beta", beta)
    components = vicinal_components(a, b)
    weights = [0.5, 0.5] if uniform else [w for w, _, _ in components]
    tag = "uniform " if uniform else ""
    return mixture_law(
        [beta_law(p, q, nodes) for _, p, q in components], weights, f"{tag}tilde-D({a:g},{b:g})"
    )


def beta_moments(alpha: float, beta: float) -> tuple[float, float]:
    """Closed forms (E[1 - lambda], E[(1 - lambda)^2]) for lambda ~ Beta(alpha, beta)."""
    a = _args.positive("alpha", alpha)
    b = _args.positive("beta", beta)
    return b / (a + b), b * (b + 1) / ((a + b) * (a + b + 1))


def vicinal_moments(alpha: float, beta: float) -> tuple[float, float]:
    """Closed forms (E[1 - lambda], E[(1 - lambda)^2]) for lambda ~ tilde-D_lambda(alpha, beta),
    the mixture of its components' Beta moments (``noisymix.vicinal_components``)."""
    a = _args.positive("alpha", alpha)
    b = _args.positive("beta", beta)
    (wa, *law_a), (wb, *law_b) = vicinal_components(a, b)
    m1a, m2a = beta_moments(*law_a)
    m1b, m2b = beta_moments(*law_b)
    return wa * m1a + wb * m1b, wa * m2a + wb * m2b


def covariance_law(cov: Tensor, name: str = "xi") -> DiscreteLaw:
    """Zero-mean law with covariance exactly ``cov``: atoms ±sqrt(D) L e_j, probability 1/(2D) each."""
    c = _args.covariance("covariance", cov)
    dim = c.shape[0]
    evals, evecs = torch.linalg.eigh(c)
    factor = evecs * evals.clamp_min(0).sqrt()  # factor @ factor.T == cov (also when singular)
    cols = (dim**0.5) * factor.T  # (D, D): row j is sqrt(D) L e_j
    atoms = torch.cat([cols, -cols])
    weights = torch.full((2 * dim,), 1.0 / (2 * dim), dtype=DTYPE)
    return DiscreteLaw(atoms, weights, name)


@dataclass(frozen=True)
class NoiseLaw:
    """A joint finite law of (xi_add, xi_mult): ``add`` and ``mult`` of shape (A, d), ``weights`` (A,)."""

    add: Tensor
    mult: Tensor
    weights: Tensor
    name: str

    def __post_init__(self) -> None:
        if (
            self.add.shape != self.mult.shape
            or self.add.ndim != 2
            or self.weights.shape != self.add.shape[:1]
        ):
            raise ValueError(
                f"noise atoms add {tuple(self.add.shape)}, mult {tuple(self.mult.shape)} and weights "
                f"{tuple(self.weights.shape)} disagree"
            )
        _args.simplex(f"weights of {self.name}", self.weights)

    @property
    def dim(self) -> int:
        return self.add.shape[1]

    def second_moment(self, u: Tensor, v: Tensor) -> Tensor:
        """E[u v^T] for atoms u, v of shape (A, d)."""
        return torch.einsum("a,ai,aj->ij", self.weights, u, v)

    @property
    def cov_add(self) -> Tensor:
        return self.second_moment(self.add, self.add)

    @property
    def cov_mult(self) -> Tensor:
        return self.second_moment(self.mult, self.mult)

    @property
    def cross(self) -> Tensor:
        """E[xi_add xi_mult^T] (zero for independent noise)."""
        return self.second_moment(self.add, self.mult)


def independent_noise(cov_add: Tensor, cov_mult: Tensor) -> NoiseLaw:
    """xi_add and xi_mult independent, each from ``covariance_law``: (2d)^2 atoms."""
    a = covariance_law(cov_add, "xi_add")
    m = covariance_law(cov_mult, "xi_mult")
    if a.atoms.shape[1] != m.atoms.shape[1]:
        raise ValueError(f"xi_add has dimension {a.atoms.shape[1]} but xi_mult {m.atoms.shape[1]}")
    na, nm = a.atoms.shape[0], m.atoms.shape[0]
    add = a.atoms.repeat_interleave(nm, 0)
    mult = m.atoms.repeat(na, 1)
    weights = (a.weights[:, None] * m.weights[None, :]).reshape(-1)
    return NoiseLaw(add, mult, weights, "independent xi_add, xi_mult")


def joint_noise(cov: Tensor) -> NoiseLaw:
    """(xi_add, xi_mult) with a joint 2d x 2d covariance (may correlate them): 4d atoms."""
    c = _args.covariance("joint covariance", cov)
    if c.shape[0] % 2:
        raise ValueError(f"joint covariance must be 2d x 2d, got {tuple(c.shape)}")
    law = covariance_law(c, "xi")
    d = c.shape[0] // 2
    return NoiseLaw(law.atoms[:, :d], law.atoms[:, d:], law.weights, "correlated xi_add, xi_mult")
