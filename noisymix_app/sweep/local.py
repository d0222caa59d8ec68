"""The local launcher: every unfinished run of a plan on this machine (``run_local``).

A queue over the visible GPUs (``--runs-per-gpu`` runs share one, a process per run) or, without a
GPU, ``--workers`` long-lived CPU worker processes that take runs one at a time
(``noisymix_app.sweep.pool``: no run pays the interpreter's and torch's start-up; with
``follow_load``, as many run side by side as cores are free, re-read as runs end, what
``noisymix reproduce`` does); ``--workers 0``: one run after another in this process, where
``--members`` may train several seeds as one stacked model.  A multi-GPU run gets one process per
GPU with the ``torch.distributed`` env:// variables (as torchrun would set them; gloo on the CPU); a
run that crashes is retried ``--retries`` times, one that fails deterministically (a non-finite
loss, ``fullscale.training.checks.NonFiniteLoss``; a config error) is reported and never retried.
Waiting runs are taken longest first (``noisymix_app.sweep.schedule``).  Each run's output goes to
``DIR/sweep/logs/<run>.log``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
import time
from pathlib import Path

from noisymix_app.sweep.execute import RunFailed, execute_run
from noisymix_app.sweep.plan import Plan, RunSpec
from noisymix_app.sweep.plan_files import write_plan
from noisymix_app.sweep.pool import Gate, run_pool
from noisymix_app.sweep.schedule import ORDERS, Schedule
from noisymix_app.sweep.state import read_state, run_state, stale_reason, sweep_dir, write_state
from noisymix_app.sweep.table import refresh_table
from noisymix_infra.progress import progress
from noisymix_infra.workers import exit_with_parent, watch_parent

__all__ = ["run_local"]


def _worker(spec_dict: dict, out: str, env: dict[str, str], log: str, threads: int, parent_pid: int) -> None:
    """A worker process: ended with its parent, its devices and rank (``env``), output to its log,
    then ``execute_run``.  Issue 48: after a ``kill -9`` of ``noisymix reproduce`` both workers
    lived on and one finished a run; now the kernel ends them (Linux), and a thread watching the
    parent's pid does elsewhere (or should the kernel's signal not come)."""
    exit_with_parent(parent_pid)
    watch_parent(parent_pid)
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


def _pooled(plan: Plan, workers: int, runs_per_gpu: int) -> bool:
    """Whether the runs go to the pool of long-lived CPU workers: no GPU, and no run needs several
    processes (those keep a process per rank and run)."""
    return all(s is None for s in _slots(workers, runs_per_gpu)) and all(spec.gpus <= 1 for spec in plan.runs)


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
              members: int = 1, follow_load: bool = False, order: str = "longest", on_workers=None,
              gate: Gate | None = None, free_cores=None) -> dict[str, str]:
    """Run every unfinished run of ``plan``; return {run: final state}.

    ``workers=0``: in this process, one after another (``noisymix reproduce`` with one free core); there
    ``members > 1`` trains up to that many seeds of one config as one stacked model
    (``fullscale.training.members``) before each is evaluated as usual.
    ``after_run(name, state)`` is called when a run ends (tests inject interruptions there);
    ``tabulate=False`` leaves the table to the caller (``noisymix reproduce`` makes its figures).
    ``threads``: torch's threads per run (0: with ``workers=0`` decided as each run starts, from
    ``NOISYMIX_THREADS`` or the free cores; with workers, the cores shared among them, and one with
    ``follow_load``).
    ``follow_load`` (CPU workers): ``workers`` is the most runs side by side, as many running as cores
    are free (``noisymix_app.sweep.pool``; ``free_cores(own_pids)`` replaces its reading of the load);
    ``on_workers(n)`` is called whenever the number of runs side by side changes.
    ``order``: which waiting run goes next (``noisymix_app.sweep.schedule.ORDERS``; ``longest`` first by
    default).  ``gate``: trained runs wait for it to open before their evaluations (the pool; the other
    paths start no run before it opens).
    The caller claims ``out`` for its kind (a sweep, a reproduce report), not this function.
    KeyboardInterrupt stops the workers (each keeps its last checkpoint) and propagates."""
    out = Path(out)
    if order not in ORDERS:  # before anything is written
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    wide = [spec.name for spec in plan.runs if spec.gpus > 1]
    if wide and workers == 0:
        raise ValueError(f"runs {', '.join(wide[:3])} need several processes each (one per GPU): "
                         "give --workers >= 1 or --launcher slurm")
    write_plan(out, plan)
    states = {spec.name: run_state(out, spec) for spec in plan.runs}
    for spec in plan.runs:  # never retrained nor counted done behind the user's back: they choose
        if states[spec.name] == "stale":
            print(f"sweep: run {spec.name} is stale: {stale_reason(out / 'runs' / spec.name)}", file=sys.stderr)
    if any(s == "running" for s in states.values()):
        busy = [n for n, s in states.items() if s == "running"]
        print(f"sweep: {len(busy)} runs are being worked on by another process (skipped): {', '.join(busy[:5])}",
              file=sys.stderr)
    pending = [spec for spec in plan.runs if states[spec.name] in ("pending", "interrupted")
               or (states[spec.name] == "failed" and (retry_failed or not read_state(out, spec.name)
                                                      .get("deterministic")))]
    for spec in pending:  # a new invocation gives every run a fresh count of retries
        if read_state(out, spec.name).get("state") == "failed":
            write_state(out, spec.name, state="pending", attempts=0)
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
            refresh_table(out, plan)
        if after_run is not None:
            after_run(spec.name, state)

    show()
    try:
        if workers == 0:
            if gate is not None:
                gate.wait()
            if on_workers is not None and pending:
                on_workers(1)
            _serial(plan, out, pending, retries, counts, finished, show, members, threads)
            if on_workers is not None and pending:
                on_workers(0)
        elif _pooled(plan, workers, runs_per_gpu):
            run_pool(out, pending, workers=workers, retries=retries, finished=finished, counts=counts, show=show,
                     threads=threads or (1 if follow_load else max(1, (os.cpu_count() or 1) // workers)),
                     schedule=Schedule(list(plan.runs), order, out), follow_load=follow_load, gate=gate,
                     on_workers=on_workers, free_cores=free_cores, job=execute_run)
        else:
            if gate is not None:
                gate.wait()
            _parallel(out, pending, _slots(workers, runs_per_gpu), retries, threads, counts, finished, show,
                      Schedule(list(plan.runs), order, out), on_workers)
    finally:
        bar.close()
    if tabulate:
        refresh_table(out, plan)
    return {spec.name: run_state(out, spec) for spec in plan.runs}


def _member_groups(out: Path, pending: list[RunSpec], members: int) -> dict[str, list[RunSpec]]:
    """Pending runs to train as stacked groups: up to ``members`` runs whose configs differ only in
    the seed and none of which is trained yet, by the name of each group's first run."""
    from fullscale.training.members import groupable
    from noisymix_infra.config import config_to_dict

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
    from fullscale.training.members import train_members

    t0 = time.perf_counter()
    cfg = group[0].config()
    train_members(cfg, [spec.seed for spec in group], [out / "runs" / spec.name for spec in group])
    return (time.perf_counter() - t0) / len(group)


def _serial(plan: Plan, out: Path, pending: list[RunSpec], retries: int, counts: dict, finished, show,
            members: int = 1, threads: int = 0) -> None:
    """One run after another in this process.  Each run's torch threads are decided when it starts
    (``noisymix_infra.threads.torch_threads``: ``threads`` when > 0, else ``NOISYMIX_THREADS`` or the
    cores free then), not once for the whole invocation: a long ``noisymix reproduce`` kept the count
    sampled at its start while the machine's load changed (issue 32)."""
    from noisymix_infra.threads import torch_threads

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
              counts: dict, finished, show, schedule: Schedule | None = None, on_workers=None) -> None:
    """The queue over GPUs: each run in its own process(es) (one per GPU of the run), as slots free up,
    the waiting runs taken in ``schedule``'s order."""
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
    shown = -1
    try:
        while queue or groups:
            if schedule is not None and schedule.order == "longest":  # a stable sort: ties keep their order
                queue.sort(key=lambda item: -schedule.estimate(item[0]))
            for item in list(queue):
                spec, attempt = item
                if spec.gpus > capacity:
                    queue.remove(item)
                    write_state(out, spec.name, state="failed", deterministic=True,
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
                    log = sweep_dir(out) / "logs" / f"{spec.name}{f'.rank{rank}' if rank else ''}.log"
                    process = ctx.Process(target=_worker, args=(spec.as_dict(), str(out), env, str(log), threads,
                                                                    os.getpid()),
                                          name=f"sweep-{spec.name}-{rank}")
                    process.start()
                    group["processes"].append(process)
                    owner[process.sentinel] = (id(group), process)
            counts["running"] = len(groups)
            show()
            if on_workers is not None and len(groups) != shown:
                shown = len(groups)
                on_workers(shown)
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
                seconds = read_state(out, group["spec"].name).get("seconds")
                if schedule is not None and not any(group["codes"]) and isinstance(seconds, (int, float)):
                    schedule.ended(group["spec"], float(seconds))
                _group_ended(out, group, retries, queue, finished)
        if on_workers is not None and shown > 0:
            on_workers(0)
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
    if read_state(out, spec.name).get("state") == "running":  # killed: it wrote no state
        write_state(out, spec.name, state="failed", error=f"exit status {code}")
    if code != 3 and attempt < retries:  # 3: a deterministic failure
        print(f"sweep: run {spec.name} exited with {code}; retry {attempt + 1}/{retries}", file=sys.stderr)
        queue.append((spec, attempt + 1))
    else:
        finished(spec, "failed")
