"""The main job's record (``reproduce.json``) and what it shows while it runs: each step's seconds and
where it ran, the progress line of the runs, and the job's index, ``REPORT.md``.  Used by
``noisymix_app.reproduce.command``."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from noisymix_app.reproduce.plans import ReproducePlan
from noisymix_infra.io import read_json, write_json, write_text


def total_seconds(log: dict) -> float:
    """The sum of the job's steps' recorded seconds, each recorded when the step ran and kept when a rerun
    skips it (issue 32).  Steps of parallel workers overlap: it is then more than the wall time."""
    return round(sum(float(e.get("seconds") or 0) for e in log.get("steps", [])), 2)


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
    log["seconds"] = total_seconds(log)
    write_json(log_path, log)
    print(f"reproduce: {entry['name']}: {seconds:.1f} s (total {time.perf_counter() - started:.0f} s)", flush=True)


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
                record = read_json(suite_file)
                summary = (record.get("summary") if isinstance(record, dict) else None) or {}
                if not isinstance(summary, dict):  # a file that is no evaluation: no score (issue 60)
                    continue
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


def _write_index(out: Path, plan: ReproducePlan, log: dict, corrupted: Path) -> None:
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
        + f"); corrupted test set: `{corrupted.relative_to(out)}/`",
        "", "Each step as it ran (recorded then, kept when a rerun skips the step):", "",
        "| step | seconds | torch threads | machine | finished |", "|---|---:|---:|---|---|",
    ]
    for entry in log["steps"]:
        where = entry.get("ran_on") or {}
        machine = (f"{where.get('cpu_model')} ({where.get('cpu_capability')}), {where.get('host')}"
                   if where else "not recorded")
        lines.append(f"| {entry['name']} | {entry['seconds']:.1f} | {where.get('torch_threads', '?')} | "
                     f"{machine} | {where.get('finished', '?')} |")
    lines += ["", f"Total: {total_seconds(log):.0f} s, the sum of the steps' recorded times"
              + (" (worker processes ran steps side by side, so the wall time was less)"
                 if log.get("workers", 1) > 1 else "")
              + "."]
    if "invocation_seconds" in log:
        lines.append(f"This invocation: {log['invocation_seconds']:.0f} s.")
    lines.append("")
    write_text(out / "REPORT.md", "\n".join(lines))
