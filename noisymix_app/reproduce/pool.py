"""Every committed run of the laptop recipe, pooled per claim (issue 63, goal 1): one verdict per claim.

The main job's seeds (0-8), the eight-method plan's (10-19) and the central comparison's added seeds (20-39,
``docs/central-power.json``) are runs of one recipe on the same Digits-C and Digits-P: the same model, epochs,
batch, strengths and sets, only other seeds.  Before issue 63 the main job decided NoisyMix - AugMix on its 9
seeds and the analogue's report restated it, unadjusted, on its 5: two answers to one question.  Now a claim
is decided once, on every seed of its two methods that any committed run of the recipe holds.

The committed runs are the summaries under ``docs/pooled/`` (``python -m noisymix_app.reproduce.summary --out
DIR`` of each plan's folder, copied there): their per-seed values, read by ``values_of``.  A source is pooled
only where its recipe (``RECIPE_FREE`` aside) and its sets' identity are the summary's own; another set or
recipe is listed as not pooled, with the reason.  A (method, seed) in two places is refused in one line: no
seed counts twice.  A source of the summary's own plan is its own runs (a rerun), never pooled with them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from noisymix_app.reproduce.margins import made_commits
from noisymix_app.reproduce.record import values_of
from noisymix_infra.io import read_json_object
from noisymix_infra.stats import Seeds

__all__ = ["POOLED", "RECIPE_FREE", "pool", "recipe"]

POOLED = Path(__file__).resolve().parents[2] / "docs" / "pooled"
#: plan fields that say which runs a plan makes, not how a run is made: runs that differ only here pool
RECIPE_FREE = frozenset({"methods", "seeds", "perturbed_methods", "description", "theory_points", "theory_sympy",
                         "toy_seeds", "toy_epochs", "workers", "members"})


def recipe(plan: dict) -> dict:
    """The fields of a plan that make a run what it is."""
    return {k: v for k, v in sorted((plan or {}).items()) if k not in RECIPE_FREE}


def pool(values: dict, record: dict, folder: Path | None = None) -> tuple[dict, dict, dict | None]:
    """``values`` (method -> metric -> seed -> value, a summary's own) joined with every source under ``folder``
    of the same recipe and sets (module doc); returns the pooled values and what was pooled (``sources``: each
    file's name, plan, seeds, sha256 and commits; ``not_pooled``: the others and why; ``seeds`` per method) and the
    first pooled Baseline's out-of-sample fidelity profile (None without one)."""
    folder = POOLED if folder is None else folder
    pooled = {m: {k: Seeds(v, step=getattr(v, "step", None)) for k, v in per.items()} for m, per in values.items()}
    owner = {(m, s): "this run" for m, per in values.items() for v in per.values() for s in v}
    used, skipped, fresh = [], [], None
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        source = read_json_object(path, "a pooled summary of noisymix reproduce",
                                  {"plan": "object", "table": "object", "plan_name": "string"})
        why = ("its own plan's runs" if source["plan_name"] == record.get("plan_name")
               else "another recipe" if recipe(source["plan"]) != recipe(record.get("plan"))
               else "other sets" if not record.get("sets") or source.get("sets") != record.get("sets") else None)
        if why:
            skipped.append({"file": path.name, "plan": source["plan_name"], "why": why})
            continue
        for method, per in values_of(source).items():
            for metric, cell in per.items():
                step = getattr(cell, "step", None)  # calibration under shift: plain per-seed values, no grid
                into = pooled.setdefault(method, {}).setdefault(metric, Seeds(step=step))
                for seed, value in cell.items():
                    if seed in into:
                        raise ValueError(f"{path.name}: {method} seed {seed} ({metric}) is also in "
                                         f"{owner.get((method, seed), 'another pooled file')}: no seed counts twice")
                    into[seed] = value
                    owner[(method, seed)] = path.name
                if step is not None:
                    into.step = max(into.step or 0.0, step)
        used.append({"file": path.name, "plan": source["plan_name"], "seeds": source["plan"].get("seeds"),
                     "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                     "made_at": made_commits(source)})
        if fresh is None and "baseline" in source["plan"].get("methods", ()):
            fresh = source.get("fidelity")  # the Baseline's out-of-sample profile on seeds after the fits
    seeds = {m: sorted(per.get("corrupted", {})) for m, per in pooled.items() if per.get("corrupted")}
    return pooled, {"sources": used, "not_pooled": skipped, "seeds": seeds}, fresh
