"""Proposition 1, Lemma 2 and Theorem 2: the stability (JSD) loss, exactly, and its expansions.

The exact stability loss of the eps-family is (Eq. emp_JSDloss, rescaled)

    L_n^JSD(eps) = 1/n^2 sum_{i,j} E_lambda E_xi JS_pi( p(M_{lambda_eps, eps xi}(x_i, x_j)),
                                                       p(M_{lambda_eps, eps xi}(A(x_i), A(x_j))) ),

lambda_eps = 1 - eps(1 - lambda), the same lambda, partner and xi in both arguments (the paper's
L^JSD), computed with the core's ``noisymix.js_divergence_from_logits``.  Which law lambda
follows is the point of Lemma 2: there are no labels here, so no label-mixing tilt appears and
the law stays Beta(alpha, beta); the paper's Lemma 2 writes tilde-D_lambda.

``theorem2_printed`` evaluates S1, S2, S2^add, S2^mult literally as printed (with q^k and
pi = (1/2, 1/2)); ``theorem2_general`` evaluates our derivation from Proposition 1 for any pi, for
shared or independent xi in the two arguments, and with the add x mult cross term.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from noisymix import js_divergence_from_logits
from theory.calculus import derivatives
from theory.models import Model
from theory.problems import Data, Family, points

__all__ = [
    "jsd_loss",
    "prop1_exact",
    "prop1_terms",
    "q_matrix",
    "theorem2_expansion",
    "theorem2_general",
    "theorem2_printed",
]

HALF = (0.5, 0.5)


# ------------------------------------------------------------------------------ Proposition 1
def prop1_exact(
    model: Model,
    z: Tensor,
    dz: Tensor,
    d2z: Tensor,
    d3z: Tensor,
    pi: Sequence[float],
    eps: Tensor | float,
    *,
    increment: bool = True,
) -> Tensor:
    """JS_pi(p(z_0 + R_0(eps)), ..., p(z_M + R_M(eps))) with the twice-differentiable
    R_l(eps) = eps dz_l + eps^2/2 d2z_l + eps^3/6 d3z_l (so R_l(0) = 0, R_l'(0) = dz_l,
    R_l''(0) = d2z_l, as Proposition 1 assumes).  Arrays are (M+1, d) or batched (M+1, B, d)."""
    eps = torch.as_tensor(eps, dtype=torch.float64)
    moved = z + eps * dz + eps**2 / 2 * d2z + eps**3 / 6 * d3z
    out = js_divergence_from_logits(model.logits(moved), list(pi))
    if increment:
        out = out - js_divergence_from_logits(model.logits(z), list(pi))
    return out.sum()


def prop1_terms(model: Model, z: Tensor, dz: Tensor, d2z: Tensor, pi: Sequence[float]) -> tuple[float, float]:
    """The eps and eps^2 coefficients of Proposition 1, exactly as printed (Eq. taylored)."""
    w = torch.as_tensor(pi, dtype=torch.float64)
    flat = z.reshape(-1, z.shape[-1])
    p, g, h = derivatives(model.probs, flat)
    lead = z.shape[:-1]
    p, g, h = p.reshape(*lead, -1), g.reshape(*lead, *g.shape[1:]), h.reshape(*lead, *h.shape[1:])
    u = torch.einsum("...kd,...d->...k", g, dz)  # (grad p_l^k)^T dz_l
    v = torch.einsum("...kde,...d,...e->...k", h, dz, dz) + torch.einsum("...kd,...d->...k", g, d2z)
    wl = w.reshape(-1, *([1] * (p.ndim - 1)))
    mixture = (wl * p).sum(0)
    log_ratio = torch.log(p / mixture)
    first = (wl * u * log_ratio).sum()
    second = 0.5 * (wl * (v * log_ratio + u**2 / p)).sum() - 0.5 * ((wl * u).sum(0) ** 2 / mixture).sum()
    return float(first), float(second)


# ---------------------------------------------------------------------------- the JSD loss
def _argument_noise(family: Family) -> tuple[tuple[Tensor, Tensor], tuple[Tensor, Tensor], Tensor]:
    """xi atoms of the clean and the augmented argument, and their joint probabilities."""
    noise = family.noise
    if family.shared_noise:
        pair = (noise.add, noise.mult)
        return pair, pair, noise.weights
    a = noise.add.shape[0]
    first = (noise.add.repeat_interleave(a, 0), noise.mult.repeat_interleave(a, 0))
    second = (noise.add.repeat(a, 1), noise.mult.repeat(a, 1))
    return first, second, (noise.weights[:, None] * noise.weights[None, :]).reshape(-1)


def jsd_loss(
    model: Model,
    data: Data,
    family: Family,
    eps: Tensor | float,
    *,
    pi: Sequence[float] = HALF,
    increment: bool = False,
) -> Tensor:
    """The exact stability loss of the eps-family (lambda from ``family.lam``).

    ``increment`` returns L(eps) - L(0), summed atom by atom (L(0) = 1/n sum_i JS(p(x_i), p(A(x_i)))).
    """
    eps = torch.as_tensor(eps, dtype=torch.float64)
    n = data.n
    noise0, noise1, noise_w = _argument_noise(family)
    z0 = model.logits(points(data.x, data.x, family, eps, noise0))
    z1 = model.logits(points(data.aug, data.aug, family, eps, noise1))
    js = js_divergence_from_logits(torch.stack([z0, z1]), list(pi))  # (*E, n, n, m, A)
    if increment:
        base = js_divergence_from_logits(
            torch.stack([model.logits(data.x), model.logits(data.aug)]), list(pi)
        )
        js = js - base.reshape(n, 1, 1, 1)
    w = family.lam.weights[:, None] * noise_w[None, :] / n**2
    return (w * js).sum((-4, -3, -2, -1))


# ------------------------------------------------------------------------------- Theorem 2
def _pair_moments(data: Data) -> dict[str, Tensor]:
    x, a = data.x, data.aug
    dx = x[None, :, :] - x[:, None, :]  # (i, r, d): x_r - x_i
    da = a[None, :, :] - a[:, None, :]
    n = data.n
    return {
        "mean_x": dx.mean(1),
        "mean_a": da.mean(1),
        "xx": torch.einsum("irj,irk->ijk", dx, dx) / n,
        "aa": torch.einsum("irj,irk->ijk", da, da) / n,
        "xa": torch.einsum("irj,irk->ijk", dx, da) / n,
    }


def q_matrix(p_x: Tensor, p_y: Tensor, g_x: Tensor, h_x: Tensor) -> Tensor:
    """q^k(x, y) of Theorem 2, for every k: (..., K, d, d).

    q^k(x, y) = grad^2 p^k(x) ln(2 p^k(x) / (p^k(x) + p^k(y)))
                + grad p^k(x) grad p^k(x)^T p^k(y) / (p^k(x) (p^k(x) + p^k(y))).
    """
    s = p_x + p_y
    log_term = torch.log(2 * p_x / s)[..., None, None] * h_x
    outer = torch.einsum("...kd,...ke->...kde", g_x, g_x) * (p_y / (p_x * s))[..., None, None]
    return log_term + outer


def theorem2_printed(model: Model, data: Data, c1: float, c2: float, family: Family) -> dict[str, float]:
    """S1, S2, S2^add, S2^mult literally as printed in Theorem 2 (pi = (1/2, 1/2)), with
    E[1-lambda] = c1 and E[(1-lambda)^2] = c2 of whichever law is being tested."""
    px, gx, hx = derivatives(model.probs, data.x)
    pa, ga, ha = derivatives(model.probs, data.aug)
    mom = _pair_moments(data)
    s = px + pa
    q_xa, q_ax = q_matrix(px, pa, gx, hx), q_matrix(pa, px, ga, ha)
    cov_a, cov_m = family.noise.cov_add, family.noise.cov_mult
    x, a = data.x, data.aug

    def bracket(m_xx: Tensor, m_aa: Tensor, m_xa: Tensor) -> Tensor:
        quad = torch.einsum("ikde,ide->ik", q_xa, m_xx) + torch.einsum("ikde,ide->ik", q_ax, m_aa)
        cross = torch.einsum("ikd,ide,ike->ik", gx, m_xa, ga)
        return (quad - 2 * cross / s).sum(1).mean()

    n = data.n
    first = (
        (
            torch.einsum("ikd,id->ik", gx, mom["mean_x"]) * torch.log(2 * px / s)
            + torch.einsum("ikd,id->ik", ga, mom["mean_a"]) * torch.log(2 * pa / s)
        )
        .sum(1)
        .mean()
    )
    ex = cov_a.expand(n, -1, -1)
    return {
        "S1": float(c1 / 2 * first),
        "S2": float(c2 / 4 * bracket(mom["xx"], mom["aa"], mom["xa"])),
        "S2_add": float(bracket(ex, ex, ex) / 4),
        "S2_mult": float(
            bracket(
                cov_m * x[:, :, None] * x[:, None, :],
                cov_m * a[:, :, None] * a[:, None, :],
                cov_m * x[:, :, None] * a[:, None, :],
            )
            / 4
        ),
    }


def theorem2_general(
    model: Model, data: Data, c1: float, c2: float, family: Family, *, pi: Sequence[float] = HALF
) -> dict[str, float]:
    """Our derivation from Proposition 1 (M = 1, z_0 = x_i, z_1 = A(x_i)), for any pi and K.

    With a_l the eps-direction of argument l (mixup + noise), E[a_0] = c1 (E x_r - x_i),
    E[a_1] = c1 (E A(x_r) - A(x_i)); the delta^2 z terms sigma_mult xi_mult ⊙ e^mixup have zero
    mean and drop out.  The eps^2 coefficient is

        1/n sum_i sum_k { 1/2 sum_l pi_l [ <grad^2 p_l^k, E a_l a_l^T> ln(p_l^k / m^k)
                                            + grad p_l^k^T E[a_l a_l^T] grad p_l^k / p_l^k ]
                          - 1/2 sum_{l,l'} pi_l pi_l' grad p_l^k^T E[a_l a_l'^T] grad p_l'^k / m^k },

    m^k = sum_l pi_l p_l^k, split by the parts of E[a a^T]: mixup (c2 E_r[...]), sigma_add^2,
    sigma_mult^2 and the sigma_add sigma_mult cross part (zero for uncorrelated xi).  With
    independent xi in the two arguments the noise parts of E[a_0 a_1^T] vanish.
    """
    w0, w1 = (float(v) for v in pi)
    px, gx, hx = derivatives(model.probs, data.x)
    pa, ga, ha = derivatives(model.probs, data.aug)
    mom = _pair_moments(data)
    mixture = w0 * px + w1 * pa
    lx, la = torch.log(px / mixture), torch.log(pa / mixture)
    x, a, n = data.x, data.aug, data.n
    noise = family.noise
    shared = 1.0 if family.shared_noise else 0.0

    def second(m00: Tensor, m11: Tensor, m01: Tensor) -> float:
        own = w0 * (
            torch.einsum("ikde,ide->ik", hx, m00) * lx + torch.einsum("ikd,ide,ike->ik", gx, m00, gx) / px
        ) + w1 * (
            torch.einsum("ikde,ide->ik", ha, m11) * la + torch.einsum("ikd,ide,ike->ik", ga, m11, ga) / pa
        )
        joint = (
            w0**2 * torch.einsum("ikd,ide,ike->ik", gx, m00, gx)
            + w1**2 * torch.einsum("ikd,ide,ike->ik", ga, m11, ga)
            + 2 * w0 * w1 * torch.einsum("ikd,ide,ike->ik", gx, m01, ga)
        )
        return float((0.5 * own - 0.5 * joint / mixture).sum(1).mean())

    first = (
        (
            w0 * torch.einsum("ikd,id->ik", gx, c1 * mom["mean_x"]) * lx
            + w1 * torch.einsum("ikd,id->ik", ga, c1 * mom["mean_a"]) * la
        )
        .sum(1)
        .mean()
    )
    cov_a = noise.cov_add.expand(n, -1, -1)
    cov_m, cross = noise.cov_mult, noise.cross
    mult_x = cov_m * x[:, :, None] * x[:, None, :]
    mult_a = cov_m * a[:, :, None] * a[:, None, :]
    mult_xa = cov_m * x[:, :, None] * a[:, None, :]
    # E[xi_add (xi_mult ⊙ z)^T] = cross ⊙ (1 z^T); the a-a^T cross part is that plus its transpose
    cx, ca = cross[None] * x[:, None, :], cross[None] * a[:, None, :]
    return {
        "S1": float(first),
        "S2": second(c2 * mom["xx"], c2 * mom["aa"], c2 * mom["xa"]),
        "S2_add": second(cov_a, cov_a, shared * cov_a),
        "S2_mult": second(mult_x, mult_a, shared * mult_xa),
        "cross": family.sigma_add
        * family.sigma_mult
        * second(cx + cx.transpose(-1, -2), ca + ca.transpose(-1, -2), shared * (ca + cx.transpose(-1, -2))),
    }


def theorem2_expansion(terms: dict[str, float], family: Family, *, cross: bool) -> tuple[float, float]:
    """(eps, eps^2) coefficients: S1 and S2~ = S2 + sigma_add^2 S2^add + sigma_mult^2 S2^mult."""
    second = terms["S2"] + family.sigma_add**2 * terms["S2_add"] + family.sigma_mult**2 * terms["S2_mult"]
    if cross:
        second += terms.get("cross", 0.0)
    return terms["S1"], second
