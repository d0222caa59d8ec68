"""Seed statistics of the small-scale verdicts: the 95 % t-interval of a mean, the paired
difference of two methods over shared seeds, and its minimal detectable difference (MDD) at
80 % power.  Nothing about the method: numbers in, numbers out (scipy for t's quantiles).

**Resolution** (issue 54, root cause 4).  An accuracy on 450 test images moves in steps of one
image (0.222 points); a mean over 15 corruptions x 5 severities of 450 images, or a flip rate, in
smaller steps of their own.  A paired difference of such numbers lies on the same grid, so two
seeds where one method wins by exactly one image each have differences of sd 0, and every model
predicting one class gives sd 0 too: a t-interval of width 0, p = 0 and an MDD of 0, certainty
read from a spread the measurement cannot resolve.  ``paired`` therefore marks a difference whose
sd is below its grid's step (``Seeds.step``; or exactly 0 where no step is known)
``below_resolution``, and then claims no MDD (None): the readers of a difference
(``noisymix_app.reproduce.claims``) give it no verdict and no p-value.  Why one step: seeds whose differences
fall on at most two adjacent grid points (they differ by no more than one image) always have an
sd below it (at most step * sqrt(n / (4 (n - 1))), 0.71 step for two seeds), so such a spread is
rounding, not a measured noise level for the t-test to divide by.
"""

from __future__ import annotations

import math

__all__ = ["UNJUDGED", "Seeds", "below_resolution", "interval", "mdd", "mdd80", "paired", "t_quantile"]

#: the verdict of a difference whose spread is below its measurement's step, in every generated file
UNJUDGED = "cannot be judged (spread below the measurement's resolution)"


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
    """The smallest mean difference a two-sided paired t-test at level ``alpha`` detects with
    ``power``, for ``n`` pairs of sample sd ``sd``: (t_{1-alpha/2, n-1} + t_{power, n-1}) sd / sqrt(n).
    A claim tested at a Holm level (alpha / m for the first of m) needs its MDD at that level
    (issue 52: 0.05/6 turns NoisyMix - AugMix's 1.5 into 2.1)."""
    return (t_quantile(1 - alpha / 2, n - 1) + t_quantile(power, n - 1)) * sd / math.sqrt(n)


def mdd80(sd: float, n: int) -> float:
    """``mdd`` at 5 % and 80 % power: (t_{0.975, n-1} + t_{0.80, n-1}) sd / sqrt(n)."""
    return mdd(sd, n)


def below_resolution(sd: float | None, step: float | None) -> bool:
    """Whether a spread ``sd`` says nothing the measurement can resolve: below its grid's ``step``,
    or exactly 0 where no step is known (a zero spread is never certainty; module doc, issue 54)."""
    if sd is None:
        return False
    return sd == 0 or (step is not None and sd < step)


def paired(a: dict[int, float], b: dict[int, float]) -> dict | None:
    """``a - b`` over the seeds both have: ``interval`` of the differences plus ``mdd80``.  Where
    ``a`` or ``b`` is a ``Seeds`` with a ``step``, the difference records it as ``resolution`` (the
    coarser of the two), and a spread below it is ``below_resolution`` with no MDD (issue 54)."""
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return None
    result = interval([a[s] - b[s] for s in seeds])
    steps = [s for s in (getattr(a, "step", None), getattr(b, "step", None)) if s is not None]
    result["resolution"] = max(steps) if steps else None
    result["below_resolution"] = below_resolution(result["sd"], result["resolution"])
    n = len(seeds)
    result["mdd80"] = None if n < 2 or result["below_resolution"] else mdd80(result["sd"], n)
    return result
