"""The one way to set torch's CPU threads: ``torch_threads(n)`` around a command's work.

Every ``noisymix`` command accepts ``--threads N`` (added by ``noisymix_app.cli``): N >= 1 threads, or
0 for the default, which is the environment variable ``NOISYMIX_THREADS`` when set and otherwise
``auto_threads()``: as many threads as the machine has *free* cores at the start of the work, at
least one.  A command module may name its default in ``THREADS`` (the toy, verify and corrupt use 1:
their work is many small tensor ops).

Why not torch's own default (one thread per core): a laptop is never idle.  With a busy core beside
it, OpenMP's second thread waits at every barrier for a core it does not get (and spins while it
waits); on a 2-core VM the README's first run took 12x longer (issue 32).  ``auto_threads()`` counts
the cores that were idle over a short sample of ``/proc/stat`` when the work starts, so a run
started beside other work uses only the cores that are free, and one on an idle machine all of
them.  Chosen from ``noisymix bench threads`` (benchmarks/RESULTS.md, "Threads on a busy machine"),
against one thread always (robust, but slower on an idle machine) and OpenMP's passive wait
(``OMP_WAIT_POLICY=PASSIVE``: no faster beside a busy core than one thread, and much slower idle, as
every parallel region then wakes a sleeping thread).  Long jobs decide again per run
(``noisymix reproduce`` and local sweeps), so load that comes or goes is followed between runs:
the serial runner sets each run's threads as it starts, and the local launcher's pool of one-thread
workers (``noisymix_app.sweep.pool``) starts another worker when a core frees up, reading the load
with a ``CoreMeter``, which counts the pool's own workers as theirs, not as load.

The previous count is restored afterwards.  More threads than ``MAX_PER_CORE`` per core are refused in
one line (torch crashed with a segmentation fault at ``--threads 99999``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Iterator

__all__ = ["ENV", "MAX_PER_CORE", "CoreMeter", "add_threads_argument", "auto_threads", "free_cores",
           "process_cpu_ticks", "resolve_threads", "torch_threads", "usable_cores"]

ENV = "NOISYMIX_THREADS"

#: the most threads per usable core a count may ask for: beyond a few per core, more threads only
#: add switching, and tens of thousands crash torch's thread pool
MAX_PER_CORE = 4

def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, e.g. under ``taskset`` or SLURM)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cpu_times(cpus: set[int] | None) -> dict[int, tuple[int, int]] | None:
    """``{cpu: (idle, total)}`` jiffies of the given cpus from ``/proc/stat``; ``None`` where unreadable."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            lines = handle.readlines()
    except (OSError, UnicodeDecodeError):
        return None
    times = {}
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or not name[3:].isdigit():
            continue
        cpu = int(name[3:])
        if cpus is not None and cpu not in cpus:
            continue
        try:
            values = [int(v) for v in fields[:8]]
        except ValueError:
            return None
        if len(values) < 5:
            return None
        idle = values[3] + values[4]  # idle + iowait; steal (values[7]) is time another guest had
        times[cpu] = (idle, sum(values))
    return times or None


def process_cpu_ticks(pid: int) -> int | None:
    """The CPU time process ``pid`` has used so far (all its threads, user + system), in the clock ticks
    ``/proc/stat`` counts in; ``None`` where ``/proc/PID/stat`` cannot be read (gone, not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: the fields follow the last ")"
    fields = text[text.rfind(")") + 2:].split()
    try:
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    except (IndexError, ValueError):
        return None


def _idle_cores(before: dict, after: dict) -> float:
    free = 0.0
    for cpu, (idle, total) in after.items():
        if cpu not in before:
            continue
        d_total = total - before[cpu][1]
        if d_total > 0:
            free += min(1.0, max(0.0, (idle - before[cpu][0]) / d_total))
    return free


def _ticks_per_core(before: dict, after: dict) -> float:
    """The ticks one core counted between two readings (the mean over the cores read)."""
    spans = [after[c][1] - before[c][1] for c in after if c in before]
    return sum(spans) / len(spans) if spans else 0.0


class CoreMeter:
    """The cores free for a pool of worker processes, read without waiting: each ``free(own)`` looks at
    the time since the previous reading, so a launcher that reads it on every event (a run ended, a
    few seconds passed) learns the load of the last few seconds and never sleeps to sample it.

    "Free for the pool" is the cores that were idle plus the cores the processes ``own`` (the pool's
    workers) kept busy: their work is not load, and counting it as load would stop the pool from
    keeping the cores it already uses.  A reading closer than ``min_seconds`` to the previous one is
    too short to measure (the kernel counts in ticks of 10 ms) and returns the previous figure."""

    def __init__(self, min_seconds: float = 0.25):
        try:
            self._cpus: set[int] | None = set(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            self._cpus = None
        self.min_seconds = min_seconds
        self._at = time.monotonic()
        self._times = _cpu_times(self._cpus)
        self._own: dict[int, int] = {}
        self._last: float | None = None

    def _own_ticks(self, own) -> dict[int, int]:
        ticks = {}
        for pid in own:
            value = process_cpu_ticks(pid)
            if value is not None:
                ticks[pid] = value
        return ticks

    def watch(self, own) -> None:
        """Start counting the CPU time of ``own`` from now (call it when a worker starts)."""
        self._own.update({p: t for p, t in self._own_ticks(own).items() if p not in self._own})

    def free(self, own=()) -> float | None:
        """The cores free for the pool since the previous reading: idle cores plus those ``own`` used,
        at most the usable cores; ``None`` where ``/proc/stat`` cannot be read."""
        now = time.monotonic()
        if self._times is None:
            return None
        if now - self._at < self.min_seconds and self._last is not None:
            return self._last
        times = _cpu_times(self._cpus)
        if times is None:
            return None
        ticks = self._own_ticks(own)
        per_core = _ticks_per_core(self._times, times)
        used = sum(t - self._own[p] for p, t in ticks.items() if p in self._own)
        free = _idle_cores(self._times, times) + (used / per_core if per_core > 0 else 0.0)
        self._at, self._times, self._own = now, times, ticks
        self._last = min(float(len(times)), max(0.0, free))
        return self._last


def free_cores(sample_seconds: float = 0.25, own=()) -> float | None:
    """How many of the usable cores were idle over ``sample_seconds`` (a fraction counts: 1.5 means
    three half-idle cores or one idle and one half-busy), plus those the processes ``own`` kept busy
    (``CoreMeter``); ``None`` where ``/proc/stat`` is missing."""
    meter = CoreMeter(min_seconds=0.0)
    meter.watch(own)
    time.sleep(sample_seconds)
    return meter.free(own)


def auto_threads(sample_seconds: float = 0.25) -> int:
    """The default thread count: the free cores (rounded to the nearest whole core), at least 1 and
    at most the usable cores; all usable cores where the load cannot be read."""
    usable = usable_cores()
    free = free_cores(sample_seconds)
    if free is None:
        return usable
    return max(1, min(usable, int(free + 0.5)))


def _check_count(n: int, where: str) -> int:
    if n < 0:
        raise ValueError(f"{where} must be >= 1 (or 0: {ENV} or the free cores), got {n}")
    limit = MAX_PER_CORE * usable_cores()
    if n > limit:
        raise ValueError(f"{where} {n} is more than {MAX_PER_CORE} threads per core of this machine's "
                         f"{usable_cores()} usable core(s) (at most {limit})")
    return n


def _count(text: str, where: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{where} must be a whole number of threads, got {text!r}") from None
    return _check_count(n, where)


def resolve_threads(n: int | None) -> int | None:
    """The thread count ``n`` stands for: ``n`` itself (>= 1), or for ``None`` / 0 the value of
    ``NOISYMIX_THREADS`` when set, else ``None`` (the caller's default: ``auto_threads()``)."""
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int):
            raise ValueError(f"threads must be a whole number, got {n!r}")
        if _check_count(n, "--threads") > 0:
            return n
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    value = _count(text, ENV)
    return value or None


@contextlib.contextmanager
def torch_threads(n: int | None, *, auto: bool = True) -> Iterator[int]:
    """Run the block with ``n`` torch intra-op threads (``None`` or 0: ``NOISYMIX_THREADS``, else
    ``auto_threads()``, or with ``auto=False`` torch's count as it is), restoring the previous count
    afterwards; yields the count in effect."""
    import torch  # here, not at the top: ``noisymix --help`` does not import torch

    wanted = resolve_threads(n)
    if wanted is None and auto:
        wanted = auto_threads()
    before = torch.get_num_threads()
    if wanted is not None:
        torch.set_num_threads(wanted)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def add_threads_argument(parser: argparse.ArgumentParser, default: int | None) -> None:
    """``--threads N`` with the command's default (``None``: ``NOISYMIX_THREADS`` or the free cores)."""
    shown = f"{ENV} or the free cores" if not default else str(default)
    parser.add_argument("--threads", type=int, default=default, metavar="N",
                        help=f"torch CPU threads while the command runs (0: {ENV} or the cores free at "
                             f"the start; default here: {shown})")
