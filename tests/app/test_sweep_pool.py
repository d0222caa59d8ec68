"""Issue 58: the local launcher's long-lived CPU workers follow the free cores (a busy process that
stops partway lets a second worker start; the numbers equal one worker's), a crashed worker's run
is retried in a new worker, trained runs wait at a gate before their evaluations, the schedule takes
the longest runs first, and the load meter counts the pool's own workers as theirs."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noisymix_app.reproduce.plans import PLANS
from noisymix_app.sweep import local as sweep_local
from noisymix_app.sweep.local import run_local
from noisymix_app.sweep.plan import RunSpec, plan_from_reproduce
from noisymix_app.sweep.pool import Gate, GateFailed
from noisymix_app.sweep.schedule import Schedule
from noisymix_app.sweep.state import read_state, run_state
from noisymix_infra import threads as threads_module

# digits, width 4, 128 training images, 1 epoch: a run takes about a second
_TINY = dataclasses.replace(PLANS["quick"], methods=("baseline",), epochs=1, eval_suites=("clean", "calibration"),
                            dataset="digits", corrupted_suite="digits-c", perturbed_suite=None, perturbed_methods=())


def _plan(seeds):
    return plan_from_reproduce(_TINY, None, seeds=seeds)


def _numbers(out, plan):
    """What each run computed: its weights' sha256 and its evaluations' summaries."""
    return {spec.name: (hashlib.sha256((out / "runs" / spec.name / "final.pt").read_bytes()).hexdigest(),
                        {e.suite: json.loads((out / "runs" / spec.name / "eval" / f"{e.suite}.json").read_text())
                         ["summary"] for e in spec.evals})
            for spec in plan.runs}


def test_a_busy_core_that_frees_up_gets_a_worker_and_the_numbers_equal_one_workers(tmp_path, monkeypatch,
                                                                                   one_torch_thread):
    """A busy process (a Python loop pinned to a core) runs while the sweep starts: one worker; once it
    stops (after the first run ends), the next reading of the load starts a second.  The load is read
    through ``free_cores`` (2 usable cores less the busy one while it lives), so the test does not hang
    on the machine's real load; the runs' weights and evaluations equal those of the runs one after
    another in this process."""
    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    plan = _plan((0, 1, 2))
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(busy.pid, {min(os.sched_getaffinity(0))})
    except (AttributeError, OSError):  # no affinity here: it keeps a core busy all the same
        pass
    stopped: list[float] = []
    readings: list[tuple[int, float]] = []

    def free_cores(own):
        free = 2.0 - (busy.poll() is None)
        readings.append((len(own), free))
        return free

    def after_run(name, state):
        if busy.poll() is None:
            busy.terminate()
            busy.wait()
            stopped.append(time.monotonic())

    timeline: list[tuple[float, int]] = []
    try:
        states = run_local(plan, tmp_path / "pool", workers=2, threads=1, follow_load=True, tabulate=False,
                           free_cores=free_cores, after_run=after_run,
                           on_workers=lambda n: timeline.append((time.monotonic(), n)))
    finally:
        if busy.poll() is None:
            busy.kill()
            busy.wait()
    assert set(states.values()) == {"done"}
    assert readings[0] == (0, 1.0)  # the first reading, before any worker: the busy core is not free
    before = [n for t, n in timeline if t < stopped[0]]
    after = [n for t, n in timeline if t >= stopped[0]]
    assert before and max(before) == 1, timeline  # one run at a time beside the busy process
    assert 2 in after, timeline  # the freed core got a second worker
    logs = tmp_path / "pool" / "sweep" / "logs"
    assert {p.name for p in logs.glob("worker-*.log")} == {"worker-1.log", "worker-2.log"}  # started once each
    assert all((logs / f"{spec.name}.log").is_file() for spec in plan.runs)
    # every run computed with one torch thread, in its worker
    assert {read_state(tmp_path / "pool", s.name)["ran_on"]["torch_threads"] for s in plan.runs} == {1}
    assert run_local(plan, tmp_path / "one", workers=0, threads=1, tabulate=False) == states
    assert _numbers(tmp_path / "pool", plan) == _numbers(tmp_path / "one", plan)


_STAND_IN = r'''
import os
from pathlib import Path

from noisymix_app.sweep.execute import execute_run


def _bad_config(cfg, run, resume):
    raise ValueError("a config error")


def job(spec, out, **kwargs):
    """Seed 0's first attempt kills its worker mid-training (os._exit); seed 1 fails deterministically."""
    marks = Path(out) / "marks.txt"
    first = not marks.is_file() or spec.name not in marks.read_text().split()
    with open(marks, "a") as handle:
        handle.write(f"{spec.name} {os.getpid()}\n")
    import fullscale.training.loop as loop

    real = loop.train
    if spec.seed == 0 and first:
        loop.train = lambda cfg, run, resume: os._exit(9)
    if spec.seed == 1:
        loop.train = _bad_config
    try:
        return execute_run(spec, out, **kwargs)
    finally:
        loop.train = real
'''


def test_a_crashed_worker_fails_its_run_which_is_retried_in_a_new_worker(tmp_path, monkeypatch, capsys):
    """One worker: killed mid-run (``os._exit(9)`` in training), it fails that run, which is retried in a
    fresh process after the other run, whose deterministic failure (a ``ValueError``) is not retried.  The
    stand-in job lives in a module the spawned workers can import (``sys.path`` goes to them)."""
    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    (tmp_path / "pool_stand_in_58.py").write_text(textwrap.dedent(_STAND_IN))
    monkeypatch.syspath_prepend(str(tmp_path))
    stand_in = importlib.import_module("pool_stand_in_58")
    monkeypatch.setattr(sweep_local, "execute_run", stand_in.job)
    out = tmp_path / "out"
    plan = _plan((0, 1))
    try:
        states = run_local(plan, out, workers=1, threads=1, retries=1, tabulate=False)
    finally:
        sys.modules.pop("pool_stand_in_58", None)
    names = [spec.name for spec in plan.runs]
    assert states == {names[0]: "done", names[1]: "failed"}
    # the crashed run's attempts in two processes; the retry went first (the plan's order among equals),
    # then the same worker, whole after it, took the run that failed deterministically, once
    (a, first), (b, second), (c, third) = (line.split() for line in (out / "marks.txt").read_text().splitlines())
    assert (a, b, c) == (names[0], names[0], names[1])
    assert first != second == third
    assert f"run {names[0]} failed (its worker process ended (exit status 9)); retry 1/1" in capsys.readouterr().err
    assert read_state(out, names[1])["deterministic"] is True
    assert "ValueError: a config error" in read_state(out, names[1])["error"]


def test_trained_runs_wait_at_the_gate_and_a_failed_gate_stops_the_sweep(tmp_path, monkeypatch):
    """``noisymix reproduce`` trains while it makes the sets its evaluations read: a run trains, then
    waits until the gate opens before evaluating; a gate that fails stops the sweep (``GateFailed``),
    the trained weights kept, and a rerun finishes the evaluations without training again."""
    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    plan = _plan((0,))
    run_dir = tmp_path / "runs" / plan.runs[0].name
    gate = Gate()
    seen = {}

    def open_when_trained():
        deadline = time.monotonic() + 120
        while not (run_dir / "final.pt").is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # were it not waiting, it would evaluate now
        seen["evaluated_before_open"] = any((run_dir / "eval").glob("*.json"))
        gate.failed.set()

    opener = threading.Thread(target=open_when_trained, daemon=True)
    opener.start()
    with pytest.raises(GateFailed):
        run_local(plan, tmp_path, workers=1, threads=1, tabulate=False, follow_load=True, gate=gate,
                  free_cores=lambda own: 1.0)
    opener.join()
    assert seen == {"evaluated_before_open": False}
    assert (run_dir / "final.pt").is_file()
    assert run_state(tmp_path, plan.runs[0]) == "interrupted"  # stopped, its lock released
    opened = Gate()
    opened.opened.set()
    assert run_local(plan, tmp_path, workers=0, threads=1, tabulate=False, gate=opened) == {plan.runs[0].name: "done"}
    assert [step for step, _ in read_state(tmp_path, plan.runs[0].name)["timings"]] == ["evaluate clean",
                                                                                        "evaluate calibration"]


# ---------------------------------------------------------------------------------------------- schedule


def _laptop_runs():
    return list(plan_from_reproduce(PLANS["laptop"], "/c", seeds=(0, 1), perturbed="/p").runs)


def test_longest_first_takes_the_three_view_runs_first_and_plan_order_keeps_the_plan():
    """The laptop plan's AugMix+JSD and NoisyMix runs (three views a step) go before Baseline and NFM (one);
    among equals the plan's order; ``plan`` takes them as planned."""
    runs = _laptop_runs()
    schedule = Schedule(runs, "longest")
    taken, waiting = [], list(runs)
    while waiting:
        taken.append(schedule.pick(waiting))
        waiting.remove(taken[-1])
    assert [s.name for s in taken] == ["augmix_jsd-seed0", "noisymix-seed0", "augmix_jsd-seed1", "noisymix-seed1",
                                       "baseline-seed0", "nfm-seed0", "baseline-seed1", "nfm-seed1"]
    assert Schedule(runs, "plan").pick(runs) is runs[0]
    with pytest.raises(ValueError, match="order must be one of longest, plan"):
        Schedule(runs, "random")


def test_measured_seconds_replace_the_estimate_and_scale_the_unmeasured_kinds():
    """A NoisyMix run measured at 30 s: its kind is 30 s, and a Baseline (one view where NoisyMix has three,
    the same images, epochs and model) is estimated at 30 / 3 = 10 s until one is measured."""
    runs = _laptop_runs()
    noisymix = next(s for s in runs if s.preset == "noisymix")
    baseline = next(s for s in runs if s.preset == "baseline")
    schedule = Schedule(runs, "longest")
    schedule.ended(noisymix, 30.0)
    assert schedule.estimate(noisymix) == 30.0
    assert schedule.estimate(baseline) == pytest.approx(10.0)
    schedule.ended(baseline, 50.0)  # measured longer than NoisyMix: now taken first
    assert schedule.pick([noisymix, baseline]) is baseline


def test_earlier_runs_in_the_folder_seed_the_estimates(tmp_path):
    """A finished NFM run's recorded 99 s is its kind's estimate, and AugMix+JSD (three views where NFM has
    one) is estimated at three times that; a run that did not finish records nothing to go by."""
    from noisymix_app.sweep.state import write_state

    runs = _laptop_runs()
    nfm = next(s for s in runs if s.preset == "nfm")
    augmix = next(s for s in runs if s.preset == "augmix_jsd")
    write_state(tmp_path, nfm.name, state="done", seconds=99.0)
    write_state(tmp_path, augmix.name, state="failed", seconds=5.0)
    schedule = Schedule(runs, "longest", tmp_path)
    assert schedule.estimate(nfm) == 99.0
    assert schedule.estimate(augmix) == pytest.approx(3 * 99.0)


@given(st.lists(st.floats(1.0, 100.0), min_size=1, max_size=12), st.integers(1, 4))
def test_longest_first_never_ends_later_than_four_thirds_of_the_best(seconds, workers):
    """Graham's bound for the longest-processing-time rule, checked with the schedule's own picks against
    the best makespan found by trying every assignment (small cases)."""
    import itertools

    runs = [RunSpec(f"r{i}", "baseline", i) for i in range(len(seconds))]
    by_name = dict(zip((r.name for r in runs), seconds, strict=True))
    schedule = Schedule(runs, "longest")
    schedule.estimate = lambda spec: by_name[spec.name]  # each run its own length (here all are one kind)
    loads, waiting = [0.0] * workers, list(runs)
    while waiting:
        run = schedule.pick(waiting)
        waiting.remove(run)
        loads[loads.index(min(loads))] += by_name[run.name]
    if len(seconds) <= 8:
        best = min(max(sum(s for s, w in zip(seconds, assign, strict=True) if w == k) for k in range(workers))
                   for assign in itertools.product(range(workers), repeat=len(seconds)))
    else:
        best = max(max(seconds), sum(seconds) / workers)  # a lower bound of the best
    assert max(loads) <= 4 / 3 * best + 1e-9


# ---------------------------------------------------------------------------------------------- the load


def test_the_meter_counts_the_pools_own_cpu_as_free(monkeypatch):
    """Two cores over a span of 100 ticks each: one idle, one kept busy by a worker of the pool (100 of
    its ticks): both are free for the pool; without naming the worker only the idle one is."""
    readings = iter([{0: (0, 0), 1: (0, 0)}, {0: (100, 100), 1: (0, 100)}, {0: (200, 200), 1: (0, 200)}])
    ticks = {1234: iter([0, 100, 200])}
    monkeypatch.setattr(threads_module, "_cpu_times", lambda cpus: next(readings))
    monkeypatch.setattr(threads_module, "process_cpu_ticks", lambda pid: next(ticks[pid]))
    meter = threads_module.CoreMeter(min_seconds=0.0)
    meter.watch([1234])
    assert meter.free([1234]) == pytest.approx(2.0)
    assert meter.free([]) == pytest.approx(1.0)


def test_process_cpu_ticks_reads_a_name_with_spaces_and_parentheses():
    code = ("import time\nopen('/proc/self/comm', 'w').write('a) b (c')\nend = time.process_time() + 0.3\n"
            "while time.process_time() < end: pass\nprint('ok', flush=True)\ninput()\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ok"
        ticks = threads_module.process_cpu_ticks(child.pid)
        assert ticks is not None and ticks >= 0.3 * os.sysconf("SC_CLK_TCK") - 2
    finally:
        child.kill()
        child.wait()
    assert threads_module.process_cpu_ticks(child.pid) is None  # gone


# ---------------------------------------------------------------------------------------------- reproduce


class _Meter:
    """A reading of the load that says ``free`` cores are free, whatever the machine does."""

    min_seconds = 0.0

    def __init__(self, free):
        self._free = free

    def watch(self, own):
        pass

    def free(self, own=()):
        return float(self._free)


def test_reproduce_trains_while_it_makes_the_sets_and_records_the_workers_over_time(tmp_path, monkeypatch):
    """With two cores free the quick plan's runs train while verify, toy and the -C/-P sets are made (the
    toy step here ends only once a run has trained), evaluate only after the sets are made, and the log
    records how many ran side by side over time (``workers_timeline``) and the most (``workers``)."""
    from noisymix_app.cli import main
    from noisymix_app.reproduce.command import reproduce

    monkeypatch.setattr(threads_module, "usable_cores", lambda: 2)
    monkeypatch.setattr(threads_module, "CoreMeter", lambda: _Meter(2))
    out = tmp_path / "out"
    seen = {}

    def command(argv):
        if argv[0] == "toy":
            deadline = time.monotonic() + 120
            while not list(out.glob("runs/*/final.pt")) and time.monotonic() < deadline:
                time.sleep(0.05)
            seen["trained_before_toy_ended"] = bool(list(out.glob("runs/*/final.pt")))
        if argv[0] == "figures":  # not what is tested here
            (out / "figures").mkdir(parents=True, exist_ok=True)
            (out / "figures" / "REPORT.md").write_text("")
            return 0
        return main([*argv, "--only", "lemma1"] if argv[0] == "verify" else argv)  # one check: seconds

    log = reproduce(dataclasses.replace(PLANS["quick"], workers=0), out, command=command)
    assert seen == {"trained_before_toy_ended": True}
    names = [entry["name"] for entry in log["steps"]]
    assert names[:4] == ["verify", "toy", "corrupt", "corrupt-p"] and names[-1] == "figures"
    assert {n for n in names if n.startswith(("train", "evaluate"))} == {
        f"{kind} {m}-seed0{suite}" for m in ("baseline", "noisymix")
        for kind, suite in (("train", ""), ("evaluate", " clean"), ("evaluate", " digits16-c"),
                            ("evaluate", " digits16-p"))}
    sets_made = max((out / "data" / d / "labels.npy").stat().st_mtime for d in ("digits16-c", "digits16-p"))
    assert min(p.stat().st_mtime for p in out.glob("runs/*/eval/*.json")) >= sets_made
    timeline = log["workers_timeline"]
    assert log["workers"] == 2 == max(n for _, n in timeline)
    assert all(t >= 0 for t, _ in timeline) and [t for t, _ in timeline] == sorted(t for t, _ in timeline)
    assert timeline[-1][1] == 0  # none left running at the end
    assert json.loads((out / "reproduce.json").read_text())["workers_timeline"] == timeline
