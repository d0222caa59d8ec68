"""The record of one check (one row of theory.json) and the rules that give its verdict.

Kinds of check:

* ``expansion`` — a printed expansion held against the exact loss: the residual
  |L(eps) - expansion(eps)| on a geometric eps grid must fall at least as fast as the order the
  statement implies (``expected_slope``, e.g. 3 for a correct second-order expansion of a smooth
  loss), and every named coefficient must equal the autograd derivative of the exact loss.
* ``identity`` — two exact expressions that the statement says are equal (to quadrature or
  rounding precision); no slope (``residual_slope``/``expected_slope`` are ``None``).
* ``inequality`` — an asymptotic bound LHS >= RHS + o(eps^2): the leading Taylor coefficient of
  the gap LHS - RHS must be non-negative (it is fitted and also taken by autograd).
* ``property`` — a property of the JSD checked on many random cases.
* ``symbolic`` — sympy's exact coefficients against our float64 formulas (the second witness).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch

from theory.calculus import fit_slope

__all__ = [
    "SLOPE_TOLERANCE",
    "Check",
    "asymptotic_points",
    "coefficient",
    "expansion_check",
    "expansion_verdict",
    "grid_values",
    "identity_verdict",
    "rescaling_checks",
    "residual_curve",
]

SLOPE_TOLERANCE = 0.5
"""A fitted slope may fall this much below the expected order: in float64 the window between the
rounding noise and the pre-asymptotic range can be narrow (e.g. when the eps^3 and eps^4 terms
cancel near eps = 1e-3); 0.5 still separates a correct expansion (3) from a wrong eps^2 (2) or eps
(1) term, and the coefficients are checked exactly besides."""

COEFFICIENT_RTOL = 1e-7
"""Formula and autograd must agree to this relative precision (both are exact to rounding)."""

Form = Literal["as_printed", "corrected"]


COEFFICIENT_ATOL = 1e-14
"""...plus this absolute slack, for coefficients that vanish (e.g. a gap's tight first order)."""


def coefficient(
    formula: float, autograd: float, rtol: float = COEFFICIENT_RTOL, atol: float = COEFFICIENT_ATOL
) -> dict[str, Any]:
    """One coefficient held against the autograd derivative of the exact loss (or sympy's value)."""
    formula, autograd = float(formula), float(autograd)
    scale = max(abs(formula), abs(autograd), 1e-300)
    error = abs(formula - autograd)
    return {
        "formula": formula,
        "autograd": autograd,
        "abs_error": error,
        "rel_error": error / scale,
        "agrees": bool(error <= rtol * scale + atol),
    }


@dataclass
class Check:
    """One row of theory.json."""

    id: str
    statement: str
    form: Form
    term: str
    kind: Literal["expansion", "identity", "inequality", "property", "symbolic"]
    verdict: Literal["holds", "fails"]
    detail: str
    conditions: str
    model: str = ""
    residual_slope: float | None = None
    expected_slope: float | None = None
    coefficients: dict[str, dict[str, Any]] = field(default_factory=dict)
    eps: list[float] | None = None
    residuals: list[float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "statement": self.statement,
            "form": self.form,
            "term": self.term,
            "kind": self.kind,
            "verdict": self.verdict,
            "detail": self.detail,
            "conditions": self.conditions,
            "model": self.model,
            "residual_slope": _finite(self.residual_slope),
            "expected_slope": self.expected_slope,
        }
        if self.coefficients:
            out["coefficients"] = self.coefficients
        if self.eps is not None and self.residuals is not None:
            out["eps"] = [float(e) for e in self.eps]
            out["residuals"] = [_finite(r) for r in self.residuals]
        out.update({k: _clean(v) for k, v in self.extra.items()})
        return out


def _finite(v: float | None) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _clean(v: Any) -> Any:
    if isinstance(v, float):
        return _finite(v)
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, np.generic):
        return _clean(v.item())
    return v


ASYMPTOTIC_POINTS = 4
"""The order is read from the 4 smallest eps whose residual rises above the rounding floor."""

ROUNDING_FLOOR = 1e-15
"""Residuals below this are rounding noise (measured: ~5e-17 for the O(1) losses here, summed
atom by atom in float64); kept out of the slope fits with a 20x margin."""


def asymptotic_points(points: int) -> int:
    """How many of the smallest eps (above the floor) the order is read from."""
    return min(ASYMPTOTIC_POINTS, max(points, 2))


def expansion_verdict(
    eps: np.ndarray,
    residuals: np.ndarray,
    expected_slope: float,
    coefficients: dict[str, dict[str, Any]],
    *,
    floor: float,
) -> tuple[float | None, bool, str]:
    """(fitted slope, holds?, reason) for an expansion check.

    It holds when the residual falls at least as fast as eps^expected_slope (within
    ``SLOPE_TOLERANCE``; slope fitted on the small-eps end of the grid, ``asymptotic_points``), or
    sits at the rounding floor everywhere, and every coefficient agrees.
    """
    slope = fit_slope(eps, residuals, floor, smallest=asymptotic_points(len(eps)))
    wrong = [name for name, c in coefficients.items() if not c["agrees"]]
    slope_ok = slope is None or slope >= expected_slope - SLOPE_TOLERANCE
    reasons = []
    if slope is None:
        reasons.append("residual at the rounding floor on the whole grid")
    elif not slope_ok:
        reasons.append(f"residual slope {slope:.2f} < expected {expected_slope:g}")
    if wrong:
        reasons.append("coefficient(s) disagree with autograd: " + ", ".join(wrong))
    return slope, slope_ok and not wrong, "; ".join(reasons)


def expansion_check(
    *,
    detail: str,
    eps: np.ndarray,
    residuals: np.ndarray,
    floor: float,
    expected: float,
    coefficients: dict[str, dict[str, Any]],
    extra: dict[str, Any] | None = None,
    no_reason: str = "",
    **row: Any,
) -> Check:
    """The ``expansion`` row of a residual curve (``row``: its id, statement, form, term, conditions
    and model): verdict, fitted slope and reason from ``expansion_verdict``; ``detail`` is followed
    by "; " and the reason (or ``no_reason`` where the verdict gives none, nothing when that is
    empty too)."""
    slope, ok, why = expansion_verdict(eps, residuals, expected, coefficients, floor=floor)
    reason = why or no_reason
    return Check(
        kind="expansion",
        verdict="holds" if ok else "fails",
        detail=detail + (f"; {reason}" if reason else ""),
        residual_slope=slope,
        expected_slope=expected,
        coefficients=coefficients,
        eps=list(eps),
        residuals=list(residuals),
        extra=extra or {},
        **row,
    )


def grid_values(eps: np.ndarray, exact: Any, *, vectorized: bool = False) -> np.ndarray:
    """exact(eps) on the grid (``vectorized``: ``exact`` takes the whole grid as one tensor)."""
    if vectorized:
        return np.asarray(exact(torch.as_tensor(eps, dtype=torch.float64)).detach(), dtype=float)
    return np.array([float(exact(torch.tensor(float(e), dtype=torch.float64))) for e in eps])


def residual_curve(
    eps: np.ndarray, exact: Any, first: float, second: float, *, vectorized: bool = False
) -> tuple[np.ndarray, float]:
    """exact(eps) - first eps - second eps^2 on the grid (``exact`` gives the increment
    L(eps) - L(0) summed atom by atom, or is its values from ``grid_values``), and a rounding
    floor for ``fit_slope``."""
    values = exact if isinstance(exact, np.ndarray) else grid_values(eps, exact, vectorized=vectorized)
    residuals = values - first * eps - second * eps**2
    return residuals, max(1e-13 * float(np.abs(values).max()), ROUNDING_FLOOR)


def identity_verdict(errors: list[float], tolerance: float) -> bool:
    return max(errors) <= tolerance


def rescaling_checks(lemma: str, title: str, statement: str, *, eps: np.ndarray, printed: np.ndarray,
                     corrected: np.ndarray, slope: float, tolerance: float, model: str, printed_detail: str,
                     corrected_detail: str, erratum: str, fix: str, erratum_kind: str) -> list[Check]:
    """The two rows of a lemma stated after the rescaling 1 - lambda -> eps (1 - lambda) (Lemmas 1 and 2):
    as printed, the two rescaled sides (``printed``: their difference on the eps grid, fitted
    ``slope``); corrected (``title``: "Lemma 1"), the identity at every noise level sigma -> eps sigma, lambda unscaled
    (``corrected``), rescaled afterwards.  Each holds when its largest difference is within
    ``tolerance``."""

    def row(form: Form, statement: str, differences: np.ndarray, detail: str, conditions: str, **fields: Any) -> Check:
        verdict = "holds" if np.abs(differences).max() <= tolerance else "fails"
        return Check(id=lemma, statement=statement, form=form, term="rescaled family", kind="identity",
                     verdict=verdict, detail=detail, conditions=conditions, model=model, eps=list(eps), **fields)

    return [
        row("as_printed", statement + " — with the rescaling 1 - lambda -> eps (1 - lambda) applied to both sides",
            printed, printed_detail, "the identity is one of the unscaled loss",
            residual_slope=slope, residuals=list(printed), extra={"erratum": erratum, "fix": fix,
                                                           "erratum_kind": erratum_kind}),
        row("corrected", f"{title} for every noise level sigma -> eps sigma (lambda unscaled); rescale after",
            corrected, corrected_detail, "any alpha, beta, sigma", residuals=list(np.abs(corrected))),
    ]
