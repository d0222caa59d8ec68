"""``noisymix train --preset NAME [--set key=value ...] --out RUN``."""

from __future__ import annotations

import argparse
import os
import sys

from fullscale.training.config import FLAT_KEYS, TrainConfig
from fullscale.training.methods import NOT_IMPLEMENTED
from fullscale.training.presets import PRESETS, resolve_config
from infra.config import add_set_argument, describe_keys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", default="baseline", help="a named configuration (--list-presets)")
    add_set_argument(parser, "--set optim.epochs=3 --set mix.noise.add=0.4 (old flat names: --set epochs=3)")
    parser.add_argument("--out", help="run directory (config.json, metrics.jsonl, checkpoint.pt, final.pt), marked "
                                      "as a run: a -C/-P set, sweep or report folder is refused")
    parser.add_argument("--resume", action="store_true", help="continue from RUN/checkpoint.pt if present")
    parser.add_argument("--data-root", default=None,
                        help="the training data: the folder holding cifar-10-batches-py/ or cifar-100-python/ "
                             "(CIFAR), or train/<wnid>/*.JPEG (ImageNet); not needed for dataset=digits "
                             "(scikit-learn's bundled digits)")
    parser.add_argument("--list-presets", action="store_true", help="print the presets and exit")
    parser.add_argument("--list-keys", action="store_true",
                        help="print every --set key with its type, default and meaning, and exit")


def run(args: argparse.Namespace) -> int:
    if args.list_presets:
        for name, preset in PRESETS.items():
            print(f"{name:40s} {preset.description}")
        for name, why in NOT_IMPLEMENTED.items():
            print(f"{name:40s} not implemented: {why}")
        return 0
    if args.list_keys:
        rows = describe_keys(TrainConfig())
        width = max(len(key) for key, *_ in rows)
        for key, kind, default, text in rows:
            print(f"{key:{width}s}  {kind:28s} = {default:12s} {text}".rstrip())
        aliases = ", ".join(f"{old}={new}" for old, new in FLAT_KEYS.items() if old != new)
        print(f"\nThe flat names of runs made before the groups are accepted as aliases: {aliases}")
        return 0
    if not args.out:
        raise ValueError("--out RUN is required")
    cfg = resolve_config(args.preset, args.overrides, args.data_root)
    from fullscale.training.checks import NonFiniteLoss  # heavy imports only when training
    from fullscale.training.loop import train
    try:
        train(cfg, args.out, resume=args.resume)
    except NonFiniteLoss as error:  # a diverged run, not bad input: its own exit status, one line
        print(f"noisymix train: {error}", file=sys.stderr)
        return 1
    if os.environ.get("RANK", "0") == "0":
        print(f"trained {cfg.preset} -> {args.out}")
    return 0
