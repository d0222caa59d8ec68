"""The main job's steps (``noisymix reproduce``): the command steps before the runs (verify, toy, the -C
and -P sets) and the one after (figures), the plan's training runs as a sweep, where each step's output
lies, and clearing what a rerun must redo.  Run by ``noisymix_app.reproduce.command``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from noisymix_app.reproduce.log import _log_step, _threads_used
from noisymix_app.reproduce.plans import ReproducePlan
from noisymix_infra.io import write_json


@dataclass(frozen=True)
class _Step:
    name: str
    argv: tuple[str, ...]
    done: Path  # the file whose presence means the step finished
    # what else shapes the output and is not in argv: ``key=value`` items, recorded in the log with the
    # argv and compared as part of the step's identity (the matched set's strengths: issue 54)
    inputs: tuple[str, ...] = ()


def _matched_inputs() -> tuple[str, ...]:
    """The identity of the package's difficulty-matched strengths (``digits_matched.json``) for the -C
    step: its argv (``--params digits-matched``) names the table, not the strengths in it, so a refit or an
    edit of the package file kept the old set "done (kept)" and the report paired the new fit's
    residuals with drops measured on the old set (issue 54, root cause 1).  The file is checked whole here,
    before any step runs."""
    from fullscale.corruptions.matched import matched_fit, strengths_sha256

    return (f"strengths_sha256={strengths_sha256(matched_fit()['strengths'])}",)


def _set_inputs(folder: Path) -> tuple[str, ...] | None:
    """The ``inputs`` of a -C set already on disk, from its ``manifest.json`` (for a log written before
    steps recorded their inputs); None where the folder does not say."""
    from fullscale.corruptions.matched import strengths_sha256
    from noisymix_infra.io import read_json

    try:
        manifest = read_json(folder / "manifest.json")
    except (OSError, ValueError):
        return None
    strengths = manifest.get("strengths") if isinstance(manifest, dict) else None
    if not isinstance(strengths, dict):
        return None
    try:
        return (f"strengths_sha256={strengths_sha256(strengths)}",)
    except (TypeError, ValueError):
        return None


def _run_name(method: str, seed: int) -> str:
    return f"{method}-seed{seed}"


def _corrupted(plan: ReproducePlan, out: Path) -> Path:
    """The plan's -C set: ``data/<dataset>-c`` at the published rows, ``data/<dataset>-c-<params>`` at
    another table (the difficulty-matched Digits-C: ``data/digits-c-digits-matched``)."""
    tail = "" if plan.corruption_params == "cifar" else f"-{plan.corruption_params}"
    return out / "data" / f"{plan.dataset}-c{tail}"


def _perturbed(plan: ReproducePlan, out: Path) -> Path | None:
    """The plan's -P set: ``data/<dataset>-p`` at the published sequences, ``data/<dataset>-p-<params>``
    at another table (the difficulty-matched Digits-P: ``data/digits-p-digits-matched``)."""
    if not plan.perturbed_suite:
        return None
    tail = "" if plan.perturbation_params == "cifar" else f"-{plan.perturbation_params}"
    return out / "data" / f"{plan.dataset}-p{tail}"


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
                       corrupted / "labels.npy",
                       _matched_inputs() if plan.corruption_params == "digits-matched" else ()))
    perturbed = _perturbed(plan, out)
    if perturbed is not None:  # the stability claims' -P set: the plan's perturbations of its first images
        names = () if plan.perturbations is None else ("--corruptions", ",".join(plan.perturbations))
        limit = ("--limit", str(plan.perturbed_limit)) if plan.perturbed_limit else ()
        steps.append(_Step("corrupt-p", ("corrupt", "--dataset", plan.dataset, "--kind", "p", "--out", str(perturbed),
                                         *root, *names, *limit, "--seed", "0",
                                         *(() if plan.perturbation_params == "cifar"
                                           else ("--params", plan.perturbation_params))),
                           perturbed / "labels.npy"))
    # the paper-only replots stay with `noisymix figures`: the report shows what the job ran (issue 52)
    figures = _Step("figures", ("figures", "--results", str(out), "--out", str(out / "figures"), "--no-paper-only"),
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


def _same_step(step: _Step, finished: dict) -> bool:
    """``step`` ran to the end before with the same identity: the same argv and the same ``inputs``
    (a log entry older than ``inputs``: those its output's manifest records, ``_set_inputs``)."""
    key = (step.name, step.argv)
    if not step.done.exists() or key not in finished:
        return False
    logged = finished[key]
    if logged is None and step.inputs:
        logged = _set_inputs(_output_of(step))
    return tuple(logged or ()) == step.inputs


def _command_step(step: _Step, finished: dict, rerun: list[Path], command: Callable[[list[str]], int],
                  log: dict, log_path: Path, started: float, *, fresh: bool = False) -> bool:
    """Run one command step unless it is done with the same command line and inputs and nothing it reads
    was rewritten (``rerun``: outputs of steps run in this invocation); True if it ran.

    ``finished``: ``{(name, argv): inputs or None}`` of the steps the log records as finished.  A step
    that ran before with another identity, or any step under ``fresh``, starts from an empty output
    folder: its old results must not be resumed from (issue 54: ``--fresh`` after a refit failed, the
    -C set refusing the old set's strengths, until ``data/`` was deleted by hand)."""
    if _same_step(step, finished) and not rerun:
        print(f"reproduce: {step.name}: done (kept)", flush=True)
        return False
    # a set half made (killed) with other strengths than today's: resuming it would be refused by `corrupt`
    stale_inputs = bool(step.inputs) and _set_inputs(_output_of(step)) not in (None, step.inputs)
    if (fresh or stale_inputs or (step.done.exists() and step.name in {name for name, _ in finished})) \
            and "--out" in step.argv and step.name != "figures":
        _clear_for_rerun(step)  # same step, other arguments or inputs: its old results must not be resumed from
    t0 = time.perf_counter()
    with _threads_used() as used:
        status = command(list(step.argv))
    if status != 0:
        write_json(log_path, log)
        raise RuntimeError(f"step '{step.name}' failed with exit status {status}: noisymix {' '.join(step.argv)}")
    if not step.done.exists():
        raise RuntimeError(f"step '{step.name}' finished but did not write {step.done}")
    from noisymix_app.sweep.execute import ran_on

    _log_step(log, log_path, {"name": step.name, "argv": list(step.argv), "inputs": list(step.inputs),
                              "ran_on": {**ran_on(), "torch_threads": used()}},
              time.perf_counter() - t0, started)
    return True
