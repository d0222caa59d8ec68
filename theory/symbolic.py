"""sympy, the second and independent witness.

For concrete models with exact rational coefficients (``theory.models``: ``polynomial`` for the
binary logit, ``rational`` for a K-class distribution p^k = q_k / sum_j q_j with polynomial q_k),
rational data and rational finite laws, sympy computes the exact Taylor coefficients in eps of
the exact losses, and we hold our float64 torch formulas against them:

* ``jsd``: the entropy form minus the KL form expands to 0 for symbolic p, pi; the eps^2
  coefficient of JS_pi(p + eps v_0, ..., p + eps v_M) is the Fisher-type quadratic form.
* ``prop1``: sympy differentiates JS_pi(p(z_l + R_l(eps))) directly (one expression).
* ``thm1``, ``thm2``: the losses are sums over hundreds of atoms, too many for symbolic
  differentiation of the whole sum in our time budget.  Per atom, sympy expands the exact input
  path and model into a polynomial (or a ratio of polynomials) in eps; the ratio's power series
  comes from the standard recurrence; and the outer functions h(z) = log(1 + e^z) and
  t ln t are series-expanded by sympy once, symbolically.  Nothing of Theorem 1/2's derivation
  (moments, Hessian traces, q^k) enters; the sums are exact rationals until the final evalf.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import sympy as sp
import torch

from theory.checks import Check, Form, coefficient
from theory.laws import DiscreteLaw, NoiseLaw
from theory.models import Model, build_model, polynomial_logit, rational_weights
from theory.nfm import theorem1_expansion, theorem1_terms
from theory.problems import Data, Family
from theory.stability import prop1_terms, theorem2_expansion, theorem2_general, theorem2_printed

__all__ = ["symbolic_checks"]

EPS = sp.Symbol("epsilon")
DIGITS = 30
TORCH_VS_SYMPY_RTOL = 1e-10  # float64 formulas against exact values


def _r(v: Any) -> sp.Rational:
    return sp.Rational(Fraction(v).numerator, Fraction(v).denominator) if not isinstance(v, sp.Basic) else v


def _coef(model: Model) -> dict[str, list]:
    return {k: [_r(v) for v in vals] for k, vals in model.params["coef"].items()}


def _t(rows: Sequence[Sequence[Any]]) -> torch.Tensor:
    return torch.tensor([[float(v) for v in row] for row in rows], dtype=torch.float64)


def _poly(expr: sp.Expr) -> sp.Poly:
    """A polynomial in EPS over the rationals (exact, and fast to multiply)."""
    return sp.Poly(expr, EPS, domain=sp.QQ)


def _taylor(expr: sp.Expr | sp.Poly, order: int = 2) -> list[sp.Rational]:
    """Coefficients of a polynomial in EPS up to ``order``."""
    poly = expr if isinstance(expr, sp.Poly) else _poly(sp.expand(expr))
    return [poly.coeff_monomial(EPS**k) for k in range(order + 1)]


def _ratio(num: list, den: list) -> list:
    """Power series of num/den from their coefficients (den[0] != 0)."""
    out: list = []
    for k in range(len(num)):
        out.append((num[k] - sum(out[j] * den[k - j] for j in range(k))) / den[0])
    return out


# Generic outer series, computed by sympy once:
# f(a + b eps + c eps^2 + d eps^3) = f0 + f1 eps + f2 eps^2 + f3 eps^3 + O(eps^4).
_A, _B, _C, _D = sp.symbols("a b c d", positive=True)


@functools.lru_cache(maxsize=8)
def _outer(fn: sp.Expr, order: int = 3) -> list:
    """The series coefficients of fn(a + ...) as functions of (a, b, c, d) on sympy numbers."""
    shifted = fn.subs(_A, _A + _B * EPS + _C * EPS**2 + _D * EPS**3)
    s = sp.series(shifted, EPS, 0, order + 1).removeO()
    return [sp.lambdify((_A, _B, _C, _D), s.coeff(EPS, k), modules="sympy") for k in range(order + 1)]


def _witness(
    id: str, statement: str, ok: bool, detail: str, conditions: str, model: str, *,
    term: str = "sympy witness", form: Form = "corrected", **fields: Any,
) -> Check:
    """A ``symbolic`` row: sympy's exact values against our float64 formulas (``ok``: they agree);
    ``fields``: its coefficients and extra, where it has them."""
    return Check(id=id, statement=statement, form=form, term=term, kind="symbolic",
                 verdict="holds" if ok else "fails", detail=detail, conditions=conditions, model=model,
                 **fields)


# ------------------------------------------------------------------------------------ jsd
def _jsd_checks() -> list[Check]:
    k, m = 3, 3
    p = sp.Matrix(m, k, lambda i, j: sp.Symbol(f"p{i}{j}", positive=True))
    w = [sp.Symbol(f"pi{i}", positive=True) for i in range(m)]
    mixture = [sum(w[i] * p[i, j] for i in range(m)) for j in range(k)]
    entropy_form = -sum(mj * sp.log(mj) for mj in mixture) + sum(
        w[i] * p[i, j] * sp.log(p[i, j]) for i in range(m) for j in range(k)
    )
    kl_form = sum(w[i] * p[i, j] * (sp.log(p[i, j]) - sp.log(mixture[j])) for i in range(m) for j in range(k))
    difference = sp.expand(entropy_form - kl_form)
    forms_agree = difference == 0

    base = [_r(Fraction(1, 5)), _r(Fraction(3, 10)), _r(Fraction(1, 2))]
    v = [[1, -2, 1], [Fraction(1, 2), Fraction(1, 2), -1], [-3, 1, 2]]
    pis = [_r(Fraction(1, 6)), _r(Fraction(1, 3)), _r(Fraction(1, 2))]
    dists = [[base[j] + EPS * _r(v[i][j]) for j in range(k)] for i in range(m)]
    mix_eps = [sum(pis[i] * dists[i][j] for i in range(m)) for j in range(k)]
    js = sum(pis[i] * dists[i][j] * sp.log(dists[i][j] / mix_eps[j]) for i in range(m) for j in range(k))
    exact2 = sp.diff(js, EPS, 2).subs(EPS, 0) / 2
    formula2 = sum(
        (sum(pis[i] * _r(v[i][j]) ** 2 for i in range(m)) - sum(pis[i] * _r(v[i][j]) for i in range(m)) ** 2)
        / (2 * base[j])
        for j in range(k)
    )
    local_agree = sp.simplify(exact2 - formula2) == 0
    return [
        _witness(
            "jsd",
            "JS_pi entropy form = KL form; JS_pi(p + eps v_l) = eps^2/2 sum_k Var_pi(v_k)/p_k + O(eps^3)",
            forms_agree and local_agree,
            f"sympy: expand(entropy form - KL form) = {difference} for symbolic p (3 x 3) and pi; the "
            f"exact eps^2 coefficient {exact2} equals the quadratic form {formula2} (sympy.simplify of "
            "the difference is 0)",
            "any M, K, pi (the identity needs only the mixture m = sum pi_l p_l)",
            "symbolic p, pi",
            form="as_printed",
            extra={
                "sympy": {
                    "entropy_minus_kl": str(difference),
                    "second_order_exact": str(exact2),
                    "second_order_formula": str(formula2),
                }
            },
        )
    ]


# ---------------------------------------------------------------------------------- prop1
def _series_js(dists: list[list[list]], pi: Sequence, phi: list, order: int) -> list:
    """Series coefficients of JS_pi = sum_k [sum_l pi_l phi(p_l^k) - phi(m^k)], phi(t) = t ln t,
    from the series of every p_l^k (``dists[l][k]`` = [a, b, c, d])."""
    out = [sp.Integer(0)] * (order + 1)
    for k in range(len(dists[0])):
        mix = [sum(_r(pi[l]) * dists[l][k][o] for l in range(len(dists))) for o in range(4)]
        for o in range(1, order + 1):
            val = sum(_r(pi[l]) * phi[o](*dists[l][k]) for l in range(len(dists))) - phi[o](*mix)
            out[o] += val
    return out


def _prop1_checks() -> list[Check]:
    model = build_model("rational", 2, 3, seed=11)
    coef = _coef(model)
    z = [[Fraction(1, 2), Fraction(-1, 3)], [Fraction(-1), Fraction(1, 4)], [Fraction(1, 3), Fraction(1)]]
    dz = [[1, Fraction(1, 2)], [Fraction(-1, 2), 1], [Fraction(1, 4), Fraction(-1, 3)]]
    d2z = [[Fraction(1, 2), -1], [1, Fraction(1, 3)], [Fraction(-1, 2), Fraction(1, 5)]]
    d3z = [[1, 1], [Fraction(-1, 2), 2], [0, Fraction(1, 3)]]
    pi = [Fraction(1, 5), Fraction(1, 3), Fraction(7, 15)]
    phi = _outer(_A * sp.log(_A), 3)
    dists = []
    for l in range(3):
        pt = [
            _poly(_r(z[l][i]) + EPS * _r(dz[l][i]) + EPS**2 / 2 * _r(d2z[l][i]) + EPS**3 / 6 * _r(d3z[l][i]))
            for i in range(2)
        ]
        q = [_taylor(qk, 3) for qk in rational_weights(pt, coef, 3)]
        total = [sum(qk[o] for qk in q) for o in range(4)]
        dists.append([_ratio(qk, total) for qk in q])
    exact = [sp.N(c, DIGITS) for c in _series_js(dists, pi, phi, 3)[1:]]
    c1, c2 = prop1_terms(model, _t(z), _t(dz), _t(d2z), [float(p) for p in pi])
    coefficients = {
        "eps (first order)": coefficient(c1, exact[0], TORCH_VS_SYMPY_RTOL),
        "eps^2 (second order, with delta^2 z)": coefficient(c2, exact[1], TORCH_VS_SYMPY_RTOL),
    }
    ok = all(c["agrees"] for c in coefficients.values())
    worst = max(c["rel_error"] for c in coefficients.values())
    return [
        _witness(
            "prop1",
            "Proposition 1: eps and eps^2 coefficients of JS_pi(p(z_l + R_l(eps)))",
            ok,
            "sympy's exact Taylor coefficients of the JS of a rational 3-class model (M = 2, pi = (1/5, "
            "1/3, 7/15), R_l with non-zero delta^2 z and a cubic term) agree with our float64 "
            f"implementation of the printed terms to {worst:.1e}; the exact eps^3 coefficient is "
            f"{float(exact[2]):.6g} != 0, so the remainder is O(eps^3), not o(eps^3)",
            "any M, K, pi; p twice differentiable",
            model.describe(),
            coefficients=coefficients,
            extra={"sympy_eps3_coefficient": float(exact[2])},
        )
    ]


# -------------------------------------------------------------------------- shared set-up
def _laws(mult_atoms: int = 4) -> tuple[list, list, list]:
    """A two-point lambda law, and independent zero-mean xi_add (4 atoms) and xi_mult (4 or 2
    atoms) with non-diagonal covariances; all rational."""
    lam = [(Fraction(1, 4), Fraction(1, 3)), (Fraction(2, 3), Fraction(2, 3))]
    adds = [
        ((1, Fraction(1, 2)), Fraction(1, 4)),
        ((-1, Fraction(-1, 2)), Fraction(1, 4)),
        ((0, 1), Fraction(1, 4)),
        ((0, -1), Fraction(1, 4)),
    ]
    if mult_atoms == 4:
        mults = [
            ((Fraction(1, 2), 0), Fraction(1, 4)),
            ((Fraction(-1, 2), 0), Fraction(1, 4)),
            ((Fraction(1, 3), 1), Fraction(1, 4)),
            ((Fraction(-1, 3), -1), Fraction(1, 4)),
        ]
    else:
        mults = [
            ((Fraction(1, 2), Fraction(1, 3)), Fraction(1, 2)),
            ((Fraction(-1, 2), Fraction(-1, 3)), Fraction(1, 2)),
        ]
    noise = [(a, m, wa * wm) for a, wa in adds for m, wm in mults]
    return lam, noise, [Fraction(7, 10), Fraction(1, 2)]


def _torch_family(lam: list, noise: list, sigmas: list) -> Family:
    law = DiscreteLaw(
        torch.tensor([float(v) for v, _ in lam], dtype=torch.float64),
        torch.tensor([float(w) for _, w in lam], dtype=torch.float64),
        "two-point law",
    )
    nl = NoiseLaw(
        _t([a for a, _, _ in noise]),
        _t([m for _, m, _ in noise]),
        torch.tensor([float(w) for _, _, w in noise], dtype=torch.float64),
        "rational xi",
    )
    return Family(law, nl, float(sigmas[0]), float(sigmas[1]))


def _path(x_i: Sequence, x_r: Sequence, lam: Fraction, add: Sequence, mult: Sequence, sigmas: list) -> list:
    """The exact atom path M_{1 - eps(1-lam), eps xi}(x_i, x_r), coordinate by coordinate."""
    sa, sm = _r(sigmas[0]), _r(sigmas[1])
    return [
        _poly(
            (1 + EPS * sm * _r(mult[k])) * (_r(x_i[k]) + EPS * (1 - _r(lam)) * (_r(x_r[k]) - _r(x_i[k])))
            + EPS * sa * _r(add[k])
        )
        for k in range(len(x_i))
    ]


# ----------------------------------------------------------------------------------- thm1
def _thm1_checks() -> list[Check]:
    model = build_model("polynomial", 2, seed=5)
    coef = _coef(model)
    x = [[Fraction(1, 2), Fraction(-1, 3)], [Fraction(-1), Fraction(1, 4)], [Fraction(1, 3), Fraction(1)]]
    y = [1, 0, 1]
    lam, noise, sigmas = _laws()
    n = len(x)
    h = _outer(sp.log(1 + sp.exp(_A)), 2)  # h(a + b eps + ...)
    first, second = sp.Integer(0), sp.Integer(0)
    for i in range(n):
        a0 = polynomial_logit([_r(v) for v in x[i]], coef)
        sum_b, sum_c, sum_b2 = sp.Integer(0), sp.Integer(0), sp.Integer(0)
        for r in range(n):
            for lv, lw in lam:
                for add, mult, nw in noise:
                    _, b, c = _taylor(polynomial_logit(_path(x[i], x[r], lv, add, mult, sigmas), coef))
                    w = _r(lw) * _r(nw) / n
                    sum_b += w * b
                    sum_c += w * c
                    sum_b2 += w * b**2
        # the loss l = h(p) - y p has Taylor coefficients h-series minus y times (b, c)
        h1 = h[1](a0, 1, 0, 0)  # h'(a0): the eps coefficient of h(a0 + eps)
        h2 = 2 * h[2](a0, 1, 0, 0)  # h''(a0)
        first += (h1 - y[i]) * sum_b / n
        second += ((h1 - y[i]) * sum_c + h2 * sum_b2 / 2) / n
    exact1, exact2 = sp.N(first, DIGITS), sp.N(second, DIGITS)
    fam = _torch_family(lam, noise, sigmas)
    data = Data(_t(x), torch.tensor(y), _t(x))
    terms = theorem1_terms(model, data, fam.lam.one_minus_moment(1), fam.lam.one_minus_moment(2), fam)
    corr = theorem1_expansion(terms, fam, printed=False)
    printed = theorem1_expansion(terms, fam, printed=True)
    coefficients = {
        "R1 (corrected: h'(p(x_i)) - y_i)": coefficient(corr[0], exact1, TORCH_VS_SYMPY_RTOL),
        "R2~ + R3~": coefficient(corr[1], exact2, TORCH_VS_SYMPY_RTOL),
    }
    as_printed = coefficient(printed[0], exact1, TORCH_VS_SYMPY_RTOL)
    ok = all(c["agrees"] for c in coefficients.values()) and not as_printed["agrees"]
    return [
        _witness(
            "thm1",
            "Theorem 1: eps and eps^2 coefficients of L_n^NFM",
            ok,
            "sympy's exact coefficients of the cubic-polynomial model's NFM loss (n = 3, a two-point "
            "lambda law, 16 xi atoms, sigma_add = 7/10, sigma_mult = 1/2) agree with the corrected R1 "
            f"and with R2~ + R3~ (rel. {coefficients['R2~ + R3~']['rel_error']:.1e}); the printed R1 "
            f"differs (rel. {as_printed['rel_error']:.2f})",
            "any law of lambda on (0,1) (only its moments enter); independent xi_add, xi_mult",
            model.describe(),
            coefficients=coefficients,
            extra={"R1 as printed (h'(p(x_i) - y_i)) against sympy": as_printed},
        )
    ]


# ----------------------------------------------------------------------------------- thm2
def _thm2_checks() -> list[Check]:
    classes = 3
    model = build_model("rational", 2, classes, seed=7)
    coef = _coef(model)
    x = [[Fraction(1, 2), Fraction(-1, 3)], [Fraction(-1), Fraction(1, 4)]]
    aug = [[Fraction(2, 3), Fraction(-1, 2)], [Fraction(-3, 4), Fraction(1, 2)]]
    lam, noise, sigmas = _laws(mult_atoms=2)  # 8 xi atoms
    phi = _outer(_A * sp.log(_A), 3)
    n = len(x)
    atoms = []  # (weight, series of both arguments)
    for i in range(n):
        for r in range(n):
            for lv, lw in lam:
                for add, mult, nw in noise:
                    dists = []
                    for zs in ((x[i], x[r]), (aug[i], aug[r])):
                        q = [
                            [*_taylor(qk), 0]
                            for qk in rational_weights(_path(*zs, lv, add, mult, sigmas), coef, classes)
                        ]
                        total = [sum(qk[o] for qk in q) for o in range(4)]
                        dists.append([_ratio(qk, total) for qk in q])
                    atoms.append((_r(lw) * _r(nw) / n**2, dists))
    fam = _torch_family(lam, noise, sigmas)
    data = Data(_t(x), torch.zeros(n, dtype=torch.long), _t(aug))
    c1, c2 = fam.lam.one_minus_moment(1), fam.lam.one_minus_moment(2)
    results = []
    for pi in ([Fraction(1, 2), Fraction(1, 2)], [Fraction(1, 3), Fraction(2, 3)]):
        first, second = sp.Integer(0), sp.Integer(0)
        for w, dists in atoms:
            _, f1, f2 = _series_js(dists, pi, phi, 2)
            first += w * f1
            second += w * f2
        exact1, exact2 = sp.N(first, DIGITS), sp.N(second, DIGITS)
        general = theorem2_expansion(
            theorem2_general(model, data, c1, c2, fam, pi=[float(p) for p in pi]), fam, cross=True
        )
        coefficients = {
            "S1 (general pi)": coefficient(general[0], exact1, TORCH_VS_SYMPY_RTOL),
            "S2~ (general pi)": coefficient(general[1], exact2, TORCH_VS_SYMPY_RTOL),
        }
        if pi[0] == pi[1]:
            printed = theorem2_expansion(theorem2_printed(model, data, c1, c2, fam), fam, cross=False)
            coefficients["S1 (printed formula, this law's moments)"] = coefficient(
                printed[0], exact1, TORCH_VS_SYMPY_RTOL
            )
            coefficients["S2~ (printed formula, this law's moments)"] = coefficient(
                printed[1], exact2, TORCH_VS_SYMPY_RTOL
            )
        ok = all(c["agrees"] for c in coefficients.values())
        tag = "pi = (1/2, 1/2)" if pi[0] == pi[1] else "pi = (1/3, 2/3)"
        results.append(
            _witness(
                "thm2",
                "Theorem 2: eps and eps^2 coefficients of L_n^JSD",
                ok,
                "sympy's exact coefficients of the stability loss of a rational 3-class model (n = 2, "
                "shared xi, 8 xi atoms, a two-point lambda law) agree with our general-pi formulas"
                + (
                    " and with the printed S-terms when E_lambda is taken under the law actually used"
                    if pi[0] == pi[1]
                    else ""
                )
                + f" (max rel. {max(c['rel_error'] for c in coefficients.values()):.1e})",
                "shared xi in both arguments; the lambda law enters only through its moments",
                model.describe(),
                term=f"sympy witness, {tag}",
                coefficients=coefficients,
            )
        )
    return results


def symbolic_checks() -> dict[str, list[Check]]:
    """The sympy witnesses, by the id they belong to."""
    return {"jsd": _jsd_checks(), "prop1": _prop1_checks(), "thm1": _thm1_checks(), "thm2": _thm2_checks()}
