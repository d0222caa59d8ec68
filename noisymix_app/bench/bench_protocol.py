"""``noisymix bench protocol``: the pilot that chooses the main job's protocol (issue 22).

For each width x epochs (x training batch) of ``--grid``, the laptop plan's four methods are trained
and evaluated on the same paired seeds (``noisymix sweep digits_analogue``, by default one after
another in one process with torch's threads, as ``noisymix reproduce`` runs them, into
``--workdir``; finished runs are kept, so a rerun only summarises).  Per grid point it reports
what a protocol costs and how well it separates: seconds per epoch of each method, the seconds of
its evaluations, the seed sd of clean and Digits-C accuracy, the sd of each claim's paired
difference, and the projected MDD (80 % power) of the headline claim (NoisyMix vs Baseline on
Digits-C) against the minutes a plan of n seeds would take.  The protocol is then chosen from
cost and spread, never from which verdict a point gives.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from fullscale.training.config import TrainConfig
from noisymix_infra.config import apply_overrides
from noisymix_infra.io import read_json_object
from noisymix_infra.stats import interval, mdd80, paired

__all__ = ["add_arguments", "run"]

METHODS = ("baseline", "augmix_jsd", "nfm", "noisymix")
# the other steps of the main job (verify, toy, corrupt, figures) on an idle 2-core machine, in
# minutes: the step times of the last laptop run (docs/reproduce-summary.json)
FIXED_MINUTES = 1.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--grid", default="8x12,8x20",
                        help="width x epochs [x batch] points, comma-separated (e.g. 8x20,16x10x32; batch: the "
                             "laptop plan's when left out)")
    parser.add_argument("--seeds", type=int, default=5, help="paired seeds 0..N-1 per point")
    parser.add_argument("--workdir", default="pilot", help="where the corrupted set and the sweeps live")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a training config override for every grid point (e.g. stem_stride=2); repeatable")
    parser.add_argument("--workers", type=int, default=0,
                        help="one-thread training/evaluation processes (0: one after another in one process)")


def _cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "noisymix_app.cli", *args], check=True)


def _values(folder: Path, suite: str, key: str) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for run in sorted((folder / "runs").glob("*-seed*")):
        method, seed = run.name.rsplit("-seed", 1)
        path = run / "eval" / f"{suite}.json"
        if path.is_file():
            record = read_json_object(path, "an evaluation of noisymix", {f"summary.{key}": "number"})
            out.setdefault(method, {})[int(seed)] = 100 * record["summary"][key]
    return out


def _timings(folder: Path) -> dict[str, dict[str, list[float]]]:
    """Per method: training seconds and evaluation seconds of each run (the sweep's own records)."""
    out: dict[str, dict[str, list[float]]] = {}
    for state in sorted((folder / "sweep" / "state").glob("*-seed*.json")):
        method = state.stem.rsplit("-seed", 1)[0]
        entry = out.setdefault(method, {"train": [], "evaluate": []})
        steps = read_json_object(state, "a run's sweep state").get("timings") or []
        entry["train"].append(sum(s for step, s in steps if step == "train"))
        entry["evaluate"].append(sum(s for step, s in steps if step.startswith("evaluate")))
    return out


def _point(folder: Path, epochs: int, workers: int) -> dict:
    from noisymix_app.reproduce.plans import PLANS

    suite = PLANS["laptop"].corrupted_suite
    clean, corrupted = _values(folder, "clean", "accuracy"), _values(folder, suite, "mean_accuracy")
    timings = _timings(folder)
    methods = [m for m in METHODS if m in clean]
    per_seed_s = sum(sum(timings[m]["train"]) + sum(timings[m]["evaluate"]) for m in methods) / max(
        1, len(clean.get("baseline", {})))
    headline = paired(corrupted["noisymix"], corrupted["baseline"])
    claims = {f"{m} vs baseline, Digits-C": paired(corrupted[m], corrupted["baseline"]) for m in methods[1:]}
    claims |= {f"{m} vs baseline, clean": paired(clean[m], clean["baseline"]) for m in methods[1:]}
    claims |= {f"noisymix vs {m}, Digits-C": paired(corrupted["noisymix"], corrupted[m])
               for m in methods[1:-1]}
    projection = {n: {"minutes": round(FIXED_MINUTES + n * per_seed_s / max(workers, 1) / 60, 1),
                      "headline_mdd80": round(mdd80(headline["sd"], n), 2)} for n in range(3, 11)}
    return {
        "seconds_per_epoch": {m: round(sum(timings[m]["train"]) / len(timings[m]["train"]) / epochs, 2)
                              for m in methods},
        "evaluation_seconds": {m: round(sum(timings[m]["evaluate"]) / len(timings[m]["evaluate"]), 1)
                               for m in methods},
        "worker_seconds_per_seed": round(per_seed_s, 1),
        "clean_sd": {m: round(interval(list(clean[m].values()))["sd"], 2) for m in methods},
        "digits_c_sd": {m: round(interval(list(corrupted[m].values()))["sd"], 2) for m in methods},
        "paired_sd": {k: round(v["sd"], 2) for k, v in claims.items()},
        # None where every other claim's spread is 0 (no MDD from a zero spread: noisymix_infra.stats, issue 54)
        "max_other_mdd80_at_n_seeds": max((round(v["mdd80"], 2) for k, v in claims.items()
                                           if k != "noisymix vs baseline, Digits-C" and v["mdd80"] is not None),
                                          default=None),
        "seeds": len(clean.get("baseline", {})),
        "projection": projection,
    }


def _grid(text: str) -> list[tuple[int, int, int | None]]:
    """(width, epochs, batch or None) of each ``--grid`` point; one ``ValueError`` for a bad one."""
    points = []
    for item in text.split(","):
        try:
            values = [int(v) for v in item.lower().split("x")]
        except ValueError:
            values = []
        if len(values) not in (2, 3) or min(values) < 1:
            raise ValueError(f"--grid point {item!r} is not WIDTHxEPOCHS or WIDTHxEPOCHSxBATCH (positive integers)")
        points.append((*values, None)[:3])
    return points


def _suffix(overrides: list[str]) -> str:
    """The sweep folder's name part for ``--set`` overrides (``stem_stride=2`` -> ``-stem_stride2``)."""
    return "".join("-" + "".join(c for c in o if c.isalnum() or c in "_.") for o in overrides)


def run(args: argparse.Namespace) -> dict:
    grid = _grid(args.grid)  # before any work: a typo costs no corrupted set
    apply_overrides(TrainConfig(), args.overrides)  # the same: a bad --set is one line, now
    from noisymix_app.reproduce.plans import PLANS

    laptop = PLANS["laptop"]  # the data and corrupted suite of the main job's plan
    work = Path(args.workdir).resolve()
    corrupted = work / laptop.corrupted_suite
    if not (corrupted / "labels.npy").is_file():
        _cli("corrupt", "--dataset", laptop.dataset, "--kind", "c", "--out", str(corrupted), "--seed", "0")
    points = {}
    for width, epochs, batch in grid:
        folder = work / (f"w{width}-e{epochs}" + (f"-b{batch}" if batch else "") + _suffix(args.overrides))
        started = time.perf_counter()
        _cli("sweep", "digits_analogue", "--seeds", str(args.seeds), "--workers", str(args.workers),
             "--set", f"width={width}", "--set", f"epochs={epochs}",
             *(("--set", f"batch_size={batch}") if batch else ()),
             *(part for override in args.overrides for part in ("--set", override)),
             "--suite-root", f"{laptop.corrupted_suite}={corrupted}",
             "--out", str(folder))
        name = (f"width {width} x {epochs} epochs" + (f" x batch {batch}" if batch else "")
                + "".join(f", {o}" for o in args.overrides))
        points[name] = {**_point(folder, epochs, args.workers),
                                                      "sweep_wall_s_this_call": round(time.perf_counter() - started)}
    return {"grid": points, "workers": args.workers, "fixed_minutes_assumed": FIXED_MINUTES}
