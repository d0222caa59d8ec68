"""The main job's steps (``noisymix reproduce``): the command steps before the runs (verify, toy, the -C
and -P sets) and the one after (figures), the plan's training runs as a sweep, where each step's output
lies, and clearing what a rerun must redo.  Run by ``noisymix_app.reproduce``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from noisymix_app.plans import ReproducePlan
from noisymix_app.reproduce_log import _log_step, _threads_used
from noisymix_infra.io import write_json


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
