"""The local launcher's CPU workers: long-lived processes that take runs one at a time (``run_pool``).

Why: a process per run paid the interpreter, torch and the project's imports each time (~2.7 s on
the development machine, ~100 s of the main job's 36 runs), and the number of runs side by side was
decided once, from a 0.25 s look at the load when the sweep started, so a moment's load at the start
slowed the whole job (issue 58).  Here each worker process (spawn context) imports once and then
serves runs sent over its pipe, each with ONE torch thread (``threads``), so what a run computes does
not depend on how many run beside it (issue 40).

Following the load (``follow_load``): the parent reads the free cores (``noisymix_infra.threads.CoreMeter``:
idle cores plus those its own workers keep busy) whenever a run ends and every ``SAMPLE_EVERY``
seconds while runs wait, and keeps that many runs going, at least one and at most ``workers``.  A
core that frees up gets a run (from an idle worker, or a new one); when load rises, a worker whose
run ends is given no other until a core is free again.  No run is ever stopped for the load.
Without ``follow_load`` exactly ``workers`` run side by side.

Everything else is the process-per-run launcher's: each run's output goes to ``sweep/logs/<run>.log``
(the worker's own between runs to ``sweep/logs/worker-<n>.log``); a failed run is retried up to
``retries`` times unless it failed deterministically (``RunFailed.deterministic``, exit status 3);
a worker that dies during a run (killed, ``os._exit``, a segfault) fails that run, which is retried
in a new worker; workers end with the parent (``noisymix_infra.workers``), and an interruption of the
parent (Ctrl-C, an exception) stops them, each keeping its last checkpoint.  A worker whose run failed
in a way a retry may mend is retired: the next run starts in a fresh process (one that failed
deterministically, a non-finite loss or a config error, leaves its process as it was).

Issue 64 (a screen runs the user's own code in these workers): each worker is the leader of a process group
of its own, and what a run starts (a user's function that spawns a process) is in that group: the group is
killed when the worker ends, however it ends (``_end_group``: by the worker on its way out, and by the parent
after a worker died or was stopped), so no process of a run outlives the sweep.  A worker stopped by the
parent (SIGTERM) leaves through Python's exit (``_stop_on_term``), so multiprocessing releases what its imports
made: no "leaked semaphore" warnings on a stop.  A run whose worker a signal killed says so ("killed by
SIGKILL"), not only its exit status.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path

from noisymix_app.sweep.plan import RunSpec
from noisymix_app.sweep.schedule import Schedule
from noisymix_app.sweep.state import read_state, sweep_dir, write_state

__all__ = ["SAMPLE_EVERY", "Gate", "GateFailed", "run_pool"]

#: seconds between two readings of the load while runs wait for a core (a reading costs no wait)
SAMPLE_EVERY = 2.0
#: how often the parent looks at a gate that is not open yet
_GATE_POLL = 0.5


@dataclass
class Gate:
    """The evaluations' gate: a trained run waits before its evaluations until ``opened`` is set
    (``noisymix reproduce`` opens it when its -C and -P sets are made); ``failed`` set stops the sweep
    (``GateFailed``), every worker keeping its checkpoint."""

    opened: threading.Event = field(default_factory=threading.Event)
    failed: threading.Event = field(default_factory=threading.Event)

    def wait(self) -> None:
        """Block until the gate opens (in the launcher's process); ``GateFailed`` if it fails."""
        while not self.opened.wait(_GATE_POLL):
            if self.failed.is_set():
                raise GateFailed("the steps the evaluations wait for failed")
        if self.failed.is_set():
            raise GateFailed("the steps the evaluations wait for failed")


class GateFailed(RuntimeError):
    """The steps a gate waited for failed: the sweep stopped."""


# ---------------------------------------------------------------------------------------------- worker


def _redirect(path: Path, previous):
    """Send this process's stdout and stderr (its file descriptors too: torch's C++ warnings) to
    ``path``, appending; close the previous log."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a", buffering=1)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(handle.fileno(), 1)
    os.dup2(handle.fileno(), 2)
    sys.stdout, sys.stderr = handle, handle
    if previous is not None:
        previous.close()
    return handle


def _stop_on_term(signum, frame) -> None:
    """SIGTERM in a worker: leave through Python's exit (finalizers run, semaphores are released; the run's
    last checkpoint is kept), never again on a second one."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def _end_group(pgid: int | None = None) -> None:
    """Kill every other process of this worker's group (``pgid`` None: this process's own group, from a worker
    on its way out; else a worker's group, from the parent); nothing when the group is gone."""
    try:
        if pgid is None:
            if os.getpgrp() != os.getpid():  # not a group of its own: never the parent's group
                return
            previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                os.killpg(os.getpgrp(), signal.SIGTERM)
            finally:
                signal.signal(signal.SIGTERM, previous)
        else:
            os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _signal_words(code: int | None) -> str:
    """A worker's exit status in words: a negative one is the signal that killed it."""
    if isinstance(code, int) and code < 0:
        try:
            return f"its worker process was killed by {signal.Signals(-code).name} (exit status {code})"
        except ValueError:
            pass
    return f"its worker process ended (exit status {code})"


def _serve(conn, parent_pid: int, threads: int, own_log: str) -> None:
    """A worker (``_serve_run``) in a process group of its own, which it ends on its way out (module docstring)."""
    os.setpgrp()
    signal.signal(signal.SIGTERM, _stop_on_term)
    try:
        _serve_run(conn, parent_pid, threads, own_log)
    finally:
        _end_group()


def _serve_run(conn, parent_pid: int, threads: int, own_log: str) -> None:
    """A worker process: ended with its parent, imports once, then runs what the parent sends, one run
    at a time: ``("run", job, spec, out, log, gated)`` -> ``("ended", code, message)``, code 0 (done),
    1 (failed; a retry may help) or 3 (failed deterministically); ``None`` or a closed pipe: exit.
    ``gated``: after training, ``("ready",)`` is sent and the evaluations wait for ``("go",)``."""
    from noisymix_infra.workers import exit_with_parent, watch_parent

    exit_with_parent(parent_pid)
    watch_parent(parent_pid)
    os.environ.setdefault("NOISYMIX_PROGRESS", "0")
    handle = _redirect(Path(own_log), None)
    import torch

    # paid once here, not by every run: what a run imports
    import fullscale.evaluation
    import fullscale.training.loop  # noqa: F401
    from noisymix_app.sweep.execute import RunFailed

    def go() -> None:
        conn.send(("ready",))
        if conn.recv() != ("go",):
            raise KeyboardInterrupt  # the parent stops the sweep
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            message = None
        if message is None:  # a normal exit: multiprocessing's finalizers release what the imports made
            return
        _, job, spec, out, log, gated = message
        handle = _redirect(Path(log), handle)
        torch.set_num_threads(threads)  # each run's, whatever a run before it left
        code, text = 0, ""
        try:
            job(RunSpec.from_dict(spec), out, before_evaluate=go if gated else None)
        except RunFailed as error:
            print(str(error), flush=True)
            code, text = (3 if error.deterministic else 1), str(error)
        except Exception as error:  # not a RunFailed (a stand-in job): failed, a retry may help
            import traceback

            traceback.print_exc()
            code, text = 1, f"{type(error).__name__}: {error}"
        handle = _redirect(Path(own_log), handle)
        conn.send(("ended", code, text))


# ---------------------------------------------------------------------------------------------- parent


@dataclass
class _Worker:
    number: int
    process: multiprocessing.process.BaseProcess
    conn: object
    spec: RunSpec | None = None
    attempt: int = 0
    started: float = 0.0
    waiting: bool = False  # trained, waiting at the gate
    closing: bool = False  # told to exit


def run_pool(out: Path, pending: list[RunSpec], *, workers: int, retries: int, threads: int, finished,
             counts: dict, show, schedule: Schedule, follow_load: bool = False, gate: Gate | None = None,
             on_workers: Callable[[int], None] | None = None, free_cores: Callable | None = None,
             job: Callable | None = None, sample_every: float = SAMPLE_EVERY) -> None:
    """Run ``pending`` in long-lived worker processes; see the module doc.

    ``workers``: the most runs side by side (with ``follow_load``, as many as the free cores allow up
    to it; else exactly it).  ``free_cores(own_pids) -> float | None``: the cores free for the pool
    (default: a ``CoreMeter``; tests give their own).  ``job(spec, out, before_evaluate=...)`` runs a
    run in a worker (default ``execute_run``; picklable, so a module-level function).
    ``on_workers(n)``: called whenever the number of runs side by side changes."""
    from noisymix_app.sweep.execute import execute_run
    from noisymix_infra.threads import CoreMeter

    job = job or execute_run
    ctx = multiprocessing.get_context("spawn")  # no fork of a parent that holds threads and locks
    meter = None
    if follow_load and free_cores is None:
        meter = CoreMeter()
        time.sleep(meter.min_seconds)  # the first reading needs a span to measure
        free_cores = meter.free
    queue = list(pending)
    attempts = {spec.name: 0 for spec in pending}
    pool: list[_Worker] = []
    numbers = iter(range(1, 1_000_000))
    state = {"target": workers, "sampled": -math.inf, "shown": -1}

    def busy() -> list[_Worker]:
        return [w for w in pool if w.spec is not None]

    def report() -> None:
        n = len(busy())
        counts["running"] = n
        if n != state["shown"]:
            state["shown"] = n
            show()
            if on_workers is not None:
                on_workers(n)

    def sample(force: bool) -> None:
        now = time.monotonic()
        if not follow_load or (not force and now - state["sampled"] < 0.9 * sample_every):
            return
        free = free_cores([w.process.pid for w in pool if w.process.pid is not None])
        state["target"] = workers if free is None else max(1, min(workers, int(free + 0.5)))
        state["sampled"] = now

    def start_worker() -> _Worker:
        number = next(numbers)
        here, there = ctx.Pipe()
        log = sweep_dir(out) / "logs" / f"worker-{number}.log"
        process = ctx.Process(target=_serve, args=(there, os.getpid(), threads, str(log)),
                              name=f"sweep-worker-{number}", daemon=False)
        process.start()
        there.close()
        if meter is not None:
            meter.watch([process.pid])
        worker = _Worker(number, process, here)
        pool.append(worker)
        return worker

    def dispatch() -> None:
        while queue:
            computing = sum(1 for w in busy() if not w.waiting)
            if computing >= state["target"]:
                return
            idle = next((w for w in pool if w.spec is None and not w.closing and w.process.is_alive()), None)
            if idle is None:
                if len(pool) >= workers:
                    return
                idle = start_worker()
            spec = schedule.pick(queue)
            queue.remove(spec)
            log = sweep_dir(out) / "logs" / f"{spec.name}.log"
            try:
                idle.conn.send(("run", job, spec.as_dict(), str(out), str(log), gate is not None))
            except (BrokenPipeError, OSError):  # it died meanwhile: its sentinel says so; the run waits on
                queue.insert(0, spec)
                idle.closing = True
                continue
            idle.spec, idle.attempt, idle.started, idle.waiting = spec, attempts[spec.name], time.monotonic(), False

    def retire(worker: _Worker) -> None:
        if not worker.closing:
            worker.closing = True
            with contextlib.suppress(BrokenPipeError, OSError):
                worker.conn.send(None)

    def run_ended(worker: _Worker, code: int, why: str) -> None:
        """``worker``'s run ended with ``code`` (0 done, 3 deterministic failure, else a failure or a
        crash a retry may mend); ``why`` says how, for the state and the retry's line."""
        spec = worker.spec
        worker.spec, worker.waiting = None, False
        if code == 0:
            seconds = read_state(out, spec.name).get("seconds")
            schedule.ended(spec, float(seconds) if isinstance(seconds, (int, float)) else
                           time.monotonic() - worker.started)
            finished(spec, "done")
            return
        if code != 3:  # a failure a retry may mend may have left the process unwell: the next run gets a fresh one
            retire(worker)
        if read_state(out, spec.name).get("state") == "running":  # killed: it wrote no state
            write_state(out, spec.name, state="failed", error=why)
        if code != 3 and worker.attempt < retries:  # 3: a deterministic failure
            print(f"sweep: run {spec.name} failed ({why}); retry {worker.attempt + 1}/{retries}", file=sys.stderr)
            attempts[spec.name] = worker.attempt + 1
            queue.append(spec)
        else:
            finished(spec, "failed")

    def message(worker: _Worker, text) -> None:
        if text == ("ready",):
            if gate is None or gate.opened.is_set():
                with contextlib.suppress(BrokenPipeError, OSError):  # it died: its sentinel says so
                    worker.conn.send(("go",))
            else:
                worker.waiting = True
        elif isinstance(text, tuple) and text[:1] == ("ended",) and worker.spec is not None:
            why = str(text[2]).removeprefix(f"run {worker.spec.name} failed: ")
            run_ended(worker, int(text[1]), why or "failed")

    def died(worker: _Worker) -> None:
        with contextlib.suppress(EOFError, OSError):
            while worker.conn.poll():  # what it said before it ended comes first
                message(worker, worker.conn.recv())
        worker.process.join()
        _end_group(worker.process.pid)  # what its run started dies with it
        pool.remove(worker)
        worker.conn.close()
        if worker.spec is not None:
            run_ended(worker, worker.process.exitcode if worker.process.exitcode != 0 else 1,
                      _signal_words(worker.process.exitcode))

    try:
        sample(force=True)
        while queue or busy():
            if gate is not None and gate.failed.is_set():
                raise GateFailed("the steps the evaluations wait for failed")
            if gate is not None and gate.opened.is_set():
                for worker in busy():
                    if worker.waiting:
                        worker.waiting = False
                        with contextlib.suppress(BrokenPipeError, OSError):  # died: its sentinel says so
                            worker.conn.send(("go",))
            dispatch()
            if not queue:
                for worker in pool:
                    if worker.spec is None:
                        retire(worker)
            report()
            # readings every few seconds while runs wait, even with every worker busy: the reading when a
            # run ends then covers the last few seconds, not the whole run
            timeout = sample_every if follow_load and queue else None
            if gate is not None and not gate.opened.is_set():
                timeout = _GATE_POLL if timeout is None else min(timeout, _GATE_POLL)
            ready = wait([w.conn for w in busy()] + [w.process.sentinel for w in pool], timeout)
            ended = False
            for worker in list(pool):
                had = worker.spec
                if worker.conn in ready:
                    try:
                        message(worker, worker.conn.recv())
                    except (EOFError, OSError):  # its end of the pipe closed: it is ending
                        died(worker)
                elif worker.process.sentinel in ready:
                    died(worker)
                ended = ended or (had is not None and worker.spec is None)
            sample(force=ended)
        report()
    except BaseException:
        for worker in pool:  # SIGTERM: each keeps its last checkpoint
            if worker.process.is_alive():
                worker.process.terminate()
        for worker in pool:
            worker.process.join(30)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            _end_group(worker.process.pid)
        raise
    finally:
        # told to end, the workers end on their own: an interpreter with torch loaded takes ~2 s to tear down
        # under load (measured), which the job need not wait for (multiprocessing reaps them later)
        for worker in pool:
            retire(worker)
            worker.conn.close()
