"""``jsd``: the properties of the generalized Jensen–Shannon divergence the paper relies on
(Sec. 3.1: non-negative, zero iff equal, symmetric, bounded; entropy form = KL form; its square
root a metric for two distributions with equal weights), checked on the core's implementation
(``noisymix.js_divergence`` and friends) over many random cases, plus its local expansion
JS_pi(p + eps v_0, ..., p + eps v_M) = eps^2/2 sum_k Var_pi(v_k)/p_k + O(eps^3), the M + 1
distribution version of Proposition 1's second-order term at a common point.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch

from noisymix import (
    entropy,
    generator_for,
    js_divergence,
    js_divergence_from_logits,
    max_js_divergence,
    sample_dirichlet,
)
from theory.calculus import eps_grid, fit_slope, taylor
from theory.checks import Check, coefficient, expansion_check

__all__ = ["jsd_checks"]

STATEMENT = "Sec. 3.1: properties of JS_pi(p_1, ..., p_M) (Lin, 1991)"
CASES = ((2, 2), (3, 3), (5, 4), (3, 7))  # (M distributions, K classes)


@dataclass(frozen=True)
class _Case:
    m: int
    k: int
    probs: torch.Tensor  # (M, B, K)
    logits: torch.Tensor
    weights: torch.Tensor


def _cases(seed: int, batch: int) -> list[_Case]:
    g = generator_for(seed)
    out = []
    for m, k in CASES:
        logits = 3 * torch.randn(m, batch, k, generator=g, dtype=torch.float64)
        weights = sample_dirichlet([1.0] * m, generator=g, dtype=torch.float64)
        out.append(_Case(m, k, torch.softmax(logits, -1), logits, weights))
    return out


def _property(term: str, ok: bool, detail: str, conditions: str, value: float) -> Check:
    return Check(
        id="jsd",
        statement=STATEMENT,
        form="as_printed",
        term=term,
        kind="property",
        verdict="holds" if ok else "fails",
        detail=detail,
        conditions=conditions,
        model="random distributions (M, K) in " + str(list(CASES)),
        extra={"worst": value},
    )


def jsd_checks(seed: int = 0, batch: int = 256, eps: np.ndarray | None = None) -> list[Check]:
    """The property checks and the local-expansion check of id ``jsd``."""
    cases = _cases(seed, batch)
    checks = []
    js = [js_divergence(c.probs, c.weights) for c in cases]

    low = min(float(v.min()) for v in js)
    checks.append(
        _property(
            "non-negative",
            low >= -1e-15,
            f"min JS_pi over {len(cases) * batch} random cases = {low:.2e}",
            "any M, K, pi",
            low,
        )
    )

    same = max(float(js_divergence(c.probs[:1].expand_as(c.probs), c.weights).abs().max()) for c in cases)
    distinct = min(float(v.min()) for v in js)
    checks.append(
        _property(
            "zero iff equal",
            same <= 1e-15 and distinct > 0,
            f"max |JS_pi(p, ..., p)| = {same:.1e}; min JS_pi over distinct random p_l = {distinct:.2e} > 0",
            "pi_l > 0 for the distributions that differ",
            same,
        )
    )

    sym = 0.0
    for c in cases:
        uniform = torch.full((c.m,), 1.0 / c.m, dtype=torch.float64)
        ref = js_divergence(c.probs, uniform)
        for perm in itertools.islice(itertools.permutations(range(c.m)), 6):
            sym = max(sym, float((js_divergence(c.probs[list(perm)], uniform) - ref).abs().max()))
    asym = max(
        float((js_divergence(c.probs.flip(0), c.weights) - js_divergence(c.probs, c.weights)).abs().max())
        for c in cases
    )
    checks.append(
        _property(
            "symmetric for equal weights",
            sym <= 1e-14,
            f"max change under permutations with pi = 1/M: {sym:.1e} (with unequal pi it is not symmetric: "
            f"{asym:.2e})",
            "pi = (1/M, ..., 1/M); for unequal pi JS_pi changes when the p_l are permuted",
            sym,
        )
    )

    excess = max(float((v - max_js_divergence(c.weights)).max()) for v, c in zip(js, cases))
    attained = 0.0
    for c in cases:
        if c.k >= c.m:  # disjoint supports: p_l = e_l
            onehot = torch.eye(c.k, dtype=torch.float64)[: c.m]
            attained = max(attained, abs(float(js_divergence(onehot, c.weights)) - float(entropy(c.weights))))
    checks.append(
        _property(
            "bounded by H(pi)",
            excess <= 1e-14 and attained <= 1e-14,
            f"max JS_pi - H(pi) = {excess:.2e}; disjoint supports reach H(pi) to {attained:.1e}",
            "any M, K, pi (the bound needs K >= M to be attained)",
            excess,
        )
    )

    forms = max(
        float((js_divergence(c.probs, c.weights, form="entropy") - v).abs().max()) for v, c in zip(js, cases)
    )
    logit = max(
        float((js_divergence_from_logits(c.logits, c.weights) - v).abs().max()) for v, c in zip(js, cases)
    )
    checks.append(
        _property(
            "entropy form = KL form",
            forms <= 1e-13 and logit <= 1e-13,
            f"max |H(sum pi p) - sum pi H(p) - sum pi KL(p || m)| = {forms:.1e}; from logits vs "
            f"probabilities {logit:.1e}",
            "any M, K, pi",
            forms,
        )
    )

    def distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return js_divergence(torch.stack([a, b]), [0.5, 0.5]).clamp_min(0).sqrt()

    worst = -np.inf
    for c in cases:
        p, q, r = c.probs[0], c.probs[1 % c.m], c.probs[2 % c.m]
        worst = max(worst, float((distance(p, r) - distance(p, q) - distance(q, r)).max()))
    checks.append(
        _property(
            "sqrt(JS) is a metric",
            worst <= 1e-12,
            f"triangle inequality sqrt JS(p, r) <= sqrt JS(p, q) + sqrt JS(q, r): max excess {worst:.1e}",
            "two distributions with pi = (1/2, 1/2) (Endres & Schindelin, 2003)",
            worst,
        )
    )

    checks.append(_local_expansion(seed, eps if eps is not None else eps_grid()))
    return checks


def _local_expansion(seed: int, eps: np.ndarray) -> Check:
    """JS_pi(p + eps v_0, ..., p + eps v_M) with sum_k v_lk = 0 against eps^2/2 sum_k Var_pi(v_k)/p_k."""
    g = generator_for(seed + 7)
    m, k = 4, 5
    p = torch.softmax(torch.randn(k, generator=g, dtype=torch.float64), -1)
    v = torch.randn(m, k, generator=g, dtype=torch.float64)
    v = 0.3 * p * (v - (v * p).sum(1, keepdim=True))  # tangent to the simplex, small relative to p
    w = sample_dirichlet([2.0] * m, generator=g, dtype=torch.float64)
    wl = w[:, None]
    second = 0.5 * (((wl * v**2).sum(0) - (wl * v).sum(0) ** 2) / p).sum()

    def exact(e: torch.Tensor) -> torch.Tensor:
        return js_divergence(p + e * v, w)

    coefficients = taylor(exact, 2)
    coefs = {
        "eps": coefficient(0.0, float(coefficients[1]), 1e-7),
        "eps^2": coefficient(float(second), float(coefficients[2])),
    }
    coefs["eps"]["agrees"] = abs(float(coefficients[1])) <= 1e-14
    residuals = np.array([float(exact(torch.tensor(e))) - float(second) * e**2 for e in eps])
    return expansion_check(
        id="jsd",
        statement="JS_pi(p + eps v_0, ..., p + eps v_M) = eps^2/2 sum_k Var_pi(v_.k)/p_k + O(eps^3)",
        form="as_printed",
        term="local quadratic expansion",
        detail=(
            "the second-order term of Proposition 1 at a common point z_l = z (the first-order term "
            "vanishes since ln(p_l/m) = 0)"
        ),
        conditions="any M, K, pi; p in the interior of the simplex",
        model=f"M={m}, K={k}",
        eps=eps,
        residuals=residuals,
        floor=1e-16,
        expected=3.0,
        coefficients=coefs,
        no_reason=f"residual slope {fit_slope(eps, residuals):.2f}",
    )
