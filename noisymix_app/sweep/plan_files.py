"""``DIR/sweep/plan.json``, written before any run starts and read back by ``sweep status`` and
each SLURM job, and the check of a plan's inputs (``check_inputs``) before anything runs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fullscale.data.registry import BUILT_IN
from noisymix_app.sweep.plan import EvalSpec, Plan, RunSpec
from noisymix_app.sweep.state import sweep_dir
from noisymix_infra.io import write_json

__all__ = ["check_inputs", "plan_dict", "plan_from_dict", "write_plan"]


def plan_dict(plan: Plan) -> dict:
    return {"table": plan.table, "runs": [r.as_dict() for r in plan.runs], "notes": list(plan.notes),
            "comparisons": list(plan.comparisons), "analogue": plan.analogue}


def plan_from_dict(data: object, where: str = "sweep/plan.json") -> Plan:
    """The plan a sweep wrote; a malformed one (edited, truncated, of another program) is a
    one-line ``ValueError`` naming the first bad field, not a ``TypeError`` later (issue 32)."""

    def bad(what: str) -> ValueError:
        return ValueError(f"{where} is not a sweep plan: {what}")

    def strings(value: object, what: str) -> tuple[str, ...]:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise bad(f"{what} must be a list of strings")
        return tuple(value)

    def optional_path(value: object, what: str) -> str | None:
        if value is not None and not isinstance(value, str):
            raise bad(f"{what} must be a path or null")
        return value

    # lists in the file; tuples when a RunJob hands the plan over unpickled (``plan_dict``)
    if not isinstance(data, dict) or not isinstance(data.get("table"), str) \
            or not isinstance(data.get("runs"), list | tuple):
        raise bad("it needs a 'table' name and a 'runs' list")
    runs = []
    fields = {f.name for f in dataclasses.fields(RunSpec)}
    for i, run in enumerate(data["runs"]):
        what = f"runs[{i}]"
        if not isinstance(run, dict) or set(run) - fields or not {"name", "preset", "seed"} <= set(run):
            raise bad(f"{what} must be an object with name, preset, seed (and only RunSpec's fields)")
        name = run["name"]
        if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name:
            raise bad(f"{what}.name must be a folder name")
        if not isinstance(run["preset"], str):
            raise bad(f"{what}.preset must be a string")
        for key, low in (("seed", 0), ("gpus", 1)):
            value = run.get(key, low)
            if type(value) is not int or value < low:
                raise bad(f"{what}.{key} must be an integer >= {low}")
        evals = run.get("evals", [])
        if not isinstance(evals, list | tuple):
            raise bad(f"{what}.evals must be a list")
        specs = []
        for j, ev in enumerate(evals):
            if not isinstance(ev, dict) or set(ev) - {"suite", "data_root", "partial"} \
                    or not isinstance(ev.get("suite"), str) or not isinstance(ev.get("partial", False), bool):
                raise bad(f"{what}.evals[{j}] must be an object with a suite name (data_root, partial)")
            specs.append(EvalSpec(ev["suite"], optional_path(ev.get("data_root"), f"{what}.evals[{j}].data_root"),
                                  ev.get("partial", False)))
        runs.append(RunSpec(name, run["preset"], run["seed"], strings(run.get("overrides", []), f"{what}.overrides"),
                            tuple(specs), run.get("gpus", 1), strings(run.get("rows", []), f"{what}.rows"),
                            optional_path(run.get("data_root"), f"{what}.data_root")))
    if not isinstance(data.get("analogue", False), bool):
        raise bad("'analogue' must be true or false")
    return Plan(data["table"], tuple(runs), strings(data.get("notes", []), "notes"),
                strings(data.get("comparisons", []), "comparisons"), data.get("analogue", False))


def check_inputs(plan: Plan) -> list[str]:
    """What the plan reads and cannot find, one line each, checked before any run starts: the
    training data of a data set that needs a folder, a transfer run's source weights, the data
    folder of an evaluation (and that it is a -C / -P set where the suite needs ours).  Without
    it a CIFAR sweep without --data-root started 16 runs that failed one by one (issue 32)."""
    from noisymix_infra.folder_kind import require_kind
    from noisymix_infra.io import printable

    problems: list[str] = []

    def add(line: str) -> None:
        if line not in problems:
            problems.append(line)

    for spec in plan.runs:
        try:
            cfg = spec.config()
        except (ValueError, TypeError, KeyError, OSError) as error:
            add(f"run {spec.name}: {str(error).splitlines()[0] if str(error) else type(error).__name__}")
            continue
        if cfg.data.dataset not in BUILT_IN:  # the digits come with scikit-learn; every other data set is a folder
            if not spec.data_root:
                dataset = cfg.data.dataset
                add(f"{dataset} runs need --data-root DIR (the {dataset} data; nothing is downloaded)")
            elif not Path(spec.data_root).is_dir():
                add(f"--data-root {printable(spec.data_root)}: no such folder")
            elif cfg.data.dataset in ("cifar10", "cifar100"):  # a folder without the batches failed every run too
                from fullscale.data.cifar import batches_folder as cifar_folder

                try:
                    cifar_folder(Path(spec.data_root), cfg.data.dataset)
                except FileNotFoundError as error:
                    add(f"--data-root: {error}")
        source = cfg.transfer.source_weights
        if source and not Path(source).is_file():
            add(f"--source {printable(str(source))}: no such file (run {spec.name})")
        for ev in spec.evals:
            if ev.data_root is None:
                continue
            option = f"--suite-root {ev.suite}={printable(ev.data_root)}"
            if not Path(ev.data_root).is_dir():
                add(f"{option}: no such folder")
                continue
            letter = ev.suite.rsplit("-", 1)[-1]
            if letter in ("c", "p"):
                try:
                    require_kind(ev.data_root, f"{letter}-set", option)
                except ValueError as error:
                    add(str(error))
    return problems



def write_plan(out: Path, plan: Plan) -> None:
    from noisymix_infra.provenance import provenance

    write_json(sweep_dir(out) / "plan.json", {**plan_dict(plan), "provenance": provenance()})
