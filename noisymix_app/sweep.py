"""``noisymix sweep TABLE --seeds N --out DIR``: every run of a paper table, trained, evaluated, tabulated.

``noisymix_app.sweep_plan`` expands the table into runs (preset x seed; rows equal in config share one
run).  Each run is one call of ``execute_run``: ``fullscale.train.train(cfg, RUN, resume=True)``
unless ``RUN/final.pt`` exists, then ``fullscale.cli_evaluate.evaluate`` per suite unless its
JSON is complete for that ``final.pt``.  So the same command, run again, skips finished runs,
resumes killed ones from ``checkpoint.pt`` (the trainer's exact resume) and evaluates what is
missing.  Before any run starts, the plan's inputs are checked (``check_inputs``: the training data,
a transfer run's source weights, the evaluations' -C/-P folders), and ``DIR`` is claimed as a sweep
folder (``infra.folder_kind``).  A finished transfer run whose source weights changed since
(by the sha256 its ``config.json`` recorded) is *stale*: reported, neither retrained nor counted done.
Launchers:

* ``local``: a queue over the visible GPUs (``--runs-per-gpu`` runs share one) or, without a GPU,
  ``--workers`` CPU processes (``--workers 0``: one run after another in this process); a
  multi-GPU run gets one process per GPU with the ``torch.distributed`` env:// variables (as
  torchrun would set them; gloo on the CPU); a run
  that crashes is retried ``--retries`` times, one that fails deterministically (a non-finite
  loss, ``fullscale.train.NonFiniteLoss``; a config error) is reported and never retried;
* ``slurm``: submitit (``pip install noisymix[slurm]``): one array job for the single-GPU runs,
  one job per multi-GPU run with one task per GPU, whose distributed environment comes from
  ``submitit.helpers.TorchDistributedEnvironment`` (no torchrun inside SLURM).  On preemption
  or the time limit submitit calls ``RunJob.checkpoint``, which requeues the same job; it
  resumes from ``checkpoint.pt``.

Bookkeeping lives in ``DIR/sweep/``: ``plan.json``, ``state/<run>.json`` (state, attempts,
error), ``logs/<run>.log`` (local launcher), ``slurm/`` (submitit's files) and
``locks/<run>/.lock``.  A run is worked on by one process at a time: ``infra.io.directory_lock``,
an ``fcntl.flock``, which Linux's NFS client (>= 2.6.12) turns into an NFS byte-range lock that
the server arbitrates (NLM on NFSv3, built into NFSv4), so it holds across the nodes of a cluster,
and the kernel drops it when its process dies (no stale lock after ``kill -9`` or a node's
preemption).  It does NOT hold across nodes on mounts with ``nolock`` / ``local_lock=all``; the
state file records the holder's host and pid so ``sweep status`` shows who works on a run.

The table (``DIR/table/``) is regenerated whenever a run finishes: mean (min / max) over seeds as
the paper prints it, beside the paper's values (``noisymix_figures.tables``); the JSON adds the std and
the per-seed values.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import math
import os
import socket
import sys
import time
import traceback
from pathlib import Path

from fullscale.data.registry import BUILT_IN
from infra.io import directory_lock, read_json, write_json, write_text
from infra.progress import progress
from noisymix_app.sweep_plan import ANALOGUE, TABLES, EvalSpec, Plan, RunSpec, build_plan, config_identity

__all__ = ["RunFailed", "RunJob", "add_arguments", "execute_run", "run", "run_local", "run_record", "run_state",
           "slurm_parameters", "submit_slurm", "write_table"]

#: exceptions that fail again if retried: a diverged run, bad config or input
_DETERMINISTIC = ("NonFiniteLoss", "ValueError", "TypeError", "KeyError", "FileNotFoundError")
_LOG_TAIL = 12


class RunFailed(RuntimeError):
    """A run of the sweep failed; ``deterministic`` says whether a retry could help."""

    def __init__(self, name: str, message: str, deterministic: bool):
        super().__init__(f"run {name} failed: {message}")
        self.deterministic = deterministic


# ---------------------------------------------------------------------------- one run (the job)

def _sweep_dir(out: Path) -> Path:
    return out / "sweep"


def _state_path(out: Path, name: str) -> Path:
    return _sweep_dir(out) / "state" / f"{name}.json"


def _read_state(out: Path, name: str) -> dict:
    path = _state_path(out, name)
    try:
        return read_json(path) if path.is_file() else {}
    except ValueError:
        return {}


def run_record(out: str | Path, name: str) -> dict:
    """The bookkeeping of a run (``DIR/sweep/state/<run>.json``): state, attempts, error, the
    step that failed, and the seconds of each step the last call ran (``timings``: [step, s] in order)."""
    return _read_state(Path(out), name)


def _write_state(out: Path, name: str, **fields) -> dict:
    state = {**_read_state(out, name), **fields, "host": socket.gethostname(), "pid": os.getpid(),
             "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    write_json(_state_path(out, name), state)
    return state


def _stored_config(run_dir: Path) -> dict | None:
    """The config part of ``RUN/config.json`` (either layout, ``fullscale.runs.split_run_record``)."""
    from fullscale.runs import split_run_record

    path = run_dir / "config.json"
    if not path.is_file():
        return None
    return split_run_record(read_json(path), path)[0]


def check_config(spec: RunSpec, run_dir: Path):
    """The ``TrainConfig`` to train ``spec`` into ``run_dir``; a ``ValueError`` naming the
    differences when the folder holds a run of another configuration.  A run made under another
    preset name with the same configuration (a shared table row) keeps its stored preset name,
    so the trainer's own check on resume accepts it."""
    from infra.config import config_to_dict

    cfg = spec.config()
    stored = _stored_config(run_dir)
    if stored is None:
        return cfg
    planned = config_identity(config_to_dict(cfg))
    have = config_identity(stored)
    changed = sorted(k for k in planned if k not in have or have[k] != planned[k])
    if changed:
        detail = ", ".join(f"{k}: {have.get(k)!r} on disk, {planned[k]!r} planned" for k in changed[:3])
        raise ValueError(f"{run_dir} holds a run of another config ({detail}); give another --out "
                         "or remove that run")
    if stored.get("preset") and stored["preset"] != cfg.preset:
        cfg = dataclasses.replace(cfg, preset=stored["preset"])
    return cfg


def _eval_done(run_dir: Path, ev) -> bool:
    """``ev`` (an EvalSpec) is done: a complete evaluation of the run's final weights on the data
    ``ev`` names (another ``--suite-root`` is another evaluation, not a finished one, and so is the
    same folder generated anew: its ``data_fingerprint`` changed; issue 23)."""
    from infra.io import data_fingerprint, sha256_file

    path = run_dir / "eval" / f"{ev.suite}.json"
    if not path.is_file() or not (run_dir / "final.pt").is_file():
        return False
    try:
        record = read_json(path)
    except ValueError:
        return False
    if ev.data_root is not None:
        used = record.get("data_root") or (record.get("data") or {}).get("root")
        if used is None or Path(used).resolve() != Path(ev.data_root).resolve():
            return False
        if not Path(ev.data_root).is_dir() or record.get("data_fingerprint") != data_fingerprint(ev.data_root):
            return False
    return bool(record.get("complete")) and record.get("checkpoint", {}).get("sha256") == sha256_file(
        run_dir / "final.pt")


def execute_run(spec: RunSpec, out: str | Path, *, device: str | None = None,
                train_seconds: float | None = None) -> str:
    """Train (or resume, or skip) and evaluate one run of the sweep; return ``"done"``.

    Typed calls of ``fullscale.train.train`` and ``fullscale.cli_evaluate.evaluate``;
    ``train_seconds``: this run's share of the stacked group that trained it (``--members``).  Under
    ``torchrun``-style environments (``RANK``) only rank 0 takes the run's lock, writes its
    state and evaluates; every rank trains.  A failure raises ``RunFailed``."""
    out = Path(out)
    run_dir = out / "runs" / spec.name
    rank0 = int(os.environ.get("RANK", "0")) == 0
    lock = directory_lock(_sweep_dir(out) / "locks" / spec.name, "sweeping") if rank0 else contextlib.nullcontext()
    try:
        lock.__enter__()
    except ValueError as error:  # another process works on this run: leave it (and its state) alone
        raise RunFailed(spec.name, str(error), deterministic=True) from None
    with contextlib.ExitStack() as stack:
        stack.push(lock)
        attempts = int(_read_state(out, spec.name).get("attempts", 0)) + 1 if rank0 else 0
        if rank0:
            # a new attempt starts clean: the error and traceback of an interrupted one are not its own (issue 32)
            _write_state(out, spec.name, state="running", attempts=attempts, error=None, timings={},
                         traceback=None, deterministic=None, step=None)
        started = time.perf_counter()
        # step -> seconds, for the steps run by this call (and its share of a group's training)
        timings: dict[str, float] = {} if train_seconds is None else {"train": train_seconds}
        try:
            _train_and_evaluate(spec, run_dir, out, device, rank0, timings)
        except BaseException as error:
            deterministic = type(error).__name__ in _DETERMINISTIC
            message = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
            if rank0:
                interrupted = isinstance(error, KeyboardInterrupt | SystemExit)
                _write_state(out, spec.name, state="interrupted" if interrupted else "failed", error=message,
                             step=timings.pop("_current", None), timings=list(timings.items()),
                             deterministic=deterministic, traceback=traceback.format_exc()[-4000:])
            if isinstance(error, Exception):
                raise RunFailed(spec.name, message, deterministic) from error
            raise
        if rank0:
            timings.pop("_current", None)
            _write_state(out, spec.name, state="done", error=None, step=None, timings=list(timings.items()),
                         seconds=round(time.perf_counter() - started, 2), traceback=None, deterministic=None,
                         ran_on=ran_on())
    return "done"


def ran_on() -> dict:
    """Where and how a step computed, recorded when it ran (a report describes the work that made
    its numbers, not the last invocation; issue 32): the CPU, torch's CPU kernels, torch's threads
    in the process that ran it, the host, torch's version, the time it finished."""
    from infra.provenance import machine, now

    found = machine()
    return {"cpu_model": found["cpu_model"], "cpu_capability": found["cpu_capability"],
            "cpu_count": found["cpu_count"], "torch_threads": found["torch_threads"], "host": socket.gethostname(),
            "torch": found["versions"].get("torch"), "finished": now()}


def _train_and_evaluate(spec: RunSpec, run_dir: Path, out: Path, device: str | None, rank0: bool,
                        timings: dict) -> None:
    """``timings["_current"]`` names the step under way (``train`` or ``evaluate SUITE``); each
    finished step adds its seconds under that name."""
    timings["_current"] = "train"
    cfg = check_config(spec, run_dir)
    if not (run_dir / "final.pt").is_file():
        from fullscale.train import train

        t0 = time.perf_counter()
        train(cfg, run_dir, resume=True)
        timings["train"] = round(time.perf_counter() - t0, 2)
    if not rank0:
        return
    import torch

    from fullscale.cli_evaluate import evaluate
    from fullscale.evaluation import EvalOptions

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    for ev in spec.evals:
        if _eval_done(run_dir, ev):
            continue
        timings["_current"] = f"evaluate {ev.suite}"
        t0 = time.perf_counter()
        evaluate(run_dir, ev.suite, data_root=ev.data_root, device=device,
                 options=EvalOptions(partial=ev.partial))
        timings[f"evaluate {ev.suite}"] = round(time.perf_counter() - t0, 2)


@functools.lru_cache(maxsize=64)
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    """The sha256 of a file, once per (path, size, mtime): a status looks at every run's source."""
    from infra.io import sha256_file

    return sha256_file(path)


def stale_reason(run_dir: Path) -> str | None:
    """Why the finished run in ``run_dir`` no longer is what its inputs make: a transfer run's
    ``source_weights`` replaced (or removed) after it trained, by the sha256 recorded in its
    ``config.json`` (a sweep kept saying "done" with the old checksum; issue 32).  None: not stale."""
    from fullscale.runs import split_run_record
    from infra.io import printable

    path = run_dir / "config.json"
    if not path.is_file():
        return None
    try:
        config, facts = split_run_record(read_json(path), path)
    except ValueError:
        return None
    source, recorded = config.get("source_weights"), facts.get("source_weights_sha256")
    if not source or not recorded:
        return None
    try:
        info = Path(source).stat()
        digest = _sha256_of(str(source), info.st_size, info.st_mtime_ns)
    except OSError:
        return f"its source_weights {printable(str(source))} is gone"
    if digest != recorded:
        return (f"its source_weights {printable(str(source))} changed since it trained (sha256 {str(recorded)[:12]} "
                f"-> {digest[:12]}); restore that file, or remove the run to train it anew")
    return None


def run_state(out: str | Path, spec: RunSpec) -> str:
    """``done`` | ``stale`` | ``running`` | ``failed`` | ``interrupted`` | ``pending``, read from the
    files; ``stale``: finished, but from inputs that changed since (``stale_reason``)."""
    out = Path(out)
    run_dir = out / "runs" / spec.name
    state = _read_state(out, spec.name)
    if (run_dir / "final.pt").is_file() and stale_reason(run_dir) is not None:
        return "stale"
    if (run_dir / "final.pt").is_file() and all(_eval_done(run_dir, e) for e in spec.evals):
        return "done"
    if state.get("state") == "running":  # running, or its process died: the lock tells
        lock_dir = _sweep_dir(out) / "locks" / spec.name
        try:
            with directory_lock(lock_dir, "checking"):
                return "interrupted"
        except ValueError:
            return "running"
    return state.get("state") if state.get("state") in ("failed", "interrupted") else "pending"


# ---------------------------------------------------------------------------- the table

def write_table(out: str | Path, plan: Plan) -> Path | None:
    """Regenerate ``DIR/table/<table>.{md,tex,json}`` from the evaluations found under ``DIR/runs``:
    the paper's tables this one fills (ours beside the paper's: mean (min / max) over seeds), then
    our own summary per (dataset, model); the JSON adds per-seed values and the std.  None when
    no run exists yet."""
    from infra.provenance import provenance
    from noisymix_figures.results import collect
    from noisymix_figures.tables import COMPARISONS, _compare, _ours_table, paper_values

    out = Path(out)
    if not (out / "runs").is_dir():
        return None
    groups = collect(out / "runs").groups()
    folder = out / "table"
    tables = _ours_table(groups)
    record: dict = {"table": plan.table, "notes": list(plan.notes), "provenance": provenance(), "tables": {}}
    paper = paper_values()
    for label in plan.comparisons:
        comp = next((c for c in COMPARISONS if c.label == label and c.analogue == plan.analogue), None)
        if comp is None:
            continue
        tables.insert(len(record["tables"]), _compare(comp, paper, groups))
        record["tables"][label] = _comparison_record(comp, paper[comp.label], groups)
    text = "\n".join(t.markdown() for t in tables)
    notes = "".join(f"- {n}\n" for n in plan.notes)
    write_text(folder / f"{plan.table}.md", f"# {plan.table}\n\n{text}\n" + (f"\n## Notes\n\n{notes}" if notes else ""))
    write_text(folder / f"{plan.table}.tex", "\n".join(t.latex() for t in tables))
    write_json(folder / f"{plan.table}.json", record)
    return folder / f"{plan.table}.md"


def _comparison_record(comp, paper: dict, groups: dict) -> dict:
    """Per paper row and column: the paper's cell, our per-seed values, mean, min, max, std (ddof 1)."""
    import numpy as np

    rows: dict = {}
    for name, cells in paper["rows"]:
        method = comp.rows.get(name)
        row = rows[name] = {"method": method}
        for i, (dataset, model, metric) in enumerate(comp.columns):
            runs = groups.get((dataset, model, method), []) if method else []
            values = {str(r.config.get("seed")): v for r in runs if (v := metric(r)) is not None}
            seeds = list(values.values())
            column = paper["columns"][i] if i < len(paper["columns"]) else str(i)
            row[f"{dataset} {model} {column}"] = {
                "paper": cells[i] if i < len(cells) else None, "per_seed": values, "n": len(seeds),
                **({"mean": float(np.mean(seeds)), "min": float(np.min(seeds)), "max": float(np.max(seeds)),
                    "std": float(np.std(seeds, ddof=1)) if len(seeds) > 1 else 0.0} if seeds else {})}
    return rows


def _refresh_table(out: Path, plan: Plan) -> None:
    """``write_table`` under the sweep's table lock; a busy lock (another job writing it) is
    waited for a few seconds, then left to that job."""
    for _ in range(10):
        try:
            with directory_lock(_sweep_dir(out) / "locks" / "_table", "writing the table"):
                write_table(out, plan)
            return
        except ValueError as error:
            if "in use" not in str(error):
                raise
            time.sleep(1)


# ---------------------------------------------------------------------------- local launcher

def _worker(spec_dict: dict, out: str, env: dict[str, str], log: str, threads: int) -> None:
    """A worker process: its devices and rank (``env``), output to its log, then ``execute_run``."""
    os.environ.update(env)
    os.environ.setdefault("NOISYMIX_PROGRESS", "0")
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    handle = open(log, "a", buffering=1)  # held for the life of the process
    os.dup2(handle.fileno(), 1)
    os.dup2(handle.fileno(), 2)
    sys.stdout, sys.stderr = handle, handle
    if threads:
        import torch

        torch.set_num_threads(threads)
    try:
        execute_run(RunSpec.from_dict(spec_dict), out)
    except RunFailed as error:
        print(str(error), flush=True)
        sys.exit(3 if error.deterministic else 1)


def _slots(workers: int, runs_per_gpu: int) -> list[int | None]:
    """One entry per process the queue may run at once: a GPU index, or None for a CPU worker."""
    import torch

    if torch.cuda.is_available():
        return [g for _ in range(runs_per_gpu) for g in range(torch.cuda.device_count())]
    return [None] * max(1, workers)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank_envs(slots: list[int | None]) -> list[dict[str, str]]:
    """The environment of each process of a run on ``slots``: its GPUs, and for several
    processes the ``torch.distributed`` env:// variables (as torchrun sets them)."""
    gpus = [g for g in slots if g is not None]
    base = {"CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus))} if gpus else {}
    if len(slots) == 1:
        return [base]
    port = str(_free_port())
    return [{**base, "RANK": str(i), "LOCAL_RANK": str(i), "WORLD_SIZE": str(len(slots)),
             "LOCAL_WORLD_SIZE": str(len(slots)), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
            for i in range(len(slots))]


def run_local(plan: Plan, out: str | Path, *, workers: int = 1, runs_per_gpu: int = 1, retries: int = 2,
              threads: int = 0, retry_failed: bool = False, after_run=None, tabulate: bool = True,
              members: int = 1) -> dict[str, str]:
    """Run every unfinished run of ``plan``; return {run: final state}.

    ``workers=0``: in this process, one after another (what ``noisymix reproduce`` does); there
    ``members > 1`` trains up to that many seeds of one config as one stacked model
    (``fullscale.members``) before each is evaluated as usual.
    ``after_run(name, state)`` is called when a run ends (tests inject interruptions there);
    ``tabulate=False`` leaves the table to the caller (``noisymix reproduce`` makes its figures).
    ``threads``: torch's threads per run (0: with ``workers=0`` decided as each run starts, from
    ``NOISYMIX_THREADS`` or the free cores; with workers, the cores shared among them).
    The caller claims ``out`` for its kind (a sweep, a reproduce report), not this function.
    KeyboardInterrupt stops the workers (each keeps its last checkpoint) and propagates."""
    out = Path(out)
    wide = [spec.name for spec in plan.runs if spec.gpus > 1]
    if wide and workers == 0:
        raise ValueError(f"runs {', '.join(wide[:3])} need several processes each (one per GPU): "
                         "give --workers >= 1 or --launcher slurm")
    _write_plan(out, plan)
    states = {spec.name: run_state(out, spec) for spec in plan.runs}
    for spec in plan.runs:  # never retrained nor counted done behind the user's back: they choose
        if states[spec.name] == "stale":
            print(f"sweep: run {spec.name} is stale: {stale_reason(out / 'runs' / spec.name)}", file=sys.stderr)
    if any(s == "running" for s in states.values()):
        busy = [n for n, s in states.items() if s == "running"]
        print(f"sweep: {len(busy)} runs are being worked on by another process (skipped): {', '.join(busy[:5])}",
              file=sys.stderr)
    pending = [spec for spec in plan.runs if states[spec.name] in ("pending", "interrupted")
               or (states[spec.name] == "failed" and (retry_failed or not _read_state(out, spec.name)
                                                      .get("deterministic")))]
    for spec in pending:  # a new invocation gives every run a fresh count of retries
        if _read_state(out, spec.name).get("state") == "failed":
            _write_state(out, spec.name, state="pending", attempts=0)
    bar = progress(total=len(plan.runs), initial=sum(s == "done" for s in states.values()), desc=f"sweep {plan.table}",
                   unit="run")
    counts = {"done": sum(s == "done" for s in states.values()), "running": 0,
              "failed": sum(s == "failed" and spec not in pending for spec, s in
                            zip(plan.runs, states.values(), strict=True))}

    def show() -> None:
        if hasattr(bar, "set_postfix_str"):
            bar.set_postfix_str(f"done={counts['done']} running={counts['running']} failed={counts['failed']}")

    def finished(spec: RunSpec, state: str) -> None:
        states[spec.name] = state
        counts[state if state in counts else "failed"] += 1
        bar.update(1)
        show()
        if tabulate:
            _refresh_table(out, plan)
        if after_run is not None:
            after_run(spec.name, state)

    show()
    try:
        if workers == 0:
            _serial(plan, out, pending, retries, counts, finished, show, members, threads)
        else:
            _parallel(out, pending, _slots(workers, runs_per_gpu), retries, threads, counts, finished, show)
    finally:
        bar.close()
    if tabulate:
        _refresh_table(out, plan)
    return {spec.name: run_state(out, spec) for spec in plan.runs}


def _member_groups(out: Path, pending: list[RunSpec], members: int) -> dict[str, list[RunSpec]]:
    """Pending runs to train as stacked groups: up to ``members`` runs whose configs differ only in
    the seed and none of which is trained yet, by the name of each group's first run."""
    from fullscale.members import groupable
    from infra.config import config_to_dict

    by_config: dict[str, list[RunSpec]] = {}
    for spec in pending:
        run_dir = out / "runs" / spec.name
        if (run_dir / "final.pt").is_file() or (run_dir / "checkpoint.pt").is_file():
            continue
        cfg = spec.config()
        if groupable(cfg):
            key = json.dumps(config_to_dict(dataclasses.replace(cfg, seed=0, preset="")), sort_keys=True)
            by_config.setdefault(key, []).append(spec)
    groups = {}
    for specs in by_config.values():
        for start in range(0, len(specs), members):
            chunk = specs[start:start + members]
            if len(chunk) > 1:
                groups[chunk[0].name] = chunk
    return groups


def _train_group(out: Path, group: list[RunSpec]) -> float:
    """Train ``group`` as one stacked model; the seconds it took per run."""
    from fullscale.members import train_members

    t0 = time.perf_counter()
    cfg = group[0].config()
    train_members(cfg, [spec.seed for spec in group], [out / "runs" / spec.name for spec in group])
    return (time.perf_counter() - t0) / len(group)


def _serial(plan: Plan, out: Path, pending: list[RunSpec], retries: int, counts: dict, finished, show,
            members: int = 1, threads: int = 0) -> None:
    """One run after another in this process.  Each run's torch threads are decided when it starts
    (``infra.threads.torch_threads``: ``threads`` when > 0, else ``NOISYMIX_THREADS`` or the
    cores free then), not once for the whole invocation: a long ``noisymix reproduce`` kept the count
    sampled at its start while the machine's load changed (issue 32)."""
    from infra.threads import torch_threads

    groups = _member_groups(out, pending, members) if members > 1 else {}
    trained: dict[str, float] = {}  # run -> its share of its group's training seconds
    for spec in pending:
        if spec.name in groups:
            counts["running"] = len(groups[spec.name])
            show()
            try:
                with torch_threads(threads or None):
                    share = _train_group(out, groups[spec.name])
                trained |= {s.name: round(share, 2) for s in groups[spec.name]}
            except (ValueError, RuntimeError) as error:  # each run then trains alone and fails, or not, alone
                print(f"sweep: training {', '.join(s.name for s in groups[spec.name])} as one model failed "
                      f"({str(error).splitlines()[0] if str(error) else type(error).__name__}); one at a time",
                      file=sys.stderr)
        for attempt in range(retries + 1):
            counts["running"] = 1
            show()
            try:
                with torch_threads(threads or None):
                    execute_run(spec, out, train_seconds=trained.get(spec.name))
                counts["running"] = 0
                finished(spec, "done")
                break
            except RunFailed as error:
                counts["running"] = 0
                print(f"sweep: {error}", file=sys.stderr)
                if error.deterministic or attempt == retries:
                    finished(spec, "failed")
                    break


def _take(free: list[int], slots: list[int | None], n: int) -> list[int] | None:
    """``n`` free slots on distinct devices (CPU slots are all distinct), or None if they are not free."""
    chosen, devices = [], set()
    for slot in free:
        if slots[slot] is None or slots[slot] not in devices:
            chosen.append(slot)
            devices.add(slots[slot])
        if len(chosen) == n:
            return chosen
    return None


def _parallel(out: Path, pending: list[RunSpec], slots: list[int | None], retries: int, threads: int,
              counts: dict, finished, show) -> None:
    """The queue: each run in its own process(es) (one per GPU of the run), as slots free up."""
    import multiprocessing
    from multiprocessing.connection import wait

    ctx = multiprocessing.get_context("spawn")  # CUDA cannot be forked
    if not threads and all(s is None for s in slots):  # CPU workers share the cores
        threads = max(1, (os.cpu_count() or 1) // len(slots))
    capacity = len({s for s in slots if s is not None}) or len(slots)
    queue = [(spec, 0) for spec in pending]
    free = list(range(len(slots)))
    groups: dict[int, dict] = {}  # id -> {"spec", "attempt", "slots", "processes", "codes"}
    owner: dict = {}  # sentinel -> (group id, process)
    try:
        while queue or groups:
            for item in list(queue):
                spec, attempt = item
                if spec.gpus > capacity:
                    queue.remove(item)
                    _write_state(out, spec.name, state="failed", deterministic=True,
                                 error=f"needs {spec.gpus} devices, this machine has {capacity}")
                    finished(spec, "failed")
                    continue
                taken = _take(free, slots, spec.gpus)
                if taken is None:
                    continue
                queue.remove(item)
                for slot in taken:
                    free.remove(slot)
                group = {"spec": spec, "attempt": attempt, "slots": taken, "processes": [], "codes": []}
                groups[id(group)] = group
                for rank, env in enumerate(_rank_envs([slots[i] for i in taken])):
                    log = _sweep_dir(out) / "logs" / f"{spec.name}{f'.rank{rank}' if rank else ''}.log"
                    process = ctx.Process(target=_worker, args=(spec.as_dict(), str(out), env, str(log), threads),
                                          name=f"sweep-{spec.name}-{rank}")
                    process.start()
                    group["processes"].append(process)
                    owner[process.sentinel] = (id(group), process)
            counts["running"] = len(groups)
            show()
            if not owner:  # nothing started (every queued run failed before starting)
                continue
            for sentinel in wait(list(owner)):
                key, process = owner.pop(sentinel)
                process.join()
                group = groups[key]
                group["codes"].append(process.exitcode)
                if process.exitcode != 0:  # one rank failed: the others would wait for it forever
                    for other in group["processes"]:
                        if other.is_alive():
                            other.terminate()
                if len(group["codes"]) < len(group["processes"]):
                    continue
                del groups[key]
                free.extend(group["slots"])
                counts["running"] = len(groups)
                _group_ended(out, group, retries, queue, finished)
    except BaseException:
        for _key, process in owner.values():  # SIGTERM: each keeps its last checkpoint
            process.terminate()
        for _key, process in owner.values():
            process.join(30)
        raise


def _group_ended(out: Path, group: dict, retries: int, queue: list, finished) -> None:
    spec, attempt = group["spec"], group["attempt"]
    code = next((c for c in group["codes"] if c != 0), 0)
    if code == 0:
        finished(spec, "done")
        return
    if _read_state(out, spec.name).get("state") == "running":  # killed: it wrote no state
        _write_state(out, spec.name, state="failed", error=f"exit status {code}")
    if code != 3 and attempt < retries:  # 3: a deterministic failure
        print(f"sweep: run {spec.name} exited with {code}; retry {attempt + 1}/{retries}", file=sys.stderr)
        queue.append((spec, attempt + 1))
    else:
        finished(spec, "failed")


# ---------------------------------------------------------------------------- SLURM launcher

@dataclasses.dataclass(frozen=True)
class SlurmOptions:
    partition: str | None = None
    account: str | None = None
    time_min: int = 24 * 60
    gpus_per_node: int = 8
    cpus_per_gpu: int = 8
    array_parallelism: int = 64
    cluster: str = "slurm"  # submitit's executor: "slurm", or "local" / "debug" to test without SLURM


class RunJob:
    """The callable submitit pickles and runs on the cluster: ``execute_run`` of one run.

    ``checkpoint`` is submitit's preemption/time-limit hook (it calls it on SIGUSR2 / SIGTERM):
    it returns the same job as a ``DelayedSubmission``, which submitit requeues; the requeued job
    resumes from ``checkpoint.pt``.  Multi-GPU runs get their distributed environment from
    ``submitit.helpers.TorchDistributedEnvironment`` (one task per GPU)."""

    def __init__(self, spec: dict, out: str, plan: dict | None = None, requeues: int = 0):
        self.spec, self.out, self.plan, self.requeues = spec, out, plan, requeues

    def __call__(self) -> str:
        spec = RunSpec.from_dict(self.spec)
        if spec.gpus > 1:
            import submitit

            # CUDA_VISIBLE_DEVICES stays as SLURM set it: the trainer picks cuda:LOCAL_RANK
            submitit.helpers.TorchDistributedEnvironment().export(set_cuda_visible_devices=False)
        state = execute_run(spec, self.out)
        if self.plan is not None and int(os.environ.get("RANK", "0")) == 0:
            _refresh_table(Path(self.out), _plan_from_dict(self.plan))
        return state

    def checkpoint(self, *args, **kwargs):
        import submitit

        return submitit.helpers.DelayedSubmission(RunJob(self.spec, self.out, self.plan, self.requeues + 1))


def slurm_parameters(spec: RunSpec, options: SlurmOptions) -> dict:
    """submitit parameters of a run: one node and GPU, or ceil(gpus / gpus_per_node) nodes with
    one task per GPU."""
    gpus_per_node = min(spec.gpus, options.gpus_per_node)
    nodes = math.ceil(spec.gpus / gpus_per_node)
    params = {"nodes": nodes, "tasks_per_node": gpus_per_node, "gpus_per_node": gpus_per_node,
              "cpus_per_task": options.cpus_per_gpu, "timeout_min": options.time_min,
              "slurm_array_parallelism": options.array_parallelism,
              "slurm_signal_delay_s": 120}  # time to write a checkpoint before the kill
    if options.partition:
        params["slurm_partition"] = options.partition
    if options.account:
        params["slurm_account"] = options.account
    return params


def _slurm_active(out: Path, job_id: str) -> bool:
    """Whether SLURM still holds the job (queued, running, requeued); unknown counts as held,
    so a rerun of the command never submits a run twice (``--resubmit`` overrides)."""
    import submitit

    try:
        state = submitit.SlurmJob(folder=_sweep_dir(out) / "slurm" / "%j", job_id=job_id).state
    except Exception:  # no sacct, accounting down: we cannot tell
        return True
    return state.upper() not in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL",
                                 "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE") and not state.upper().startswith("CANCELLED")


def submit_slurm(plan: Plan, out: str | Path, options: SlurmOptions, *, retry_failed: bool = False,
                 resubmit: bool = False) -> list:
    """Submit the unfinished runs; return submitit's jobs (their ids in ``DIR/sweep/state/``).

    A run whose earlier job SLURM still holds is not submitted again unless ``resubmit``."""
    try:
        import submitit
    except ImportError:
        raise ValueError("--launcher slurm needs submitit: pip install 'noisymix[slurm]'") from None
    out = Path(out).resolve()
    _write_plan(out, plan)
    todo = []
    for spec in plan.runs:
        state, record = run_state(out, spec), _read_state(out, spec.name)
        if not (state in ("pending", "interrupted")
                or (state == "failed" and (retry_failed or not record.get("deterministic")))):
            continue
        if record.get("job_id") and not resubmit and options.cluster == "slurm" \
                and _slurm_active(out, record["job_id"]):
            print(f"sweep: {spec.name}: job {record['job_id']} is still queued or running (not submitted again; "
                  "--resubmit to force)", file=sys.stderr)
            continue
        todo.append(spec)
    executor = submitit.AutoExecutor(folder=_sweep_dir(out) / "slurm" / "%j", cluster=options.cluster)
    jobs = []
    plan_dict = _plan_dict(plan)
    single = [s for s in todo if s.gpus == 1]
    if single:
        executor.update_parameters(name=f"noisymix-{plan.table}", **slurm_parameters(single[0], options))
        with executor.batch():  # one array job
            batch = [executor.submit(RunJob(s.as_dict(), str(out), plan_dict)) for s in single]
        jobs += batch
    for spec in (s for s in todo if s.gpus > 1):
        executor.update_parameters(name=f"noisymix-{spec.name}", **slurm_parameters(spec, options))
        jobs.append(executor.submit(RunJob(spec.as_dict(), str(out), plan_dict)))
    for job, spec in zip(jobs, [*single, *(s for s in todo if s.gpus > 1)], strict=True):
        _write_state(out, spec.name, state="submitted", job_id=str(job.job_id))
    return jobs


# ---------------------------------------------------------------------------- plan files, estimates

def _plan_dict(plan: Plan) -> dict:
    return {"table": plan.table, "runs": [r.as_dict() for r in plan.runs], "notes": list(plan.notes),
            "comparisons": list(plan.comparisons), "analogue": plan.analogue}


def _plan_from_dict(data: object, where: str = "sweep/plan.json") -> Plan:
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

    # lists in the file; tuples when a RunJob hands the plan over unpickled (``_plan_dict``)
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
    from infra.folder_kind import require_kind
    from infra.io import printable

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
        if cfg.dataset not in BUILT_IN:  # the digits come with scikit-learn; every other data set is a folder
            if not spec.data_root:
                add(f"{cfg.dataset} runs need --data-root DIR (the {cfg.dataset} data; nothing is downloaded)")
            elif not Path(spec.data_root).is_dir():
                add(f"--data-root {printable(spec.data_root)}: no such folder")
            elif cfg.dataset in ("cifar10", "cifar100"):  # a folder without the batches failed every run too
                from fullscale.data.cifar import _folder as cifar_folder

                try:
                    cifar_folder(Path(spec.data_root), cfg.dataset)
                except FileNotFoundError as error:
                    add(f"--data-root: {error}")
        source = getattr(cfg, "source_weights", "")
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


def _write_plan(out: Path, plan: Plan) -> None:
    from infra.provenance import provenance

    write_json(_sweep_dir(out) / "plan.json", {**_plan_dict(plan), "provenance": provenance()})


#: training images per epoch of each data set (the standard splits)
_IMAGES = {"cifar10": 50_000, "cifar100": 50_000, "digits": 1_347, "digits16": 1_347, "imagenet": 1_281_167}
#: the CPU cost of a digits16 step against a digits (32x32) step, stride-2 stem, width 16, batch 32:
#: MEASURED, `noisymix bench train-step -- --width 16 --batch 32 --stem-stride 2 --size S` (0.033 s
#: against 0.064 s a NoisyMix step, twice each, idle 2-core VM; benchmarks/RESULTS.md, issue 34)
_CPU_SIDE_FACTOR = {"digits": 1.0, "digits16": 0.52}
#: seconds per epoch per training view-image, by (model, device kind).  digits/CPU: MEASURED,
#: benchmarks/RESULTS.md "Choosing the laptop protocol" (PreActResNet-18 width 16, batch 32, 2 threads:
#: NoisyMix 4.9 s/epoch for 1,347 images x 3 views; 1.92 s/epoch with stem_stride=2); other widths
#: scale linearly (measured ~linear from width 8 to 16 on this CPU).  GPU figures: ASSUMED, not measured
#: (no GPU figure of the trainer is in benchmarks/RESULTS.md yet): 12,000 view-images/s for
#: PreActResNet-18, 5,000 for WRN-28-4, 2,500 for ResNet-50 at 224x224 per GPU (bf16, one recent
#: data-centre GPU).
_SECONDS_PER_VIEW_IMAGE = {"cpu": 4.9 / (3 * 1347), "preactresnet18": 1 / 12_000, "wrn28_4": 1 / 5_000,
                           "wrn28_2": 1 / 12_000, "resnet50": 1 / 2_500}
_CPU_WIDTH = 16  # the width of the measured CPU figure
_CPU_STEM_STRIDE_2_SPEEDUP = 4.9 / 1.92  # the same, measured with stem_stride=2
ESTIMATE_CPU = ("CPU digits rows from the measured laptop-protocol figures (benchmarks/RESULTS.md, NoisyMix 4.9 "
                "s/epoch at width 16, 1.92 with stem_stride=2)")
ESTIMATE_GPU = ("GPU rows ASSUMED at 12k / 5k / 2.5k view-images/s per GPU for PreActResNet-18 / WRN-28-4 / "
                "ResNet-50 (no measured GPU training figure yet)")
ESTIMATE_NOTE = "JSD methods count 3 views per image; evaluation not included"


def estimate_source(plan) -> str:
    """Where the hours of ``plan``'s dry run come from: only the sources its rows use."""
    digits = [spec.config().dataset in BUILT_IN for spec in plan.runs]
    parts = ([ESTIMATE_CPU] if any(digits) else []) + ([ESTIMATE_GPU] if not all(digits) else [])
    return f"device-hours: {'; '.join(parts)}; {ESTIMATE_NOTE}"


def estimate_hours(spec: RunSpec) -> float:
    """Estimated device-hours (GPU-hours, or CPU-hours for the digits analogue) of training: the
    view-images it processes over the throughput of ONE device, so it does not grow with the number
    of devices the run spreads over (they share the work; issue 23: it was multiplied by them again)."""
    from fullscale.methods import get_method

    cfg = spec.config()
    images = cfg.train_subset or _IMAGES.get(cfg.dataset, 50_000)
    views = get_method(cfg.method).views
    key = "cpu" if cfg.dataset in BUILT_IN else cfg.model
    per = _SECONDS_PER_VIEW_IMAGE.get(key, 1 / 5_000)
    if cfg.dataset in BUILT_IN:
        per *= (cfg.width or 64) / _CPU_WIDTH / (_CPU_STEM_STRIDE_2_SPEEDUP if cfg.stem_stride == 2 else 1.0)
        per *= _CPU_SIDE_FACTOR.get(cfg.dataset, 1.0)
    return images * views * cfg.epochs * per / 3600


# ---------------------------------------------------------------------------- the command

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("table", metavar="TABLE|status",
                        help=f"one of {', '.join([*TABLES, ANALOGUE])}; or `status DIR`")
    parser.add_argument("status_dir", nargs="?", metavar="DIR", help="(status) the sweep's output folder")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per row (the paper: 5)")
    parser.add_argument("--out", help="output folder (runs/, table/, sweep/)")
    parser.add_argument("--launcher", choices=("local", "slurm"), default="local")
    from infra.config import add_set_argument

    add_set_argument(parser, "--set epochs=100", "every run's training config (part of what the run computes)")
    parser.add_argument("--data-root", default=None, help="the training data (CIFAR batches, ImageNet folders)")
    parser.add_argument("--suite-root", action="append", default=[], metavar="SUITE=DIR",
                        help="data of a -C/-P/-R suite, e.g. cifar10-c=/data/CIFAR-10-C (suites without one are "
                             "left out, with a note)")
    parser.add_argument("--source", action="append", default=[], metavar="ROW=PATH",
                        help="results_transfer: the source ResNet-50 state dict of a row, e.g. noisymix=/ckpt/nm.pt "
                             "(rows: baseline, puzzlemix, mixup, autoaugment, augmix, noisymix; rows without one "
                             "are left out, with a note)")
    parser.add_argument("--dry-run", action="store_true", help="list the runs and estimated GPU-hours; run nothing")
    parser.add_argument("--retries", type=int, default=2, help="retries of a crashed run (never of a diverged one)")
    parser.add_argument("--retry-failed", action="store_true", help="also rerun runs that failed deterministically")
    parser.add_argument("--resubmit", action="store_true",
                        help="slurm: submit runs whose earlier job SLURM may still hold (default: skip them)")
    parser.add_argument("--workers", type=int, default=1,
                        help="local, no GPU: parallel CPU runs (0: one after another in this process)")
    parser.add_argument("--runs-per-gpu", type=int, default=1, help="local: runs sharing one GPU (small models)")
    parser.add_argument("--members", type=int, default=1,
                        help="local, --workers 0: train up to N seeds of one config as one stacked model "
                             "(fullscale.members; pays on a GPU, not on a CPU: benchmarks/RESULTS.md)")
    parser.add_argument("--partition", default=None, help="slurm: partition")
    parser.add_argument("--account", default=None, help="slurm: account")
    parser.add_argument("--time", type=int, default=24 * 60, help="slurm: time limit per job in minutes")
    parser.add_argument("--gpus-per-node", type=int, default=8, help="slurm: GPUs per node (multi-GPU runs)")
    parser.add_argument("--cpus-per-gpu", type=int, default=8, help="slurm: CPUs per task (one task per GPU)")


def _suite_roots(items: list[str], option: str = "--suite-root", what: str = "SUITE=DIR") -> dict[str, str]:
    roots = {}
    for item in items:
        suite, sep, path = item.partition("=")
        if not sep or not suite or not path:
            raise ValueError(f"{option} expects {what}, got {item!r}")
        roots[suite.strip()] = str(Path(path).resolve())
    return roots


def dry_run_text(plan: Plan) -> str:
    lines = [f"sweep {plan.table}: {len(plan.runs)} runs", "",
             f"{'run':44s} {'preset':34s} {'GPUs':>4s} {'hours':>7s}  suites; rows"]
    total = 0.0
    for spec in plan.runs:
        hours = estimate_hours(spec)  # device-hours already: a run on 8 GPUs is 1/8 of the wall time
        total += hours
        lines.append(f"{spec.name:44s} {spec.preset:34s} {spec.gpus:4d} {hours:7.2f}  "
                     f"{','.join(e.suite for e in spec.evals)}; {' | '.join(spec.rows)}")
    lines += ["", f"total: {total:.1f} device-hours ({estimate_source(plan)})"]
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)


def status_text(out: str | Path) -> str:
    out = Path(out)
    path = _sweep_dir(out) / "plan.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {out} the --out of a `noisymix sweep`?")
    plan = _plan_from_dict(read_json(path), str(path))
    lines = [f"sweep {plan.table} in {out}", "", f"{'run':44s} {'state':12s} {'tries':>5s} {'epochs':>9s}  evaluated"]
    failures = []
    counts: dict[str, int] = {}
    for spec in plan.runs:
        state = run_state(out, spec)
        stored = _read_state(out, spec.name)
        if state == "pending" and stored.get("state") == "submitted":
            state = f"submitted {stored.get('job_id', '')}".strip()
        counts[state.split()[0]] = counts.get(state.split()[0], 0) + 1
        run_dir = out / "runs" / spec.name
        from fullscale.runs import read_metrics

        try:
            epochs = max((m["epoch"] for m in read_metrics(run_dir)), default=0)
        except ValueError:
            epochs = "?"
        total = (_stored_config(run_dir) or {}).get("epochs", "?")
        evaluated = ",".join(e.suite for e in spec.evals if _eval_done(run_dir, e)) or "-"
        progress_text = f"{epochs}/{total}"
        lines.append(f"{spec.name:44s} {state:12s} {stored.get('attempts', 0):5d} {progress_text:>9s}  {evaluated}")
        if state in ("failed", "interrupted"):
            failures.append((spec, stored))
        if state == "stale":
            failures.append((spec, {"error": f"stale: {stale_reason(run_dir)}"}))
    lines += ["", "  ".join(f"{k}: {v}" for k, v in sorted(counts.items()))]
    for spec, stored in failures:
        lines += ["", f"## {spec.name}: {stored.get('error')}"
                  + (" (deterministic: not retried)" if stored.get("deterministic") else "")]
        lines += [f"    {line}" for line in _log_tail(out, spec, stored)]
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)


def _log_tail(out: Path, spec: RunSpec, stored: dict) -> list[str]:
    candidates = [_sweep_dir(out) / "logs" / f"{spec.name}.log"]
    if stored.get("job_id"):
        candidates += sorted((_sweep_dir(out) / "slurm").glob(f"{stored['job_id']}*/*.err"))
    for path in candidates:
        if path.is_file():
            return path.read_text(errors="replace").splitlines()[-_LOG_TAIL:]
    text = stored.get("traceback") or ""
    return text.splitlines()[-_LOG_TAIL:]


def run(args: argparse.Namespace) -> int:
    if args.table == "status":
        if not args.status_dir:
            raise ValueError("usage: noisymix sweep status DIR")
        print(status_text(args.status_dir))
        return 0
    if args.seeds < 1 or args.retries < 0 or args.workers < 0 or args.runs_per_gpu < 1:
        raise ValueError("need --seeds >= 1, --retries >= 0, --workers >= 0, --runs-per-gpu >= 1")
    # with the other arguments, before any plan: a slurm submission or a dry run ignored a bad --members
    if args.members < 1 or (args.members > 1 and (args.workers != 0 or args.launcher != "local")):
        raise ValueError(f"--members {args.members}: give N >= 1, and N > 1 only with --launcher local --workers 0 "
                         "(one process trains the group)")
    data_root = str(Path(args.data_root).resolve()) if args.data_root else None
    plan = build_plan(args.table, range(args.seeds), overrides=args.overrides,
                      suite_roots=_suite_roots(args.suite_root), data_root=data_root,
                      sources=_suite_roots(args.source, "--source", "ROW=PATH"))
    problems = check_inputs(plan)
    problem = (f"{problems[0]}" + (f" (and {len(problems) - 1} more input problem(s))" if len(problems) > 1 else "")
               if problems else None)
    if args.dry_run:  # the plan, then what would stop it (a dry run is also how one plans without the data)
        print(dry_run_text(plan))
        if problem:
            print(f"sweep: cannot run yet: {problem}", file=sys.stderr)
        return 0
    if problem:
        raise ValueError(problem)
    if not args.out:
        raise ValueError("--out DIR is required")
    out = Path(args.out)
    from infra.folder_kind import claim_folder

    claim_folder(out, "sweep")  # not a run's or a -C set's folder (issue 32), before anything is written
    for spec in plan.runs:  # refuse before anything runs: no run may mix two configs
        check_config(spec, out / "runs" / spec.name)
    for note in plan.notes:
        print(f"sweep: note: {note}", file=sys.stderr)
    if args.launcher == "slurm":
        options = SlurmOptions(args.partition, args.account, args.time, args.gpus_per_node, args.cpus_per_gpu)
        jobs = submit_slurm(plan, out, options, retry_failed=args.retry_failed, resubmit=args.resubmit)
        print(f"submitted {len(jobs)} runs: {', '.join(str(j.job_id) for j in jobs[:8])}"
              f"{' ...' if len(jobs) > 8 else ''}; follow with `noisymix sweep status {out}`")
        return 0
    states = run_local(plan, out, workers=args.workers, runs_per_gpu=args.runs_per_gpu, retries=args.retries,
                       threads=args.threads or 0, retry_failed=args.retry_failed, members=args.members)
    failed = sorted(n for n, s in states.items() if s != "done")
    print(f"sweep {plan.table}: {len(states) - len(failed)}/{len(states)} runs done; table: {out / 'table'}")
    if failed:
        print(f"sweep: not done: {', '.join(failed[:8])}; see `noisymix sweep status {out}`", file=sys.stderr)
        return 1
    return 0
