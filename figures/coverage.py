"""Every labelled table and figure of the paper: what `noisymix figures` writes for it, where our
numbers come from, and, where these results do not fill it, what filling it takes (data or hardware).

``LABELS`` holds one entry per ``\\label{tab:...}`` / ``\\label{fig:...}`` of the paper's source, each
registered beside its generator (``noisymix_figures.registry``; tests/figures/test_label_coverage.py
walks the LaTeX and holds the two lists equal, tests/figures/test_registry.py runs every generator); the report's
coverage section (``coverage_section``) is one line per label, decided from the tables and the runs
actually found, never from what a run *should* have produced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from noisymix_figures.registry import Coverage, has_suite, labels, portable
from noisymix_figures.render import TRANSFER_LABEL, Table
from noisymix_figures.results import Results

__all__ = ["ANALOGUE_FIGURES", "LABELS", "Account", "Coverage", "account", "coverage_section", "label_status",
           "retitle"]

#: every registered label in the report's order (``noisymix_figures.registry``: each is registered
#: beside its generator, in ``noisymix_figures.tables`` or ``noisymix_figures.plots``)
LABELS: dict[str, Coverage] = labels()

#: figures of ours that draw no label of the paper themselves but its small-scale analogue: credited to
#: that label (issue 48: categories.png and the calibration figure were credited to none)
ANALOGUE_FIGURES: dict[str, tuple[str, ...]] = {
    # its panels: the paper's ImageNet-C and ResNet-18 CIFAR-10-C (tab:results_cifar10_c, not the WRN rows of
    # fig:cifar10_wrs_type since issue 52), then ours
    "fig:imagenet_type": ("categories.png",),
    "tab:results_imagenet_r_calibration": ("calibration_by_severity.png", "calibration_by_severity.csv"),
}


@dataclass(frozen=True)
class Account:
    """One label as these results fill it: the one source of the label-by-label table's line and of
    the headings of the label's tables (``retitle``), so that the two cannot disagree (issue 48)."""

    label: str
    filled: bool
    status: str  # the table's status cell
    written: tuple[str, ...]  # the files written for it (analogues credited to it included)
    headings: dict[str, str] = field(default_factory=dict)  # per table name: what fills it, for its heading


def _rows_with_ours(table: Table) -> list[str]:
    return [row for row, cells in table.numbers.items()
            if any(c.get("ours") for c in cells.values() if isinstance(c, dict))]


def _filled_rows(tables: list[Table]) -> str | None:
    """Which rows of ``tables`` hold a number of ours, as a phrase; None when none does."""
    rows = sorted({row for t in tables for row in _rows_with_ours(t)})
    return f"{len(rows)} row(s): {', '.join(rows)}" if rows else None


def _heading(table: Table) -> str:
    """How many of a table's rows these results fill, for its heading."""
    rows = _rows_with_ours(table)
    if not rows:
        return "no row filled by these results"
    return f"{len(rows)} of {len(table.numbers)} rows filled by these results ({', '.join(rows)})"


def account(entry: Coverage, results: Results, tables: list[Table], out: Path) -> Account:
    """What these results make of one label: filled or not, its status line, the files written for
    it and each of its tables' heading note.  A table is filled by its own rows of ours; a figure by
    the runs it draws; a label with only a small-scale analogue filled says so, and is not filled."""
    label = entry.label
    credited = ANALOGUE_FIGURES.get(label, ())
    mine = [t for t in tables if t.label == label]
    extra_files = tuple(f"tables/{portable(t.name)}.md" for t in mine) if label.startswith("fig:") else ()
    written = tuple(f for f in (*entry.files, *extra_files, *credited) if (out / f).is_file())
    headings = {t.name: _heading(t) for t in mine if t.numbers}
    analogue_tables = [t for t in mine if t.analogue]
    analogue_rows = _filled_rows(analogue_tables)
    drawn_analogues = [f for f in credited if f.endswith(".png") and (out / f).is_file()]
    if label.startswith("tab:"):
        main = _filled_rows([t for t in mine if not t.analogue and not t.name.endswith("_frozen")])
        if main:
            return Account(label, True, f"ours filled: {main}", written, headings)
        frozen = _filled_rows([t for t in mine if t.name.endswith("_frozen")]) if label == TRANSFER_LABEL else None
        if frozen:
            return Account(label, True, f"ours filled only in the fixed-feature variant: {frozen}", written, headings)
        extra = f" (only its small-scale analogue is filled: {analogue_rows})" if analogue_rows else ""
        if drawn_analogues:
            extra += f" (its small-scale analogue is drawn: {', '.join(f'`{f}`' for f in drawn_analogues)})"
        return Account(label, False, f"not filled from these results{extra}; needs {entry.needs}", written, headings)
    drawn = any((out / f).is_file() for f in entry.files)
    found = entry.found(results, drawn) if entry.found is not None else []
    if found and drawn:
        status = f"ours drawn: {', '.join(found)}"
        # the paper's values of the figure, printed as a table: headed with what draws ours (not "no runs")
        headings.update({t.name: f"ours: {', '.join(f'`{f}`' for f in entry.files)}" for t in mine})
        return Account(label, True, status, written, headings)
    if found:
        return Account(label, False, f"not drawn although {', '.join(found[:3])} exist(s): see the warnings below",
                       written, headings)
    how = "drawn with the paper's values only" if drawn else "not drawn"
    analogue = has_suite(results, ("digits",), "{}-c") if label == "fig:robust10vs100" else []
    extra = f" (the small-scale Digits analogue is drawn: {len(analogue)} cell(s))" if analogue and drawn else ""
    if drawn_analogues:
        extra += f" (its small-scale analogue is drawn: {', '.join(f'`{f}`' for f in drawn_analogues)})"
    return Account(label, False, f"{how}{extra}; ours needs {entry.needs}", written, headings)


def label_status(entry: Coverage, results: Results, tables: list[Table], out: Path) -> tuple[bool, str]:
    """(filled from runs, what to say), from the label's ``account``."""
    found = account(entry, results, tables, out)
    return found.filled, found.status


def retitle(tables: list[Table], results: Results, out: Path) -> None:
    """Each table's heading from its label's ``account``: how many of its rows these results fill (an
    analogue's heading named `--plan ablation` while the main job's runs filled 4 of its 10 rows), and a
    figure's paper values headed with what draws ours (not "no matching runs" beside a filled label)."""
    for entry in LABELS.values():
        notes = account(entry, results, tables, out).headings
        for table in tables:
            if table.name not in notes:
                continue
            if table.title.endswith("(paper values; no matching runs of ours)"):
                table.title = table.title.replace("no matching runs of ours", notes[table.name])
            elif table.analogue:
                table.title = f"{table.title} — {notes[table.name]}"


def coverage_section(results: Results, tables: list[Table], out: Path) -> list[str]:
    """REPORT.md's label-by-label account of the paper (``LABELS``), one line per label (``account``)."""
    lines = ["## The paper, label by label", "",
             "Every labelled table and figure of the paper: what this report wrote for it, where our numbers come "
             "from, and whether these results fill them; where they do not, what it takes (data or hardware).", "",
             "| label | written | ours from | status |", "|---|---|---|---|"]
    for entry in LABELS.values():
        found = account(entry, results, tables, out)
        written = ", ".join(f"`{f}`" for f in found.written) or "nothing"
        lines.append(f"| `{entry.label}` | {written} | {entry.ours} | "
                     f"{'**filled** — ' if found.filled else ''}{found.status} |")
    return [*lines, ""]
