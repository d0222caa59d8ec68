"""The paper's printed values (``paper_values.json``) and the claims the report decides
(``paper_claims.json``): loading them, reading a cell, the numbers a row implies but the paper does not
print (a mean of its columns, mCE), the footnotes of the paper's contradictions
(``noisymix_figures.consistency``), and the one home of the paper's numbers that the analogue and the
report read (issue 57, goal 9): each method's CIFAR-10 columns (``method_columns``), the Baseline's drop per
corruption and flip rate per perturbation (``baseline_drops``, ``baseline_flips``), the claims
(``paper_claims``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fullscale.vocabulary import ALEXNET_ERR, CORRUPTIONS, METHOD_ROWS, P_COLUMNS
from noisymix_figures.consistency import findings_for

__all__ = ["CLAIM_FIELDS", "baseline_drops", "baseline_flips", "footnotes", "method_columns", "not_testable",
           "paper_claims",
           "paper_mce", "paper_mean", "paper_number", "paper_text", "paper_values", "row_of"]

_ROW_OF = {method: row for row, method in METHOD_ROWS.items() if method}


@functools.lru_cache(maxsize=1)
def _values_text() -> str:
    return (Path(__file__).with_name("paper_values.json")).read_text()


def paper_values() -> dict:
    return json.loads(_values_text())


def row_of(table: dict, label: str) -> list | None:
    """A table's row of ``label``: by its name, or a name that starts with it ("NoisyMix" for "NoisyMix
    (ours)", "Baseline" for "Baseline ResNet-50"); None where the table has no such row."""
    rows = dict(table["rows"])
    return rows.get(label) or next((v for k, v in rows.items() if k.startswith(label + " ")), None)


def method_columns(methods: tuple[str, ...] | list[str]) -> dict[str, dict]:
    """Per method, the paper's numbers the analogue and the report hold ours against, in %: CIFAR-10 clean and
    CIFAR-10-C mean accuracy (``tab:results_cifar10``, ResNet-18), the 15 per-corruption accuracies
    (``tab:results_cifar10_c``), the ten flip probabilities and their mean, mFR (``tab:results_cifar_p``), and
    ImageNet-R's RMS calibration error and AURRA (``tab:results_imagenet_r_calibration``; None for a method
    that table lacks, NFM)."""
    values = paper_values()
    out = {}
    for method in methods:
        row = _ROW_OF[method]
        main = row_of(values["tab:results_cifar10"], row)
        per_c = row_of(values["tab:results_cifar10_c"], row)
        per_p = row_of(values["tab:results_cifar_p"], row)
        calibration = row_of(values["tab:results_imagenet_r_calibration"], row)
        out[method] = {
            "row": row,
            "clean": float(paper_number(main[0])),
            "corrupted": float(paper_number(main[1])),
            "per_corruption": {c: float(paper_number(v)) for c, v in zip(CORRUPTIONS, per_c, strict=True)},
            "per_perturbation": {p: float(paper_number(v)) for p, v in zip(P_COLUMNS, per_p[:-1], strict=True)},
            "mfr": float(paper_number(per_p[-1])),
            "rms_calibration_error": None if calibration is None else float(calibration[0]),
            "aurra": None if calibration is None else float(calibration[1]),
        }
    return out


def baseline_drops() -> tuple[float, dict[str, float]]:
    """(the paper's CIFAR-10 Baseline clean accuracy, its drop per corruption on CIFAR-10-C), in points: what
    the difficulty-matched Digits-C is fitted to (``noisymix_app.analogue.fit_c``)."""
    base = method_columns(("baseline",))["baseline"]
    return base["clean"], {c: round(base["clean"] - a, 4) for c, a in base["per_corruption"].items()}


def baseline_flips() -> dict[str, float]:
    """The paper's Baseline flip probability per perturbation on CIFAR-10-P, %: what the difficulty-matched
    Digits-P is fitted to (``noisymix_app.analogue.fit_p``)."""
    return method_columns(("baseline",))["baseline"]["per_perturbation"]


#: what every entry of paper_claims.json states (``paper_claims`` checks them; the module doc of
#: noisymix_app.reproduce.claims says how they are decided)
CLAIM_FIELDS = ("id", "family", "role", "statement", "quote", "where", "table", "column", "rows", "metric", "better",
                "paper_metric", "setting", "matching", "methods", "paper")


@functools.lru_cache(maxsize=1)
def _claims_text() -> str:
    return (Path(__file__).with_name("paper_claims.json")).read_text()


def paper_claims(family: str | None = None) -> list[dict]:
    """The paper's claims the report decides (``paper_claims.json``; issue 57, goal 1), each a copy: its quote,
    the table cells its number is read from, our metric, the paper's setting; only ``family``'s (``main``:
    the main job's Holm family, ``eight-method``: the analogue-methods plan's) when given.  A malformed entry
    is one ``ValueError`` naming it."""
    claims = json.loads(_claims_text())["claims"]
    for entry in claims:
        missing = [f for f in CLAIM_FIELDS if f not in entry]
        if missing:
            raise ValueError(f"figures/paper_claims.json: claim {entry.get('id', '?')!r} lacks {', '.join(missing)}")
        if entry["better"] not in ("higher", "lower") or entry["role"] not in ("primary", "secondary"):
            raise ValueError(f"figures/paper_claims.json: claim {entry['id']!r}: better must be higher or lower, "
                             "role primary or secondary")
    return [dict(c) for c in claims if family is None or c["family"] == family]


def not_testable() -> list[dict]:
    """The paper's explicit comparative sentences the report does not decide, each with the reason
    (``paper_claims.json``'s ``not_testable``; issue 63, goal 4)."""
    return [dict(e) for e in json.loads(_claims_text()).get("not_testable", [])]


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
