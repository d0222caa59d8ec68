"""Our numbers over seeds: the one seed statistic of every table, figure and sweep table, and how a
cell of ours is printed (mean (min / max), as the paper prints its own seeds)."""

from __future__ import annotations

import numpy as np

__all__ = ["delta", "fmt", "ours_text", "seed_stats"]


def seed_stats(values: list[float], *, std: bool = False) -> dict | None:
    """Mean, min, max and n over seeds (None for no values); ``std``: also the sample std (ddof 1;
    0.0 for one seed).  The one seed statistic of every table, figure and sweep table."""
    if not values:
        return None
    stats = {"mean": float(np.mean(values)), "min": float(np.min(values)), "max": float(np.max(values)),
             "n": len(values), "values": [float(v) for v in values]}
    if std:
        stats["std"] = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return stats


def fmt(stats: dict | None, with_range: bool = True) -> str:
    if stats is None:
        return "—"
    if stats["n"] > 1 and with_range:
        return f"{stats['mean']:.1f} ({stats['min']:.1f} / {stats['max']:.1f})"
    return f"{stats['mean']:.1f}"


def ours_text(stats: dict | None, paren: dict | None, with_paren: bool) -> str:
    """Our cell as the paper prints it: "mean (min / max)", or with a parenthesised value
    "mean (paren)" followed by the seeds' range of the mean in brackets."""
    if not with_paren:
        return fmt(stats)
    if stats is None:
        return "—"
    text = f"{stats['mean']:.1f} ({fmt(paren, with_range=False)})"
    return text + (f" [{stats['min']:.1f} / {stats['max']:.1f}]" if stats["n"] > 1 else "")


def delta(stats: dict | None, paper: float | None) -> str:
    return "—" if stats is None or paper is None else f"{stats['mean'] - paper:+.1f}"
