"""The words every generated report shares (issues 52, 57): the verdicts and their one gloss, the marks,
method names as the paper writes them, and numbers as the reports print them.  Imported by the claims,
the opening, the summary and the analogue's report alike, so they say the same thing the same way; it
imports nothing of theirs."""

from __future__ import annotations

from fullscale.training.methods import METHODS

__all__ = ["AGAINST_PAPER", "LABELS", "MARKS", "VERDICT_WORDS", "interval_text", "join", "label", "level_text",
           "signed"]

#: method names as the paper writes them (the methods' own titles, ``fullscale.training.methods``)
LABELS = {name: method.title for name, method in METHODS.items()}

#: the verdicts, each with its one plain gloss (a verdict outside them, e.g. "cannot be judged", says its reason)
VERDICT_WORDS = {"holds": "the paired difference over seeds is on the claimed side at the claim's test level",
                 "within noise": "it is not: at this scale the two cannot be told apart (not \"no difference\")",
                 "fails": "it is on the other side at that level: the opposite is measured"}

#: a verdict's mark against the cross-machine margin of its metric (``margins.firmness``): True / False / None
MARKS = {True: "firm", False: "fragile", None: "margin unknown"}


def label(method: str) -> str:
    return LABELS.get(method, method)


def signed(x: float, digits: int = 1) -> str:
    """``+1.2`` / ``−0.4`` (a true minus sign)."""
    return f"{x:+.{digits}f}".replace("-", "−")


def interval_text(d: dict, digits: int = 1) -> str:
    """A paired difference as ``+1.2 [+0.3, +2.1]`` (its mean alone without an interval)."""
    if d.get("half_width") is None:
        return signed(d["mean"], digits)
    lo, hi = d["mean"] - d["half_width"], d["mean"] + d["half_width"]
    return f"{signed(d['mean'], digits)} [{signed(lo, digits)}, {signed(hi, digits)}]"


def level_text(claim: dict, digits: int = 1) -> str:
    """A claim's paired mean with its interval at the verdict's level (issue 63, goal 5), the level and the seeds:
    ``+1.0 [−1.2, +3.2] at 98.8 %, n 9`` (the 95 % interval where no level was derived)."""
    d = claim["difference"]
    if not claim.get("interval"):
        return f"{interval_text(d, digits)}, n {d['n']}"
    lo, hi = claim["interval"]
    return (f"{signed(d['mean'], digits)} [{signed(lo, digits)}, {signed(hi, digits)}] at "
            f"{round(100 * claim['interval_level'], 1):g} %, n {d['n']}")


#: where the paper's number lies against the interval at the verdict's level (``claims.against_paper``)
AGAINST_PAPER = {"smaller": "smaller than the paper's", "larger": "larger than the paper's",
                 "cannot tell": "too small to decide (the interval holds 0 and the paper's number)",
                 "consistent": "the paper's number inside the interval"}


def join(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
