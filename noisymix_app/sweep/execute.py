"""One run of the sweep, the job every launcher runs: ``execute_run``.

``fullscale.training.loop.train(cfg, RUN, resume=True)`` unless ``RUN/final.pt`` exists, then
``fullscale.evaluation.evaluate`` per suite unless its JSON is complete for that ``final.pt``.
So the same command, run again, skips finished runs, resumes killed ones from ``checkpoint.pt``
(the trainer's exact resume) and evaluates what is missing.  A failure raises ``RunFailed``, which
says whether a retry could help: a non-finite loss (``fullscale.training.checks.NonFiniteLoss``) or a config
error fails again, so the launchers report it and never retry it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from noisymix_app.sweep.plan import RunSpec
from noisymix_app.sweep.state import check_config, eval_done, read_state, sweep_dir, write_state
from noisymix_infra.io import directory_lock

__all__ = ["RunFailed", "execute_run", "ran_on"]

#: exceptions that fail again if retried: a diverged run, bad config or input
_DETERMINISTIC = ("NonFiniteLoss", "ValueError", "TypeError", "KeyError", "FileNotFoundError")


class RunFailed(RuntimeError):
    """A run of the sweep failed; ``deterministic`` says whether a retry could help."""

    def __init__(self, name: str, message: str, deterministic: bool):
        super().__init__(f"run {name} failed: {message}")
        self.deterministic = deterministic


def execute_run(spec: RunSpec, out: str | Path, *, device: str | None = None,
                train_seconds: float | None = None, before_evaluate: Callable[[], None] | None = None) -> str:
    """Train (or resume, or skip) and evaluate one run of the sweep; return ``"done"``.

    Typed calls of ``fullscale.training.loop.train`` and ``fullscale.evaluation.evaluate``;
    ``train_seconds``: this run's share of the stacked group that trained it (``--members``).  Under
    ``torchrun``-style environments (``RANK``) only rank 0 takes the run's lock, writes its
    state and evaluates; every rank trains.  ``before_evaluate()`` is called after training when an
    evaluation is still to do, and may wait: ``noisymix reproduce`` trains while it makes the -C and
    -P sets, and the evaluations that read them wait until they are made (the wait counts in no step's
    seconds).  A failure raises ``RunFailed``."""
    out = Path(out)
    run_dir = out / "runs" / spec.name
    rank0 = int(os.environ.get("RANK", "0")) == 0
    lock = directory_lock(sweep_dir(out) / "locks" / spec.name, "sweeping") if rank0 else contextlib.nullcontext()
    try:
        lock.__enter__()
    except ValueError as error:  # another process works on this run: leave it (and its state) alone
        raise RunFailed(spec.name, str(error), deterministic=True) from None
    with contextlib.ExitStack() as stack:
        stack.push(lock)
        attempts = int(read_state(out, spec.name).get("attempts", 0)) + 1 if rank0 else 0
        if rank0:
            # a new attempt starts clean: the error and traceback of an interrupted one are not its own (issue 32)
            write_state(out, spec.name, state="running", attempts=attempts, error=None, timings={},
                         traceback=None, deterministic=None, step=None)
        started = time.perf_counter()
        # step -> seconds, for the steps run by this call (and its share of a group's training)
        timings: dict[str, float] = {} if train_seconds is None else {"train": train_seconds}
        waited = [0.0]

        def gate() -> None:
            t0 = time.perf_counter()
            before_evaluate()
            waited[0] += time.perf_counter() - t0

        try:
            _train_and_evaluate(spec, run_dir, out, device, rank0, timings, gate if before_evaluate else None)
        except BaseException as error:
            deterministic = type(error).__name__ in _DETERMINISTIC
            message = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
            if rank0:
                interrupted = isinstance(error, KeyboardInterrupt | SystemExit)
                write_state(out, spec.name, state="interrupted" if interrupted else "failed", error=message,
                             step=timings.pop("_current", None), timings=list(timings.items()),
                             deterministic=deterministic, traceback=traceback.format_exc()[-4000:])
            if isinstance(error, Exception):
                raise RunFailed(spec.name, message, deterministic) from error
            raise
        if rank0:
            timings.pop("_current", None)
            write_state(out, spec.name, state="done", error=None, step=None, timings=list(timings.items()),
                         seconds=round(time.perf_counter() - started - waited[0], 2), traceback=None,
                         deterministic=None,
                         ran_on=ran_on())
    return "done"


def ran_on() -> dict:
    """Where and how a step computed, recorded when it ran (a report describes the work that made
    its numbers, not the last invocation; issue 32): the CPU, torch's CPU kernels, torch's threads
    in the process that ran it, the host, torch's version, the time it finished."""
    from noisymix_infra.provenance import machine, now

    found = machine()
    return {"cpu_model": found["cpu_model"], "cpu_capability": found["cpu_capability"],
            "cpu_count": found["cpu_count"], "torch_threads": found["torch_threads"], "host": socket.gethostname(),
            "torch": found["versions"].get("torch"), "finished": now()}


def _train_and_evaluate(spec: RunSpec, run_dir: Path, out: Path, device: str | None, rank0: bool,
                        timings: dict, before_evaluate: Callable[[], None] | None = None) -> None:
    """``timings["_current"]`` names the step under way (``train`` or ``evaluate SUITE``); each
    finished step adds its seconds under that name."""
    timings["_current"] = "train"
    cfg = check_config(spec, run_dir)
    if not (run_dir / "final.pt").is_file():
        from fullscale.training.loop import train

        t0 = time.perf_counter()
        train(cfg, run_dir, resume=True)
        timings["train"] = round(time.perf_counter() - t0, 2)
    if not rank0:
        return
    import torch

    from fullscale.evaluation import EvalOptions, evaluate

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if before_evaluate is not None and not all(eval_done(run_dir, ev) for ev in spec.evals):
        before_evaluate()
    for ev in spec.evals:
        if eval_done(run_dir, ev):
            continue
        timings["_current"] = f"evaluate {ev.suite}"
        t0 = time.perf_counter()
        evaluate(run_dir, ev.suite, data_root=ev.data_root, device=device,
                 options=EvalOptions(partial=ev.partial))
        timings[f"evaluate {ev.suite}"] = round(time.perf_counter() - t0, 2)

