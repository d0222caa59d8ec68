"""A screen's sets and the numbers read from its evaluations: the -C and -P sets made by ``noisymix corrupt``
with reproduce's argument lines and kept by their identity (``make_sets``), that identity checked against the
reference's (``check_sets``), and each seed's numbers, overall, per corruption and per family (``numbers_of``).
The matched view (``command``) and the published one (``published``) both go through here."""

from __future__ import annotations

import time
from pathlib import Path

from noisymix_app.screen.reference import Reference
from noisymix_infra.io import read_json, write_json

__all__ = ["check_sets", "make_sets", "matched_steps", "numbers_of"]


def matched_steps(plan, out: Path) -> list:
    """The ``noisymix corrupt`` steps of the plan's difficulty-matched -C and -P sets under ``out/data``, with
    reproduce's argument lines."""
    from noisymix_app.reproduce.steps import _steps

    return [s for s in _steps(plan, out, None)[0] if s.name in ("corrupt", "corrupt-p")]


def make_sets(steps, log: dict, log_path: Path, prefix: str = "screen", workers: int = 1) -> list[str]:
    """Run the ``noisymix corrupt`` ``steps`` not already made with the same arguments and inputs (``log``'s
    ``steps``), recording each in ``log`` (written to ``log_path`` atomically, by this thread alone); returns the
    steps run now.  The matched sets and, with ``--also-published``, the published ones (issue 65) go through
    here.  ``workers`` > 1 makes that many side by side, each a ``noisymix corrupt`` process (one torch thread,
    as the command defaults to: the same sets; issue 65, goal 6: the four sets of a screen with its second view
    took 30 s one after another); one makes them one after another in this process."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from noisymix_app.reproduce.steps import _clear_for_rerun, _output_of, _same_step

    finished = {(e["name"], tuple(e.get("argv", ()))): tuple(e["inputs"]) if isinstance(e.get("inputs"), list)
                else None for e in log["steps"]}
    todo = []
    for step in steps:
        if _same_step(step, finished):
            print(f"{prefix}: {step.name}: done (kept)", flush=True)
            continue
        if _output_of(step).is_dir():
            _clear_for_rerun(step)  # made with other arguments or inputs: never resumed from
        todo.append(step)
    made = []

    def record(step, status: int, seconds: float, why: str = "") -> None:
        if status != 0 or not step.done.exists():
            raise RuntimeError(f"step {step.name} failed (exit status {status}): noisymix {' '.join(step.argv)}"
                               + (f": {why}" if why else ""))
        from noisymix_app.sweep.execute import ran_on

        log["steps"] = [e for e in log["steps"] if e["name"] != step.name]
        log["steps"].append({"name": step.name, "argv": list(step.argv), "inputs": list(step.inputs),
                             "seconds": round(seconds, 2), "ran_on": ran_on()})
        write_json(log_path, log)
        print(f"{prefix}: {step.name}: {seconds:.1f} s", flush=True)
        made.append(step.name)

    if workers <= 1 or len(todo) <= 1:
        from noisymix_app.cli import main as command

        for step in todo:
            t0 = time.perf_counter()
            status = command(list(step.argv))
            record(step, status, time.perf_counter() - t0)
        return made
    with ThreadPoolExecutor(max_workers=min(workers, len(todo))) as pool:
        futures = {pool.submit(_corrupt_process, step.argv): step for step in todo}
        for future in as_completed(futures):
            status, seconds, why = future.result()
            record(futures[future], status, seconds, why)
    return made


def _corrupt_process(argv) -> tuple[int, float, str]:
    """``noisymix corrupt ...`` as a process of its own: its exit status, seconds and last line of errors."""
    import os
    import subprocess
    import sys

    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "noisymix_app.cli", *argv], capture_output=True, text=True,
                          env={**os.environ, "NOISYMIX_PROGRESS": "0"}, check=False)
    lines = done.stderr.strip().splitlines()
    return done.returncode, time.perf_counter() - t0, lines[-1] if lines else ""


def numbers_of(folders: list[Path], plan, *, clean: bool = True) -> dict:
    """``_ours`` of the evaluation ``folders`` (one per seed, in the seeds' order): ``clean`` (where asked),
    ``corrupted``, ``mean_flip``, ``per_corruption`` ({corruption: per seed}) and ``per_family`` ({family:
    per seed}, each the mean over its members the plan evaluates: ``families.fold``)."""
    import numpy as np

    from fullscale.vocabulary import CORRUPTIONS, P_COLUMNS
    from noisymix_app.screen.families import family_members, fold

    corruptions, perturbations = plan.corruptions or CORRUPTIONS, plan.perturbations or P_COLUMNS
    members = family_members(corruptions)
    names = list(corruptions)  # the plan's order: the mean over them is the summary's, to the last bit
    found: dict = {"clean": [], "per_c": [], "per_p": []}
    for folder in folders:
        if clean:
            found["clean"].append(100.0 * float(read_json(folder / "clean.json")["summary"]["accuracy"]))
        c = read_json(folder / f"{plan.corrupted_suite}.json")["summary"]["per_corruption"]
        found["per_c"].append([100.0 * float(c[name]) for name in names])
        p = read_json(folder / f"{plan.perturbed_suite}.json")["results"]
        found["per_p"].append([100.0 * float(p[name]["flip_probability"]) for name in perturbations])
    per_c = np.array(found["per_c"])
    per_corruption = {c: [float(v) for v in per_c[:, i]] for i, c in enumerate(names)}
    out = {"corrupted": [float(v) for v in per_c.mean(1)],
           "mean_flip": [float(v) for v in np.array(found["per_p"]).mean(1)],
           "per_corruption": per_corruption, "per_family": fold(per_corruption, members)}
    if clean:
        out["clean"] = [float(v) for v in found["clean"]]
    return out


def check_sets(reference: Reference, plan, out: Path) -> dict:
    """The identity of the sets this screen made (``set_identity`` of their manifests, as the reproduce
    summary's ``sets``), checked against the reference's ``sets`` where it has them (issue 64: after a refit
    the screen compared new-set numbers with old-set ones and blamed another machine).  Returns
    ``{"c": ..., "p": ..., "verified": bool}``."""
    from noisymix_app.reproduce.steps import _corrupted, _perturbed
    from noisymix_app.reproduce.summary import set_identity
    from noisymix_app.screen.reference import compare_sets

    ours = {"c": set_identity(_corrupted(plan, out)), "p": set_identity(_perturbed(plan, out))}
    return compare_sets(ours, reference.sets, reference.path, "the reference was measured on other Digits-C/-P sets",
                        "rerun the eight-method plan")
