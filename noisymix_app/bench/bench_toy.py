"""``noisymix bench toy``: all six schemes x N seeds trained together, against the same code
training the models one after another.

Measures, in one process on the same machine:

* ``end_to_end_s``: the whole ``noisymix toy --seeds N`` command (training, smoothness,
  figures, files) run in-process — the figure the issue's "under 60 s" target is about;
* ``batched_train_s``: training all schemes x seeds as batched models (``train_members``);
* ``sequential_train_s``: the same members trained one at a time with the same function
  (``--sequential K`` times the first K members of every scheme and scales up; default all);
* ``speedup``: sequential / batched training time, and whether the two gave bit-identical
  weights (they should: a member's numbers do not depend on its neighbours).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
from typing import Any

import torch

from toy import cli as toy_cli
from toy.data import ToyDataConfig
from toy.experiment import make_seed_data
from toy.schemes import PAPER_SCHEMES, scheme_config
from toy.train import Member, TrainConfig, train_members
from toy.tuning import load_tuned

__all__ = ["THREADS", "add_arguments", "run"]

THREADS = toy_cli.THREADS
"""``--threads`` default: as the command."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seeds", type=int, default=20, help="seeds per scheme (default 20)")
    parser.add_argument("--epochs", type=int, default=100, help="epochs (default 100, the paper's)")
    parser.add_argument("--sequential", type=int, default=None,
                        help="time only the first K seeds of each scheme one by one and scale up "
                             "(default: all of them)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run under ``noisymix bench``'s ``--threads`` (``noisymix_infra.threads``); the command in-process
    inherits that count."""
    if args.seeds < 1 or args.epochs < 1:
        raise ValueError(f"--seeds and --epochs must be >= 1, got {args.seeds} and {args.epochs}")
    device = torch.device(args.device)
    os.environ.setdefault("NOISYMIX_PROGRESS", "0")
    config = TrainConfig(epochs=args.epochs)
    strengths = load_tuned()["strengths"]
    data = [make_seed_data(s, ToyDataConfig(), device=device) for s in range(args.seeds)]
    members = [Member(scheme_config(name, strengths), s) for name in PAPER_SCHEMES for s in range(args.seeds)]
    sets = [data[m.seed] for m in members]
    train_members(members[:2], sets[:2], TrainConfig(epochs=1), device=device)   # warm-up

    with tempfile.TemporaryDirectory() as out:
        parser = argparse.ArgumentParser()
        toy_cli.add_arguments(parser)
        cli_args = parser.parse_args(["--seeds", str(args.seeds), "--epochs", str(args.epochs),
                                      "--out", out, "--device", str(device)])
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):   # the command's summary is not the result
            toy_cli.run(cli_args)
        end_to_end = time.perf_counter() - start

    start = time.perf_counter()
    together = train_members(members, sets, config, device=device)
    batched = time.perf_counter() - start

    per_scheme = args.seeds if args.sequential is None else max(1, min(args.sequential, args.seeds))
    timed = [i for i, m in enumerate(members) if m.seed < per_scheme]
    identical = True
    start = time.perf_counter()
    for i in timed:
        alone = train_members([members[i]], [sets[i]], config, device=device)
        identical &= all(torch.equal(alone[k][0], together[k][i]) for k in alone)
    sequential_measured = time.perf_counter() - start
    sequential = sequential_measured * len(members) / len(timed)
    return {
        "schemes": len(PAPER_SCHEMES), "seeds": args.seeds, "epochs": args.epochs,
        "models": len(members), "device": str(device), "threads": torch.get_num_threads(),
        "end_to_end_s": round(end_to_end, 3),
        "batched_train_s": round(batched, 3),
        "sequential_train_s": round(sequential, 3),
        "sequential_models_timed": len(timed),
        "sequential_extrapolated": len(timed) < len(members),
        "speedup": round(sequential / batched, 2),
        "identical_weights": bool(identical),
        "meets_60s": end_to_end < 60.0,
        "meets_20s_aim": end_to_end < 20.0,
    }
