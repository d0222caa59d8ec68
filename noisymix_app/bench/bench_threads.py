"""``noisymix bench threads``: which thread policy is fast on an idle machine *and* on a busy one (issue 32).

A laptop is never idle.  With torch's default (one thread per core, OpenMP threads that spin while
they wait) a second thread that shares its core with other work holds up every parallel region,
and the README's first run took 12x longer beside one busy process.  This benchmark runs the work
users meet as whole ``noisymix`` processes (the thread policy is decided when a process starts,
before torch loads, so it cannot be timed inside one):

- ``first run``: the README's first command, ``train --preset digits-noisymix --set epochs=2``;
- ``reproduce run``: one of the main job's training runs, Baseline on the laptop recipe
  (``digits-baseline``), ``--epochs`` of its 10 epochs (the plain step, where NoisyMix's is three views);
- ``evaluation``: ``evaluate RUN --suite digits-c`` of the main job (75 corrupted sets),

under each policy, beside 0, 1 and 2 busy cores (processes that spin in a Python loop, as a
browser tab or a compile would keep a core busy), the policies taken in turn in every round so a
drift of the machine hits them all.  A run that exceeds ``--cap`` seconds is stopped and shown
as more than the cap.  The policies:

- ``spin-all``: torch's default, one thread per usable core, OpenMP's default wait (it spins for a
  while; ``GOMP_SPINCOUNT=300000`` is libgomp's documented default, set so the CLI leaves it);
- ``passive-all``: one thread per usable core, ``OMP_WAIT_POLICY=PASSIVE``;
- ``one``: one thread;
- ``auto``: nothing set, the CLI's default (``noisymix_infra.threads``: the cores free at the start).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from noisymix_infra.threads import ENV, usable_cores

__all__ = ["POLICIES", "add_arguments", "run"]

#: policy -> (environment additions, --threads argument or None)
POLICIES: dict[str, tuple[dict[str, str], str | None]] = {
    "spin-all": ({"GOMP_SPINCOUNT": "300000"}, "all"),
    "passive-all": ({"OMP_WAIT_POLICY": "PASSIVE"}, "all"),
    "one": ({}, "1"),
    "auto": ({}, None),
}

_SPIN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--loads", default="0,1,2", help="busy cores beside the run, comma-separated")
    parser.add_argument("--policies", default=",".join(POLICIES), help=f"of {', '.join(POLICIES)}")
    parser.add_argument("--work", default="first,reproduce,evaluate", help="of first, reproduce, evaluate")
    parser.add_argument("--repeats", type=_positive, default=2, help="rounds (every policy once a round)")
    parser.add_argument("--epochs", type=_positive, default=3, help="epochs of the reproduce run")
    parser.add_argument("--cap", type=float, default=120.0, help="seconds after which a run is stopped")
    parser.add_argument("--workdir", default=None, help="scratch folder (default: a temporary one)")


def _command(work: str, folder: Path, epochs: int) -> list[str]:
    if work == "first":
        return ["train", "--preset", "digits-noisymix", "--set", "epochs=2", "--out", str(folder / "first")]
    if work == "reproduce":
        return ["train", "--preset", "digits-baseline", "--set", f"epochs={epochs}", "--out", str(folder / "repro")]
    if work == "evaluate":
        return ["evaluate", str(folder / "model"), "--suite", "digits-c", "--data-root", str(folder / "digits-c")]
    raise ValueError(f"unknown work {work!r}: one of first, reproduce, evaluate")


def _clean(work: str, folder: Path) -> None:
    """Each timed run starts from nothing: no finished run or result to resume from."""
    if work == "first":
        shutil.rmtree(folder / "first", ignore_errors=True)
    elif work == "reproduce":
        shutil.rmtree(folder / "repro", ignore_errors=True)
    else:
        shutil.rmtree(folder / "model" / "eval", ignore_errors=True)


def _cli(args: list[str], env: dict[str, str], timeout: float | None = None) -> float | None:
    """Wall seconds of ``noisymix ARGS`` in a fresh process; ``None`` when it ran past ``timeout``."""
    start = time.perf_counter()
    try:
        subprocess.run([sys.executable, "-m", "noisymix_app.cli", *args], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as error:
        detail = error.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"noisymix {' '.join(args[:2])} failed: {detail[0]}") from None
    return time.perf_counter() - start


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in (ENV, "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "OMP_NUM_THREADS")}
    env["NOISYMIX_PROGRESS"] = "0"
    return env


def run(args: argparse.Namespace) -> dict:
    loads = [int(v) for v in args.loads.split(",") if v.strip()]
    if any(n < 0 for n in loads):
        raise ValueError("--loads are counts of busy cores, >= 0")
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    works = [w.strip() for w in args.work.split(",") if w.strip()]
    unknown = [p for p in policies if p not in POLICIES] + [w for w in works if w not in ("first", "reproduce",
                                                                                          "evaluate")]
    if unknown:
        raise ValueError(f"unknown policy or work: {', '.join(unknown)}")
    folder = Path(args.workdir or tempfile.mkdtemp(prefix="bench-threads-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = _base_env()
    cores = usable_cores()
    if "evaluate" in works:  # the model and the set every evaluation reads, made once
        if not (folder / "model" / "final.pt").is_file():
            _cli(["train", "--preset", "digits-baseline", "--set", "epochs=1", "--out", str(folder / "model")], env)
        if not (folder / "digits-c" / "manifest.json").is_file():
            _cli(["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(folder / "digits-c")], env)
    seconds: dict[str, dict[str, dict[str, list[float | None]]]] = {}
    for load in loads:
        spinners = [subprocess.Popen([sys.executable, "-c", _SPIN.format(seconds=24 * 3600)])
                    for _ in range(load)]
        try:
            time.sleep(1.0 if load else 0.0)  # let the busy cores show in /proc/stat
            for _ in range(args.repeats):
                for work in works:
                    for policy in policies:
                        extra, threads = POLICIES[policy]
                        command = _command(work, folder, args.epochs)
                        if threads is not None:
                            command += ["--threads", str(cores) if threads == "all" else threads]
                        _clean(work, folder)
                        took = _cli(command, {**env, **extra}, timeout=args.cap)
                        seconds.setdefault(work, {}).setdefault(policy, {}).setdefault(str(load), []).append(
                            None if took is None else round(took, 2))
                        shown = f"> {args.cap:.0f}" if took is None else f"{took:.1f}"
                        print(f"  {load} busy, {work:9s} {policy:11s} {shown} s", flush=True)
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
    table = _table(seconds, loads, policies, works, args.cap)
    print(table)
    return {"seconds": seconds, "cap": args.cap, "usable_cores": cores, "loads": loads, "repeats": args.repeats,
            "reproduce_epochs": args.epochs, "table": table}


def _median(values: list[float | None], cap: float) -> str:
    done = [v for v in values if v is not None]
    if len(done) < len(values):  # a stopped run counts as longer than every finished one
        ordered = sorted(done) + [float("inf")] * (len(values) - len(done))
        middle = ordered[(len(ordered) - 1) // 2]
        return f"> {cap:.0f}" if middle == float("inf") else f"{middle:.1f}"
    return f"{statistics.median(done):.1f}"


def _table(seconds: dict, loads: list[int], policies: list[str], works: list[str], cap: float) -> str:
    """Markdown: a row per work and load, a column per policy, the median seconds over the rounds."""
    lines = ["| work | busy cores beside | " + " | ".join(policies) + " |",
             "|---|---:|" + "---:|" * len(policies)]
    for work in works:
        for load in loads:
            cells = [_median(seconds[work][p][str(load)], cap) for p in policies]
            lines.append(f"| {work} | {load} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
