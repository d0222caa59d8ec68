"""From the digits proxy to CIFAR-10: the map a screen predicts with, and its validity measured as
prediction (issue 59, goals 2-3).

**The map.**  A straight line, least squares, from our mean over seeds on the proxy (Digits-C accuracy;
Digits-P mean flip probability) to the paper's number of the same method (CIFAR-10-C accuracy,
tab:results_cifar10; CIFAR-10-P mFR, tab:results_cifar_p), fitted on the eight reference methods.

**Its validity: leave one method out.**  Each reference method is predicted by the line fitted to the
other seven (``loo``): its error, their mean absolute error and root mean square (``rmse``) say how far
the proxy misses a method it did not see, which is the situation of a screened method.  The fit's own
residuals would say less: they are of methods the line was fitted to.

**The interval.**  A screened method's 95 % prediction interval is ``prediction ± t(0.975, n) × rmse``
over the n leave-one-out errors: taken as n draws of a new method's error N(0, sigma^2), the error of
one more over their root mean square is t-distributed with n degrees of freedom.  So the interval is
calibrated from errors on unseen methods, not from the residuals.  How often such intervals hold the
truth is measured, not assumed (``coverage``): each reference method's interval is made the same way
from the leave-one-out errors of the other seven alone (a nested leave-one-out: the method is in
neither its line nor its interval's width), and the page counts how many hold the paper's value.

**Cannot place.**  Where the leave-one-out RMSE is as large as the spread (sample sd) of the eight paper
values, the proxy predicts a method no better than the paper's average would: the page says it cannot
place the method on that benchmark (``placeable``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["LEVEL", "fit_line", "half_width", "loo", "map_record", "predict"]

#: the prediction intervals' level
LEVEL = 0.95


def _xy(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or len(a) < 3:
        raise ValueError(f"a line needs at least three (x, y) pairs, got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a line through values that are not finite numbers")
    if np.ptp(a) == 0:
        raise ValueError("every method has the same proxy value: no line through them")
    return a, b


def fit_line(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """``(intercept, slope)`` of the least-squares line of ``y`` on ``x`` (``numpy.polyfit``)."""
    a, b = _xy(x, y)
    slope, intercept = np.polyfit(a, b, 1)
    return float(intercept), float(slope)


def loo(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """Each point's leave-one-out prediction: the line refitted without it, evaluated at its x."""
    a, b = _xy(x, y)
    if len(a) < 4:
        raise ValueError("leave-one-out needs at least four points (a line through the other three or more)")
    out = np.empty(len(a))
    for i in range(len(a)):
        keep = np.arange(len(a)) != i
        intercept, slope = fit_line(a[keep], b[keep])
        out[i] = intercept + slope * a[i]
    return out


def half_width(errors: Sequence[float], level: float = LEVEL) -> float:
    """The half-width of a ``level`` prediction interval from ``n`` leave-one-out ``errors``:
    ``t(1 - (1 - level) / 2, n) × sqrt(mean(errors^2))`` (module docstring)."""
    from scipy.stats import t

    e = np.asarray(errors, dtype=float)
    if e.ndim != 1 or len(e) < 2 or not np.isfinite(e).all():
        raise ValueError(f"need at least two finite errors, got {e.tolist()}")
    return float(t.ppf(1 - (1 - level) / 2, len(e)) * math.sqrt(float(np.mean(e ** 2))))


def _nested_half_widths(a: np.ndarray, b: np.ndarray, level: float) -> np.ndarray:
    """Each point's interval half-width from the leave-one-out errors of the others alone."""
    widths = np.empty(len(a))
    for i in range(len(a)):
        keep = np.arange(len(a)) != i
        widths[i] = half_width(b[keep] - loo(a[keep], b[keep]), level)
    return widths


def map_record(names: Sequence[str], x: Sequence[float], y: Sequence[float], level: float = LEVEL) -> dict:
    """The map and its leave-one-out validity, as data: the line on all points, each point's
    leave-one-out prediction, error (truth minus prediction), interval and whether it holds the truth,
    the mean absolute error, the RMSE, the interval's half-width from all errors, the coverage, the
    spread of the truths, and whether the proxy can place a method (RMSE below that spread)."""
    a, b = _xy(x, y)
    if len(names) != len(a) or len(a) < 5:  # a nested leave-one-out fits lines to n - 2 >= 3 points
        raise ValueError(f"the map's check needs at least five methods, got {len(a)}")
    intercept, slope = fit_line(a, b)
    predicted = loo(a, b)
    errors = b - predicted
    widths = _nested_half_widths(a, b, level)
    covered = np.abs(errors) <= widths
    rmse = math.sqrt(float(np.mean(errors ** 2)))
    spread = float(np.std(b, ddof=1))
    rows = [{"method": n, "proxy": float(xi), "truth": float(yi), "predicted": float(p), "error": float(e),
             "half_width": float(w), "covered": bool(c)}
            for n, xi, yi, p, e, w, c in zip(names, a, b, predicted, errors, widths, covered, strict=True)]
    return {"intercept": intercept, "slope": slope, "level": level, "loo": rows,
            "mae": float(np.mean(np.abs(errors))), "rmse": rmse, "half_width": half_width(errors, level),
            "covered": int(covered.sum()), "n": len(a), "spread": spread, "placeable": rmse < spread,
            "proxy_range": [float(a.min()), float(a.max())]}


def predict(record: dict, value: float, *, leave_out: str | None = None,
            bounds: tuple[float, float] = (0.0, 100.0)) -> dict:
    """A screened method's prediction at proxy value ``value``, with its interval: the line and the
    half-width of ``record`` (``map_record``); ``leave_out``, a reference method the screened one is
    (a built-in screened by name), is left out of both, as in its own leave-one-out row: a method is
    never predicted by a line fitted to it.  The prediction and its interval are cut to ``bounds`` (a
    percentage), which ``clipped`` says; the half-width is the uncut one."""
    if leave_out is None:
        centre = record["intercept"] + record["slope"] * value
        width = record["half_width"]
    else:
        rows = [r for r in record["loo"] if r["method"] != leave_out]
        if len(rows) != len(record["loo"]) - 1:
            raise ValueError(f"{leave_out!r} is not one of the map's methods")
        a = np.array([r["proxy"] for r in rows])
        b = np.array([r["truth"] for r in rows])
        intercept, slope = fit_line(a, b)
        centre = intercept + slope * value
        width = half_width(b - loo(a, b), record["level"])
    low, high = (record["proxy_range"] if leave_out is None
                 else (min(r["proxy"] for r in rows), max(r["proxy"] for r in rows)))
    lo, hi = bounds
    cut = [min(max(v, lo), hi) for v in (centre, centre - width, centre + width)]
    return {"value": float(cut[0]), "low": float(cut[1]), "high": float(cut[2]), "half_width": float(width),
            "clipped": cut != [centre, centre - width, centre + width],
            "extrapolated": not (low <= value <= high), "left_out": leave_out}
