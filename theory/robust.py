"""Theorem 3: the NoisyMix loss against a regularised adversarial loss plus a stability term.

    L_n^NoisyMix >= 1/n sum_i max_{||delta_i||_2 <= eps_i^mix} l(p(x_i + delta_i), y_i)
                    + gamma L~_n^JSD + eps^2 L_n^reg + eps^2 phi(eps),   phi -> 0.

Left side, exactly: L_n^NFM(eps) + gamma L_n^JSD(eps), both in the eps-family of the vicinal
forms of Lemmas 1 and 2 (lambda ~ tilde-D), with the binary model's distribution
p = softmax([f, 0]) = (sigmoid f, 1 - sigmoid f) inside the JSD.

Right side: for a model that is linear on the l2 ball around x_i (a linear model; a bias-free
ReLU network inside its activation region), the maximum has a closed form: the logit moves
against the label by r ||grad f(x_i)||, so max l = l(f(x_i) - s_i r ||grad f(x_i)||, y_i) with
s_i = 2 y_i - 1 (the loss is monotone in the logit on each side).

``theorem3_rhs`` gives the printed right side and our corrected one; the verdict holds it against
the exact left side (``checks_robust``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from theory.calculus import derivatives
from theory.models import Model
from theory.nfm import h, h_prime_minus_y, theorem1_terms
from theory.problems import Data, Family, points
from theory.stability import jsd_loss, theorem2_expansion, theorem2_general, theorem2_printed

__all__ = [
    "Theorem3Setting",
    "assumptions",
    "first_order_gap",
    "linear_region_eps",
    "theorem3_parts",
    "theorem3_rhs",
]


@dataclass(frozen=True)
class Theorem3Setting:
    """The model, data, the family (lambda ~ tilde-D, the eps-family of Lemmas 1 and 2, shared by
    the NFM and the stability loss) and gamma of one Theorem 3 check."""

    model: Model
    data: Data
    family: Family
    vicinal: tuple[float, float]  # (E[1-lambda], E[(1-lambda)^2]) under tilde-D
    gamma: float


def _logistic(z: Tensor, y: Tensor) -> Tensor:
    return h(z) - y * z


def assumptions(setting: Theorem3Setting) -> dict[str, float]:
    """How well the model and data meet Theorem 3's hypotheses (0 means exactly)."""
    model, data = setting.model, setting.data
    f, g, h = derivatives(model.fn, data.x)
    fa, ga, _ = derivatives(model.fn, data.aug)
    y = data.labels.to(torch.float64)
    return {
        "max |p(x_i) - grad p(x_i)^T x_i|": float((f - (g * data.x).sum(1)).abs().max()),
        "max |p(A(x_i)) - grad p(A(x_i))^T A(x_i)|": float((fa - (ga * data.aug).sum(1)).abs().max()),
        "max |grad^2 p(x_i)|": float(h.abs().max()),
        "|E_r x_r|": float(data.x.mean(0).norm()),
        "|E_r A(x_r)|": float(data.aug.mean(0).norm()),
        "min_i (2 y_i - 1) p(x_i) (>= 0: theta in Theta)": float(((2 * y - 1) * f).min()),
        "c_x sqrt(d) = min_i ||x_i||": float(data.x.norm(dim=1).min()),
        "max_i ||x_i|| / min_i ||x_i||": float(data.x.norm(dim=1).max() / data.x.norm(dim=1).min()),
        "mean |p(x_i)|": float(f.abs().mean()),
    }


def theorem3_parts(setting: Theorem3Setting) -> dict[str, float | Tensor]:
    """Everything the right sides need at eps = 0 (gradients, radii factors, S-terms, R1)."""
    model, data = setting.model, setting.data
    f, g, _ = derivatives(model.fn, data.x)
    y = data.labels.to(torch.float64)
    gnorm = g.norm(dim=1)
    cos_x = (g * data.x).sum(1) / (gnorm * data.x.norm(dim=1))
    radius_factor = data.x.norm(dim=1).min()  # c_x sqrt(d): the largest valid constant
    h2 = torch.sigmoid(f) * torch.sigmoid(-f)
    v1, v2 = setting.vicinal
    proj = data.x @ g.T  # (r, i): grad p(x_i)^T x_r
    mix_energy = (proj**2).mean(0)  # E_r[||x_r||^2 ||grad p||^2 cos^2]
    noise = setting.family.noise
    add_energy = torch.einsum("id,de,ie->i", g, noise.cov_add, g)
    mult_energy = torch.einsum("id,ide,ie->i", g, noise.cov_mult * data.x[:, :, None] * data.x[:, None, :], g)
    sa2, sm2 = setting.family.sigma_add**2, setting.family.sigma_mult**2
    reg_printed = v1**2 * mix_energy + sa2 * add_energy + sm2 * mult_energy
    reg_tight = v2 * mix_energy + sa2 * add_energy + sm2 * mult_energy
    fam = setting.family
    js0 = float(jsd_loss(model, data, fam, 0.0))
    s_printed = theorem2_printed(model, data, v1, v2, fam)
    s_true = theorem2_general(model, data, v1, v2, fam)
    r1 = theorem1_terms(model, data, v1, v2, fam)["R1"]
    return {
        "f": f,
        "y": y,
        "gnorm": gnorm,
        "abs_cos": cos_x.abs(),
        "radius_factor": radius_factor,
        "h2": h2,
        "reg_printed": reg_printed,
        "reg_tight": reg_tight,
        "L_std_jsd": js0,
        "S1_true": s_true["S1"],
        "S2_true": theorem2_expansion(s_true, fam, cross=True)[1],
        "S1_printed": s_printed["S1"],
        "S2_printed": theorem2_expansion(s_printed, fam, cross=False)[1],
        "R1": r1,
    }


def theorem3_rhs(
    setting: Theorem3Setting, parts: dict, *, form: str, tight_reg: bool = False, with_jsd: bool = True
) -> Callable[[Tensor], Tensor]:
    """eps -> RHS(eps) - RHS(0) of Theorem 3 (closed forms only).

    ``form="as_printed"``: eps_i^mix and L~^JSD = (1 - eps E[1-lambda]) L~_std, (eps^reg)^2 with
    E[1-lambda]^2 (or E[(1-lambda)^2] if ``tight_reg``), S2~ of Theorem 2.
    ``form="corrected"``: gamma L~^JSD replaced by gamma (L~_std + eps S1) (Theorem 2's first two
    terms), (eps^reg)^2 with E[(1-lambda)^2] (the tighter constant the derivation gives).
    ``with_jsd=False`` drops the stability part (gamma = 0: the NFM bound alone).
    """
    if form not in ("as_printed", "corrected"):
        raise ValueError(f"form must be 'as_printed' or 'corrected', got {form!r}")
    gamma = setting.gamma if with_jsd else 0.0
    c1 = setting.vicinal[0]
    f, y = parts["f"], parts["y"]
    sign = 2 * y - 1
    reg = parts["reg_tight"] if (tight_reg or form == "corrected") else parts["reg_printed"]
    base = _logistic(f, y)

    def rhs(eps: Tensor) -> Tensor:
        radius = eps[..., None] * c1 * parts["radius_factor"] * parts["abs_cos"]  # (*E, n)
        adversarial = (_logistic(f - sign * radius * parts["gnorm"], y) - base).mean(-1)
        regulariser = (parts["h2"] * reg).mean() / 2
        if form == "as_printed":
            stability = -eps * c1 * parts["L_std_jsd"]
            regulariser = regulariser + gamma * parts["S2_printed"]
        else:
            stability = eps * parts["S1_true"]
            regulariser = regulariser + gamma * parts["S2_true"]
        return adversarial + gamma * stability + eps**2 * regulariser

    return rhs


def first_order_gap(setting: Theorem3Setting, parts: dict, *, form: str, with_jsd: bool = True) -> float:
    """The predicted eps coefficient of the gap (our derivation), to hold against autograd:
    R1 - (adversarial slope) [+ gamma (S1 + E_{tilde-D}[1-lambda] L~_std) for the printed form]."""
    c1 = setting.vicinal[0]
    f, y = parts["f"], parts["y"]
    adversarial = float(
        (c1 * parts["radius_factor"] * parts["abs_cos"] * parts["gnorm"] * h_prime_minus_y(f, y).abs()).mean()
    )
    out = parts["R1"] - adversarial
    if with_jsd and form == "as_printed":
        out += setting.gamma * (parts["S1_true"] + c1 * parts["L_std_jsd"])
    return out


def linear_region_eps(setting: Theorem3Setting, parts: dict, eps: Sequence[float]) -> float | None:
    """For a bias-free ReLU network: the largest eps of the grid up to which every point the exact
    losses and the closed-form maximum evaluate stays in its anchor's activation region (there
    grad^2 p = 0 and the closed form is the exact maximum).  ``None`` for other models."""
    model = setting.model
    if model.name != "relu-mlp":
        return None
    w1 = model.params["w1"]
    data, fam = setting.data, setting.family
    c1 = setting.vicinal[0]
    sign = (2 * parts["y"] - 1)[:, None]
    _, g, _ = derivatives(model.fn, data.x)
    direction = g / g.norm(dim=1, keepdim=True)
    good = None
    for e in sorted(eps):
        t = torch.tensor(float(e), dtype=torch.float64)
        ok = True
        for anchor in (data.x, data.aug):
            pattern = (points(anchor, anchor, fam, t) @ w1.T) > 0
            ok &= bool((pattern == (anchor @ w1.T > 0)[:, None, None, None, :]).all())
        radius = t * c1 * parts["radius_factor"] * parts["abs_cos"]
        adv = data.x - sign * radius[:, None] * direction
        ok &= bool(((adv @ w1.T > 0) == (data.x @ w1.T > 0)).all())
        if not ok:
            break
        good = float(e)
    return good
