"""A screen's statistics over seeds, one home for the page, its per-family part and the second view: a mean with
its 95 % t-interval (``interval_entry``), a paired difference seed by seed (``paired_difference``,
``noisymix_infra.stats.paired``), and that difference in words (``reads``)."""

from __future__ import annotations

__all__ = ["interval_entry", "paired_difference", "reads"]


def interval_entry(values) -> dict:
    """Mean, 95 % t half-width, sd and the values (``noisymix_infra.stats.interval``)."""
    from noisymix_infra.stats import interval

    found = interval(values)
    return {"mean": found["mean"], "half_width": found["half_width"], "sd": found["sd"], "values": found["values"]}


def paired_difference(ours, theirs, seeds) -> dict:
    """``ours`` minus ``theirs``, seed by seed (both aligned with ``seeds``)."""
    from noisymix_infra.stats import Seeds, paired

    found = paired(Seeds(zip(seeds, ours, strict=True)), Seeds(zip(seeds, theirs, strict=True)))
    return {k: found[k] for k in ("n", "mean", "sd", "half_width", "mdd80", "below_resolution", "values")}


def reads(diff: dict, lower_better: bool) -> str:
    """A paired difference in words: which side its 95 % interval lies on, or that it lies across 0."""
    from noisymix_infra.stats import UNJUDGED

    if diff["below_resolution"]:
        return UNJUDGED
    hw = diff["half_width"]
    if hw is None:
        return "one seed: no interval"
    if diff["mean"] - hw > 0:
        return "higher (flips more)" if lower_better else "higher"
    if diff["mean"] + hw < 0:
        return "lower (flips less)" if lower_better else "lower"
    return (f"not distinguishable with {diff['n']} seeds (80 % power from ±{diff['mdd80']:.1f})"
            if diff["mdd80"] is not None else f"not distinguishable with {diff['n']} seeds")
