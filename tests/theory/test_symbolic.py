"""sympy as the second witness: exact Taylor coefficients against our float64 formulas."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import sympy as sp
import torch

from theory.models import build_model, rational_weights
from theory.stability import prop1_terms
from theory.symbolic import symbolic_checks

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def test_every_sympy_witness_agrees_with_our_formulas():
    rows = symbolic_checks()
    assert set(rows) == {"jsd", "prop1", "thm1", "thm2"}
    for checks in rows.values():
        for check in checks:
            assert check.verdict == "holds", (check.id, check.term, check.detail)
            assert all(c["agrees"] and c["rel_error"] < 1e-10 for c in check.coefficients.values())
    # and sympy does tell the printed R1 of Theorem 1 apart
    (thm1,) = rows["thm1"]
    printed = next(v for k, v in thm1.extra.items() if "as printed" in k)
    assert not printed["agrees"] and printed["rel_error"] > 0.05


def test_proposition1_against_plain_sympy_differentiation():
    """A second, separate sympy route: differentiate the whole JS expression twice (M = 1, K = 2, d = 1)."""
    model = build_model("rational", 1, 2, seed=3)
    coef = {
        k: [sp.Rational(v.numerator, v.denominator) for v in vals] for k, vals in model.params["coef"].items()
    }
    eps = sp.Symbol("eps")
    z, dz, d2z = (
        [Fraction(1, 3), Fraction(-2, 3)],
        [Fraction(1), Fraction(1, 2)],
        [Fraction(-1, 2), Fraction(2)],
    )
    pi = [Fraction(2, 5), Fraction(3, 5)]
    probs = []
    for l in range(2):
        point = sp.Rational(z[l]) + eps * sp.Rational(dz[l]) + eps**2 / 2 * sp.Rational(d2z[l])
        q = rational_weights([point], coef, 2)
        probs.append([qk / sum(q) for qk in q])
    mixture = [sum(sp.Rational(pi[l]) * probs[l][k] for l in range(2)) for k in range(2)]
    js = sum(
        sp.Rational(pi[l]) * probs[l][k] * sp.log(probs[l][k] / mixture[k])
        for l in range(2)
        for k in range(2)
    )
    exact1 = float(sp.N(sp.diff(js, eps).subs(eps, 0), 30))
    exact2 = float(sp.N(sp.diff(js, eps, 2).subs(eps, 0) / 2, 30))

    def column(values):
        return torch.tensor([[float(v)] for v in values], dtype=torch.float64)

    c1, c2 = prop1_terms(model, column(z), column(dz), column(d2z), [float(p) for p in pi])
    assert math.isclose(c1, exact1, rel_tol=1e-11)
    assert math.isclose(c2, exact2, rel_tol=1e-11)
