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

__all__ = ["BEGIN", "END", "add_arguments", "promise", "run", "update_readme"]

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- first-run:begin -->", "<!-- first-run:end -->"


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
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="first-run-"))
    clone = work / "clone"
    if clone.exists():
        raise ValueError(f"{clone} exists: give an empty --workdir (the clone must be fresh)")
    work.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["git", "clone", "--quiet", args.repo, str(clone)], check=True, capture_output=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True,
                                check=True).stdout.strip()
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
        from noisymix_infra.io import read_json, write_json

        kept = read_json(args.record) if Path(args.record).is_file() else {"steps": []}
        mine = {s["name"] for s in steps}
        record = {**record, "steps": [s for s in kept.get("steps", []) if s["name"] not in mine] + steps}
        write_json(args.record, record)
    if args.readme:
        update_readme(Path(args.readme), record)
    return record


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
            parts.append(f"`noisymix reproduce --plan {name.split(' ', 1)[1]}` {_minutes(s)} ({_load_words(s)})")
    commits = sorted({s.get("commit", record.get("commit", "?"))[:12] for s in record["steps"]})
    cpus = sorted({f"{s.get('cpu_count', record.get('cpu_count'))} cores of "
                   f"{s.get('cpu_model') or record.get('cpu_model') or 'an unrecorded CPU'}" for s in record["steps"]})
    return (f"Measured from fresh clones of {', '.join(f'`{c}`' for c in commits)} on {' and '.join(cpus)}: "
            + "; ".join(parts) + " (`noisymix bench first-run`, recorded in `benchmarks/results/first-run.json`).")


def update_readme(readme: Path, record: dict) -> None:
    """Write ``promise(record)`` between the README's first-run markers (one line when they are missing)."""
    from noisymix_infra.io import write_text

    text = readme.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), flags=re.S)
    if not pattern.search(text):
        raise ValueError(f"{readme} has no {BEGIN} ... {END} markers")
    write_text(readme, pattern.sub(lambda _: f"{BEGIN}\n{promise(record)}\n{END}", text))
