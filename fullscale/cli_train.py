"""``noisymix train --preset NAME [--set key=value ...] --out RUN``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fullscale.training.config import FLAT_KEYS, TrainConfig
from fullscale.training.methods import NOT_IMPLEMENTED
from fullscale.training.presets import PRESETS, resolve_config
from noisymix_infra.config import add_set_argument, apply_overrides, describe_keys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", default=None,
                        help="a named configuration (--list-presets; default baseline, or with --resume the run's own)")
    add_set_argument(parser, "--set optim.epochs=3 --set mix.noise.add=0.4 (old flat names: --set epochs=3)",
                     aliases=FLAT_KEYS)
    parser.add_argument("--out", help="run directory (config.json, metrics.jsonl, checkpoint.pt, final.pt), marked "
                                      "as a run: a -C/-P set, sweep or report folder is refused")
    parser.add_argument("--resume", action="store_true",
                        help="continue from RUN/checkpoint.pt if present, with the run's own config.json (flags given "
                             "must agree with it)")
    parser.add_argument("--data-root", default=None,
                        help="the training data: the folder holding cifar-10-batches-py/ or cifar-100-python/ "
                             "(CIFAR), or train/<wnid>/*.JPEG (ImageNet); not needed for dataset=digits "
                             "(scikit-learn's bundled digits)")
    parser.add_argument("--list-presets", action="store_true", help="print the presets and exit")
    parser.add_argument("--list-keys", action="store_true",
                        help="print every --set key with its type, default and meaning, and exit")


def _resumed_config(args: argparse.Namespace) -> TrainConfig | None:
    """With ``--resume`` on a run that has a ``config.json`` and no ``--preset``/``--set``: the run's own
    config (``--data-root`` may point at the same data elsewhere), so the original flags need not be
    typed again (issue 41).  With them, ``None``: the config they give is compared with the run's when
    training starts, and a difference is refused there."""
    out = Path(args.out)
    if not args.resume or args.preset is not None or args.overrides or not (out / "config.json").is_file():
        return None
    from fullscale.run_record import grouped_config
    from fullscale.runs import split_run_record
    from fullscale.training.config import train_config_from_dict
    from noisymix_infra.folder_kind import check_claim
    from noisymix_infra.io import read_json

    check_claim(out, "run")  # a config.json of the user's own or of another kind of folder is not read as a run's
    config, _ = split_run_record(read_json(out / "config.json"), out / "config.json")
    try:
        cfg = train_config_from_dict(grouped_config(config))
    except (TypeError, ValueError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{out / 'config.json'} is not a training config noisymix reads ({detail[:160]})") from None
    return apply_overrides(cfg, [f"data_root={args.data_root}"]) if args.data_root else cfg


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
    cfg = _resumed_config(args) or resolve_config(args.preset or "baseline", args.overrides, args.data_root)
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
