"""A sweep's table (``noisymix sweep``, ``DIR/table/<table>.{md,tex,json}``): the paper's tables the
sweep fills, ours beside the paper's (mean (min / max) over seeds, as the paper prints it), then our
own summary per (dataset, model); the JSON adds, per paper row and column, the per-seed values and
the std.  Every statistic is ``noisymix_figures.seed_stats.seed_stats``, the one used by every table.

``plan`` is a sweep plan (``noisymix_app.sweep.plan.Plan``), read for its ``table`` name, ``notes``,
the paper tables it fills (``comparisons``) and whether its runs are a small-scale ``analogue``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from noisymix_figures.paper import paper_values
from noisymix_figures.render import compare_table, ours_tables
from noisymix_figures.seed_stats import seed_stats
from noisymix_figures.table_defs import COMPARISONS, Comparison
from noisymix_infra.io import write_json, write_text

__all__ = ["comparison_record", "write_table"]


def write_table(out: str | Path, plan: Any) -> Path | None:
    """Regenerate ``DIR/table/<table>.{md,tex,json}`` from the evaluations found under ``DIR/runs``:
    the paper's tables this one fills (ours beside the paper's: mean (min / max) over seeds), then
    our own summary per (dataset, model); the JSON adds per-seed values and the std.  None when
    no run exists yet."""
    from noisymix_figures.results import collect
    from noisymix_infra.provenance import provenance

    out = Path(out)
    if not (out / "runs").is_dir():
        return None
    groups = collect(out / "runs").groups()
    folder = out / "table"
    tables = ours_tables(groups)
    record: dict = {"table": plan.table, "notes": list(plan.notes), "provenance": provenance(), "tables": {}}
    paper = paper_values()
    for label in plan.comparisons:
        comp = next((c for c in COMPARISONS if c.label == label and c.analogue == plan.analogue), None)
        if comp is None:
            continue
        tables.insert(len(record["tables"]), compare_table(comp, paper, groups))
        record["tables"][label] = comparison_record(comp, paper[comp.label], groups)
    text = "\n".join(t.markdown() for t in tables)
    notes = "".join(f"- {n}\n" for n in plan.notes)
    write_text(folder / f"{plan.table}.md", f"# {plan.table}\n\n{text}\n" + (f"\n## Notes\n\n{notes}" if notes else ""))
    write_text(folder / f"{plan.table}.tex", "\n".join(t.latex() for t in tables))
    write_json(folder / f"{plan.table}.json", record)
    return folder / f"{plan.table}.md"


def comparison_record(comp: Comparison, paper: dict, groups: dict) -> dict:
    """Per paper row and column: the paper's cell, our per-seed values, n, and ``seed_stats`` (mean,
    min, max, std with ddof 1) when a seed has a value."""
    rows: dict = {}
    for name, cells in paper["rows"]:
        method = comp.rows.get(name)
        row = rows[name] = {"method": method}
        for i, (dataset, model, metric) in enumerate(comp.columns):
            runs = groups.get((dataset, model, method), []) if method else []
            values = {str(r.config.get("seed")): v for r in runs if (v := metric(r)) is not None}
            stats = seed_stats(list(values.values()), std=True)
            column = paper["columns"][i] if i < len(paper["columns"]) else str(i)
            row[f"{dataset} {model} {column}"] = {
                "paper": cells[i] if i < len(cells) else None, "per_seed": values, "n": len(values), **(stats or {})}
    return rows
