"""``noisymix bench first-run``: what a newcomer meets, timed as a whole (issue 58, goal 6).

A fresh clone of the repository (``--repo``: a path or URL; default this checkout's committed HEAD) in a folder
of its own, then the README's commands as a newcomer types them, each a whole process timed from outside: ``make
env`` (the virtual environment from scratch), ``make reproduce`` (the main job), optionally ``make test`` (the
README's test command) and the eight-method plan (``--plans analogue-methods``: ``noisymix reproduce --plan
analogue-methods`` in the clone).  Each figure comes with the load average before and after it and the CPU model,
so an idle figure and a loaded one are told apart, and the commit each was measured at.  ``--record FILE`` keeps
the figures of several invocations in one file (a step measured again replaces its older figure; ``make test``
can only pass once the README holds the main job's summary, so it is timed in a clone of the commit that adds
it), and ``--readme`` writes the README's promise from that record (``update_readme``: between ``<!--
first-run:begin -->`` and ``<!-- first-run:end -->``), so the README states what was measured, never a
hand-typed number.  ``--no-reproduce`` leaves the main job out; ``--quick`` times the quick plan instead (the
path end to end in a few minutes).

Issue 64: every input is read and checked before the clone and any timed step (``_checked_inputs``): the
``--record`` file (one line for ``{"steps": "x"}``, ``[1]``, a ``wall_s`` of ``"fast"``) and the README's markers.
``--readme`` writes the promise of this project only (a clone of another repository, whose commit this
checkout does not hold, is refused before its steps are timed) and only a whole one: every figure the block
promises (``PROMISED``: ``make env``, ``make reproduce``, ``make test``, the eight-method plan), so ``--quick`` or
``--no-reproduce`` without a recorded ``make reproduce`` is refused before the clone, and a make target that
took under a tenth of a minute ("0.0 min": a target that did nothing) is refused before the README is
written.  ``--record`` merges under a lock on its folder (``noisymix_app.analogue.freeze.package_lock``, as the
fit freeze does), re-reading the file there, so two invocations at once lose no figure.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["BEGIN", "END", "PROMISED", "add_arguments", "check_record", "promise", "run", "update_readme"]

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- first-run:begin -->", "<!-- first-run:end -->"
#: the steps the README's block promises, each a figure of a fresh clone
PROMISED = ("make env", "make reproduce", "make test", "reproduce analogue-methods")
#: the least wall seconds a make target's figure may show: under it the README would say "0.0 min"
MIN_MAKE_SECONDS = 3.0
_MARKERS = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), flags=re.S)


def check_record(data: object, name: str) -> dict:
    """A first-run record (``{"steps": [{"name": str, "wall_s": number, ...}, ...], ...}``) checked whole; one line
    naming ``name`` and the first thing wrong (issue 64: ``{"steps": "x"}``, ``[1]`` and a ``wall_s`` of
    ``"fast"`` were tracebacks, after the clone and every timed step)."""
    from noisymix_infra.io import printable

    what = "a first-run record of noisymix bench (an object with its steps)"
    if not isinstance(data, dict):
        raise ValueError(f"{printable(name)}: {what} must be a JSON object, got {type(data).__name__}")
    steps = data.get("steps")
    if not isinstance(steps, list):
        raise ValueError(f"{printable(name)}: not {what}: 'steps' must be a list, got {printable(repr(steps))[:80]}")
    for i, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("name"), str):
            raise ValueError(f"{printable(name)}: steps[{i}] is not a step (an object with its name)")
        wall = step.get("wall_s")
        if not isinstance(wall, int | float) or isinstance(wall, bool) or not wall >= 0 or wall == float("inf"):
            raise ValueError(f"{printable(name)}: steps[{i}] ({printable(step['name'])}).wall_s must be seconds "
                             f"(a number >= 0), got {printable(repr(wall))[:80]}")
        for key in ("commit", "cpu_model"):
            if step.get(key) is not None and not isinstance(step[key], str):
                raise ValueError(f"{printable(name)}: steps[{i}].{key} must be a string")
        load = step.get("load_before")
        if load is not None and not (isinstance(load, list) and load and all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in load)):
            raise ValueError(f"{printable(name)}: steps[{i}].load_before must be a list of numbers")
    return data


def _read_record(path: Path) -> dict:
    from noisymix_infra.io import read_json_object

    if not path.exists():
        return {"steps": []}
    return check_record(read_json_object(path, "a first-run record of noisymix bench", {"steps": "list"}), str(path))


def _step_names(args: argparse.Namespace, plans: list[str]) -> list[str]:
    """The steps this invocation times, by name, in order."""
    names = ["make env"]
    if args.quick:
        names.append("reproduce quick")
    elif not args.no_reproduce:
        names.append("make reproduce")
    names += [f"reproduce {plan}" for plan in plans]
    if args.test:
        names.append("make test")
    return names


def _checked_inputs(args: argparse.Namespace, plans: list[str]) -> None:
    """Everything this invocation reads, checked before the clone (module docstring)."""
    from noisymix_infra.io import printable

    kept = _read_record(Path(args.record)) if args.record else {"steps": []}
    if args.readme:
        readme = Path(args.readme)
        try:
            text = readme.read_text()
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"--readme {printable(str(readme))} cannot be read "
                             f"({getattr(error, 'strerror', None) or type(error).__name__})") from None
        if not _MARKERS.search(text):
            raise ValueError(f"--readme {printable(str(readme))} has no {BEGIN} ... {END} markers")
        have = {s["name"] for s in kept["steps"]} | set(_step_names(args, plans))
        missing = [name for name in PROMISED if name not in have]
        if missing:
            raise ValueError(f"--readme: the first-run block promises {', '.join(PROMISED)}; this invocation and "
                             f"--record would leave out {missing[0]} (time it with --test, --plans analogue-methods, "
                             "without --quick or --no-reproduce, or keep its figure in --record)")


def _own_commit(commit: str) -> bool:
    """Whether this checkout's repository holds ``commit`` (a clone of this project, not another's)."""
    done = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True)
    return done.returncode == 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", default=str(ROOT), help="what to clone (a path or URL; default this checkout)")
    parser.add_argument("--workdir", default=None, help="where to clone (default a new temporary folder, removed)")
    parser.add_argument("--test", action="store_true", help="also time `make test` in the clone")
    parser.add_argument("--plans", default="", help="also time these plans in the clone, comma-separated "
                                                    "(e.g. analogue-methods)")
    parser.add_argument("--quick", action="store_true", help="the quick plan instead of `make reproduce`")
    parser.add_argument("--no-reproduce", action="store_true", help="leave `make reproduce` out")
    parser.add_argument("--record", default=None, help="keep the figures in this JSON file, with those of earlier "
                                                       "invocations (a step measured again replaces its own)")
    parser.add_argument("--readme", default=None, help="write the promise into this README (between its markers), "
                                                       "from --record's figures when given")


def _load() -> list[float] | None:
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


def _cpu_model() -> str | None:
    from noisymix_infra.provenance import machine

    return machine().get("cpu_model")


def _timed(name: str, argv: list[str], cwd: Path, commit: str) -> dict:
    """One command as a whole process: its wall seconds, load average before and after, the commit."""
    before = _load()
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"`{' '.join(argv)}` failed in the clone (exit {done.returncode}): {last[:300]}")
    return {"name": name, "command": " ".join(argv), "wall_s": round(seconds, 1), "load_before": before,
            "load_after": _load(), "commit": commit, "cpu_model": _cpu_model(), "cpu_count": os.cpu_count()}


def run(args: argparse.Namespace) -> dict:
    from noisymix_app.reproduce.plans import PLANS

    plans = [p.strip() for p in args.plans.split(",") if p.strip()]
    unknown = [p for p in plans if p not in PLANS]
    if unknown:
        raise ValueError(f"--plans names no plan {', '.join(unknown)}; plans: {', '.join(PLANS)}")
    _checked_inputs(args, plans)  # before the clone and any timed step
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="first-run-"))
    clone = work / "clone"
    if clone.exists():
        raise ValueError(f"{clone} exists: give an empty --workdir (the clone must be fresh)")
    work.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["git", "clone", "--quiet", args.repo, str(clone)], check=True, capture_output=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True,
                                check=True).stdout.strip()
        if args.readme and not _own_commit(commit):
            raise ValueError(f"--readme: the clone of {args.repo} is at {commit[:12]}, which this checkout's "
                             "repository does not hold: the README states figures of this project only")
        steps = [_timed("make env", ["make", "env"], clone, commit)]
        if args.quick:
            steps.append(_timed("reproduce quick", [".venv/bin/noisymix", "reproduce", "--plan", "quick", "--out",
                                                    "results"], clone, commit))
        elif not args.no_reproduce:
            steps.append(_timed("make reproduce", ["make", "reproduce"], clone, commit))
        for plan in plans:
            steps.append(_timed(f"reproduce {plan}", [".venv/bin/noisymix", "reproduce", "--plan", plan, "--out",
                                                      f"results-{plan}"], clone, commit))
        if args.test:
            steps.append(_timed("make test", ["make", "test"], clone, commit))
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    record = {"repo": args.repo, "commit": commit, "cpu_model": _cpu_model(), "cpu_count": os.cpu_count(),
              "steps": steps}
    if args.record:
        record = merge_record(Path(args.record), record)
    if args.readme:
        _check_own(record)
        update_readme(Path(args.readme), record)
    return record


def _check_own(record: dict) -> None:
    """One line unless every step of ``record`` was measured at a commit this checkout's repository holds."""
    from noisymix_infra.io import printable

    for step in record["steps"]:
        commit = step.get("commit") or record.get("commit")
        if not isinstance(commit, str) or not _own_commit(commit):
            raise ValueError(f"`{step['name']}` was measured at {printable(str(commit))[:12]}, a commit this "
                             "checkout's repository does not hold: the README states figures of this project only")


def merge_record(path: Path, record: dict) -> dict:
    """``record``'s steps merged into the file at ``path`` (a step measured again replaces its older figure),
    read and written under a lock on its folder, so an invocation ending meanwhile loses nothing."""
    from noisymix_app.analogue.freeze import package_lock
    from noisymix_infra.io import write_json

    path.parent.mkdir(parents=True, exist_ok=True)
    with package_lock(path):
        kept = _read_record(path)
        mine = {s["name"] for s in record["steps"]}
        merged = {**record, "steps": [s for s in kept["steps"] if s["name"] not in mine] + list(record["steps"])}
        write_json(path, merged)
    return merged


def _minutes(step: dict) -> str:
    return f"{step['wall_s'] / 60:.1f} min"


def _load_words(step: dict) -> str:
    before = step.get("load_before")
    return "" if not before else f"load average {before[0]:.2f} before"


def promise(record: dict) -> str:
    """The README's sentence of what a fresh clone took, from a ``first-run`` record: each step with its load
    average, and the commits and CPUs they were measured at."""
    by = {s["name"]: s for s in record["steps"]}
    parts = []
    if "make env" in by:  # the last measured, in whichever invocation: not necessarily that of make reproduce
        parts.append(f"`make env` {_minutes(by['make env'])}")
    if "make reproduce" in by:
        s = by["make reproduce"]
        parts.append(f"`make reproduce` {_minutes(s)} ({_load_words(s)})")
    if "make test" in by:
        parts.append(f"`make test` {_minutes(by['make test'])} ({_load_words(by['make test'])})")
    for name, s in by.items():
        if name.startswith("reproduce ") and name != "reproduce quick":
            # a plan changes between commits (issue 63: the eight-method plan went from 5 seeds to 10): its figure
            # names the commit it was measured at
            parts.append(f"`noisymix reproduce --plan {name.split(' ', 1)[1]}` {_minutes(s)} (the plan as of "
                         f"`{s.get('commit', record.get('commit', '?'))[:12]}`; {_load_words(s)})")
    commits = sorted({s.get("commit", record.get("commit", "?"))[:12] for s in record["steps"]})
    cpus = sorted({f"{s.get('cpu_count', record.get('cpu_count'))} cores of "
                   f"{s.get('cpu_model') or record.get('cpu_model') or 'an unrecorded CPU'}" for s in record["steps"]})
    return (f"Measured from fresh clones of {', '.join(f'`{c}`' for c in commits)} on {' and '.join(cpus)}: "
            + "; ".join(parts) + " (`noisymix bench first-run`, recorded in `benchmarks/results/first-run.json`).")


def update_readme(readme: Path, record: dict) -> None:
    """Write ``promise(record)`` between the README's first-run markers; one line, nothing written, when they
    are missing, when a promised figure is missing, when a make target's figure is under a tenth of a minute,
    (module docstring); ``run`` checks first that each step was measured at a commit of this project."""
    from noisymix_infra.io import write_text

    check_record(record, "the first-run record")
    by = {s["name"]: s for s in record["steps"]}
    missing = [name for name in PROMISED if name not in by]
    if missing:
        raise ValueError(f"the first-run record has no figure of {missing[0]}, which the README's block promises "
                         f"({', '.join(PROMISED)}); nothing written")
    for name, step in by.items():
        if name.startswith("make ") and step["wall_s"] < MIN_MAKE_SECONDS:
            raise ValueError(f"`{name}` took {step['wall_s']} s in the clone, \"0.0 min\": a target that did nothing "
                             "(another repository's?) is no figure for the README; nothing written")
    text = readme.read_text()
    if not _MARKERS.search(text):
        raise ValueError(f"{readme} has no {BEGIN} ... {END} markers")
    write_text(readme, _MARKERS.sub(lambda _: f"{BEGIN}\n{promise(record)}\n{END}", text))
