"""``noisymix bench members``: M seeds trained as one stacked model vs one after another.

For each width x threads x method, the same M seeds of the laptop plan's digits recipe are trained
for ``--epochs`` epochs twice, side by side in this process: as one stacked model
(``fullscale.training.members.train_members``) and as M runs of ``fullscale.training.loop.train`` one after
another (the reference).  The figure is the ratio of the two wall times (> 1: the stacked model is
faster).  Both write real run folders under a temporary directory, so set-up costs (loading the
data, writing checkpoints) count on both sides.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import torch

from fullscale.training.config import TrainConfig
from fullscale.training.loop import train
from fullscale.training.members import train_members
from fullscale.training.methods import get_method
from noisymix_infra.config import apply_overrides

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--members", type=int, default=4, help="seeds per group")
    parser.add_argument("--widths", default="8,16")
    parser.add_argument("--thread-counts", default="1,2", help="torch threads of each measurement")
    parser.add_argument("--methods", default="baseline,noisymix")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)


def _config(method: str, width: int, args: argparse.Namespace) -> TrainConfig:
    return apply_overrides(TrainConfig(), [
        f"method={method}", "dataset=digits", f"width={width}", f"epochs={args.epochs}",
        f"batch_size={args.batch_size}", f"device={args.device}",
        *[f"{k}={v}" for k, v in get_method(method).defaults.items()]])


def run(args: argparse.Namespace) -> dict:
    seeds = list(range(args.members))
    rows = []
    before = torch.get_num_threads()
    try:
        for threads in (int(t) for t in args.thread_counts.split(",")):
            torch.set_num_threads(threads)
            for width in (int(w) for w in args.widths.split(",")):
                for method in args.methods.split(","):
                    cfg = _config(method, width, args)
                    with tempfile.TemporaryDirectory() as tmp:
                        t0 = time.perf_counter()
                        for seed in seeds:
                            train(dataclasses.replace(cfg, seed=seed), Path(tmp) / f"alone{seed}")
                        alone = time.perf_counter() - t0
                        t0 = time.perf_counter()
                        train_members(cfg, seeds, [Path(tmp) / f"member{seed}" for seed in seeds])
                        stacked = time.perf_counter() - t0
                    rows.append({"threads": threads, "width": width, "method": method, "members": len(seeds),
                                 "epochs": args.epochs, "batch_size": args.batch_size,
                                 "one_after_another_s": round(alone, 2), "stacked_s": round(stacked, 2),
                                 "speedup": round(alone / stacked, 2)})
                    print(rows[-1], flush=True)
    finally:
        torch.set_num_threads(before)
    return {"rows": rows}
