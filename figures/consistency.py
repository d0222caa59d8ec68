"""The paper against itself: its printed numbers checked by computation, for the tables' footnotes.

Every check recomputes a number the paper prints from other numbers it prints and reports the rows
where the two disagree by more than rounding can explain (each printed value is rounded to 0.1,
so a printed mean and a mean recomputed from rounded columns may differ by up to 0.05 + 0.05):

- two rows of one table that print the same numbers (at least three of them): one is a copy
  (tab:results_imagenet_c's Puzzle Mix row is its Adversarial Trained row);
- a printed mean against the mean of the row's columns (the mFR column of the -P tables:
  tab:results_imagenet_p's Stylized ImageNet prints 54.4, its columns average 41.6);
- a detail table's row means against the summary table's cell for the same row (the -C tables'
  15 corruptions against tab:results_cifar10 / tab:results_cifar100 / tab:results_imagenet, with
  and without noise; the -P flip rates against tab:results_imagenet's ImageNet-P column), and a
  row a detail table names differently from its summary, matched by its numbers;
- tab:ablation's rows against tab:results_cifar100's rows of the same method, and its
  "Robustness Gain" against its CIFAR-100-C column minus the Baseline row's;
- a "mean (min / max)" cell whose mean is outside its range.

Nothing here is a hard-coded list of the paper's errors: a corrected paper gives no findings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fullscale.vocabulary import ABLATION_ROWS, METHOD_ROWS

__all__ = ["ROUNDING", "Finding", "check_paper", "findings_for"]

#: the largest disagreement rounding explains: a printed value (+-0.05) against a mean of values
#: printed to 0.1 (+-0.05)
ROUNDING = 0.1 + 1e-9


@dataclass(frozen=True)
class Finding:
    """One contradiction: the tables it concerns, the rows it concerns in each, and what it is."""

    rows: dict[str, tuple[str, ...]]  # label -> the rows of that table
    text: str


def _number(cell) -> float | None:
    if isinstance(cell, dict):
        return cell.get("mean", cell.get("value"))
    return cell if isinstance(cell, int | float) else None


def _paren(cell) -> float | None:
    return cell.get("paren") if isinstance(cell, dict) else None


def _identical_rows(label: str, table: dict) -> list[Finding]:
    out, rows = [], table["rows"]
    for i, (a, cells_a) in enumerate(rows):
        numbers = [c for c in cells_a if c is not None]
        if len(numbers) < 3:  # one or two equal numbers can be a coincidence
            continue
        for b, cells_b in rows[i + 1:]:
            if cells_b == cells_a:
                shown = ", ".join(f"{_number(c):g}" for c in numbers[:4])
                out.append(Finding({label: (a, b)}, f"the rows {a!r} and {b!r} print the same {len(numbers)} numbers "
                                                    f"({shown}, ...): one of them is a copy of the other"))
    return out


def _min_max(label: str, table: dict) -> list[Finding]:
    out = []
    for name, cells in table["rows"]:
        for column, cell in zip(table["columns"], cells, strict=False):
            if isinstance(cell, dict) and "mean" in cell and not cell["min"] <= cell["mean"] <= cell["max"]:
                out.append(Finding({label: (name,)}, f"{name!r}, {column}: the mean {cell['mean']} is outside its "
                                                     f"printed range {cell['min']} / {cell['max']}"))
    return out


# label -> (index of the printed mean, indices of the columns it averages): the -P tables' mFR
PRINTED_MEANS: dict[str, tuple[int, tuple[int, ...]]] = {
    label: (10, tuple(range(10)))
    for label in ("tab:results_imagenet_p", "tab:results_cifar_p", "tab:results_cifar_p_wrs")}


def _printed_means(paper: dict) -> list[Finding]:
    out = []
    for label, (at, columns) in PRINTED_MEANS.items():
        table = paper.get(label)
        if table is None:
            continue
        for name, cells in table["rows"]:
            values = [_number(cells[i]) for i in columns]
            printed = _number(cells[at]) if at < len(cells) else None
            if printed is None or any(v is None for v in values):
                continue
            mean = float(np.mean(values))
            if abs(mean - printed) > ROUNDING:
                out.append(Finding({label: (name,)}, f"{name!r}: {table['columns'][at]} printed {printed:g}, the "
                                                     f"mean of its {len(values)} columns is {mean:.2f} (rounding "
                                                     "explains up to 0.1)"))
    return out


@dataclass(frozen=True)
class Relation:
    """A summary cell the paper computes from a detail table's row: the mean of ``columns``
    (``value``) or of ``no_noise`` (the cell's parenthesised value, when given)."""

    detail: str
    summary: str
    at: int  # the summary table's column
    columns: tuple[int, ...]
    no_noise: tuple[int, ...] = ()


_C15, _C12 = tuple(range(15)), tuple(range(3, 15))  # the 15 corruptions; without the three noises
RELATIONS: tuple[Relation, ...] = (
    Relation("tab:results_imagenet_c", "tab:results_imagenet", 1, _C15, _C12),
    Relation("tab:results_imagenet_p", "tab:results_imagenet", 3, tuple(range(10)), tuple(range(2, 10))),
    Relation("tab:results_cifar10_c", "tab:results_cifar10", 1, _C15),
    Relation("tab:results_cifar100_c", "tab:results_cifar10", 3, _C15),
    Relation("tab:results_wrs_cifar10_c", "tab:results_cifar100", 1, _C15),
    Relation("tab:results_wrs_cifar100_c", "tab:results_cifar100", 3, _C15),
)


def _relation_values(rel: Relation, cells: list) -> list[tuple[str, float, Callable]]:
    """(what, the mean recomputed from the detail row, how to read the summary cell)."""
    out = []
    for what, columns, read in (("mean", rel.columns, _number), ("mean without noise", rel.no_noise, _paren)):
        values = [_number(cells[i]) for i in columns if i < len(cells)]
        if columns and len(values) == len(columns) and None not in values:
            out.append((what, float(np.mean(values)), read))
    return out


def _relations(paper: dict) -> list[Finding]:
    out = []
    renamed: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}  # (row, summary) -> rows per label
    for rel in RELATIONS:
        if rel.detail not in paper or rel.summary not in paper:
            continue
        summary = dict(paper[rel.summary]["rows"])
        column = paper[rel.summary]["columns"][rel.at]
        detail_names = {name for name, _ in paper[rel.detail]["rows"]}
        for name, cells in paper[rel.detail]["rows"]:
            computed = _relation_values(rel, cells)
            if name not in summary:
                # a row named otherwise in the summary: the summary rows missing here whose cells match
                matches = [other for other, row in summary.items() if other not in detail_names and computed and all(
                    (p := read(row[rel.at])) is not None and abs(p - value) <= ROUNDING for _, value, read in computed)]
                rows = renamed.setdefault((name, rel.summary), {rel.summary: ()})
                rows[rel.detail] = (name,)
                if len(matches) == 1:
                    rows[rel.summary] = (matches[0],)
                continue
            for what, value, read in computed:
                printed = read(summary[name][rel.at])
                if printed is not None and abs(printed - value) > ROUNDING:
                    out.append(Finding({rel.detail: (name,), rel.summary: (name,)},
                                       f"{name!r}: the {what} of its {rel.detail} columns is {value:.2f}, but "
                                       f"{rel.summary} prints {printed:g} ({column}; rounding explains up to 0.1)"))
    for (name, summary_label), rows in renamed.items():
        details = " and ".join(label for label in rows if label != summary_label)
        match = rows[summary_label]
        where = (f"the means of its columns match that table's {match[0]!r} row: the two names seem to be one model"
                 if match else "no row there matches the means of its columns")
        out.append(Finding(rows, f"{name!r} ({details}) is not a row of {summary_label}; {where}"))
    return out


def _ablation(paper: dict) -> list[Finding]:
    """tab:ablation against itself (gain = CIFAR-100-C minus the Baseline row's) and against the
    tab:results_cifar100 rows of the same method (its CIFAR-100 and CIFAR-100-C columns)."""
    if "tab:ablation" not in paper:
        return []
    rows = dict(paper["tab:ablation"]["rows"])
    out = []
    base = rows.get("----")
    for name, cells in rows.items():
        if base is None or name == "----" or len(cells) < 3 or None in (cells[1], cells[2], base[1]):
            continue
        gain = cells[1] - base[1]
        if abs(gain - cells[2]) > ROUNDING:
            out.append(Finding({"tab:ablation": (name,)}, f"{name!r}: Robustness Gain printed {cells[2]:+g}, its "
                                                          f"CIFAR-100-C minus the Baseline row's is {gain:+.1f}"))
    if "tab:results_cifar100" not in paper:
        return out
    by_method = {m: n for n, m in METHOD_ROWS.items() if m}
    summary = dict(paper["tab:results_cifar100"]["rows"])
    for name, cells in rows.items():
        other = by_method.get(ABLATION_ROWS.get(name, ""))
        if other not in summary:
            continue
        for i, at in ((0, 2), (1, 3)):
            mine, theirs = _number(cells[i]), _number(summary[other][at])
            if mine is not None and theirs is not None and abs(mine - theirs) > ROUNDING:
                column = paper["tab:results_cifar100"]["columns"][at]
                out.append(Finding({"tab:ablation": (name,), "tab:results_cifar100": (other,)},
                                   f"{name!r} ({ABLATION_ROWS[name]}) prints {mine:g} for {column}; "
                                   f"tab:results_cifar100 prints {theirs:g} for the same method's row {other!r}"))
    return out


def check_paper(paper: dict) -> list[Finding]:
    """Every contradiction of the transcribed paper (``paper_values.json``) found by computation."""
    found = []
    for label, table in paper.items():
        found += _identical_rows(label, table) + _min_max(label, table)
    return found + _printed_means(paper) + _relations(paper) + _ablation(paper)


def findings_for(label: str, paper: dict) -> list[Finding]:
    """The findings that concern the table ``label``."""
    return [f for f in check_paper(paper) if label in f.rows]
