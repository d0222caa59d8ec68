"""``noisymix bench gpu --out DIR``: every GPU figure of the toolkit in one command, within a
time budget (default 9 minutes: one command on a lent H100 may run 10), written as
``DIR/gpu.json`` + ``DIR/gpu.md`` (small files), each figure beside its target and whether it is met.

Figures (each a call of the existing benchmark code, sizes scaled by the budget; defined in
``_gpu_figures.py``, this module runs them within the budget and writes the files):

* ``augmix_32`` / ``augmix_224``: batched AugMix, clean + 2 views, source images/s (target at
  32x32: >= 100,000 on one H100);
* ``cifar10c_generation``: 15 corruptions x 5 severities of CIFAR-sized images, projected to
  10,000 images (target < 60 s); ``cifar10c_evaluation``: one PreActResNet-18 on a -C set in
  the standard layout, projected to 750,000 images (target < 60 s);
* ``cifar10p_generation``: the 20 released -P sets' perturbations, projected to 10,000 images;
* ``step_*``: the PreActResNet-18 CIFAR step, NoisyMix (3 views + mixing + JSD) vs plain on the
  same three views (the trainer's steps, views made a chunk of steps at a time and their cost in the
  step), bf16 / fp32, channels_last / contiguous, eager / ``torch.compile`` (with the recompiles
  after warm-up counted), projected 200-epoch time (targets, issue 38: ratio <= 1.3, 200 epochs <=
  15 min); ``step_wrn28_4``: the same for WRN-28-4; ``step_resnet50_224``: at 224x224, batch 64,
  with peak memory;
* ``digits_precision``: the same digits training in bf16 and fp32, ``--seeds`` seeds each, mean
  clean and Digits-C accuracy (target: within 1 point; the public code trains in fp32);
* the figures of other benchmarks registered in ``noisymix_app.bench.cli.BENCHMARKS`` under
  ``OPTIONAL_BENCHMARKS``' names (ImageNet loader, transfer step, PuzzleMix step), where they exist;
  skipped cleanly where they do not;
* then ``pytest -m gpu`` (the CUDA tests), its counts and log (``DIR/gpu_tests.log``).

Also recorded: device, driver, torch / CUDA / cuDNN versions, provenance (git state, load
average).  A figure that fails records its one-line error; the others still run.

``--device cpu --quick`` runs everything tiny on the CPU (a test does, in under a minute), so
that the first GPU run is a measurement, not debugging.

On the lent GPU machine (no internet; its own Python and CUDA torch): install the checkout without
its dependencies, so nothing pins the CPU torch (the packages' import names are mapped from their
folders, so a bare ``PYTHONPATH=.`` does not find them), e.g.
``pip install --no-deps --no-build-isolation -e . && noisymix bench gpu --out $OUT``.  Packages it lacks (scipy, pillow,
pytest, hypothesis, ...) can travel as a wheel folder made here with ``pip download -d wheels
--only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 NAME`` and be
installed there with ``pip install --no-index --find-links wheels NAME``; a figure whose module
is missing says so.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from noisymix_app.bench._gpu_figures import OPTIONAL_BENCHMARKS, FigureContext, gpu_figures  # noqa: F401 (handed on)
from noisymix_infra.io import write_json, write_text
from noisymix_infra.provenance import provenance

#: this module writes its own files into the ``--out`` folder (the front door must not)
WRITES_OUT_DIR = True


#: share of the figures' budget each one plans for (rescaled over those that run)
WEIGHTS = {"augmix_32": 1, "augmix_224": 1, "cifar10c_generation": 3, "cifar10c_evaluation": 2,
           "cifar10p_generation": 2, "step_bf16_channels_last": 2, "step_fp32_channels_last": 2,
           "step_bf16_contiguous": 2, "step_wrn28_4": 2, "step_bf16_channels_last_compiled": 5,
           "step_fp32_channels_last_compiled": 4,
           "step_resnet50_224": 3, "digits_precision": 6, "imagenet_loader": 1, "transfer_step": 1,
           "puzzlemix_step": 1}


#: seconds a figure needs whatever its size (compilation, start-up): not started with less left
LEAST_SECONDS = {"step_bf16_channels_last_compiled": 90, "step_fp32_channels_last_compiled": 90,
                 "digits_precision": 30, "step_resnet50_224": 20}


#: timed repeats below which a figure is a smoke test only: no ratio from it (issue 21)
MIN_SAMPLES = 3
#: not run in a CPU smoke run: torch.compile on the CPU compiles for minutes and has hung inside a
#: oneDNN backward for 51 minutes; it says nothing about the GPU figure anyway
CPU_SKIPPED = ("step_bf16_channels_last_compiled", "step_fp32_channels_last_compiled")
CPU_NOTE = "CPU smoke run: these figures say nothing about a GPU's speed; they only show the suite runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for everything, every figure included (default 540; quick: 100)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the CPU smoke run)")
    parser.add_argument("--only", default=None, help="comma-separated figure names (default: all)")
    parser.add_argument("--seeds", type=int, default=None, help="digits seeds per precision (default 3; 1 quick)")
    parser.add_argument("--tests", default=None,
                        help="pytest paths for the -m gpu run (default: tests; quick: tests/gpu); 'none' skips")
    parser.add_argument("--tests-seconds", type=float, default=150.0, help="budget kept for the CUDA tests")
    parser.add_argument("--sleep-figure", type=float, default=None, metavar="SECONDS",
                        help="add a figure that only sleeps: checks that the budget stops a figure that hangs")


def _child(conn: Any, name: str, device: str, quick: bool, seeds: int, scale: float, sleep: float | None) -> None:
    """One figure in its own process, so that a deadline can stop it (a hung kernel included)."""
    import os

    os.setpgrp()  # its own process group: the deadline kills the figure's workers with it
    ctx = FigureContext(torch.device(device), quick, seeds, sleep)
    ctx.scale = scale
    if not ctx.cuda:  # the smoke run measures nothing on the CPU; one thread cannot oversubscribe a busy one
        torch.set_num_threads(1)
    try:
        record = gpu_figures(ctx)[name]()
    except ImportError as error:  # an optional extra that is not installed: a skip, not a failure
        record = {"skipped": f"optional package missing: {str(error).splitlines()[0][:300]}"}
    except Exception as error:  # one figure's failure is a result, not the end of the run
        record = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"}
    conn.send(record)
    conn.close()


def _figure_in_child(name: str, ctx: FigureContext, deadline: float) -> dict:
    """``name``'s record, or ``skipped: budget`` when it is still running after ``deadline`` seconds
    (the child is killed).  Spawned, not forked: CUDA cannot be forked, and a fork after torch's
    OpenMP threads ran can deadlock in the child (seen here: the fp32 step hung)."""
    import multiprocessing

    mp = multiprocessing.get_context("spawn")
    receive, send = mp.Pipe(duplex=False)
    # not a daemon: a daemonic process may not start the worker pools that the ImageNet loader's
    # figure uses (seen on the H100); the ``finally`` below ends it and its process group instead
    child = mp.Process(target=_child, args=(send, name, str(ctx.device), ctx.quick, ctx.seeds, ctx.scale, ctx.sleep))
    child.start()
    send.close()
    try:
        if receive.poll(max(0.0, deadline)):
            try:
                return receive.recv()
            except EOFError:
                child.join()
                return {"error": _died(child.exitcode)}
        if child.is_alive():
            return {"skipped": f"budget: killed after {deadline:.0f} s, the time left of the budget"}
        return {"error": _died(child.exitcode)}
    finally:
        if child.is_alive():
            _kill_group(child.pid)
        child.join()
        receive.close()


def _kill_group(pid: int) -> None:
    """Kill the figure's process and whatever it started (its own process group, ``_child``)."""
    import os
    import signal

    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is gone, or the child had not made it yet
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _died(code: int | None) -> str:
    if code is not None and code < 0:
        import signal

        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return f"the figure's process crashed ({name}: a native crash inside torch or a library)"
    return f"the figure's process died (exit code {code})"


def _with_samples(record: dict) -> dict:
    """Every figure says how many timed samples it rests on; a ratio from fewer than
    ``MIN_SAMPLES`` is noise (one step of each kind), so it is not reported: smoke only."""
    if "value" not in record:
        return record
    record = {**record, "samples": record.get("samples", 1)}
    if record["samples"] < MIN_SAMPLES:
        record["status"] = "smoke only"
        if record.pop("ratio", False):
            record["value"], record["met"] = None, None
    return record


# ---- environment and tests ----------------------------------------------------------------------

def environment(device: torch.device) -> dict[str, Any]:
    """Device, driver and library versions, and which optional packages import."""
    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                            "cuda": torch.version.cuda, "device": str(device), "torch_threads": torch.get_num_threads()}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                    capability=f"{props.major}.{props.minor}", cudnn=torch.backends.cudnn.version())
        if shutil.which("nvidia-smi"):
            try:
                done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                      capture_output=True, text=True, timeout=30)
                info["driver"] = done.stdout.strip().splitlines()[0] if done.returncode == 0 else None
            except (OSError, subprocess.SubprocessError, IndexError):
                info["driver"] = None
    else:
        info["cpu"] = platform.processor() or platform.machine()
    packages = {}
    for name in ("numpy", "scipy", "PIL", "pytest", "hypothesis", "sklearn", "tqdm", "triton"):
        try:
            module = importlib.import_module(name)
            packages[name] = getattr(module, "__version__", "present")
        except ImportError:
            packages[name] = None
    info["packages"] = packages
    return info


def _test_paths(args: argparse.Namespace, device: torch.device) -> tuple[list[str] | None, str | None]:
    """The CUDA tests to run, or why none run.  The default is the repository's tests (found from
    this file, not the working folder, so the command works from anywhere)."""
    if args.tests == "none":
        return None, "not run: --tests none"
    if device.type != "cuda":
        return None, "not run: no CUDA device (the CUDA tests run on a GPU)"
    if args.tests:
        return args.tests.split(","), None
    tests = Path(__file__).resolve().parents[2] / "tests"
    chosen = tests / "gpu" if args.quick else tests
    if not chosen.is_dir():
        return None, f"not run: {chosen} not found (installed without the repository)"
    return [str(chosen)], None


def _run_tests(paths: list[str], out: Path, seconds: float) -> dict[str, Any]:
    """``pytest -m gpu PATHS``: counts from its summary line, the log in ``out/gpu_tests.log``;
    no test collected (exit 5) is "not run", not a failure."""
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
               *paths]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max(10.0, seconds))
        log, rc = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as error:
        log, rc = f"{error.stdout or ''}{error.stderr or ''}\ntimed out after {seconds:.0f} s", None
    write_text(out / "gpu_tests.log", log if isinstance(log, str) else log.decode(errors="replace"))
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|deselected|errors?)", str(log)[-2000:])}
    result = {"command": " ".join(command[1:]), "returncode": rc, "seconds": round(time.perf_counter() - start, 1),
              "counts": counts, "ok": rc in (0, 5) and not counts.get("failed") and not counts.get("error")}
    if rc == 5 or (rc == 0 and not counts.get("passed") and not counts.get("failed")):
        result["not_run"] = "no CUDA test was collected or run"
    return result


# ---- the run ------------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> dict:
    if not args.out:
        raise ValueError("noisymix bench gpu needs --out DIR (it writes gpu.json, gpu.md and gpu_tests.log there)")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device here; for the CPU smoke run use --device cpu --quick")
    if device.type != "cuda" and not args.quick:
        raise ValueError(f"--device {device}: the full sizes are for a GPU; add --quick for the CPU smoke run")
    budget_all = args.budget if args.budget is not None else (100.0 if args.quick else 540.0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    ctx = FigureContext(device, args.quick, args.seeds or (1 if args.quick else 3), args.sleep_figure)
    figures = gpu_figures(ctx)
    wanted = [f.strip() for f in args.only.split(",")] if args.only else list(figures)
    unknown = sorted(set(wanted) - set(figures))
    if unknown:
        raise ValueError(f"--only: unknown figure(s) {', '.join(unknown)}; known: {', '.join(figures)}")
    if device.type != "cuda":
        print(f"[bench gpu] {CPU_NOTE}", file=sys.stderr, flush=True)
    test_paths, tests_not_run = _test_paths(args, device)
    reserve = args.tests_seconds if test_paths and not args.quick else 0.0
    budget = max(1.0, budget_all - reserve)
    total_weight = sum(WEIGHTS.get(name, 1) for name in wanted)
    results: dict[str, dict] = {}
    result = {"benchmark": "gpu", "quick": args.quick, "budget_s": budget_all, "wall_s": 0.0,
              "environment": environment(device), "figures": results, "gpu_tests": None,
              "cpu_note": CPU_NOTE if device.type != "cuda" else None, "provenance": provenance()}

    def write() -> None:  # after every figure: a killed or interrupted run keeps what it measured
        result["wall_s"] = round(time.perf_counter() - started, 1)
        write_json(out / "gpu.json", result)
        write_text(out / "gpu.md", markdown(result))

    planned_end = 0.0
    try:
        for name in wanted:
            planned_end += budget * WEIGHTS.get(name, 1) / total_weight
            elapsed = time.perf_counter() - started
            if device.type != "cuda" and name in CPU_SKIPPED:
                results[name] = {"skipped": "torch.compile on the CPU: not a GPU figure (the CPU smoke run skips it)"}
                write()
                continue
            if elapsed > budget - LEAST_SECONDS.get(name, 5):
                results[name] = {"skipped": f"time budget: {budget - elapsed:.0f} s of {budget:.0f} s left, "
                                            f"needs {LEAST_SECONDS.get(name, 5)} s"}
                write()
                continue
            start = time.perf_counter()
            record = _with_samples(_figure_in_child(name, ctx, budget - elapsed))
            seconds = time.perf_counter() - start
            results[name] = {**record, "seconds": round(seconds, 1), "scale": round(ctx.scale, 3)}
            shown = record.get("status", record.get("value")) if "value" in record else \
                record.get("skipped", record.get("error"))
            print(f"[bench gpu] {name}: {shown} ({seconds:.1f} s)", file=sys.stderr, flush=True)
            write()
            # behind plan: smaller sizes for the figures still to come
            behind = (time.perf_counter() - started) / max(planned_end, 1e-9)
            if not args.quick and behind > 1.0:
                ctx.scale = max(0.05, ctx.scale / behind)
    except KeyboardInterrupt:
        for name in wanted:
            results.setdefault(name, {"skipped": "interrupted (Ctrl-C)"})
        write()
        raise
    if test_paths:
        left = budget_all - (time.perf_counter() - started)
        result["gpu_tests"] = _run_tests(test_paths, out, left if not args.quick else 120.0)
    else:
        result["gpu_tests"] = {"not_run": tests_not_run}
    # a figure that errors fails the command (noisymix bench exits 1 naming them): a GPU run that
    # measured nothing must not look like a success (issue 32)
    result["failed_figures"] = [name for name, record in results.items() if "error" in record]
    write()
    return result


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "met" if value else "**not met**"
    return f"{value:,}" if isinstance(value, int | float) else str(value)


def markdown(result: dict) -> str:
    """The figures as a table: value, unit, target, met; then the environment and the tests."""
    env = result["environment"]
    lines = [f"# `noisymix bench gpu` ({'quick, ' if result['quick'] else ''}{env.get('gpu', env['device'])})", "",
             *([f"**{result['cpu_note']}.**", ""] if result.get("cpu_note") else []),
             f"torch {env['torch']} (CUDA {env.get('cuda')}, cuDNN {env.get('cudnn')}), driver {env.get('driver')}, "
             f"Python {env['python']}; wall {result['wall_s']} s of a {result['budget_s']:.0f} s budget; "
             f"load average {result['provenance'].get('load_average')}; commit {result['provenance'].get('commit')}",
             "", "| figure | value | unit | target | status | samples | seconds |", "|---|---|---|---|---|---|---|"]
    for name, r in result["figures"].items():
        if "value" in r:
            status = r.get("status") or (_fmt(r.get("met")) if r.get("met") is not None else "–")
            lines.append(f"| {name} | {_fmt(r['value'])} | {r.get('unit', '')} | {r.get('target') or '–'} | "
                         f"{status} | {r.get('samples', '')} | {r.get('seconds')} |")
            if r.get("recompiles_after_warmup") is not None:
                lines.append(f"| {name}: recompiles after warm-up | {r['recompiles_after_warmup']} | graphs "
                             f"({r.get('compile_backend')}) | 0 | {_fmt(r['recompiles_after_warmup'] == 0)} | | |")
            if "projected_200_epochs_min" in r:
                lines.append(f"| {name}: 200 epochs | {r['projected_200_epochs_min']} | min (projected) | "
                             f"{r['projected_target']} | {_fmt(r.get('projected_met'))} | | |")
        else:
            why = r.get("skipped") or r.get("error") or json.dumps(r.get("result"))[:200]
            lines.append(f"| {name} | – | {why} | – | {'error' if 'error' in r else 'skipped'} | | "
                         f"{r.get('seconds', '')} |")
    tests = result.get("gpu_tests")
    if tests and "command" not in tests:
        lines += ["", f"CUDA tests: {tests['not_run']}"]
    elif tests:
        verdict = tests.get("not_run") or ("ok" if tests["ok"] else "**failed**")
        lines += ["", f"CUDA tests (`{tests['command']}`): {tests['counts']} in {tests['seconds']} s, "
                  f"{verdict} (log: gpu_tests.log)"]
    return "\n".join(lines) + "\n"
