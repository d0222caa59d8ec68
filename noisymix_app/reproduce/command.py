"""``noisymix reproduce --out DIR``: the main job, every command of the toolkit end to end.

On a 2-core laptop with no data and no GPU it runs, at small scale, everything the paper does:

1. ``verify`` — Lemma 1, Proposition 1, Theorems 1-3 held against exact losses (``theory/``);
2. ``toy`` — the 2-D decision-boundary experiment of the appendix over many seeds (``toy/``);
3. ``corrupt`` — a Digits-C set, our own 15 corruptions × 5 severities of the digits test split;
4. ``train`` — Baseline, AugMix+JSD, NFM and NoisyMix (the four methods the paper's argument
   turns on) on scikit-learn's digits, reduced-width PreActResNet-18, a few epochs, several
   seeds;
5. ``evaluate`` — clean, Digits-C and calibration for every run;
6. ``figures`` — the paper's tables and figures over all of it, with ``REPORT.md``.

It is a small-scale run of the full pipeline, not the paper's numbers, and the report says so.
``--plan full`` trains and evaluates the paper's CIFAR-10 configuration instead (needs the CIFAR
batches under ``--data-root`` and, in practice, a GPU).

Every step writes its results atomically and is skipped when a rerun finds it finished, so an
interrupted job resumes where it stopped (``--fresh`` reruns everything).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from noisymix_app.reproduce.log import _log_run, _progress_line, _write_index, total_seconds
from noisymix_app.reproduce.plan_check import check_plan
from noisymix_app.reproduce.plans import PLANS, ReproducePlan, default_plan_name
from noisymix_app.reproduce.readme import README_PLAN
from noisymix_app.reproduce.steps import (
    _clear_run,
    _command_step,
    _corrupted,
    _drop_other_plans_runs,
    _output_of,
    _remade_suites,
    _runs,
    _same_step,
    _steps,
)
from noisymix_infra.config import add_set_argument, apply_overrides
from noisymix_infra.io import directory_lock, read_json, write_json

__all__ = ["PLANS", "ReproducePlan", "add_arguments", "check_git_checkout", "reproduce",  # plans: reproduce.plans
           "resolve_plan", "run", "run_workers"]


def reproduce(plan: ReproducePlan, out: str | os.PathLike[str], *, data_root: str | None = None,
              fresh: bool = False, command: Callable[[list[str]], int] | None = None, threads: int = 0,
              name: str | None = None) -> dict:
    """Run every step of ``plan`` into ``out``; return (and write ``out/reproduce.json``) the log.

    ``name``: how the log and the summary name the plan (default: its name in ``PLANS``, or
    ``custom``; the command line gives ``laptop --set workers=1 --set members=9`` for a named plan with
    overrides).

    ``threads``: torch threads of each training run and its evaluations (0: one, whatever the load;
    the free cores run runs side by side instead, ``run_workers``).

    ``command`` runs one ``noisymix`` command line (verify, toy, corrupt, figures) and returns
    its exit status (default: the CLI front door in this process).  The training runs and their
    evaluations are a sweep (``noisymix_app.sweep.local.run_local``, ``run_workers`` at a time, one thread each):
    typed calls of ``fullscale.training.loop.train`` and ``fullscale.evaluation.evaluate``; a finished
    run is kept, a killed one resumes from its checkpoint, and a run whose config differs from
    this plan's (another plan in the same folder) is trained anew.  A failing step stops the
    job with a ``RuntimeError`` naming it; steps already finished stay on disk and are skipped
    by the next run.
    """
    from noisymix_app.sweep.local import run_local
    from noisymix_app.sweep.state import check_config, run_record, run_state

    check_plan(plan, data_root)  # every field, before the folder is claimed or a step runs (issue 48)
    if command is None:
        from noisymix_app.cli import main as command
    out = Path(out)
    _claim(out)
    log_path = out / "reproduce.json"
    # steps are kept in run order (a list: JSON objects are written with sorted keys)
    name = name or next((n for n, known in PLANS.items() if known == plan), "custom")
    log: dict = {"plan": dataclasses.asdict(plan), "plan_name": name, "steps": []}
    old = read_json(log_path) if log_path.exists() else None
    old = old if isinstance(old, dict) else {}
    other = _other_plan(old, log)
    if other and not fresh:  # finished work of another plan is deleted only when told to (issue 41)
        from noisymix_infra.io import printable

        raise ValueError(f"{printable(str(out))} holds the work of plan {other} (reproduce.json); plan {name} there "
                         "would replace its runs: give --fresh to do so, or another --out")
    if old and not fresh:
        log["steps"] = old.get("steps", [])
    # a command step counts as done only when it ran with the same command line: a folder of a
    # ``--plan quick`` run must not pass its 1-epoch models off as the laptop plan's (issue 10, 8d);
    # a training run is done only when its config.json is this plan's (``noisymix_app.sweep.state.check_config``)
    # and the same inputs beyond its argv (the matched set's strengths: ``_Step.inputs``, issue 54)
    finished = {(entry["name"], tuple(entry.get("argv", ()))):
                tuple(entry["inputs"]) if isinstance(entry.get("inputs"), list) else None
                for entry in log["steps"] if "argv" in entry}
    started = time.perf_counter()
    before, figures = _steps(plan, out, data_root)
    runs = _runs(plan, out, data_root)
    _drop_other_plans_runs(log, {spec.name for spec in runs.runs}, out)
    if other:  # --fresh over another plan: its runs and its report go, so none is reported as this plan's
        import shutil

        for run_dir in sorted(p for p in (out / "runs").glob("*") if p.is_dir()):
            if run_dir.name not in {spec.name for spec in runs.runs}:
                _clear_run(out, run_dir.name, f"--fresh: a run of plan {other}, not of plan {name}")
        if (out / "figures").is_dir():
            shutil.rmtree(out / "figures")
    rerun: list[Path] = []  # output folders of command steps run in this invocation
    # the command steps that will run (``_command_step``'s own rule: a step runs unless done with the same
    # identity), known before any runs: a run's evaluation of a set about to be made anew is cleared first, for
    # -C and -P alike (``_remade_suites``), and the runs may train while the sets are made (``_StepsBeside``)
    making = {_output_of(step) for step in before if not _same_step(step, finished)}
    remade = _remade_suites(plan, out, list(making))
    for spec in runs.runs:
        run_dir = out / "runs" / spec.name
        if fresh and run_dir.exists():
            _clear_run(out, spec.name, "--fresh")
            continue
        try:
            check_config(spec, run_dir)
        except ValueError as error:
            _clear_run(out, spec.name, str(error))
            continue
        for suite in remade:  # its evaluation read a set that is made anew
            (run_dir / "eval" / f"{suite}.json").unlink(missing_ok=True)
    ran: list[str] = []
    pending = [spec.name for spec in runs.runs if run_state(out, spec) != "done"]
    workers = run_workers(plan, len(pending))
    follow = plan.workers == 0 and workers > 1  # worker processes, as many as the cores free
    beside = None
    if follow and pending and making:  # the steps beside the runs' training; their evaluations wait
        beside = _StepsBeside(before, finished, command, log, log_path, started, fresh)
    else:
        for step in before:  # none of them reads another's output: only their own arguments count
            if _command_step(step, finished, [], command, log, log_path, started, fresh=fresh):
                rerun.append(_output_of(step))
    how = (f"as many at a time as cores are free (at most {workers})" if follow else f"{workers} at a time")
    print(f"reproduce: {len(runs.runs) - len(pending)} of {len(runs.runs)} runs already done; training and "
          f"evaluating {len(pending)}, {how}, one torch thread each"
          + (f", training while {', '.join(s.name for s in before)} run" if beside else ""), flush=True)
    line = _progress_line(out, pending, time.perf_counter())
    timeline: list[list[float]] = []  # [seconds since the invocation started, runs side by side]

    def on_workers(count: int) -> None:
        timeline.append([round(time.perf_counter() - started, 1), count])

    def after_run(name: str, state: str) -> None:
        ran.append(name)
        now = timeline[-1][1] if timeline else 1
        print(f"{line(name, state, len(ran))}, {now} running side by side", flush=True)

    from noisymix_app.sweep.pool import GateFailed

    if beside is not None:
        beside.start()
    try:
        # one run at a time: in this process; more: worker processes.  Either way one thread per run
        # (``threads`` when the caller fixes another count): the numbers do not depend on the load
        states = run_local(runs, out, workers=workers if workers > 1 else 0, retries=0, tabulate=False,
                           retry_failed=True, threads=threads or 1, after_run=after_run,
                           members=plan.members if workers == 1 else 1, follow_load=follow,
                           on_workers=on_workers, gate=beside.gate if beside is not None else None)
    except GateFailed:  # a step beside the runs failed: its own error names it
        beside.join()
        raise beside.error from None
    finally:
        if beside is not None and beside.is_alive():  # its record is written when its step ends
            print(f"reproduce: waiting for the step under way ({beside.current}) to end, so its record is "
                  "kept", file=sys.stderr, flush=True)
            beside.join()
        if timeline:  # how many ran side by side, over time, and the most (a resume that ran none keeps them)
            log["workers"] = max(count for _, count in timeline)
            log["workers_timeline"] = timeline
        for spec in runs.runs:
            if spec.name in ran or run_record(out, spec.name).get("state") in ("failed", "interrupted"):
                _log_run(log, log_path, out, spec, started)
    if beside is not None:
        if beside.error is not None:
            raise beside.error
        rerun.extend(beside.rerun)
    for spec in runs.runs:
        if states[spec.name] != "done":
            record = run_record(out, spec.name)
            step = record.get("step") or "train"
            name = f"train {spec.name}" if step == "train" else f"{step.replace('evaluate', 'evaluate ' + spec.name)}"
            write_json(log_path, log)
            raise RuntimeError(f"step '{name}' failed: {record.get('error')}")
    if ran or rerun:
        rerun.append(out / "runs")
    _command_step(figures, finished, rerun, command, log, log_path, started)
    log["seconds"] = total_seconds(log)
    # this invocation's own wall time, apart: a resume that recomputed nothing takes seconds
    log["invocation_seconds"] = round(time.perf_counter() - started, 2)
    # the job's wall time: its invocations' own seconds added up (a resume adds its own; issue 57: the summary
    # called the sum of the steps, which overlap when runs go side by side, the wall time)
    kept = old.get("wall_seconds") if old and not fresh and not other else 0
    log["wall_seconds"] = round(float(kept or 0) + log["invocation_seconds"], 2)
    write_json(log_path, log)
    from noisymix_app.reproduce.summary import write_summary

    write_summary(out, name)
    if name.split()[0] == "analogue-methods":  # the analogue's test of the eight methods (issue 51)
        from noisymix_app.analogue.methods import write_report

        write_report(out)
    _write_index(out, plan, log, _corrupted(plan, out))
    return log


def run_workers(plan: ReproducePlan, pending: int) -> int:
    """The most runs that go side by side: the plan's ``workers``, or for 0 the usable cores
    (``noisymix_infra.threads.usable_cores``), at least 1 and at most the runs to do.  One: one run
    after another in this process.  More with ``workers=0``: worker processes, as many running as
    cores are free, followed while the job runs (``noisymix_app.sweep.pool``; issue 58: the count was
    decided once, from a 0.25 s look at the load, and a moment's load at the start slowed the whole
    job).  Each run computes with one torch thread whatever the count, so a busy machine takes longer
    and computes the same numbers (issue 40)."""
    if plan.workers:
        return max(1, min(plan.workers, max(pending, 1)))
    from noisymix_infra.threads import usable_cores

    return max(1, min(usable_cores(), max(pending, 1)))


class _StepsBeside(threading.Thread):
    """The command steps before the runs (verify, toy, the -C and -P sets), run in a thread of this
    process while the worker processes train: training reads none of their outputs, and the
    evaluations, which read the sets, wait at ``gate`` until every step has ended (``opened``; a failed
    step sets ``failed`` and the runs stop, each keeping its checkpoint).  The steps compute what they
    computed in line (each command sets its own torch threads); the cores they use are load to the
    pool, which starts another worker when they end.  Only this thread writes the log until it ends."""

    def __init__(self, steps, finished, command, log, log_path, started, fresh):
        super().__init__(name="reproduce-steps", daemon=True)
        from noisymix_app.sweep.pool import Gate

        self.steps, self.finished, self.command = steps, finished, command
        self.log, self.log_path, self.started, self.fresh = log, log_path, started, fresh
        self.gate = Gate()
        self.rerun: list[Path] = []
        self.error: BaseException | None = None
        self.current = ""

    def run(self) -> None:
        try:
            for step in self.steps:
                self.current = step.name
                if _command_step(step, self.finished, [], self.command, self.log, self.log_path, self.started,
                                 fresh=self.fresh):
                    self.rerun.append(_output_of(step))
        except BaseException as error:  # handed to the main thread, which raises it
            self.error = error
            self.gate.failed.set()
        else:
            self.gate.opened.set()


def _other_plan(old: dict, log: dict) -> str | None:
    """The name of the plan whose work ``reproduce.json`` (``old``) records, when it is not this one
    (``log``): another named plan, or a custom plan of other values; ``None`` for the same plan or
    a log that does not say."""
    was = old.get("plan_name")
    if not isinstance(was, str) or not old.get("steps"):
        return None
    if was != log["plan_name"]:
        return repr(was)
    if was == "custom" and isinstance(old.get("plan"), dict):
        mine = json.loads(json.dumps(log["plan"]))  # tuples as the JSON holds them
        differ = sorted(k for k in set(mine) & set(old["plan"]) if mine[k] != old["plan"][k])
        if differ:
            return f"'custom' (another {', '.join(differ[:3])})"
    return None




def check_git_checkout(root: Path | None = None) -> None:
    """``--update-readme`` writes the summary into the README of a git checkout, naming its commit:
    refused (one line) where ``root`` (this code's tree) is not a checkout with a known commit,
    which would print commit ``unknown`` over the committed summary (issue 41)."""
    from noisymix_infra import provenance

    root = provenance.ROOT if root is None else root
    if not (root / ".git").exists() or provenance.git_state().get("commit") is None:
        raise ValueError(f"--update-readme: {root} is not a git checkout with a known commit (no .git): the summary "
                         "would name commit 'unknown'; run it from a clone of the repository")


def _claim(out: Path) -> None:
    """Mark ``out`` as a reproduce folder, refusing a run's or a -C set's folder in one line before
    anything is written (issue 32).  A folder of an earlier reproduce (``reproduce.json``, no marker)
    is ours although it also holds ``sweep/plan.json``, which ``folder_kind`` would take for a sweep."""
    from noisymix_infra.folder_kind import MARKER, claim_folder, mark_folder

    if (out / "reproduce.json").is_file() and not (out / MARKER).is_file():
        mark_folder(out, "reproduce")
    claim_folder(out, "reproduce")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output directory (resumable)")
    parser.add_argument("--plan", choices=sorted(PLANS), default=None,
                        help="what to run (default: gpu where CUDA is available, else laptop): "
                        + "; ".join(f"{k}: {v.description}" for k, v in PLANS.items()))
    parser.add_argument("--full", action="store_const", const="full", dest="plan",
                        help="same as --plan full")
    parser.add_argument("--data-root", default=None, help="data directory (the full plan's CIFAR batches)")
    parser.add_argument("--fresh", action="store_true", help="rerun every step even if its results exist")
    parser.add_argument("--update-readme", action="store_true",
                        help="copy the summary to docs/reproduce-summary.* and into README.md between its markers")
    add_set_argument(parser, "--set workers=1 --set members=9 (on a GPU: each method's seeds as one stacked model, "
                     "one process)", "the plan (its fields: seeds, epochs, width, workers, members, ...)")


def resolve_plan(name: str, overrides: Sequence[str]) -> tuple[ReproducePlan, str]:
    """The plan ``name`` with ``--set`` overrides of its fields, and how the log names it
    (``laptop --set workers=1 --set members=9``; the plain name when the overrides change nothing)."""
    plan = apply_overrides(PLANS[name], list(overrides))
    return plan, name if plan == PLANS[name] else " ".join([name, *(f"--set {o}" for o in overrides)])


def run(args: argparse.Namespace) -> int:
    chosen = args.plan or default_plan_name()  # none named: the GPU plan on a CUDA machine, else the laptop's
    plan, name = resolve_plan(chosen, args.overrides)  # a bad key or value: one line, nothing written
    if args.update_readme:  # first: a plan that never writes the README is told so, whatever else it lacks
        if name != chosen:
            raise ValueError(f"--update-readme puts the {chosen} plan's summary into the README; "
                             "run it without --set")
        check_git_checkout()  # before hours of work, not after
        if chosen != README_PLAN:  # issue 48 refused quick only; issue 54: every plan but the main job's
            why = ("a smoke run whose numbers are meaningless" if chosen == "quick"
                   else "not the main job, whose summary the README shows")
            raise ValueError(f"--update-readme puts the plan's summary into the README; only the {README_PLAN} plan "
                             f"writes it, and the {chosen} plan is {why}: run it without --update-readme")
    check_plan(plan, args.data_root)  # a field a step would refuse: now, not 6-14 s in (issue 48)
    # one job per folder: a second `reproduce` on it is one line at once, not "failed: None" later
    _claim(Path(args.out))  # before the lock writes into it: not a run's or a -C set's folder
    with directory_lock(args.out, "reproducing"):
        try:
            log = reproduce(plan, args.out, data_root=args.data_root, fresh=args.fresh, threads=args.threads or 0,
                            name=name)
        except RuntimeError as error:  # a failing step: named, in one line; what finished is kept
            print(f"noisymix reproduce: {error}; the finished steps are kept, rerun to continue "
                  f"(the step's log: `noisymix sweep status {args.out}`)", file=sys.stderr)
            return 1
        if args.update_readme:
            from noisymix_app.reproduce.summary import update_readme

            update_readme(args.out)
    print(json.dumps({"out": str(args.out), "seconds": log["seconds"],
                      "report": str(Path(args.out) / "REPORT.md")}))
    return 0
