"""Every labelled table and figure of the paper: what `noisymix figures` writes for it, where our
numbers come from, and, where these results do not fill it, what filling it takes (data or hardware).

``LABELS`` holds one entry per ``\\label{tab:...}`` / ``\\label{fig:...}`` of the paper's source, each
registered beside its generator (``noisymix_figures.registry``; tests/figures/test_label_coverage.py
walks the LaTeX and holds the two lists equal, tests/figures/test_registry.py runs every generator); the report's
coverage section (``coverage_section``) is one line per label, decided from the tables and the runs
actually found, never from what a run *should* have produced.
"""

from __future__ import annotations

from pathlib import Path

from noisymix_figures.registry import Coverage, has_suite, labels
from noisymix_figures.render import TRANSFER_LABEL, Table
from noisymix_figures.results import Results

__all__ = ["LABELS", "Coverage", "coverage_section", "label_status"]

#: every registered label in the report's order (``noisymix_figures.registry``: each is registered
#: beside its generator, in ``noisymix_figures.tables`` or ``noisymix_figures.plots``)
LABELS: dict[str, Coverage] = labels()


def _filled_table(tables: list[Table], names: tuple[str, ...]) -> str | None:
    """Which rows of the named tables hold a number of ours, as a phrase; None when none does."""
    rows = sorted({row for t in tables if t.name in names for row, cells in t.numbers.items()
                   if any(c.get("ours") for c in cells.values() if isinstance(c, dict))})
    return f"{len(rows)} row(s): {', '.join(rows)}" if rows else None


def label_status(entry: Coverage, results: Results, tables: list[Table], out: Path) -> tuple[bool, str]:
    """(filled from runs, what to say): for a table, the rows holding our numbers; for a figure,
    the runs it draws; otherwise what filling it takes."""
    label = entry.label
    if label.startswith("tab:"):
        names = tuple(Path(f).stem for f in entry.files)
        main = _filled_table(tables, names[:1])
        if main:
            return True, f"ours filled: {main}"
        analogue = _filled_table(tables, names[1:]) if label == "tab:results_cifar10" else None
        extra = f" (only its small-scale Digits analogue is filled: {analogue})" if analogue else ""
        frozen = _filled_table(tables, names[1:]) if label == TRANSFER_LABEL else None
        if frozen:
            return True, f"ours filled only in the fixed-feature variant: {frozen}"
        return False, f"not filled from these results{extra}; needs {entry.needs}"
    drawn = any((out / f).is_file() for f in entry.files)
    found = entry.found(results, drawn) if entry.found is not None else []
    if found and drawn:
        return True, f"ours drawn: {', '.join(found)}"
    if found:
        return False, f"not drawn although {', '.join(found[:3])} exist(s): see the warnings below"
    how = "drawn with the paper's values only" if drawn else "not drawn"
    analogue = has_suite(results, ("digits",), "{}-c") if label == "fig:robust10vs100" else []
    extra = f" (the small-scale Digits analogue is drawn: {len(analogue)} cell(s))" if analogue and drawn else ""
    return False, f"{how}{extra}; ours needs {entry.needs}"


def coverage_section(results: Results, tables: list[Table], out: Path) -> list[str]:
    """REPORT.md's label-by-label account of the paper (``LABELS``)."""
    lines = ["## The paper, label by label", "",
             "Every labelled table and figure of the paper: what this report wrote for it, where our numbers come "
             "from, and whether these results fill them; where they do not, what it takes (data or hardware).", "",
             "| label | written | ours from | status |", "|---|---|---|---|"]
    for entry in LABELS.values():
        filled, status = label_status(entry, results, tables, out)
        written = ", ".join(f"`{f}`" for f in entry.files if (out / f).is_file()) or "nothing"
        lines.append(f"| `{entry.label}` | {written} | {entry.ours} | {'**filled** — ' if filled else ''}{status} |")
    return [*lines, ""]
