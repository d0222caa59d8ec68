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
import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from noisymix_app.plan_check import check_plan
from noisymix_app.plans import PLANS, ReproducePlan, default_plan_name
from noisymix_infra.config import add_set_argument, apply_overrides
from noisymix_infra.io import directory_lock, read_json, write_json, write_text

__all__ = ["PLANS", "ReproducePlan", "add_arguments", "check_git_checkout", "reproduce",  # plans: noisymix_app.plans
           "resolve_plan", "run", "run_workers"]


@dataclass(frozen=True)
class _Step:
    name: str
    argv: tuple[str, ...]
    done: Path  # the file whose presence means the step finished


def _run_name(method: str, seed: int) -> str:
    return f"{method}-seed{seed}"


def _corrupted(plan: ReproducePlan, out: Path) -> Path:
    """The plan's -C set: ``data/<dataset>-c`` at the published rows, ``data/<dataset>-c-<params>`` at
    another table (the difficulty-matched Digits-C: ``data/digits-c-digits-matched``)."""
    tail = "" if plan.corruption_params == "cifar" else f"-{plan.corruption_params}"
    return out / "data" / f"{plan.dataset}-c{tail}"


def _perturbed(plan: ReproducePlan, out: Path) -> Path | None:
    return out / "data" / f"{plan.dataset}-p" if plan.perturbed_suite else None


def _steps(plan: ReproducePlan, out: Path, data_root: str | None) -> tuple[list[_Step], _Step]:
    """The command steps before the runs (verify, toy, corrupt) and the one after (figures).

    The training runs and their evaluations between them are a sweep (``_runs``)."""
    steps = [
        _Step("verify", ("verify", "--out", str(out / "theory"), "--points", str(plan.theory_points),
                         *(() if plan.theory_sympy else ("--no-sympy",))),
              out / "theory" / "theory.json"),
        _Step("toy", ("toy", "--out", str(out / "toy"), "--seeds", str(plan.toy_seeds),
                      "--epochs", str(plan.toy_epochs)),
              out / "toy" / "toy.json"),
    ]
    corrupted = _corrupted(plan, out)
    root = () if data_root is None else ("--data-root", data_root)
    corruptions = () if plan.corruptions is None else ("--corruptions", ",".join(plan.corruptions))
    steps.append(_Step("corrupt", ("corrupt", "--dataset", plan.dataset, "--kind", "c",
                                   "--out", str(corrupted), *root, *corruptions, "--seed", "0",
                                   "--params", plan.corruption_params),
                       corrupted / "labels.npy"))
    perturbed = _perturbed(plan, out)
    if perturbed is not None:  # the stability claims' -P set: the plan's perturbations of its first images
        names = () if plan.perturbations is None else ("--corruptions", ",".join(plan.perturbations))
        limit = ("--limit", str(plan.perturbed_limit)) if plan.perturbed_limit else ()
        steps.append(_Step("corrupt-p", ("corrupt", "--dataset", plan.dataset, "--kind", "p", "--out", str(perturbed),
                                         *root, *names, *limit, "--seed", "0"),
                           perturbed / "labels.npy"))
    figures = _Step("figures", ("figures", "--results", str(out), "--out", str(out / "figures")),
                    out / "figures" / "REPORT.md")
    return steps, figures


def _runs(plan: ReproducePlan, out: Path, data_root: str | None):
    """The plan's training runs as a sweep plan (``noisymix_app.sweep.plan``): method x seed, evaluated on
    the plan's suites, the corrupted one reading this job's own -C set."""
    from noisymix_app.sweep.plan import plan_from_reproduce

    return plan_from_reproduce(plan, _corrupted(plan, out), data_root=data_root, perturbed=_perturbed(plan, out))


def _drop_other_plans_runs(log: dict, names: set[str], out: Path) -> None:
    """Forget runs this plan does not have, and delete the training runs they made.

    ``figures`` reads every run under the folder, so a run left from another plan (another
    method or seed) would be reported as part of this one.
    """
    import shutil

    for entry in log["steps"]:
        kind, _, rest = entry["name"].partition(" ")
        run = rest.split(" ")[0]
        if kind == "train" and run not in names and (out / "runs" / run).is_dir():
            shutil.rmtree(out / "runs" / run)
    log["steps"] = [entry for entry in log["steps"] if entry["name"].partition(" ")[0] not in ("train", "evaluate")
                    or entry["name"].split(" ")[1] in names]


def _output_of(step: _Step) -> Path:
    argv = step.argv
    return Path(argv[argv.index("--out") + 1]) if "--out" in argv else step.done.parent


def _clear_for_rerun(step: _Step) -> None:
    """Remove what a step of another plan left, so the rerun cannot resume from or keep it
    (a corrupted set keeps its files and would carry the other plan's arguments into this one)."""
    import shutil

    target = _output_of(step)
    if target.is_dir():
        shutil.rmtree(target)


def _clear_run(out: Path, name: str, why: str) -> None:
    """Delete a training run (and the sweep's record of it) so that it is trained anew."""
    import shutil

    print(f"reproduce: train {name}: {why}; trained again", flush=True)
    for path in (out / "runs" / name, out / "sweep" / "state" / f"{name}.json"):
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def _command_step(step: _Step, finished: set, rerun: list[Path], command: Callable[[list[str]], int],
                  log: dict, log_path: Path, started: float) -> bool:
    """Run one command step unless it is done with the same command line and nothing it reads
    was rewritten (``rerun``: outputs of steps run in this invocation); True if it ran."""
    if step.done.exists() and (step.name, step.argv) in finished and not rerun:
        print(f"reproduce: {step.name}: done (kept)", flush=True)
        return False
    if step.done.exists() and step.name in {name for name, _ in finished} and "--out" in step.argv \
            and step.name != "figures":
        _clear_for_rerun(step)  # same step, other arguments: its old results must not be resumed from
    t0 = time.perf_counter()
    with _threads_used() as used:
        status = command(list(step.argv))
    if status != 0:
        write_json(log_path, log)
        raise RuntimeError(f"step '{step.name}' failed with exit status {status}: noisymix {' '.join(step.argv)}")
    if not step.done.exists():
        raise RuntimeError(f"step '{step.name}' finished but did not write {step.done}")
    from noisymix_app.sweep.execute import ran_on

    _log_step(log, log_path, {"name": step.name, "argv": list(step.argv),
                              "ran_on": {**ran_on(), "torch_threads": used()}},
              time.perf_counter() - t0, started)
    return True


@contextlib.contextmanager
def _threads_used():
    """``used()``: the torch thread count a command step computed with.  The commands run in this
    process and set their own count for their work (``noisymix toy`` and ``verify``: 1 by default,
    ``noisymix_infra.threads.torch_threads``) and restore ours after it, so the count read after the
    step is this process's, not the step's; the counts set meanwhile are watched instead (the last
    one set before the closing restore).  Several different counts: the largest."""
    import torch

    before = torch.get_num_threads()
    seen: list[int] = []
    real = torch.set_num_threads

    def watch(n: int) -> None:
        seen.append(int(n))
        real(n)

    def used() -> int:
        counts = seen[:-1] if len(seen) >= 2 and seen[-1] == before else list(seen)
        return max(counts) if counts else before

    torch.set_num_threads = watch
    try:
        yield used
    finally:
        torch.set_num_threads = real


def _log_step(log: dict, log_path: Path, entry: dict, seconds: float, started: float) -> None:
    """Record a step that ran in this invocation: its own seconds, threads and machine (``ran_on``),
    replacing its earlier record; a step a rerun skips keeps the record of the run that made it."""
    log["steps"] = [e for e in log["steps"] if e["name"] != entry["name"]]
    log["steps"].append({**entry, "seconds": round(seconds, 2)})
    from noisymix_app.reproduce_summary import total_seconds  # the summary's module: no import loop
    log["seconds"] = total_seconds(log)
    write_json(log_path, log)
    print(f"reproduce: {entry['name']}: {seconds:.1f} s (total {time.perf_counter() - started:.0f} s)", flush=True)


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
    finished = {(entry["name"], tuple(entry.get("argv", ()))) for entry in log["steps"] if "argv" in entry}
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
    for step in before:  # none of them reads another's output: only their own arguments count
        if _command_step(step, finished, [], command, log, log_path, started):
            rerun.append(_output_of(step))
    corrupted_changed = _corrupted(plan, out) in rerun
    perturbed_changed = _perturbed(plan, out) in rerun  # None (no -P suite) is never in it
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
        if corrupted_changed:  # its -C evaluation read a set that was just made anew
            (run_dir / "eval" / f"{plan.corrupted_suite}.json").unlink(missing_ok=True)
        if perturbed_changed:  # the same for the -P set
            (run_dir / "eval" / f"{plan.perturbed_suite}.json").unlink(missing_ok=True)
    ran: list[str] = []
    pending = [spec.name for spec in runs.runs if run_state(out, spec) != "done"]
    workers = run_workers(plan, len(pending))
    if pending:  # the count the runs that made the numbers ran beside each other (a resume keeps it)
        log["workers"] = workers
    print(f"reproduce: {len(runs.runs) - len(pending)} of {len(runs.runs)} runs already done; training and "
          f"evaluating {len(pending)}, {workers} at a time, one torch thread each", flush=True)
    line = _progress_line(out, pending, time.perf_counter())

    def after_run(name: str, state: str) -> None:
        ran.append(name)
        print(line(name, state, len(ran)), flush=True)

    try:
        # one run at a time: in this process; more: a process each.  Either way one thread per run
        # (``threads`` when the caller fixes another count): the numbers do not depend on the load
        states = run_local(runs, out, workers=0 if workers == 1 else workers, retries=0, tabulate=False,
                           retry_failed=True, threads=threads or 1, after_run=after_run,
                           members=plan.members if workers == 1 else 1)
    finally:
        for spec in runs.runs:
            if spec.name in ran or run_record(out, spec.name).get("state") in ("failed", "interrupted"):
                _log_run(log, log_path, out, spec, started)
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
    from noisymix_app.reproduce_summary import total_seconds  # the summary's module: no import loop
    log["seconds"] = total_seconds(log)
    # this invocation's own wall time, apart: a resume that recomputed nothing takes seconds
    log["invocation_seconds"] = round(time.perf_counter() - started, 2)
    write_json(log_path, log)
    from noisymix_app.reproduce_summary import write_summary

    write_summary(out, name)
    _write_index(out, plan, log)
    return log


def run_workers(plan: ReproducePlan, pending: int) -> int:
    """How many runs go side by side: the plan's ``workers``, or for 0 the cores free as the runs
    start (``noisymix_infra.threads.auto_threads``), at least 1 and at most the runs to do.  Each run computes
    with one torch thread whatever this count is, so a busy machine takes longer and computes the
    same numbers (issue 40)."""
    if plan.workers:
        return max(1, min(plan.workers, max(pending, 1)))
    from noisymix_infra.threads import auto_threads

    return max(1, min(auto_threads(), max(pending, 1)))


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


def _progress_line(out: Path, pending: list[str], started: float):
    """``line(name, state, finished)``: a run's line as it finishes (issue 22, item 4): its accuracies
    in %, the time since the runs began and an estimate of what is left (the mean time per finished
    run so far times the runs still to go; runs finish in parallel, so this is wall time)."""

    def line(name: str, state: str, finished: int) -> str:
        elapsed = time.perf_counter() - started
        left = elapsed / finished * (len(pending) - finished)
        scores, errors = [], []
        for suite_file in sorted((out / "runs" / name / "eval").glob("*.json")):
            with contextlib.suppress(ValueError, OSError):
                summary = read_json(suite_file).get("summary") or {}
                # the calibration suite's figure is its error (its accuracy is the clean one again)
                error = summary.get("rms_calibration_error")
                value = summary.get("mean_accuracy", summary.get("accuracy"))
                if isinstance(error, (int, float)):
                    errors.append(f"RMS calibration error {100 * error:.1f} %")
                elif isinstance(value, (int, float)):
                    scores.append(f"{suite_file.stem} {100 * value:.1f} %")
        scores += errors
        what = ", ".join(scores) if state == "done" and scores else state
        return (f"[{finished}/{len(pending)}] {name}: {what} ({_minutes(elapsed)} elapsed, "
                f"~{_minutes(left)} left)")

    return line


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def _log_run(log: dict, log_path: Path, out: Path, spec, started: float) -> None:
    """The run's train and evaluate steps that ran in this invocation, as steps of the log."""
    from noisymix_app.sweep.state import run_record

    record = run_record(out, spec.name)
    for step, seconds in record.get("timings") or []:
        if step == "train":
            entry = {"name": f"train {spec.name}", "run": {"preset": spec.preset, "seed": spec.seed,
                                                            "overrides": list(spec.overrides)}}
        else:
            suite = step.split(" ", 1)[1]
            entry = {"name": f"evaluate {spec.name} {suite}", "suite": suite}
        if record.get("ran_on"):  # written by the process that ran it (a worker has its own threads)
            entry["ran_on"] = record["ran_on"]
        _log_step(log, log_path, entry, seconds, started)


def _write_index(out: Path, plan: ReproducePlan, log: dict) -> None:
    """``out/REPORT.md``: the findings first (``SUMMARY.md``), then what this job is and its steps."""
    lines = [
        "# noisymix reproduce", "", "## Findings", "", (out / "SUMMARY.md").read_text(), "## What was run", "",
        f"**What this is:** the `{log.get('plan_name', 'custom')}` plan, {plan.description}. "
        + ("These are NOT the paper's numbers: the image experiment is a small-scale analogue "
           "(digits, reduced width, few epochs) that exercises the whole pipeline; compare "
           "rankings and signs, not values." if plan.dataset.startswith("digits") else ""),
        "",
        "- Theorem checks: [theory/theory.md](theory/theory.md)",
        "- Toy experiment: [toy/toy.md](toy/toy.md)",
        "- Tables, figures and the comparison with the paper: [figures/REPORT.md](figures/REPORT.md)",
        f"- Runs: `runs/` ({len(plan.methods)} methods × {len(plan.seeds)} seeds, {plan.epochs} epochs, "
        f"{plan.model} width {plan.width}" + "".join(f", {o}" for o in plan.train_overrides)
        + f"); corrupted test set: `{_corrupted(plan, out).relative_to(out)}/`",
        "", "Each step as it ran (recorded then, kept when a rerun skips the step):", "",
        "| step | seconds | torch threads | machine | finished |", "|---|---:|---:|---|---|",
    ]
    for entry in log["steps"]:
        where = entry.get("ran_on") or {}
        machine = (f"{where.get('cpu_model')} ({where.get('cpu_capability')}), {where.get('host')}"
                   if where else "not recorded")
        lines.append(f"| {entry['name']} | {entry['seconds']:.1f} | {where.get('torch_threads', '?')} | "
                     f"{machine} | {where.get('finished', '?')} |")
    from noisymix_app.reproduce_summary import total_seconds  # the summary's module: no import loop
    lines += ["", f"Total: {total_seconds(log):.0f} s, the sum of the steps' recorded times"
              + (" (worker processes ran steps side by side, so the wall time was less)"
                 if log.get("workers", 1) > 1 else "")
              + "."]
    if "invocation_seconds" in log:
        lines.append(f"This invocation: {log['invocation_seconds']:.0f} s.")
    lines.append("")
    write_text(out / "REPORT.md", "\n".join(lines))


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
    check_plan(plan, args.data_root)  # a field a step would refuse: now, not 6-14 s in (issue 48)
    if args.update_readme:
        if name != chosen:
            raise ValueError(f"--update-readme puts the {chosen} plan's summary into the README; "
                             "run it without --set")
        check_git_checkout()  # before hours of work, not after
        if chosen == "quick":  # issue 48: it replaced the README's summary with a smoke run's, without a word
            raise ValueError("--update-readme puts the plan's summary into the README; the quick plan is a smoke "
                             "run whose numbers are meaningless: run it without --update-readme")
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
            from noisymix_app.reproduce_summary import update_readme

            update_readme(args.out)
    print(json.dumps({"out": str(args.out), "seconds": log["seconds"],
                      "report": str(Path(args.out) / "REPORT.md")}))
    return 0
