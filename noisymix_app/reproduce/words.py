"""The words every generated report shares (issues 52, 57): the verdicts and their one gloss, the marks,
method names as the paper writes them, and numbers as the reports print them.  Imported by the claims,
the opening, the summary and the analogue's report alike, so they say the same thing the same way; it
imports nothing of theirs."""

from __future__ import annotations

from fullscale.training.methods import METHODS

__all__ = ["LABELS", "MARKS", "VERDICT_WORDS", "interval_text", "join", "label", "signed"]

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


def join(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
