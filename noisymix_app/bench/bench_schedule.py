"""``noisymix bench schedule``: in which order a sweep's waiting runs should go (issue 58, goal 3).

With W workers a sweep ends when its last run ends; whatever run is taken last decides how long the
other W - 1 cores sit idle at the tail.  This benchmark runs the same small sweep (a reproduce plan's
runs, ``--seeds`` seeds, the plan's -C/-P sets made once beforehand and not timed) once per order of
``--orders`` (``noisymix_app.sweep.schedule.ORDERS``: ``plan``, the plan's order, seed after seed with
the methods interleaved; ``longest``, the longest estimate first), the orders alternating over
``--repeats`` rounds so a drift of the machine hits each, each sweep in the local launcher's pool of
``--workers`` one-thread worker processes (fixed, not following the load: the order is what is
compared).  Per sweep it records the wall time, each run's seconds (``sweep/state``) and end, the
count of runs side by side over time, and the *tail*: once nothing is left to take, each worker idles
from the end of its last run to the end of the sweep; the tail's idle core-seconds are their sum
(``tail_idle``).

Real sweeps are noisy (one sweep per order and round), so the measured per-run seconds (the median
over the sweeps) are also replayed as list scheduling on W workers for every order, and beside the
lower bound of any order (``max(longest run, total / W)``): the replay isolates what the order alone
changes.  The machine (CPU model, load average before and after each sweep) comes with the numbers.

``--busy S`` measures issue 58's goal 2 instead: the sweep in the first order with the workers following
the free cores, once on the idle machine and once with a busy process spinning on one core for its
first ``S`` seconds, alternating over the rounds.  What the busy spell costs is the difference of the
walls (ideal: about ``S / 2`` on two cores, the half of the machine it took); a worker count read once
at the start, as before, would have kept one worker for the whole sweep, whose wall the replay on one
worker gives (``one_worker_replay_s``).

``--quick``: the quick plan's two methods, two seeds, one epoch on 128 images (the path end to end in
seconds, for the tests; its numbers are meaningless).  The comparison that chooses the default order
is the laptop plan's, run on an idle machine: ``noisymix bench schedule --out FILE`` (default
``--plan laptop --seeds 2``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import time
from pathlib import Path

__all__ = ["add_arguments", "replay", "run", "tail_idle"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from noisymix_app.sweep.schedule import ORDERS

    parser.add_argument("--plan", default="laptop", help="the reproduce plan whose runs make the sweep")
    parser.add_argument("--seeds", type=int, default=2, help="seeds of each method (0 .. N-1)")
    parser.add_argument("--orders", default=",".join(ORDERS), help=f"orders compared, of {', '.join(ORDERS)}")
    parser.add_argument("--workers", type=int, default=0, help="workers side by side (0: the usable cores)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds (every order once a round)")
    parser.add_argument("--workdir", default="bench-schedule", help="the sets and sweeps (replaced each sweep)")
    parser.add_argument("--busy", type=float, default=0.0,
                        help="seconds of one busy core at each sweep's start, against the same sweep idle "
                             "(workers follow the free cores; 0: compare the orders)")
    parser.add_argument("--quick", action="store_true", help="the quick plan, 2 seeds (a smoke run of the path)")


def _load() -> list[float] | None:
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


def tail_idle(ends: list[float], workers: int) -> tuple[float, float]:
    """``(tail seconds, idle core-seconds in it)`` from the times the runs ended: once nothing is left to
    take, each worker ends its run and stays idle, so the last ``workers`` ends are each worker's last;
    the tail runs from the first of them to the last, and each idles from its end to the last."""
    if not ends:
        return 0.0, 0.0
    last = sorted(ends)[-workers:]
    idle = sum(last[-1] - e for e in last) + (workers - len(last)) * last[-1]
    return last[-1] - last[0], idle


def replay(seconds: dict[str, float], order: str, specs: list, workers: int) -> dict[str, float]:
    """List scheduling of runs of the given ``seconds`` on ``workers`` in ``order``: ``plan``, ``longest``
    (the launcher's own ``Schedule``, its estimates refined by each run as it ends) or ``shortest`` (its
    reverse, the worst of the three): the makespan and the tail's idle core-seconds (``tail_idle``)."""
    from noisymix_app.sweep.schedule import Schedule

    schedule = Schedule(specs, "plan" if order == "plan" else "longest")
    waiting = list(specs)
    free_at = [0.0] * workers
    running: list[tuple[float, int]] = []  # (end, index in specs)
    while waiting:
        k = free_at.index(min(free_at))
        now = free_at[k]
        for end, i in sorted(r for r in running if r[0] <= now):  # what has ended refines the estimates
            schedule.ended(specs[i], seconds[specs[i].name])
            running.remove((end, i))
        if order == "shortest":
            spec = min(waiting, key=lambda s: (schedule.estimate(s), specs.index(s)))
        else:
            spec = schedule.pick(waiting)
        waiting.remove(spec)
        free_at[k] = now + seconds[spec.name]
        running.append((free_at[k], specs.index(spec)))
    return {"makespan_s": round(max(free_at), 1),
            "tail_idle_core_s": round(tail_idle(free_at, workers)[1], 1)}


def _sets(plan, work: Path) -> tuple[Path, Path | None]:
    """The plan's -C and -P sets in ``work/data`` (made once; ``noisymix corrupt`` skips what is made)."""
    from noisymix_app.cli import main
    from noisymix_app.reproduce.steps import _corrupted, _perturbed, _steps

    before, _ = _steps(plan, work, None)
    for step in before:
        if step.name.startswith("corrupt") and not step.done.exists():
            if main(list(step.argv)) != 0:
                raise RuntimeError(f"noisymix {' '.join(step.argv)} failed")
    return _corrupted(plan, work), _perturbed(plan, work)


def _spin(seconds: float):
    """A process that keeps one core busy for ``seconds`` (the user's browser, a package install)."""
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-c", f"import time\nend = time.time() + {seconds}\n"
                             "while time.time() < end: pass"])


def _sweep(runs, folder: Path, order: str, workers: int, busy: float = 0.0, follow: bool = False) -> dict:
    from noisymix_app.sweep.local import run_local
    from noisymix_app.sweep.state import read_state

    if folder.exists():
        shutil.rmtree(folder)
    timeline: list[tuple[float, int]] = []
    ended: list[tuple[str, float]] = []
    load_before = _load()
    # the busy core shows in /proc/stat before the pool first reads it, then stays busy ``busy`` s of the sweep
    spinner = _spin(busy + 2.0) if busy > 0 else None
    if spinner is not None:
        time.sleep(2.0)
    started = time.perf_counter()
    try:
        states = run_local(runs, folder, workers=workers, threads=1, retries=0, tabulate=False, order=order,
                           follow_load=follow,
                           on_workers=lambda n: timeline.append((time.perf_counter() - started, n)),
                           after_run=lambda name, state: ended.append((name, time.perf_counter() - started)))
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    wall = time.perf_counter() - started
    if set(states.values()) != {"done"}:
        failed = sorted(name for name, state in states.items() if state != "done")
        raise RuntimeError(f"runs {', '.join(failed[:3])} failed (their logs: {folder / 'sweep' / 'logs'})")
    tail, idle = tail_idle([t for _, t in ended], workers)
    return {"order": order, "busy_s": busy, "follow": follow, "wall_s": round(wall, 1), "tail_s": round(tail, 1),
            "tail_idle_core_s": round(idle, 1),
            "run_s": {spec.name: read_state(folder, spec.name).get("seconds") for spec in runs.runs},
            "ended": [[name, round(t, 1)] for name, t in ended],
            "timeline": [[round(t, 1), n] for t, n in timeline],
            "load_before": load_before, "load_after": _load()}


def _median_seconds(runs, sweeps: list[dict]) -> dict[str, float]:
    """Each run's seconds, the median over the sweeps that ran it."""
    return {spec.name: statistics.median(s["run_s"][spec.name] for s in sweeps) for spec in runs.runs}


def _header(name: str, seeds: int, runs, workers: int) -> dict:
    """What every result of this benchmark says first: the sweep's plan and size, the machine, its load after."""
    from noisymix_infra.provenance import machine

    found = machine()
    return {"plan": name, "seeds": seeds, "runs": len(runs.runs), "workers": workers,
            "cpu_model": found.get("cpu_model"), "cpu_count": found.get("cpu_count"), "load_average_after": _load()}


def run(args: argparse.Namespace) -> dict:
    from noisymix_app.reproduce.plans import PLANS
    from noisymix_app.sweep.plan import plan_from_reproduce
    from noisymix_app.sweep.schedule import ORDERS
    from noisymix_infra.threads import usable_cores

    name = "quick" if args.quick else args.plan
    if name not in PLANS:
        raise ValueError(f"--plan must be one of {', '.join(PLANS)}, got {name!r}")
    orders = [o.strip() for o in args.orders.split(",") if o.strip()]
    if not orders or any(o not in ORDERS for o in orders):
        raise ValueError(f"--orders must name orders of {', '.join(ORDERS)}, got {args.orders!r}")
    plan = PLANS[name]
    seeds = 2 if args.quick else args.seeds
    plan = dataclasses.replace(plan, seeds=tuple(range(seeds)), workers=0, members=1)
    workers = args.workers or usable_cores()
    work = Path(args.workdir).resolve()
    corrupted, perturbed = _sets(plan, work)
    runs = plan_from_reproduce(plan, corrupted, perturbed=perturbed)
    if args.busy:
        return _busy(args.busy, runs, work, orders[0], workers, args.repeats, name, seeds)
    sweeps = [_sweep(runs, work / f"sweep-{order}-{r}", order, workers)
              for r in range(args.repeats) for order in (orders if r % 2 == 0 else orders[::-1])]
    seconds = _median_seconds(runs, sweeps)
    specs = list(runs.runs)
    total = sum(seconds.values())
    by_order = {o: {"wall_s": [s["wall_s"] for s in sweeps if s["order"] == o],
                    "tail_idle_core_s": [s["tail_idle_core_s"] for s in sweeps if s["order"] == o]} for o in orders}
    for entry in by_order.values():
        entry["median_wall_s"] = statistics.median(entry["wall_s"])
        entry["median_tail_idle_core_s"] = statistics.median(entry["tail_idle_core_s"])
    fastest = min(orders, key=lambda o: by_order[o]["median_wall_s"])
    return {
        **_header(name, seeds, runs, workers), "orders": orders, "sweeps": sweeps, "by_order": by_order,
        "fastest_measured": fastest,
        "run_seconds_median": {k: round(v, 2) for k, v in seconds.items()},
        "replay": {o: replay(seconds, o, specs, workers) for o in (*ORDERS, "shortest")},
        "lower_bound_s": round(max(max(seconds.values()), total / workers), 1),
        "note": "one sweep per order and round: compare the replay (the order alone) and the measured walls; "
                "a default chosen from it needs an idle machine (load_before near 0 in every sweep)",
    }


def _busy(busy: float, runs, work: Path, order: str, workers: int, repeats: int, name: str, seeds: int) -> dict:
    """Issue 58, goal 2: the same sweep idle and with ``busy`` seconds of one busy core at its start, the
    workers following the free cores in both; the cost of the spell against a count read once."""
    sweeps = [_sweep(runs, work / f"sweep-{kind}-{r}", order, workers, busy=busy if kind == "busy" else 0.0,
                     follow=True)
              for r in range(repeats) for kind in (("idle", "busy") if r % 2 == 0 else ("busy", "idle"))]
    walls = {kind: [s["wall_s"] for s in sweeps if (s["busy_s"] > 0) == (kind == "busy")] for kind in ("idle", "busy")}
    seconds = _median_seconds(runs, sweeps)
    cost = statistics.median(walls["busy"]) - statistics.median(walls["idle"])
    return {
        **_header(name, seeds, runs, workers), "order": order, "busy_s": busy, "sweeps": sweeps,
        "wall_idle_s": walls["idle"], "wall_busy_s": walls["busy"], "cost_s": round(cost, 1),
        "ideal_cost_s": round(busy / workers, 1),
        "one_worker_replay_s": replay(seconds, order, list(runs.runs), 1)["makespan_s"],
        "note": "cost_s: the busy sweep's wall minus the idle one's (medians); one_worker_replay_s: the wall of "
                "the whole sweep on one worker, what a count read once under the busy spell would have kept",
    }
