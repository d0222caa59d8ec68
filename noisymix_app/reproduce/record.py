"""A summary read back (issue 64, goal 1): its per-seed values (``values_of``), their digest (``values_digest``),
the check that it is whole and as written (``check_whole``) and the hashes of the runs it was made from
(``run_hashes``).  Read by the summary, the pooling and the README's writer alike; it imports none of them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from noisymix_app.reproduce.claims import shift_values
from noisymix_infra.stats import Seeds

__all__ = ["check_whole", "run_hashes", "values_digest", "values_of"]


def values_of(record: dict) -> dict[str, dict[str, dict[int, float]]]:
    """The per-seed values of a summary read back: each table cell's values by its seeds (a summary made
    before the cells named them: by the plan's seeds where every seed is there), as ``Seeds`` with the
    resolution the cell recorded, and the calibration-under-shift metrics from its per-severity record."""
    seeds = list((record.get("plan") or {}).get("seeds") or [])
    values: dict[str, dict[str, dict[int, float]]] = {}
    for method, row in (record.get("table") or {}).items():
        for metric, cell in row.items():
            keys = cell.get("seeds") or (seeds if len(cell.get("values") or []) == len(seeds) else None)
            if keys and len(keys) == len(cell.get("values") or []):
                values.setdefault(method, {})[metric] = Seeds(zip(keys, cell["values"], strict=True),
                                                              step=cell.get("step"))
    for method, per in shift_values(record.get("calibration_under_shift")).items():
        values.setdefault(method, {}).update(per)
    return values


def values_digest(record: dict) -> str:
    """The sha256 of a summary's per-seed values as read back (``values_of``: the table and calibration under shift):
    what a re-render re-derives from, recorded at the first render and checked at every later one (issue 64)."""
    cells = {m: {k: sorted((str(seed), value) for seed, value in v.items()) for k, v in per.items()}
             for m, per in values_of(record).items()}  # as read back: a re-rendered record gives the same digest
    return hashlib.sha256(json.dumps(cells, sort_keys=True).encode()).hexdigest()


def check_whole(record: dict, where: str) -> None:
    """One line unless a summary read back is whole (issue 64, cause 1: a cell whose values and seeds differ in
    length was dropped without a word, a value edited was rendered): every cell's seeds and values of one length,
    the values finite numbers, the seeds distinct integers; its numbers those it was written with."""
    import math

    table = record.get("table")
    if not isinstance(table, dict) or not all(isinstance(row, dict) and all(isinstance(c, dict) for c in row.values())
                                              for row in table.values()):
        raise ValueError(f"{where}: its table is not an object of methods, each an object of cells: not re-rendered")
    for method, row in table.items():
        for metric, cell in row.items():
            seeds, values = cell.get("seeds"), cell.get("values")
            if not isinstance(seeds, list) or not isinstance(values, list) or len(seeds) != len(values) \
                    or len(set(map(str, seeds))) != len(seeds) or not all(isinstance(x, int) for x in seeds) \
                    or not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                               for v in values):
                raise ValueError(f"{where}: table.{method}.{metric} is not whole (seeds and values of one length, "
                                 "distinct integer seeds, finite values): not re-rendered")
    if record.get("digest") is not None and record["digest"] != values_digest(record):
        raise ValueError(f"{where}: its per-seed values are not those it was written with (digest differs): a "
                         "summary is re-rendered from its own numbers only")


def run_hashes(out: Path, plan: dict) -> dict[str, str | None]:
    """Per run of the plan, the sha256 of its weights (``final.pt``) and evaluation files together; None where the
    run has no weights."""
    hashes: dict[str, str | None] = {}
    for method in plan["methods"]:
        for seed in plan["seeds"]:
            run = Path(out) / "runs" / f"{method}-seed{seed}"
            if not (run / "final.pt").is_file():
                hashes[run.name] = None
                continue
            digest = hashlib.sha256((run / "final.pt").read_bytes())
            for path in sorted((run / "eval").glob("*.json")):
                digest.update(path.name.encode() + path.read_bytes())
            hashes[run.name] = digest.hexdigest()
    return hashes
