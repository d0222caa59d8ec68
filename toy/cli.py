"""``noisymix toy --seeds N --out DIR``: the 2-D decision-boundary experiment over many seeds.

Writes ``DIR/toy.json`` (per scheme: per-seed accuracies, mean, std, 95% CI, smoothness, the
paired comparison against the Baseline; the strengths and the tuning protocol; the verdicts on
the paper's claims), ``DIR/toy.md``, ``DIR/decision_boundaries.png`` and ``DIR/toy_data.png``.

The strengths the paper does not give come from the stored tuning ``toy/tuned.json``
(``toy.tuning``); ``--retune`` redoes the tuning first (about a minute on 2 CPU cores), uses
it, and also writes it to ``DIR/tuned.json`` (copy that file over ``toy/tuned.json`` to make it
the default).  ``--set mix.alpha=1`` overrides one strength (``toy.schemes.Strengths``, the ``--set`` dialect
of ``noisymix train``; recorded in ``toy.json``).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import torch

from noisymix_infra.config import apply_overrides, config_keys, config_to_dict
from noisymix_infra.io import write_bytes, write_json, write_text
from noisymix_infra.progress import progress
from toy.data import ToyDataConfig
from toy.experiment import ExperimentConfig, run_experiment
from toy.plots import plot_boundaries, plot_data
from toy.report import build_report, markdown
from toy.schemes import COMPONENTS, PAPER_SCHEMES, SCHEMES, Strengths, check_schemes
from toy.smoothness import GRID_LIMIT
from toy.train import TrainConfig
from toy.tuning import GRIDS, TuningProtocol, load_tuned, tune

__all__ = ["THREADS", "add_arguments", "run"]

_STRENGTH_KEYS = Strengths.from_dict({c: dict.fromkeys(keys, 0.0) for c, keys in COMPONENTS.items()})

THREADS = 1
"""``--threads`` default: the matrices are at most 150 x 32, so more threads only add
synchronisation, and OpenMP spin-waits slow a shared CPU down many times."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seeds", type=int, default=20, help="number of reported seeds (default 20)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--schemes", default=",".join(PAPER_SCHEMES),
                        help=f"comma-separated schemes (default: the six of the paper); known: "
                             f"{', '.join(SCHEMES)}")
    parser.add_argument("--epochs", type=int, default=100, help="training epochs (paper: 100)")
    parser.add_argument("--retune", action="store_true",
                        help="redo the strength tuning instead of reading toy/tuned.json")
    parser.add_argument("--tuning-seeds", type=int, default=None,
                        help="tuning seeds for --retune (default: as the stored tuning)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a tuned strength, e.g. mix.alpha=1 (repeatable; the dialect of "
                             "noisymix train --set); keys: " + ", ".join(config_keys(_STRENGTH_KEYS)))
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")



def _apply_overrides(strengths: dict[str, dict[str, float]],
                     overrides: list[str]) -> dict[str, dict[str, float]]:
    """``strengths`` with ``--set`` applied by ``noisymix_infra.config.apply_overrides`` on ``Strengths``
    (components in their given order, so the report reads as before)."""
    changed = config_to_dict(apply_overrides(Strengths.from_dict(strengths), overrides))
    return {c: changed[c] for c in [*strengths, *(c for c in changed if c not in strengths)]}


def _hyperparameters(args: argparse.Namespace, train: TrainConfig, data: ToyDataConfig) -> dict[str, Any]:
    if args.retune:
        stored_seeds = None
        try:
            stored_seeds = load_tuned()["protocol"]["seeds"]
        except FileNotFoundError:
            pass
        seeds = args.tuning_seeds or stored_seeds or TuningProtocol().seeds
        protocol = TuningProtocol(seeds=seeds)
        points = sum(len(g) for g in GRIDS.values()) + 1
        bar = progress(desc="toy: tuning", total=points * seeds * train.epochs, unit="model-epoch")
        tuning = tune(protocol, train, data, device=args.device, on_epoch=bar.update)
        bar.close()
        write_json(Path(args.out) / "tuned.json", tuning)
        source = f"retuned in this run ({seeds} tuning seeds, {train.epochs} epochs; also in tuned.json)"
    else:
        if args.tuning_seeds is not None:
            raise ValueError("--tuning-seeds only applies with --retune")
        tuning = load_tuned()
        source = "stored tuning toy/tuned.json (rerun with --retune)"
    strengths = _apply_overrides(tuning["strengths"], args.overrides)
    if args.overrides:
        source += "; overridden by --set " + " ".join(args.overrides)
    hyper = {"strengths": strengths, "source": source,
             "tuning": {k: tuning[k] for k in ("protocol", "grids", "baseline") if k in tuning}}
    if args.overrides:
        hyper["overrides"] = list(args.overrides)
        hyper["tuned_strengths"] = tuning["strengths"]
    return hyper


def _check_device(name: str) -> None:
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"--device must be a torch device such as cpu or cuda, got {name!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {name} requested but CUDA is not available")


def _command(args: argparse.Namespace, schemes: tuple[str, ...]) -> str:
    """The run as one reproducible command line."""
    parts = ["noisymix", "toy", "--seeds", str(args.seeds), "--out", str(args.out)]
    if schemes != PAPER_SCHEMES:
        parts += ["--schemes", ",".join(schemes)]
    if args.epochs != 100:
        parts += ["--epochs", str(args.epochs)]
    if args.retune:
        parts.append("--retune")
        if args.tuning_seeds is not None:
            parts += ["--tuning-seeds", str(args.tuning_seeds)]
    for item in args.overrides:
        parts += ["--set", item]
    if str(args.device) != "cpu":
        parts += ["--device", str(args.device)]
    threads = getattr(args, "threads", THREADS)
    if threads != THREADS:
        parts += ["--threads", str(threads)]
    return shlex.join(parts)


def run(args: argparse.Namespace) -> int:
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    if args.epochs < 1:
        raise ValueError(f"--epochs must be >= 1, got {args.epochs}")
    schemes = check_schemes(s.strip() for s in args.schemes.split(",") if s.strip())
    _check_device(args.device)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} exists and is not a directory")
    from noisymix_infra.folder_kind import check_plain_out

    # the root, a run's or a set's folder, a user's own toy.md: refused before the experiment (issue 41)
    check_plain_out(out, "toy.json", ("toy.md", "decision_boundaries.png", "toy_data.png", "tuned.json"))
    train = TrainConfig(epochs=args.epochs)
    data = ToyDataConfig()
    config = ExperimentConfig(schemes=schemes, seeds=args.seeds, train=train, data=data)
    hyper = _hyperparameters(args, train, data)
    result = run_experiment(config, hyper["strengths"], device=args.device)
    report = build_report(result, hyper, command=_command(args, schemes), device=str(args.device))
    rep = result.representative_seed
    titles = [f"{SCHEMES[s].label} ({100 * result.accuracy[s][rep]:.1f}%)" for s in schemes]
    boundaries = plot_boundaries(
        result.fields, result.field_axis, result.data[rep], titles, limit=GRID_LIMIT,
        suptitle=f"Decision boundaries, seed {rep} of {args.seeds} (the medoid seed); "
                 f"test accuracy in parentheses")
    polygon = data.scale * np.asarray(data.polygon)
    figure = plot_data(result.data[rep], polygon, limit=GRID_LIMIT, seed=rep)
    write_bytes(out / "decision_boundaries.png", boundaries)
    write_bytes(out / "toy_data.png", figure)
    write_text(out / "toy.md", markdown(report))
    write_json(out / "toy.json", report)
    for name in schemes:
        acc = report["schemes"][name]["accuracy"]
        spread = f" ± {100 * acc['std']:.1f}" if "std" in acc else ""
        print(f"{SCHEMES[name].label:<26} {100 * acc['mean']:.1f}{spread} %")
    for claim in report["claims"]:
        print(f"claim {claim['id']}: {claim['verdict']}")
    print(f"wrote {out}/toy.json, toy.md, decision_boundaries.png, toy_data.png "
          f"({result.seconds['total']:.1f} s)")
    return 0
