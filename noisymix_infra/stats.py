"""Seed statistics of the small-scale verdicts: the 95 % t-interval of a mean, the paired
difference of two methods over shared seeds, and its minimal detectable difference (MDD) at
80 % power.  Nothing about the method: numbers in, numbers out (scipy for t's quantiles)."""

from __future__ import annotations

import math

__all__ = ["interval", "mdd", "mdd80", "paired", "t_quantile"]


def t_quantile(q: float, df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(q, df))


def interval(values: list[float]) -> dict:
    """Mean, sample sd and the half-width of the 95 % t-interval of ``values`` (None below 2)."""
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


def paired(a: dict[int, float], b: dict[int, float]) -> dict | None:
    """``a - b`` over the seeds both have: ``interval`` of the differences plus ``mdd80``."""
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return None
    result = interval([a[s] - b[s] for s in seeds])
    n = len(seeds)
    result["mdd80"] = None if n < 2 else mdd80(result["sd"], n)
    return result
