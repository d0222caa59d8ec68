"""Seed statistics of the small-scale verdicts: the 95 % t-interval of a mean, the paired
difference of two methods over shared seeds, and its minimal detectable difference (MDD) at
80 % power.  Nothing about the method: numbers in, numbers out (scipy for t's quantiles).

**Resolution** (issue 54, root cause 4; issue 60, cause 4).  An accuracy on 300 test images moves in
steps of one image (0.33 points); a mean over 15 corruptions x 5 severities, or a flip rate, in smaller
steps of their own.  A paired difference of such numbers lies on the same grid, so two seeds where one
method wins by exactly one image each have differences of sd 0: a t-interval of width 0 and p = 0,
certainty read from a spread the measurement cannot resolve.  Issue 54 answered with no verdict at
all below the step, which then called +11.2 points on all 9 seeds (sd half a step) "cannot be
judged": the spread was compared with the step and the mean never was.  The rule now uses both:
the spread the test and the interval divide by is ``spread = max(sd, step)`` (one image's worth at
least; ``paired``), so one image won on two seeds is within noise (t = 1.4) and 11 points on nine
seeds hold (t > 100).  Where no step is known (a continuous measure, plain numbers from the API) an
sd of zero up to float rounding (``ZERO_SPREAD`` of the values' size: ``80.2222 - 80.0`` and
``70.2222 - 70.0`` differ in the 15th digit) leaves nothing to divide by: ``UNJUDGED``, no p, no MDD.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["ALPHA", "UNJUDGED", "ZERO_SPREAD", "Seeds", "adjusted_verdict", "below_resolution", "holm", "interval",
           "kendall_tau_b", "level_interval", "mdd", "mdd80", "paired", "rank_correlation", "seeds_to_decide",
           "spearman", "t_quantile", "two_sided_p", "verdict_alpha"]

#: the verdict of a difference with no spread to test against (every seed equal, no known step), in every file
UNJUDGED = "cannot be judged (no spread over seeds, and no known resolution)"
#: an sd this small relative to the values' size is zero up to float rounding
ZERO_SPREAD = 1e-9


class Seeds(dict):
    """Per-seed values of one measurement (seed -> value) that know the grid they lie on: ``step``
    is the smallest change the measurement can show (one test image of an accuracy, in the values'
    unit), None where it is continuous or unknown (issue 54)."""

    def __init__(self, values=(), step: float | None = None):
        super().__init__(values)
        if step is not None and not (math.isfinite(step) and step > 0):
            raise ValueError(f"a measurement's step must be a finite number > 0, got {step!r}")
        self.step = step


def t_quantile(q: float, df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(q, df))


def _finite(values: list[float], what: str) -> list[float]:
    """``values`` as floats, refusing (one line) none at all or a NaN / infinite one: a NaN compares
    false with every boundary, so a verdict read from it said "within noise" (issue 54)."""
    if len(values) == 0:
        raise ValueError(f"{what}: no values (need at least one)")
    out = []
    for i, v in enumerate(values):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: value {i} is not a number: {v!r}") from None
        if not math.isfinite(x):
            raise ValueError(f"{what}: value {i} is {x} (every value must be a finite number)")
        out.append(x)
    return out


def interval(values: list[float]) -> dict:
    """Mean, sample sd and the half-width of the 95 % t-interval of ``values`` (None below 2).
    No values, or a NaN / infinite one, is refused in one line (issue 54: ``interval([])`` raised
    ZeroDivisionError, a NaN gave a NaN interval that every verdict read as "within noise")."""
    values = _finite(list(values), "interval")
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return {"n": n, "mean": mean, "half_width": None, "sd": None, "values": values}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return {"n": n, "mean": mean, "sd": sd, "half_width": t_quantile(0.975, n - 1) * sd / math.sqrt(n),
            "values": values}


def mdd(sd: float, n: int, alpha: float = 0.05, power: float = 0.80) -> float:
    """The smallest mean difference a two-sided paired t-test at level ``alpha`` detects with ``power``,
    for ``n`` pairs of sd ``sd``: the exact noncentral-t answer (issue 63, goal 5: the normal-style
    ``(t_{1-alpha/2} + t_{power}) sd / sqrt(n)`` understated it, 3.2 against 3.31 at n = 9).  The
    noncentrality ``delta`` solves ``P(|T'| > t_{1-alpha/2, n-1}) = power`` for ``T' ~ nct(n-1, delta)``;
    the MDD is ``delta sd / sqrt(n)``.  A claim tested at a Holm level needs its MDD at that level."""
    from scipy.optimize import brentq
    from scipy.stats import nct

    df, crit = n - 1, t_quantile(1 - alpha / 2, n - 1)

    def shortfall(delta: float) -> float:
        lower = float(nct.cdf(-crit, df, delta))  # the far tail: scipy gives NaN where it is ~0 (df 2, delta 8)
        return float(nct.sf(crit, df, delta)) + (lower if math.isfinite(lower) else 0.0) - power

    high = crit + t_quantile(power, df) + 1.0
    while shortfall(high) < 0:  # the normal-style value is a lower bound; widen until it brackets
        high *= 2
    return brentq(shortfall, 0.0, high, xtol=1e-10) * sd / math.sqrt(n)


def level_interval(difference: dict, level_alpha: float) -> tuple[float, float] | None:
    """The two-sided ``1 - level_alpha`` t-interval of a ``paired`` difference, from its ``spread`` (None
    without one): at ``verdict_alpha``'s level it holds 0 exactly where the verdict is *within noise*."""
    spread, n = (difference or {}).get("spread"), (difference or {}).get("n", 0)
    if not spread or n < 2:
        return None
    half = t_quantile(1 - level_alpha / 2, n - 1) * spread / math.sqrt(n)
    return difference["mean"] - half, difference["mean"] + half


def verdict_alpha(p: float | None, p_adjusted: float | None, alpha: float = 0.05) -> float | None:
    """The level at which a claim's own p meets its verdict (issue 63, goal 5): ``alpha p / p_adjusted``,
    so that ``p < alpha p / p_adjusted`` exactly when ``p_adjusted < alpha``.  A primary claim (``p_adjusted
    = p``) gets ``alpha``; the first claim of Holm's m gets ``alpha / m``.  An interval at this level
    excludes 0 exactly where the verdict holds or fails."""
    if p is None or p_adjusted is None:
        return None
    if p_adjusted <= 0.0:
        return alpha
    return alpha * p / p_adjusted


def seeds_to_decide(sd: float, width: float, alpha: float, assurance: float = 0.80, most: int = 500) -> int | None:
    """The fewest pairs ``n`` whose two-sided ``1 - alpha`` t-interval is no wider than ``width`` with
    probability ``assurance``, for differences of true sd ``sd`` (the sample sd's ``assurance`` quantile,
    ``sd sqrt(chi2_{assurance, n-1} / (n - 1))``).  With ``width`` the paper's effect, such an interval
    cannot hold both 0 and that effect: its verdict holds, fails, or is smaller than the paper's
    (issue 63, goal 2).  None beyond ``most``."""
    from scipy.stats import chi2

    for n in range(3, most + 1):
        sample_sd = sd * math.sqrt(chi2.ppf(assurance, n - 1) / (n - 1))
        if 2 * t_quantile(1 - alpha / 2, n - 1) * sample_sd / math.sqrt(n) <= width:
            return n
    return None


def mdd80(sd: float, n: int) -> float:
    """``mdd`` at 5 % and 80 % power (noncentral t)."""
    return mdd(sd, n)


def below_resolution(sd: float | None, step: float | None) -> bool:
    """Whether a spread ``sd`` is below its grid's ``step`` (informational: the test then uses the step;
    ``paired``)."""
    return sd is not None and step is not None and sd < step


def paired(a: dict[int, float], b: dict[int, float]) -> dict | None:
    """``a - b`` over the seeds both have: ``interval`` of the differences, with the spread the test and
    the interval use (``spread``: the sd, at least the measurement's step, ``resolution``: the coarser of
    ``a``'s and ``b``'s where they are ``Seeds`` with a step), ``half_width`` from that spread, and its MDD
    at 5 % (``mdd80``).  No spread to use (every difference equal to float rounding, no step known): every
    derived number None (the module doc)."""
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return None
    result = interval([a[s] - b[s] for s in seeds])
    steps = [s for s in (getattr(a, "step", None), getattr(b, "step", None)) if s is not None]
    result["resolution"] = max(steps) if steps else None
    result["below_resolution"] = below_resolution(result["sd"], result["resolution"])
    n = len(seeds)
    if n < 2:
        result.update(spread=None, mdd80=None)
        return result
    scale = max([1.0, *(abs(v) for s in seeds for v in (a[s], b[s]))])
    sd = 0.0 if result["sd"] <= ZERO_SPREAD * scale else result["sd"]
    spread = max(sd, result["resolution"] or 0.0)
    result["spread"] = spread or None
    result["half_width"] = None if not spread else t_quantile(0.975, n - 1) * spread / math.sqrt(n)
    result["mdd80"] = None if not spread else mdd80(spread, n)
    return result


def two_sided_p(difference: dict | None, threshold: float = 0.0) -> float | None:
    """The paired t-test's two-sided p-value of mean difference = ``threshold``, dividing by ``paired``'s
    ``spread`` (the sd, at least the measurement's step): None below 2 seeds or without a spread (module doc)."""
    if not difference or difference.get("n", 0) < 2:
        return None
    spread = difference.get("spread", difference.get("sd"))
    if not spread:
        return None
    from scipy.stats import t

    statistic = (difference["mean"] - threshold) / (spread / math.sqrt(difference["n"]))
    return float(2 * t.sf(abs(statistic), difference["n"] - 1))


def holm(pvalues: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values of a family: sorted ascending, the i-th (from 0) of m is
    multiplied by m - i, made monotone by a running maximum, capped at 1 (Holm 1979).  A p-value
    that is not a number in [0, 1] is refused in one line (issue 54: a NaN sorted where the dict
    order put it, so the family's verdicts depended on that order; p = -0.5 was taken)."""
    for key, p in pvalues.items():
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"holm: p-value of {key!r} must be a number in [0, 1], got {p!r}")
    order = sorted(pvalues, key=lambda k: pvalues[k])
    m, running, adjusted = len(order), 0.0, {}
    for i, key in enumerate(order):
        running = max(running, min(1.0, (m - i) * pvalues[key]))
        adjusted[key] = running
    return adjusted


#: a test's level (the primary claim's; a Holm family's overall level)
ALPHA = 0.05


def adjusted_verdict(difference: dict, threshold: float, p_adjusted: float) -> str:
    """*holds* / *fails* where the adjusted p is below ``ALPHA`` (by the side of the mean), else *within noise*."""
    if p_adjusted >= ALPHA:
        return "within noise"
    return "holds" if difference["mean"] > threshold else "fails"


# ----------------------------------------------------------------------------- rank statistics (scipy)

def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho (scipy); NaN where a side is constant."""
    from scipy.stats import spearmanr

    a, b = np.asarray(x, float), np.asarray(y, float)
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    return float(spearmanr(a, b).statistic)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b (scipy's default, ties corrected); NaN where a side is constant."""
    from scipy.stats import kendalltau

    a, b = np.asarray(x, float), np.asarray(y, float)
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    return float(kendalltau(a, b).statistic)


def rank_correlation(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman over the finite pairs; None where undefined (fewer than 3, a constant side)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y)
    rho = spearman(x[keep], y[keep]) if keep.sum() >= 3 else math.nan
    return rho if math.isfinite(rho) else None
