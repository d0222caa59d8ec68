"""Lemma 1 and Theorem 1: the NFM loss, exactly, and its printed second-order expansion.

The exact loss of the epsilon-family (Lemma 1's right-hand side) is

    L_n^NFM(eps) = 1/n sum_i E_{lambda ~ tilde-D} E_{x_r} E_xi [ h(p(x_i + eps e_i)) - y_i p(x_i + eps e_i) ]

with e_i = e_i^NFM of Lemma 1: a finite sum here (``theory.laws``), with h(z) = log(1 + e^z) and
p a scalar logit (binary cross-entropy, labels in {0, 1}); K-class models use the cross-entropy
-sum_k y_k log softmax(p)_k, which is also linear in y.  ``theorem1_terms`` evaluates the printed
coefficients R1..R3^mult from grad p and grad^2 p (and our corrected R1 and the add x mult cross
term); ``theorem1_autograd`` differentiates the exact loss in eps along every atom's path, so that
the h''-part and the (h' - y)-part of the eps^2 coefficient are separated: they are R2 and R3.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from noisymix import mix
from theory.calculus import derivatives, taylor
from theory.models import Model
from theory.problems import Data, Family, grid_weights, points

__all__ = ["h", "h_prime_minus_y", "nfm_loss", "theorem1_autograd", "theorem1_expansion", "theorem1_terms"]


def _targets(model: Model, data: Data) -> Tensor:
    """y_i as floats in {0, 1} (binary model) or one-hot rows (K-class model)."""
    if model.classes is None:
        return data.labels.to(torch.float64)
    return F.one_hot(data.labels, model.classes).to(torch.float64)


def h(z: Tensor) -> Tensor:
    """h(z) = log(1 + e^z), exactly (``F.softplus`` returns z itself beyond z = 20, an error of
    e^-20 that the high-order checks would see)."""
    return torch.logaddexp(z, torch.zeros_like(z))


def h_prime_minus_y(z: Tensor, y: Tensor) -> Tensor:
    """h'(z) - y = sigmoid(z) - y, without cancellation for y = 1 (then it is -sigmoid(-z))."""
    return torch.where(y == 1, -torch.sigmoid(-z), torch.sigmoid(z) - y)


def _loss(model: Model, z: Tensor, y: Tensor) -> Tensor:
    """l(p, y) = h(p) - y p (binary) or -sum_k y_k log softmax(p)_k; linear in y."""
    if model.classes is None:
        return h(z) - y * z
    return -(y * F.log_softmax(z, dim=-1)).sum(-1)


def nfm_loss(
    model: Model,
    data: Data,
    family: Family,
    eps: Tensor | float,
    *,
    label_mixing: bool = False,
    increment: bool = False,
) -> Tensor:
    """The exact NFM loss of the eps-family.

    Args:
        label_mixing: use the label M_{1-eps(1-lambda)}(y_i, y_r) (Eq. emp_NFMloss, with lambda
            from the Beta law) instead of y_i alone (Lemma 1's vicinal form, lambda ~ tilde-D).
        increment: return L(eps) - L(0), summed atom by atom (avoids cancellation for small eps).
    """
    eps = torch.as_tensor(eps, dtype=torch.float64)
    n = data.n
    pts = points(data.x, data.x, family, eps)  # (*E, n, n, m, A, d)
    z = model(pts)
    y = _targets(model, data)
    shape, tail = pts.shape[:-1], y.shape[1:]
    y_i = y.reshape(n, 1, 1, 1, *tail).expand(*shape, *tail)
    if label_mixing:
        y_r = y.reshape(1, n, 1, 1, *tail).expand(*shape, *tail)
        lam = family.lam.atoms
        lam_eps = (1 - eps.reshape(*eps.shape, 1, 1, 1, 1) * (1 - lam).reshape(-1, 1)).expand(shape)
        target = mix(y_i, y_r, lam_eps)
    else:
        target = y_i
    loss = _loss(model, z, target)
    if increment:
        z0 = model(data.x).reshape(n, 1, 1, 1, *z.shape[len(shape) :])
        loss = loss - _loss(model, z0, y_i)
    return (grid_weights(n, family) * loss).sum((-4, -3, -2, -1))


def theorem1_terms(model: Model, data: Data, c1: float, c2: float, family: Family) -> dict[str, float]:
    """The coefficients of Theorem 1 for a binary logit model, given E[1-lambda] = c1 and
    E[(1-lambda)^2] = c2 of the law the statement uses.

    ``R1`` is our corrected term (h'(p(x_i)) - y_i); ``R1_printed`` the printed h'(p(x_i) - y_i).
    ``R2_add`` etc. exclude sigma^2, as printed.  ``cross`` is the eps^2 coefficient
    sigma_add sigma_mult (...) that appears when xi_add and xi_mult are correlated.
    """
    if model.classes is not None:
        raise ValueError("Theorem 1 is stated for a scalar logit p: R^d -> R")
    x, y = data.x, data.labels.to(torch.float64)
    f, g, hess = derivatives(model.fn, x)
    h1_printed = torch.sigmoid(f - y)
    h2 = torch.sigmoid(f) * torch.sigmoid(-f)
    diffs = x[None, :, :] - x[:, None, :]  # (i, r, d): x_r - x_i
    mean_diff = diffs.mean(1)
    second = torch.einsum("irj,irk->ijk", diffs, diffs) / data.n  # E_r[(x_r - x_i)(x_r - x_i)^T]
    noise = family.noise
    cov_a = noise.cov_add.expand(data.n, -1, -1)
    cov_m = noise.cov_mult[None] * x[:, :, None] * x[:, None, :]  # E[xi xi^T] ⊙ x_i x_i^T
    cross = noise.cross[None] * x[:, None, :]  # E[xi_add (xi_mult ⊙ x_i)^T]

    def quad(mat: Tensor) -> Tensor:
        return torch.einsum("ij,ijk,ik->i", g, mat, g)

    def trace(mat: Tensor) -> Tensor:
        return torch.einsum("ijk,ijk->i", hess, mat)

    slope = (g * mean_diff).sum(1)
    res = h_prime_minus_y(f, y)
    terms = {
        "L_std": h(f) - y * f,
        "R1": c1 * res * slope,
        "R1_printed": c1 * h1_printed * slope,
        "R2": c2 / 2 * h2 * quad(second),
        "R3": c2 / 2 * res * trace(second),
        "R2_add": h2 * quad(cov_a) / 2,
        "R3_add": res * trace(cov_a) / 2,
        "R2_mult": h2 * quad(cov_m) / 2,
        "R3_mult": res * trace(cov_m) / 2,
        "cross": family.sigma_add * family.sigma_mult * (h2 * quad(cross) + res * trace(cross)),
    }
    return {k: float(v.mean()) for k, v in terms.items()}


def theorem1_expansion(terms: dict[str, float], family: Family, *, printed: bool) -> tuple[float, float]:
    """(eps coefficient, eps^2 coefficient) of the printed or the corrected expansion."""
    sa2, sm2 = family.sigma_add**2, family.sigma_mult**2
    first = terms["R1_printed" if printed else "R1"]
    second = (
        terms["R2"]
        + terms["R3"]
        + sa2 * (terms["R2_add"] + terms["R3_add"])
        + sm2 * (terms["R2_mult"] + terms["R3_mult"])
    )
    if not printed:
        second += terms["cross"]
    return first, second


def theorem1_autograd(model: Model, data: Data, family: Family) -> dict[str, float]:
    """Taylor coefficients of the exact loss in eps by forward-mode autograd.

    Along each atom's path g(eps) = p(x_i + eps e_i(eps)), l = h(g) - y g has
    d/deps l = (h' - y) g' and (1/2) d^2/deps^2 l = (1/2) h'' g'^2 + (1/2)(h' - y) g''; their
    expectations are ``first``, ``second_h2`` (the h'' part: R2-type terms) and ``second_h1``
    (the (h' - y) part: R3-type terms).  ``first_total``/``second_total`` differentiate the
    summed loss directly (a consistency check of the split).
    """
    n = data.n
    y = data.labels.to(torch.float64)
    f0 = model(data.x)
    h2 = torch.sigmoid(f0) * torch.sigmoid(-f0)
    _, g1, g2 = taylor(lambda e: model(points(data.x, data.x, family, e)), 2)
    w = grid_weights(n, family)
    res = h_prime_minus_y(f0, y).reshape(n, 1, 1, 1)
    total = taylor(lambda e: nfm_loss(model, data, family, e, increment=True), 2)
    return {
        "first": float((w * res * g1).sum()),
        "second_h2": float((w * 0.5 * h2.reshape(n, 1, 1, 1) * g1**2).sum()),
        "second_h1": float((w * res * g2).sum()),
        "first_total": float(total[1]),
        "second_total": float(total[2]),
    }
