"""The resolution of an evaluation's summary numbers: the smallest change each can show, read from
the counts its record keeps (issue 54, root cause 4).

An accuracy on n test images moves in steps of 1/n; the mean accuracy over K (corruption,
severity) cells of n images each in steps of 1/(K n); a flip probability, the mean over P
perturbations of each one's mean over m sequences of its f - 1 frame pairs, in steps of
1/(P m (f - 1)).  ``noisymix_infra.stats.paired`` refuses a verdict from a paired spread below
that step.  Where cells differ in size the finest step is taken (1 / (K max n)): the smallest
change any one image can make.  Calibration errors, confidence gaps and temperatures are
continuous: None.
"""

from __future__ import annotations

from fullscale.vocabulary import CATEGORIES

__all__ = ["summary_step"]


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _cells_step(results: dict, names: list[str]) -> float | None:
    """1 / (cells x largest n) over the five severities of ``names`` in a -C record's results."""
    counts = []
    for name in names:
        entry = results.get(name)
        if not isinstance(entry, dict):
            return None
        for severity in range(1, 6):
            cell = entry.get(str(severity))
            n = _count(cell.get("n")) if isinstance(cell, dict) else None
            if n is None:
                return None
            counts.append(n)
    return 1.0 / (len(counts) * max(counts)) if counts else None


def _flip_step(record: dict) -> float | None:
    """1 / (perturbations x largest m (f - 1)) over the perturbations of the record's mean."""
    results, summary = record.get("results") or {}, record.get("summary") or {}
    others = summary.get("other_perturbations") or {}
    pairs = []
    for name, entry in results.items():
        if name in others:
            continue
        m = _count(entry.get("n_sequences")) if isinstance(entry, dict) else None
        f = _count(entry.get("frames")) if isinstance(entry, dict) else None
        if m is None or f is None or f < 2:
            return None
        pairs.append(m * (f - 1))
    return 1.0 / (len(pairs) * max(pairs)) if pairs else None


def summary_step(record: dict, key: tuple[str, ...]) -> float | None:
    """The step (a fraction, as the record's numbers) of ``record["summary"]`` at ``key``: its
    accuracy, mean accuracy, a category's mean accuracy or mean flip probability; None for a
    continuous number or a record without the counts."""
    if not isinstance(record, dict):
        return None
    results, summary = record.get("results") or {}, record.get("summary") or {}
    if not isinstance(results, dict) or not isinstance(summary, dict):
        return None
    if key == ("accuracy",):  # clean / calibration: one set of n images
        counts = [_count(e.get("n")) for e in results.values() if isinstance(e, dict)]
        return 1.0 / max(counts) if counts and None not in counts else None
    per = summary.get("per_corruption") or {}
    if key == ("mean_accuracy",):
        return _cells_step(results, list(per))
    if len(key) == 2 and key[0] == "per_category" and key[1] in CATEGORIES:
        return _cells_step(results, [c for c in CATEGORIES[key[1]] if c in per])
    if key == ("mean_flip_probability",):
        return _flip_step(record)
    return None
