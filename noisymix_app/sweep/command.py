"""``noisymix sweep TABLE --seeds N --out DIR`` and ``noisymix sweep status DIR``: the command line.

Before any run starts, the plan's inputs are checked (``check_inputs``: the training data, a
transfer run's source weights, the evaluations' -C/-P folders), and ``DIR`` is claimed as a sweep
folder (``noisymix_infra.folder_kind``); ``--dry-run`` lists the runs with their estimated device-hours
and what would stop them, and runs nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from noisymix_app.sweep.estimates import estimate_hours, estimate_source
from noisymix_app.sweep.local import run_local
from noisymix_app.sweep.plan import ANALOGUE, TABLES, Plan, RunSpec, build_plan
from noisymix_app.sweep.plan_files import check_inputs, plan_from_dict
from noisymix_app.sweep.slurm import SlurmOptions, submit_slurm
from noisymix_app.sweep.state import (
    check_config,
    eval_done,
    read_state,
    run_state,
    stale_reason,
    stored_config,
    sweep_dir,
)
from noisymix_infra.io import read_json

__all__ = ["add_arguments", "dry_run_text", "run", "status_text"]

_LOG_TAIL = 12


#: the most seeds per row a sweep plans (the paper trains 5)
MAX_SEEDS = 1000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("table", metavar="TABLE|status",
                        help=f"one of {', '.join([*TABLES, ANALOGUE])}; or `status DIR`")
    parser.add_argument("status_dir", nargs="?", metavar="DIR", help="(status) the sweep's output folder")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per row (the paper: 5)")
    parser.add_argument("--out", help="output folder (runs/, table/, sweep/)")
    parser.add_argument("--launcher", choices=("local", "slurm"), default="local")
    from fullscale.run_record import FLAT_KEYS
    from noisymix_infra.config import add_set_argument

    add_set_argument(parser, "--set epochs=100", "every run's training config (part of what the run computes)",
                     aliases=FLAT_KEYS)
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
                             "(fullscale.training.members; pays on a GPU, not on a CPU: benchmarks/RESULTS.md)")
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
    path = sweep_dir(out) / "plan.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {out} the --out of a `noisymix sweep`?")
    plan = plan_from_dict(read_json(path), str(path))
    lines = [f"sweep {plan.table} in {out}", "", f"{'run':44s} {'state':12s} {'tries':>5s} {'epochs':>9s}  evaluated"]
    failures = []
    counts: dict[str, int] = {}
    for spec in plan.runs:
        state = run_state(out, spec)
        stored = read_state(out, spec.name)
        if state == "pending" and stored.get("state") == "submitted":
            state = f"submitted {stored.get('job_id', '')}".strip()
        counts[state.split()[0]] = counts.get(state.split()[0], 0) + 1
        run_dir = out / "runs" / spec.name
        from fullscale.runs import read_metrics

        try:
            epochs = max((m["epoch"] for m in read_metrics(run_dir)), default=0)
        except ValueError:
            epochs = "?"
        total = (stored_config(run_dir) or {}).get("epochs", "?")
        evaluated = ",".join(e.suite for e in spec.evals if eval_done(run_dir, e)) or "-"
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
    candidates = [sweep_dir(out) / "logs" / f"{spec.name}.log"]
    if stored.get("job_id"):
        candidates += sorted((sweep_dir(out) / "slurm").glob(f"{stored['job_id']}*/*.err"))
    for path in candidates:
        if path.is_file():
            return path.read_text(errors="replace").splitlines()[-_LOG_TAIL:]
    text = stored.get("traceback") or ""
    return text.splitlines()[-_LOG_TAIL:]


def device_problems(plan: Plan) -> list[str]:
    """What each run's start would refuse of this machine's device (``reproduce.plan_check.check_device``), one
    line per distinct problem: issue 54, ``--set runtime.cuda_graph=true`` on a CPU planned without a
    word (also with ``--dry-run``) and every run failed.  Local sweeps only: a SLURM job runs on its
    node's devices, not the submitting machine's."""
    from noisymix_app.reproduce.plan_check import check_device

    problems: list[str] = []
    for spec in plan.runs:
        try:
            check_device(spec.config(), world=spec.gpus)
        except (ValueError, TypeError, KeyError, OSError) as error:
            line = f"run {spec.name}: {str(error).splitlines()[0] if str(error) else type(error).__name__}"
            if not any(p.split(": ", 1)[1] == line.split(": ", 1)[1] for p in problems):
                problems.append(line)
    return problems


def run(args: argparse.Namespace) -> int:
    if args.table == "status":
        if not args.status_dir:
            raise ValueError("usage: noisymix sweep status DIR")
        print(status_text(args.status_dir))
        return 0
    if args.seeds < 1 or args.retries < 0 or args.workers < 0 or args.runs_per_gpu < 1:
        raise ValueError("need --seeds >= 1, --retries >= 0, --workers >= 0, --runs-per-gpu >= 1")
    if args.seeds > MAX_SEEDS:  # before the plan: a million seeds planned for minutes without a word
        raise ValueError(f"--seeds {args.seeds} is more than {MAX_SEEDS} seeds per row (the paper: 5)")
    if args.out is not None and not args.dry_run:
        from noisymix_infra.folder_kind import check_claim

        check_claim(args.out, "sweep")  # the root, a file, a run's or a set's folder: before any planning
    # with the other arguments, before any plan: a slurm submission or a dry run ignored a bad --members
    if args.members < 1 or (args.members > 1 and (args.workers != 0 or args.launcher != "local")):
        raise ValueError(f"--members {args.members}: give N >= 1, and N > 1 only with --launcher local --workers 0 "
                         "(one process trains the group)")
    data_root = str(Path(args.data_root).resolve()) if args.data_root else None
    plan = build_plan(args.table, range(args.seeds), overrides=args.overrides,
                      suite_roots=_suite_roots(args.suite_root), data_root=data_root,
                      sources=_suite_roots(args.source, "--source", "ROW=PATH"))
    problems = check_inputs(plan)
    if args.launcher == "local":  # runs on this machine: its device, as each run's start checks it (issue 54)
        problems += device_problems(plan)
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
    from noisymix_infra.folder_kind import claim_folder

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
