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
    # the kind of difficulty-matched set the step makes (``fullscale.corruptions.matched_sets``), whose
    # strengths ``inputs`` names and whose manifest says what a set on disk was made with (issue 60)
    matched: str | None = None


@dataclass(frozen=True)
class _SetOfPlan:
    """A set the plan makes before its runs (issue 60: -C and -P through one description, not a copy each).

    Attributes:
        kind: ``noisymix corrupt --kind``.
        dataset: the data set it is made of.
        params: its parameter table (``digits-matched``: a difficulty-matched set).
        names: what it holds (None: the default names).
        suite: the suite that reads it (every run's ``eval/<suite>.json``).
        field: the plan field of ``names``; ``params_field``: of ``params``.
    """

    kind: str
    dataset: str
    params: str
    names: tuple[str, ...] | None
    suite: str
    field: str
    params_field: str

    def folder(self, out: Path) -> Path:
        """``data/<dataset>-<kind>`` at the published table (``cifar``: the rows and sequences of CIFAR-10-C
        and -P), ``data/<dataset>-<kind>-<params>`` at another (``data/digits-c-digits-matched``)."""
        tail = "" if self.params == "cifar" else f"-{self.params}"
        return out / "data" / f"{self.dataset}-{self.kind}{tail}"


def _plan_sets(plan: ReproducePlan) -> tuple[_SetOfPlan, ...]:
    """The sets the plan makes: its -C set, and its -P set where it has a -P suite (the stability claims')."""
    sets = [_SetOfPlan("c", plan.dataset, plan.corruption_params, plan.corruptions, plan.corrupted_suite,
                       "corruptions", "corruption_params")]
    if plan.perturbed_suite:
        sets.append(_SetOfPlan("p", plan.dataset, plan.perturbation_params, plan.perturbations, plan.perturbed_suite,
                               "perturbations", "perturbation_params"))
    return tuple(sets)


def _set_identity(kind: str, params: str) -> tuple[str | None, tuple[str, ...]]:
    """(the matched kind, the identity of its package strengths) of the set ``--kind kind --params params``,
    or (None, ()) for a published table: its argv names all it is made of."""
    from fullscale.corruptions.matched_sets import matched_set

    found = matched_set(kind, params)
    return (None, ()) if found is None else (found.kind, found.identity())


def _set_inputs(step: _Step) -> tuple[str, ...] | None:
    """The ``inputs`` of the set already in the step's folder, from its ``manifest.json`` (what ``corrupt``
    made it with); None where the step makes no matched set or the folder does not say."""
    from fullscale.corruptions.matched_sets import MATCHED_SETS

    return None if step.matched is None else MATCHED_SETS[step.matched].set_identity(_output_of(step))


def _remade_suites(plan: ReproducePlan, out: Path, rerun: list[Path]) -> tuple[str, ...]:
    """The suites whose set a step of this invocation made anew (``rerun``: the steps' output folders):
    every run's evaluation on them read the old set and is done again, for -C and -P alike."""
    return tuple(s.suite for s in _plan_sets(plan) if s.folder(out) in rerun)


def _run_name(method: str, seed: int) -> str:
    return f"{method}-seed{seed}"


def _corrupted(plan: ReproducePlan, out: Path) -> Path:
    """The plan's -C set (``_SetOfPlan.folder``)."""
    return _plan_sets(plan)[0].folder(out)


def _perturbed(plan: ReproducePlan, out: Path) -> Path | None:
    """The plan's -P set (``_SetOfPlan.folder``), None without a -P suite."""
    sets = _plan_sets(plan)
    return sets[1].folder(out) if len(sets) > 1 else None


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
    matched, inputs = _set_identity("c", plan.corruption_params)
    steps.append(_Step("corrupt", ("corrupt", "--dataset", plan.dataset, "--kind", "c",
                                   "--out", str(corrupted), *root, *corruptions, "--seed", "0",
                                   "--params", plan.corruption_params),
                       corrupted / "labels.npy", inputs, matched))
    perturbed = _perturbed(plan, out)
    if perturbed is not None:  # the stability claims' -P set: the plan's perturbations of its first images
        names = () if plan.perturbations is None else ("--corruptions", ",".join(plan.perturbations))
        limit = ("--limit", str(plan.perturbed_limit)) if plan.perturbed_limit else ()
        matched, inputs = _set_identity("p", plan.perturbation_params)
        steps.append(_Step("corrupt-p", ("corrupt", "--dataset", plan.dataset, "--kind", "p", "--out", str(perturbed),
                                         *root, *names, *limit, "--seed", "0",
                                         *(() if plan.perturbation_params == "cifar"
                                           else ("--params", plan.perturbation_params))),
                           perturbed / "labels.npy", inputs, matched))
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
    """``step`` ran to the end before with the same identity: the same argv and the same ``inputs``.

    A matched set's own manifest says what it was made with (``_set_inputs``), and it decides: a log entry
    older than ``inputs`` (None), or older than the -P step's (``[]``, before issue 60), is judged by it
    alone, so a set of today's strengths is kept and one of others is made anew."""
    key = (step.name, step.argv)
    if not step.done.exists() or key not in finished:
        return False
    logged = tuple(finished[key] or ())
    if step.matched is not None:
        return _set_inputs(step) == step.inputs and logged in ((), step.inputs)
    return logged == step.inputs


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
    # a set half made (killed) with other strengths than today's, of any matched kind: resuming it would be
    # refused by `corrupt` (issue 60: a -P set so left blocked every rerun)
    stale_inputs = _set_inputs(step) not in (None, step.inputs)
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
