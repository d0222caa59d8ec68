"""``noisymix screen SPEC --out DIR``: a new augmentation scored on the digits proxy in minutes, with its
predicted CIFAR-10-C and -P standing and an honest error bar (issue 59).

1. **Before anything is written**: the eight-method summary is read (``reference.read_reference``), the
   recipe its methods were trained with is resolved (``analogue-methods`` with the summary's ``--set``
   items) and checked as ``noisymix reproduce`` checks a plan, SPEC is imported, pinned to its source and
   tried on a batch of digits (``spec.dry_run``), and ``DIR`` is checked: a folder of another kind, or a
   screen of another method or of an edited source, is one line (``--fresh`` replaces the latter).
2. **The sets**: the difficulty-matched Digits-C and Digits-P, made by ``noisymix corrupt`` with the
   argument lines of ``noisymix reproduce`` (``noisymix_app.reproduce.steps``), so they are the sets the
   reference methods were evaluated on; kept when a rerun finds them made with the same identity.
3. **The runs**: SPEC on the summary's seeds, trained and evaluated by the sweep machinery
   (``noisymix_app.sweep.local.run_local``: worker processes, one torch thread each, a finished run kept, a
   killed one resumed from its checkpoint).  A built-in screened by name runs exactly the ``RunSpec`` of its
   eight-method runs (``plan_from_reproduce``: same code path, same numbers); the user's own is the
   Baseline's runs with ``method=module:name@digest``.  A method that raises stops the screen: the report
   names the run and shows the method's own frames; a run that failed before its first checkpoint is
   removed, and no page is written.
4. **The page** (``report``): terminal, ``DIR/SCREEN.md``, ``DIR/screen.json``, ``DIR/screen.png``.

``--set workers=N`` only: every other field of the recipe is the summary's (a screen of another recipe
would be compared with methods trained otherwise; make a summary of that recipe and give ``--summary``).

Issue 64 (what the user's code and folder may do to a screen):

- SPEC is imported and tried in a child process first (``spec.checked_spec``): a module that ends its
  process at import is one line and status 2, not a silent status 0.  The user's own method runs only in
  worker processes, each in a process group of its own that ends with the screen (``sweep.pool``); a run
  whose worker was killed is retried once in a new worker, and a failure names its real cause (a signal
  is not "the method", and no traceback is pointed to where none was written); a run that holds its
  weights (another worker's finished run) is never removed, only folders without any.
- The per-batch contract (``user_method``: targets' values, global draws) ends the screen in one line
  naming the run and the batch.
- ``--out`` that holds files but is no screen's folder (no marker of a screen) is refused before anything
  is touched; ``--fresh`` removes only what a screen made (runs that are runs, the page), never a folder the
  user put in ``runs/``; an unreadable ``screen-log.json`` is refused before anything is removed.
- The reference is bound to its sets: a summary's ``sets`` (``{"c": sha256, "p": sha256}``, as
  ``docs/reproduce-summary.json`` has them) must be the identity of the sets this screen makes, else one
  line; a summary without them is screened and the page says its sets are unverified.

Issue 65 (the page says where it cannot see):

- Per CIFAR-10-C family and per corruption, the method's Digits-C accuracy (``numbers_of``: read from the
  runs' own evaluations, no extra work), its paired differences with the Baseline and NoisyMix and the
  reference methods' means, each beside the analogue's multiplier of CIFAR's strength; where its gain lies
  in corruptions the proxy scales beyond 2x or below 0.5x, the words say so before any prediction
  (``noisymix_app.screen.families``).
- ``--also-published``: the same trained models (no new training) evaluated on Digits-C and Digits-P made at
  the published CIFAR rows (``--params cifar``) under ``DIR/data``, each run's results in
  ``DIR/published/<run>/eval``, beside the committed reference at those rows
  (``docs/published-strengths-summary.json``, ``--published-summary FILE``); where the two views disagree,
  per family (``noisymix_app.screen.published``).  The published sets are made and checked against that
  reference's ``sets`` before any training.  ``--published-summary`` without ``--also-published``, or one
  that is absent or not such a reference, is one line before anything is written.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import sys
import time
from pathlib import Path

from noisymix_app.screen.plan import screen_plan, screen_seeds
from noisymix_app.screen.reference import DEFAULT_SEEDS, read_reference
from noisymix_app.screen.sets import check_sets, make_sets, matched_steps, numbers_of
from noisymix_app.screen.spec import Spec, checked_spec
from noisymix_infra.io import printable, read_json, write_json

__all__ = ["add_arguments", "run", "screen", "screen_runs"]

#: the record of the screen's steps and what it screens (``reproduce.json``'s role in a screen folder)
LOG = "screen-log.json"


class MethodFailed(RuntimeError):
    """A run of the screened method failed; the message names the run and holds the method's frames."""


# ----------------------------------------------------------------------------- the plan and its runs

def screen_runs(spec: Spec, plan, out: Path):
    """The runs of ``spec`` on ``plan``'s seeds as the sweep runs them (``noisymix_app.sweep.plan.Plan``),
    evaluated on the sets under ``out/data``."""
    from noisymix_app.reproduce.steps import _corrupted, _perturbed
    from noisymix_app.sweep.plan import Plan, plan_from_reproduce

    if spec.builtin:  # exactly the RunSpecs of its eight-method runs: the same code path
        one = dataclasses.replace(plan, methods=(spec.method,), perturbed_methods=(spec.method,))
        return plan_from_reproduce(one, _corrupted(plan, out), perturbed=_perturbed(plan, out))
    base = dataclasses.replace(plan, methods=("baseline",), perturbed_methods=("baseline",))
    made = plan_from_reproduce(base, _corrupted(plan, out), perturbed=_perturbed(plan, out))
    runs = tuple(dataclasses.replace(
        r, name=f"{spec.label}-seed{r.seed}", overrides=(*r.overrides, f"method={spec.method}", f"preset={spec.label}"),
        rows=(f"screen {spec.given}",)) for r in made.runs)
    return Plan(made.table, runs, made.notes, made.comparisons, analogue=True)



def _check_runs(runs, plan) -> None:
    """Each run's training config resolved and checked as the trainer will (``check_device``), before
    anything is written."""
    from noisymix_app.reproduce.plan_check import check_device, check_plan

    check_plan(dataclasses.replace(plan, methods=("baseline",), perturbed_methods=("baseline",)))
    for spec in runs.runs:
        try:
            check_device(spec.config())
        except (ValueError, TypeError, KeyError) as error:
            text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ValueError(f"the trainer refuses run {spec.name}: {text}") from None


# ----------------------------------------------------------------------------- the folder

def _check_folder(out: Path, spec: Spec, runs, fresh: bool) -> tuple[list[str], dict]:
    """What ``out`` holds, checked before anything is written: a folder of another kind, or one that holds
    files but is no screen's (issue 64: a user's ``screen.png`` was deleted, ``--fresh`` deleted a user's
    ``runs/mywork``), is refused; a screen of another method, or runs of another config (a source edited
    since), are refused unless ``fresh``; an unreadable log is refused unless ``fresh``.  Returns the runs
    to clear (with ``fresh``) and the log's steps as read now."""
    from noisymix_app.sweep.state import check_config
    from noisymix_infra.folder_kind import check_claim, folder_kind

    found = check_claim(out, "screen")
    if found is None and out.is_dir() and any(out.iterdir()):
        raise ValueError(f"{printable(str(out))} holds files and is not a screen's folder (it has no marker of a "
                         "screen, noisymix-folder.json): give an empty or new --out (--fresh never clears a folder "
                         "no screen made)")
    log = out / LOG
    old: dict = {}
    if log.is_file():
        try:
            old = read_json(log)
            if not isinstance(old, dict):
                raise ValueError("not a JSON object")
        except ValueError as error:
            if not fresh:
                raise ValueError(f"{printable(str(log))} is unreadable ({str(error).splitlines()[0][:120]}): give "
                                 "--fresh to screen anew in this folder, or another --out") from None
            old = {}
        was = old.get("spec", {}).get("method") if isinstance(old.get("spec"), dict) else None
        if isinstance(was, str) and was != spec.method and not fresh:
            if was.split("@")[0] == spec.method.split("@")[0]:  # the same function, its file edited since
                raise ValueError(f"{printable(str(out))} holds a screen of {printable(spec.given)} whose source "
                                 f"changed since (sha256 {printable(was.partition('@')[2])}... then, "
                                 f"{spec.method.partition('@')[2]}... now): give --fresh to screen it anew (its runs "
                                 "are replaced), or another --out")
            raise ValueError(f"{printable(str(out))} holds a screen of {printable(was.split('@')[0])}, not "
                             f"{printable(spec.given)}: give --fresh to replace it, or another --out")
    clear = []
    names = {r.name for r in runs.runs}
    folder = out / "runs"
    for run_dir in sorted(p for p in folder.glob("*") if p.is_dir()) if folder.is_dir() else ():
        if run_dir.name not in names:
            clear.append(run_dir.name)  # another method's runs: the page reads only this method's
    for r in runs.runs:
        try:
            check_config(r, out / "runs" / r.name)
        except ValueError:
            clear.append(r.name)
    for name in clear:  # only a run a screen made is ever removed
        if folder_kind(out / "runs" / name) != "run":
            raise ValueError(f"{printable(str(out / 'runs' / name))} is no run of a screen (no run's marker): move "
                             "it out of the screen's folder, or give another --out; --fresh removes only runs")
    if clear and not fresh:
        other = [n for n in clear if n in names]
        why = (f"holds runs of another configuration ({printable(other[0])}: the method's source or the recipe "
               "changed since)" if other else f"holds runs this screen does not make ({printable(clear[0])}: another "
               "method's, or another summary's seeds)")
        raise ValueError(f"{printable(str(out))} {why}: give --fresh to train them anew, or another --out")
    steps = old.get("steps") if isinstance(old.get("steps"), list) else []
    return clear, {"steps": [e for e in steps if isinstance(e, dict) and isinstance(e.get("name"), str)]}


def _clear(out: Path, names: list[str]) -> None:
    """Delete the runs ``names`` and the sweep's records of them (``--fresh``: the user said so)."""
    from noisymix_app.screen.published import FOLDER

    for name in names:  # and its evaluations at the published rows (issue 65), of the weights removed
        for path in (out / "runs" / name, out / "sweep" / "state" / f"{name}.json", out / FOLDER / name):
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()


# ----------------------------------------------------------------------------- the sets

# ----------------------------------------------------------------------------- a failing method

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.*)$')


def method_frames(trace: str, source: str | None) -> list[str]:
    """The frames of ``trace`` (a formatted traceback) in the method's own ``source`` file, each with
    its line of code; the last three frames where none is (a built-in method, a cut traceback)."""
    lines = (trace or "").splitlines()
    frames: list[list[str]] = []
    for i, line in enumerate(lines):
        found = _FRAME.match(line)
        if found:
            code = lines[i + 1] if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
            frames.append([found["file"], line.rstrip(), code.rstrip()])
    if source is not None:
        own = [f for f in frames if Path(f[0]).resolve() == Path(source).resolve()]
        if own:
            frames = own
        else:
            frames = frames[-3:]
    else:
        frames = frames[-3:]
    return [text for f in frames for text in f[1:] if text]


_SIGNAL = re.compile(r"exit status (-\d+)\)")


def _failure(out: Path, spec: Spec, runs, failed: str) -> Exception:
    """The failure of run ``failed``, named by its real cause (issue 64): a worker killed by a signal is
    not the method's error, a broken per-batch contract is one line (a ``ValueError``) naming the run and
    the batch, and a traceback is pointed to only where one was written; otherwise the method's error
    and its own frames.  A run folder without weights (no checkpoint, no ``final.pt``) is removed, nothing
    half-made is left; a run with them (another worker's finished run) is kept, to be resumed or reused."""
    import signal

    from fullscale.training.user_method import CONTRACT
    from noisymix_app.sweep.state import run_record

    record = run_record(out, failed)
    for r in runs.runs:  # nothing half-made is left; a run with its weights (another worker's finished one) stays
        run_dir = out / "runs" / r.name
        if run_dir.is_dir() and not any((run_dir / n).exists() for n in ("checkpoint.pt", "final.pt")):
            shutil.rmtree(run_dir)
    step = record.get("step") or "train"
    error = str(record.get("error") or "it stopped")
    if CONTRACT in error:
        return ValueError(f"run {failed} ({step}): {printable(error.removeprefix('ValueError: '))}; nothing of the "
                          "screen's page was written")
    killed = _SIGNAL.search(error)
    if killed and not record.get("traceback"):
        number = -int(killed.group(1))
        name = signal.Signals(number).name if number in {s.value for s in signal.Signals} else f"signal {number}"
        return MethodFailed(f"run {failed} ({step}): its worker process was killed by {name}, in its first worker "
                            "and in the new one it was retried in; a signal from outside Python (the kernel's "
                            "out-of-memory killer, a kill), not an error the method raised; no traceback was "
                            "written, and nothing of the screen's page")
    frames = method_frames(record.get("traceback") or "", spec.source)
    lines = [f"{printable(spec.given)} failed in run {failed} ({step}): {printable(error)}"]
    if frames:
        lines += ["its frames (most recent call last):", *(printable(f) for f in frames)]
    if record.get("traceback"):
        lines.append(f"the whole traceback: `noisymix sweep status {printable(str(out))}`; nothing of the screen's "
                     "page was written")
    else:
        lines.append(f"no traceback was written (the run's log: {printable(str(out / 'sweep' / 'logs'))}/"
                     f"{printable(failed)}.log); nothing of the screen's page was written")
    return MethodFailed("\n".join(lines))


class _Stop(Exception):
    """Raised from the sweep's ``after_run`` when a run fails: the other runs of a method that raises
    would fail too, so the screen stops them (each keeps its last checkpoint)."""


# ----------------------------------------------------------------------------- the screen

def _ours(out: Path, runs, plan) -> dict:
    """The screened method's per-seed numbers (points, %), in the seeds' order: clean accuracy, the mean
    Digits-C accuracy over the plan's corruptions and the mean Digits-P flip probability over its
    perturbations, computed as the eight-method summary computes them (``noisymix_app.analogue.methods``);
    and (issue 65) the accuracy per corruption and per CIFAR-10-C family."""
    return numbers_of([out / "runs" / r.name / "eval" for r in runs.runs], plan)


def screen(given: str, out: str | Path, *, summary: str | Path | None = None, overrides: list[str] | None = None,
           fresh: bool = False, also_published: bool = False, published_summary: str | Path | None = None) -> dict:
    """Screen ``given`` into ``out`` (see the module docstring); return the page's record.  ``also_published``
    (issue 65): the same models also evaluated at the published CIFAR rows (``noisymix_app.screen.published``),
    beside the committed reference there (``published_summary``, default ``PUBLISHED_SUMMARY``)."""
    from noisymix_app.reproduce.command import run_workers
    from noisymix_app.reproduce.log import _progress_line
    from noisymix_app.screen.published import (
        check_published_sets,
        evaluate_published,
        published_numbers,
        published_steps,
        read_published,
    )
    from noisymix_app.sweep.local import run_local
    from noisymix_app.sweep.state import run_record, run_state
    from noisymix_infra.folder_kind import claim_folder
    from noisymix_infra.io import directory_lock, sha256_file
    from noisymix_infra.provenance import provenance

    started = time.perf_counter()
    out = Path(out)
    whole = read_reference(summary)
    reference, overrides = screen_seeds(whole, overrides or [])
    plan = screen_plan(reference, overrides)
    if published_summary is not None and not also_published:
        raise ValueError("--published-summary is the reference of the second view: give it with --also-published")
    published_ref = (read_published(None if published_summary is None else Path(published_summary), whole,
                                    given=published_summary is not None) if also_published else None)
    if published_ref is not None:
        published_ref = published_ref.on_seeds(reference.seeds)
    made_runs = []

    def config_of(spec: Spec):
        made_runs.append(screen_runs(spec, plan, out))
        _check_runs(made_runs[-1], plan)
        return made_runs[-1].runs[0].config()

    spec = checked_spec(given, config_of)  # the user's code imported and tried in a child process first
    runs = made_runs[-1] if made_runs else screen_runs(spec, plan, out)
    if not made_runs:
        _check_runs(runs, plan)
    clear, old = _check_folder(out, spec, runs, fresh)
    # nothing was written before this line
    claim_folder(out, "screen")
    with directory_lock(out, "screening"):
        for name in ("screen.json", "SCREEN.md", "screen.png"):  # a page is this invocation's, or none
            (out / name).unlink(missing_ok=True)
        _clear(out, clear)
        log_path = out / LOG
        # the sets are kept by their identity (arguments and inputs), whatever else --fresh replaces
        log = {"spec": dataclasses.asdict(spec), "summary": str(reference.path), "summary_sha256": reference.sha256,
               "plan": dataclasses.asdict(plan), "steps": old["steps"]}
        write_json(log_path, log)
        # the matched sets and the published ones side by side, before any training: a mismatch costs no run
        steps = matched_steps(plan, out) + (published_steps(plan, out) if also_published else [])
        made = make_sets(steps, log, log_path, workers=run_workers(plan, len(steps)))
        sets = check_sets(reference, plan, out)
        published_sets = check_published_sets(published_ref, plan, out) if also_published else None
        for step, suite in (("corrupt", plan.corrupted_suite), ("corrupt-p", plan.perturbed_suite)):
            if step in made:  # an evaluation of a set made anew is evaluated again
                for r in runs.runs:
                    (out / "runs" / r.name / "eval" / f"{suite}.json").unlink(missing_ok=True)
        pending = [r.name for r in runs.runs if run_state(out, r) != "done"]
        count = run_workers(plan, len(pending))
        # the user's own code runs in workers only (their own process groups, ended with the screen), never in
        # this process: one that ends its process cannot end the command without a word
        workers = count if spec.builtin and count > 1 else 0 if spec.builtin else count
        print(f"screen: {spec.given} ({spec.form}) on {len(runs.runs)} seeds: {len(runs.runs) - len(pending)} runs "
              f"done, {len(pending)} to train and evaluate, {count} at a time, one torch thread each", flush=True)
        line = _progress_line(out, pending, time.perf_counter())
        ended: list[str] = []

        def after_run(name: str, state: str) -> None:
            ended.append(name)
            print(line(name, state, len(ended)), flush=True)
            if state != "done":
                raise _Stop(name)

        try:
            # retries=1: a run whose worker was killed gets a new worker once; a method's ValueError (its contract)
            # is deterministic and never retried
            run_local(runs, out, workers=workers, retries=1, tabulate=False, retry_failed=True, threads=1,
                      after_run=after_run)
        except _Stop as stop:
            raise _failure(out, spec, runs, str(stop)) from None
        ours = _ours(out, runs, plan)
        published = None
        if also_published:  # evaluation only: the same weights on the published sets
            evaluate_published(plan, out, [(r.name, out / "runs" / r.name) for r in runs.runs],
                               workers=run_workers(plan, len(runs.runs)))
            published = {"published_ours": published_numbers(out, [r.name for r in runs.runs], plan),
                         "published_reference": published_ref, "sets": published_sets}
        timings = {}
        for r in runs.runs:  # what made each number: its weights by sha256, and its recorded time and machine
            rec = run_record(out, r.name)
            timings[r.name] = {"final_sha256": sha256_file(out / "runs" / r.name / "final.pt"),
                               "seconds": rec.get("seconds"), "timings": rec.get("timings"),
                               "ran_on": rec.get("ran_on")}
        from noisymix_app.screen.report import page_record, write_page

        plan_words = {"name": reference.plan_name, "model": plan.model, "width": plan.width, "epochs": plan.epochs,
                      "train_overrides": list(plan.train_overrides), "perturbed_limit": plan.perturbed_limit,
                      "corruption_params": plan.corruption_params,
                      "corruptions": list(plan.corruptions) if plan.corruptions else None,
                      "perturbations": list(plan.perturbations) if plan.perturbations else None}
        record = page_record(spec, reference, ours, plan=plan_words, runs=timings,
                             wall_seconds=round(time.perf_counter() - started, 1), published=published)
        record["sets"] = {s["name"]: {"argv": s.get("argv"), "inputs": s.get("inputs")} for s in log["steps"]}
        record["sets_identity"] = sets
        record["provenance"] = provenance()
        text = write_page(out, record)
    print(text)
    return record


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from noisymix_infra.config import add_set_argument

    parser.add_argument("spec", metavar="SPEC",
                        help="a built-in method (noisymix, cutmix, ...) or package.module:name, the module importable "
                             "(PYTHONPATH): a batch function (images, labels, generator) -> (images, targets) or a "
                             "fullscale.training.methods.Method")
    parser.add_argument("--out", required=True, help="the screen's folder (resumable: finished runs are kept)")
    parser.add_argument("--summary", default=None,
                        help="the eight-method summary to compare with (default: docs/analogue-methods-summary.json)")
    parser.add_argument("--fresh", action="store_true",
                        help="replace a screen of another method, or of a method edited since, in --out")
    parser.add_argument("--also-published", action="store_true",
                        help="also evaluate the same models (no new training) on Digits-C and Digits-P made at the "
                             "published CIFAR rows (corrupt --params cifar), and say where the two views disagree")
    parser.add_argument("--published-summary", default=None,
                        help="the eight methods at the published rows, with --also-published (default: "
                             "docs/published-strengths-summary.json; without it the page says how it is made)")
    add_set_argument(parser, "--set workers=1", "the plan's execution: workers=N, and seeds=A,B,... (some of the "
                     f"summary's seeds; default its first {DEFAULT_SEEDS}); the recipe is the summary's")


def run(args: argparse.Namespace) -> int:
    try:
        screen(args.spec, args.out, summary=args.summary, overrides=args.overrides, fresh=args.fresh,
               also_published=args.also_published, published_summary=args.published_summary)
    except MethodFailed as error:  # the method's own failure, with its frames (several lines)
        print(f"noisymix screen: {error}", file=sys.stderr)
        return 1
    return 0
