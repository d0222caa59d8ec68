"""The difficulty-matched Digits-C per severity (issue 51, goal 3; issue 57, goal 4): the flags of a
severity that one strength per corruption pushes too far, and the rule the fit keeps them out with.

One strength per corruption matches only the mean drop over the five severities (``fit_c``), so a
severity can land at chance or at a clip of its rule while the mean is right.  The fit measures the five
severities' accuracies at every strength it evaluates (the fit's Baseline models on the digits' fit split)
and flags:

* ``chance``: accuracy at most ``CHANCE_FLOOR`` (15 %; ten classes: chance is 10 %);
* ``clip``: the strength rule's value clipped at that severity (the row no longer moves with the
  strength: ``strengthened`` gives the same row at 1.05 times the strength);
* ``backwards``: the accuracy rises from severity 1 to 5 by more than ``BACKWARDS_MARGIN`` (a row that
  runs backwards);

each said for the published rows too (strength 1), so the report can say whether a flag is the
analogue's or the published rows' own.  ``refusal`` is the fit's rule (issue 57): a strength that puts a
severity at chance or at a clip where the published rows do not is never chosen.  The record of each
corruption (``severities`` and ``flags`` in ``digits_matched.json``) is what ``markdown`` shows.
"""

from __future__ import annotations

from fullscale.corruptions.registry import SPECS, strengthened

__all__ = ["BACKWARDS_MARGIN", "CHANCE_FLOOR", "clipped", "markdown", "refusal", "severity_flags"]

CHANCE_FLOOR = 15.0
#: how far severity 5 must lie above severity 1 to call a row backwards: two standard errors of a
#: difference of two accuracies near 94 % on 150 digits, averaged over 3 models (about 1 point each)
BACKWARDS_MARGIN = 2.0


def clipped(name: str, severity: int, strength: float) -> bool:
    """Whether ``name``'s rule is clipped at ``severity`` and ``strength``: a 5 % stronger strength gives
    the same row (the rule's bound holds the field; a corruption without a rule scales its difference
    from the image and never clips)."""
    row = SPECS[name].row("cifar", severity)
    return strengthened(name, row, strength) == strengthened(name, row, strength * 1.05) and strength != 1.0


def severity_flags(name: str, accuracies: list[float], strength: float) -> list[str]:
    """The flags of one corruption's five severities at ``strength``: ``chance`` or ``clip`` per severity
    (``"s5 chance"``), ``backwards`` when severity 5 is more accurate than severity 1 by more than
    ``BACKWARDS_MARGIN``."""
    flags = [f"s{s} chance" for s, a in enumerate(accuracies, 1) if a <= CHANCE_FLOOR]
    flags += [f"s{s} clip" for s in range(1, 6) if clipped(name, s, strength)]
    if accuracies[-1] > accuracies[0] + BACKWARDS_MARGIN:
        flags.append("backwards")
    return flags


def refusal(name: str, strength: float, accuracies: list[float], published: list[float]) -> str | None:
    """Why the fit may not choose ``strength`` for ``name`` (None: it may): a severity at chance, or at a
    clip of its rule, where the published rows (``published``: their five accuracies) are not."""
    for s, (a, p) in enumerate(zip(accuracies, published, strict=True), 1):
        if a <= CHANCE_FLOOR < p:
            return f"s{s} chance ({a:.1f} %)"
        if clipped(name, s, strength):
            return f"s{s} clip"
    return None


def markdown(record: dict) -> str:
    """The per-severity table of a Digits-C fit record (``digits_matched.json``): matched and published
    accuracies and each one's flags, and one sentence per flag of the matched set saying whether the
    published rows share it.  Empty for a record made before the fit measured severities."""
    fit = record.get("fit") or {}
    if not fit or not all(isinstance(e, dict) and "severities" in e for e in fit.values()):
        return ""
    images = (record.get("images") or {}).get("count", "?")
    clean = record.get("clean_accuracy") or []
    lines = [f"The fit's Baseline accuracy per severity (its {len(clean)} models, {images} held-out digits, clean "
             f"{sum(clean) / max(len(clean), 1):.1f} %): the difficulty-matched rows, then the published rows "
             f"(strength 1). Flags: *chance*, at most {CHANCE_FLOOR:.0f} %; *clip*, the strength rule held at its "
             f"bound; *backwards*, severity 5 above severity 1 by more than {BACKWARDS_MARGIN:.0f} points. The fit "
             "never chooses a strength that puts a severity at chance or at a clip where the published rows are not.",
             "", "| corruption | strength | matched s1–s5 | flags | published s1–s5 | flags |",
             "|---|---:|---|---|---|---|"]
    notes = []
    for name, e in fit.items():
        m, p = e["severities"]["matched"], e["severities"]["published"]
        fm, fp = e["flags"]["matched"], e["flags"]["published"]
        lines.append(f"| {name} | {e['strength']:.3g} | {' / '.join(f'{a:.0f}' for a in m)} | {', '.join(fm) or '—'} | "
                     f"{' / '.join(f'{a:.0f}' for a in p)} | {', '.join(fp) or '—'} |")
        for flag in fm:
            kind = flag.split()[-1]
            shared = any(f.split()[-1] == kind for f in fp)
            notes.append(f"{name} {flag}: " + ("the published rows do so too" if shared else
                                               "the analogue's own (the published rows do not)"))
    if notes:
        lines += ["", "Flags of the matched set: " + "; ".join(notes) + "."]
    return "\n".join(lines) + "\n"
