"""The paper's printed values (``paper_values.json``): loading them, reading a cell, the numbers a
row implies but the paper does not print (a mean of its columns, mCE), and the footnotes of the
paper's contradictions (``noisymix_figures.consistency``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fullscale.vocabulary import ALEXNET_ERR, CORRUPTIONS
from noisymix_figures.consistency import findings_for

__all__ = ["footnotes", "paper_mce", "paper_mean", "paper_number", "paper_text", "paper_values"]


def paper_values() -> dict:
    return json.loads((Path(__file__).with_name("paper_values.json")).read_text())


def paper_number(cell) -> float | None:
    if isinstance(cell, dict):
        return cell.get("mean", cell.get("value"))
    if isinstance(cell, list):
        return cell[0]
    return cell


def paper_text(cell) -> str:
    if cell is None:
        return "—"
    if isinstance(cell, dict) and "mean" in cell:
        return f"{cell['mean']:.1f} ({cell['min']:.1f} / {cell['max']:.1f})"
    if isinstance(cell, dict):
        return f"{cell['value']:.1f} ({cell['paren']:.1f})"
    if isinstance(cell, list):
        return " / ".join(f"{v:.1f}" for v in cell)
    return f"{cell:.1f}" if round(cell, 1) == cell else f"{cell:g}"  # 79.0 as the paper prints it, not 79


def paper_mean(columns: tuple[int, ...]) -> Callable[[list], float | None]:
    """The mean of a paper row's ``columns``, as the paper would print it beside them."""
    def compute(cells: list) -> float | None:
        values = [paper_number(cells[i]) for i in columns if i < len(cells)]
        return None if len(values) < len(columns) or None in values else float(np.mean(values))
    return compute


def paper_mce(cells: list) -> float | None:
    """mCE (%) of a paper row of 15 ImageNet-C accuracies: mean_c (100 - acc_c) / (100 E^AlexNet_c),
    ``fullscale.metrics.mean_corruption_error`` on accuracies averaged over severities."""
    accs = [paper_number(c) for c in cells[:len(CORRUPTIONS)]]
    if len(accs) < len(CORRUPTIONS) or None in accs:
        return None
    return float(100 * np.mean([(100 - a) / (100 * ALEXNET_ERR[c]) for a, c in zip(accs, CORRUPTIONS, strict=True)]))


def footnotes(label: str, paper: dict) -> tuple[dict[str, str], list[str]]:
    """Row name -> its marks (" [1]", " [1, 3]") and the numbered notes of the paper's
    contradictions that concern ``label`` (``noisymix_figures.consistency``)."""
    marks: dict[str, list[int]] = {}
    notes = []
    for i, finding in enumerate(findings_for(label, paper), 1):
        notes.append(f"[{i}] {finding.text}")
        for row in finding.rows[label]:
            marks.setdefault(row, []).append(i)
    return {row: f" [{', '.join(map(str, ns))}]" for row, ns in marks.items()}, notes
