"""Many seeds instead of one: summaries, paired comparisons and verdicts.

* ``summarize``: mean, sample std (ddof = 1) and the 95% confidence interval of the mean from
  Student's t with n - 1 degrees of freedom (std and CI need n >= 2; absent otherwise).
* ``paired``: scheme A against scheme B on the same seeds (same data, same initialization):
  the differences d_s = A_s - B_s, their mean, wins / ties / losses, the win rate
  wins / n, and a paired bootstrap 95% CI of the mean difference (seeds resampled with
  replacement, percentile interval, ``BOOTSTRAP_RESAMPLES`` draws from a NumPy generator
  seeded with ``BOOTSTRAP_SEED`` — the same numbers every run).
* ``verdict``: "holds" when the CI of a claimed difference lies on the claimed side of 0,
  "fails" when it lies on the other side, "within noise" when it contains 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from scipy import stats as _scipy_stats

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "HOLDS",
    "NOT_HOLDS",
    "WITHIN_NOISE",
    "combine",
    "paired",
    "summarize",
    "verdict",
]

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20220315
# the reproduce summary's words (one vocabulary in every generated file, issue 40)
HOLDS, NOT_HOLDS, WITHIN_NOISE = "holds", "fails", "within noise"


def summarize(values: Sequence[float]) -> dict[str, Any]:
    """``{"values", "n", "mean", "std"?, "ci95"?}`` of one scheme's per-seed numbers."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"need a non-empty list of numbers, got shape {x.shape}")
    out: dict[str, Any] = {"values": x.tolist(), "n": int(x.size), "mean": float(x.mean())}
    if x.size >= 2:
        std = float(x.std(ddof=1))
        half = float(_scipy_stats.t.ppf(0.975, x.size - 1)) * std / math.sqrt(x.size)
        out["std"] = std
        out["ci95"] = [out["mean"] - half, out["mean"] + half]
    return out


def paired(a: Sequence[float], b: Sequence[float], *, seed: int = BOOTSTRAP_SEED,
           resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """Paired comparison of A against B (same seeds, same order)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError(f"paired samples must be two equal-length lists, got {x.shape} and {y.shape}")
    d = x - y
    out: dict[str, Any] = {
        "n": int(d.size), "mean_difference": float(d.mean()),
        "wins": int((d > 0).sum()), "ties": int((d == 0).sum()), "losses": int((d < 0).sum()),
        "win_rate": float((d > 0).mean()),
    }
    if d.size >= 2:
        rng = np.random.default_rng(seed)
        index = rng.integers(0, d.size, size=(resamples, d.size))
        means = d[index].mean(axis=1)
        out["ci95"] = [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]
        out["bootstrap"] = {"resamples": resamples, "seed": seed, "interval": "percentile"}
    return out


def verdict(comparison: dict[str, Any], claimed: Literal["greater", "less"]) -> str:
    """Verdict on "A is greater (or less) than B" from a ``paired`` result."""
    if "ci95" not in comparison:
        return WITHIN_NOISE
    lo, hi = comparison["ci95"]
    if claimed == "greater":
        return HOLDS if lo > 0 else NOT_HOLDS if hi < 0 else WITHIN_NOISE
    return HOLDS if hi < 0 else NOT_HOLDS if lo > 0 else WITHIN_NOISE


def combine(verdicts: Sequence[str]) -> str:
    """A claim made of parts: holds if every part holds, fails if any part is
    contradicted, within noise otherwise."""
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS
    if any(v == NOT_HOLDS for v in verdicts):
        return NOT_HOLDS
    return WITHIN_NOISE
