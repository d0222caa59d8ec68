"""``noisymix fit-analogue --out DIR [--freeze]``: fit the difficulty-matched Digits-C (issue 46).

The digits' Baseline at the published CIFAR rows loses 2.5 points or less on 10 of the 15
corruptions and 20-61 on four, the reverse of CIFAR-10-C.  This fit finds, per corruption, the
strength ``k`` (``fullscale.corruptions.registry.strengthened``) at which the Baseline's drop from
clean accuracy, averaged over the five severities, equals the paper's Baseline drop on CIFAR-10-C
(``tab:results_cifar10_c`` against ``tab:results_cifar10``'s clean 95.3), floored at
``MIN_DROP`` points (brightness costs the paper's Baseline 1.5 points: too little to measure at 450
test images, and the analogue asks every corruption to cost at least 3).

What keeps it honest:

* the Baseline models are trained with the main job's recipe (``--plan laptop``: the same
  overrides) on seeds the main job never evaluates (``FIT_SEEDS``, 100+; the main job's are 0-8);
* the corrupted images are drawn with another seed than the set's (``DRAW_SEED``; the set uses 0);
* the search is a bisection on ``log2 k`` in ``[-SPAN, SPAN]`` starting at ``k = 1`` (the published
  rows), assuming the drop grows with ``k``; the strength kept is the evaluated one whose drop is
  nearest the target (``choose``), so the chosen value follows from the recorded trace alone.

It writes ``DIR/digits_matched.json`` (and keeps the trained models under ``DIR/models``: a rerun
skips them); ``--freeze`` also writes it to ``fullscale/corruptions/digits_matched.json``, the file
the suite reads (``fullscale.corruptions.matched``).  ``--set key=value`` over ``FitOptions``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from fullscale.corruptions.matched import MATCHED_FILE
from fullscale.corruptions.registry import CORRUPTIONS, corrupt
from fullscale.corruptions.writer import chunk_generator
from fullscale.data import load_dataset
from fullscale.evaluation.inference import cpu_inference_model, logits_of
from fullscale.run_model import load_run_model
from noisymix_app.plans import PLANS
from noisymix_infra.config import add_set_argument, apply_overrides
from noisymix_infra.folder_kind import check_claim, claim_folder
from noisymix_infra.io import directory_lock, read_json, write_json
from noisymix_infra.progress import progress
from noisymix_infra.validate import check_seed

__all__ = ["DRAW_SEED", "FIT_SEEDS", "MIN_DROP", "FitOptions", "choose", "paper_drops", "run", "targets"]


FIT_SEEDS = (100, 101, 102)
DRAW_SEED = 1
MIN_DROP = 4.5  # points: the least target (>= 3 with a margin for the seeds' spread)
SPAN = 4.0  # log2 k in [-4, 4]: k from 1/16 to 16


@dataclasses.dataclass(frozen=True)
class FitOptions:
    """The fit's knobs (``--set``); the defaults made the committed fit."""

    seeds: str = ",".join(map(str, FIT_SEEDS))
    draw_seed: int = DRAW_SEED
    steps: int = 8  # bisection steps after k = 1: a final bracket of 2 SPAN / 2^steps in log2 k
    corruptions: str = ",".join(CORRUPTIONS)
    epochs: int = 0  # 0: the laptop plan's

    def seed_list(self) -> tuple[int, ...]:
        try:
            seeds = tuple(int(s) for s in self.seeds.split(","))
        except ValueError:
            raise ValueError(f"seeds must be comma-separated numbers, got {self.seeds!r}") from None
        if not seeds or min(seeds) < 0 or set(seeds) & set(PLANS["laptop"].seeds):
            raise ValueError(f"seeds must be numbers >= 0 that the main job does not evaluate "
                             f"(not {', '.join(map(str, PLANS['laptop'].seeds))}), got {self.seeds!r}")
        for seed in seeds:  # issue 54: a 20-digit seed failed in training, after the folder was claimed
            check_seed(seed, "seeds")
        return seeds

    def names(self) -> tuple[str, ...]:
        names = tuple(n.strip() for n in self.corruptions.split(",") if n.strip())
        unknown = [n for n in names if n not in CORRUPTIONS]
        if unknown or not names:
            raise ValueError(f"corruptions must name some of the 15 ({', '.join(CORRUPTIONS)}), got {unknown or '[]'}")
        return names

    def __post_init__(self) -> None:
        if not 0 <= self.steps <= 20 or self.epochs < 0:
            raise ValueError(f"need steps in 0..20 and epochs >= 0, got steps={self.steps}, epochs={self.epochs}")
        self.seed_list()
        self.names()


def paper_drops() -> tuple[float, dict[str, float]]:
    """(the paper's CIFAR-10 Baseline clean accuracy, its drop per corruption on CIFAR-10-C), in points."""
    from noisymix_figures.paper import paper_number, paper_values

    values = paper_values()
    clean_row = dict(values["tab:results_cifar10"]["rows"])["Baseline"]
    clean = float(paper_number(clean_row[0]))
    table = values["tab:results_cifar10_c"]
    row = dict(table["rows"])["Baseline"]
    if len(table["columns"]) != len(CORRUPTIONS):  # the paper's columns are the 15, in the benchmark's order
        raise ValueError(f"tab:results_cifar10_c has {len(table['columns'])} columns, expected the 15 corruptions")
    return clean, {name: round(clean - float(paper_number(row[i])), 4) for i, name in enumerate(CORRUPTIONS)}


def targets() -> dict[str, float]:
    """The drop each corruption is fitted to: the paper's, at least ``MIN_DROP``."""
    _, drops = paper_drops()
    return {name: max(drop, MIN_DROP) for name, drop in drops.items()}


def choose(trace: list[tuple[float, float]], target: float) -> tuple[float, float]:
    """(strength, drop) of the evaluated point whose drop is nearest ``target`` (ties: the earlier)."""
    if not trace:
        raise ValueError("an empty trace has no strength to choose")
    return min(trace, key=lambda point: abs(point[1] - target))


def _train(seed: int, out: Path, epochs: int) -> Path:
    from fullscale.training.loop import train
    from noisymix_app.sweep.plan import RunSpec

    laptop = PLANS["laptop"]
    overrides = (f"dataset={laptop.dataset}", f"model={laptop.model}", f"width={laptop.width}",
                 f"epochs={epochs or laptop.epochs}", *laptop.train_overrides)
    run_dir = out / "models" / f"baseline-seed{seed}"
    if not (run_dir / "final.pt").is_file():
        train(RunSpec(run_dir.name, "baseline", seed, overrides).config(), run_dir,
              resume=(run_dir / "checkpoint.pt").is_file())
    return run_dir


def _accuracy(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    return 100.0 * float((logits_of(model, images, torch.device("cpu")).argmax(1) == labels).float().mean())


def fit(options: FitOptions, out: Path) -> dict:
    """Train (or reuse) the fit's Baseline models, then bisect each corruption's strength; the
    fit's record (``digits_matched.json``'s content)."""
    started = time.time()
    test = load_dataset("digits", "test")
    images, labels = test.images, test.labels
    models = []
    for seed in progress(options.seed_list(), desc="fit: Baseline models", unit="model"):
        model, _ = load_run_model(_train(seed, out, options.epochs))
        models.append(cpu_inference_model(model, images[:64]))
    clean = [_accuracy(m, images, labels) for m in models]

    def drop(name: str, strength: float) -> float:
        per_model = np.zeros(len(models))
        for severity in range(1, 6):
            g = chunk_generator(options.draw_seed, name, severity, 0, "cpu")
            corrupted = corrupt(images, name, severity, generator=g, params="cifar", strength=strength)
            per_model += [_accuracy(m, corrupted, labels) for m in models]
        return float(np.mean(np.asarray(clean) - per_model / 5))

    wanted = targets()
    record: dict[str, dict] = {}
    for name in progress(options.names(), desc="fit: strengths", unit="corruption"):
        target = wanted[name]
        low, high, log_k = -SPAN, SPAN, 0.0
        trace = []
        for _ in range(options.steps + 1):
            strength = round(2.0 ** log_k, 6)
            measured = drop(name, strength)
            trace.append((strength, round(measured, 4)))
            if measured < target:
                low = log_k
            else:
                high = log_k
            log_k = (low + high) / 2
        strength, measured = choose(trace, target)
        record[name] = {"target": target, "strength": strength, "drop": measured,
                        "residual": round(measured - target, 4), "trace": [list(p) for p in trace]}
    paper_clean, drops = paper_drops()
    return {
        "what": "strengths of the difficulty-matched Digits-C (noisymix_app.fit_analogue): each corruption's "
                "CIFAR rows at the strength whose Baseline drop (clean minus the mean over 5 severities, points, "
                "mean over the fit's models) is nearest the target",
        "command": "noisymix fit-analogue --out fit --freeze"
                   + "".join(f" --set {f.name}={getattr(options, f.name)}" for f in dataclasses.fields(options)
                             if getattr(options, f.name) != getattr(FitOptions(), f.name)),
        "options": dataclasses.asdict(options),
        "recipe": {"plan": "laptop", "epochs": options.epochs or PLANS["laptop"].epochs,
                   "train_overrides": list(PLANS["laptop"].train_overrides)},
        "paper": {"baseline_clean": paper_clean, "baseline_drop": drops, "min_drop": MIN_DROP},
        "clean_accuracy": clean,
        "strengths": {name: entry["strength"] for name, entry in record.items()},
        "fit": record,
        "seconds": round(time.time() - started, 1),
    }


def freeze(result: dict, frozen: dict | None) -> dict:
    """The suite's record after this fit: the fit itself when it covers the 15 corruptions, else the
    frozen record with the corruptions fitted now replaced (each entry names the command that fitted
    it, ``command``; the top-level ``command`` is the one command that made them all, or None)."""
    for entry in result["fit"].values():
        entry["command"] = result["command"]
    if set(result["fit"]) == set(CORRUPTIONS):
        return result
    if frozen is None or set(frozen.get("fit", {})) | set(result["fit"]) != set(CORRUPTIONS):
        raise ValueError("--freeze of some corruptions needs a frozen fit of the others to keep")
    fit = {**frozen["fit"], **result["fit"]}
    for _name, entry in fit.items():
        entry.setdefault("command", frozen.get("command"))
    commands = {entry["command"] for entry in fit.values()}
    names = sorted(fit)
    return {**frozen, "fit": {n: fit[n] for n in names}, "strengths": {n: fit[n]["strength"] for n in names},
            "command": commands.pop() if len(commands) == 1 else None,
            "seconds": round(frozen.get("seconds", 0) + result["seconds"], 1)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="working folder: the fit's models and digits_matched.json")
    parser.add_argument("--freeze", action="store_true",
                        help=f"also write the fit to {MATCHED_FILE.name} in the package (the suite's strengths)")
    add_set_argument(parser, "steps=6", "the fit (FitOptions)")


def run(args: argparse.Namespace) -> int:
    options = apply_overrides(FitOptions(), args.overrides)
    out = Path(args.out)
    check_claim(out, "fit")  # a run, a -C set, a report, or the user's own digits_matched.json: refused now
    with directory_lock(out, "fitting"):
        claim_folder(out, "fit")
        result = fit(options, out)
        write_json(out / "digits_matched.json", result)
    if args.freeze:
        write_json(MATCHED_FILE, freeze(result, read_json(MATCHED_FILE) if MATCHED_FILE.is_file() else None))
    worst = max(result["fit"].values(), key=lambda e: abs(e["residual"]))
    print(f"fitted {len(result['fit'])} strength(s) in {result['seconds'] / 60:.1f} min; largest residual "
          f"{worst['residual']:+.1f} points; written to {out / 'digits_matched.json'}"
          + (f" and {MATCHED_FILE}" if args.freeze else ""))
    return 0


