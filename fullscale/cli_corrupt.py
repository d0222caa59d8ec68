"""``noisymix corrupt --dataset NAME --kind c|p --out DIR``: a -C or -P set in the standard layout.

-C: ``<corruption>.npy`` uint8 (5 N, H, W, 3), severities 1..5 in order, and ``labels.npy``
(the labels repeated 5 times, uint8 as CIFAR-10-C ships them when there are <= 256 classes).
-P: ``<perturbation>.npy`` uint8 (N, frames, H, W, 3) and ``labels.npy`` (N,).
Each file is written atomically when complete, so a rerun skips the finished ones; images are
processed in chunks (bounded memory); ``manifest.json`` records seed, source and parameters.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from fullscale.corruptions import (
    CORRUPTIONS,
    EXTRA_CORRUPTIONS,
    PERTURBATIONS,
    corrupt,
    perturbation_sequence,
)
from fullscale.data import DATASETS, load_dataset
from noisymix.io import save_npy, write_json
from noisymix.progress import progress
from noisymix.random import generator_for

__all__ = ["add_arguments", "run", "write_corrupted_set"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, help=f"one of {', '.join(DATASETS)}")
    parser.add_argument("--kind", choices=("c", "p"), default="c")
    parser.add_argument("--out", required=True)
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--corruptions", default=None,
                        help="comma-separated subset (default: the 15 / all -P)")
    parser.add_argument("--severities", default="1,2,3,4,5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=2000, help="images per batch")
    parser.add_argument("--frost-dir", default=None, help="folder of the reference frost images")
    parser.add_argument("--limit", type=int, default=0, help="first N test images only")


def _labels_dtype(labels: torch.Tensor) -> np.dtype:
    return np.dtype(np.uint8) if int(labels.max()) < 256 else np.dtype(np.int64)


def write_corrupted_set(dataset: str, kind: str, out: str | Path, *, data_root: str | None = None,
                        names: list[str] | None = None, severities: tuple[int, ...] = (1, 2, 3, 4, 5),
                        seed: int = 0, chunk: int = 2000, frost_dir: str | None = None,
                        limit: int = 0) -> Path:
    data = load_dataset(dataset, "test", data_root)
    images, labels = data.images, data.labels
    if limit:
        images, labels = images[:limit], labels[:limit]
    table = {**CORRUPTIONS, **EXTRA_CORRUPTIONS} if kind == "c" else PERTURBATIONS
    names = names or (list(CORRUPTIONS) if kind == "c" else list(PERTURBATIONS))
    unknown = [n for n in names if n not in table]
    if unknown:
        raise ValueError(f"unknown {'corruptions' if kind == 'c' else 'perturbations'} {unknown}; "
                         f"available: {', '.join(table)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    reps = len(severities) if kind == "c" else 1
    save_npy(out / "labels.npy", np.tile(labels.numpy(), reps).astype(_labels_dtype(labels)))
    for index, name in enumerate(progress(names, desc=f"corrupt {dataset}-{kind}", unit="set")):
        target = out / f"{name}.npy"
        if target.exists():
            continue  # files appear atomically, so an existing one is complete
        g = generator_for(seed * 1000 + index)
        parts = []
        for sev in severities if kind == "c" else (None,):
            for start in range(0, len(images), chunk):
                batch = images[start:start + chunk]
                if kind == "c":
                    y = corrupt(batch, name, sev, generator=g, frost_dir=frost_dir)
                    parts.append(y.permute(0, 2, 3, 1).numpy())
                else:
                    y = perturbation_sequence(batch, name, generator=g)
                    parts.append(y.permute(0, 1, 3, 4, 2).numpy())
        save_npy(target, np.concatenate(parts))
    write_json(out / "manifest.json", {
        "dataset": dataset, "kind": kind, "source": data.source, "count": len(labels), "seed": seed,
        "severities": list(severities) if kind == "c" else None, "names": names, "params": "cifar",
        "frost": f"reference images from {frost_dir}" if frost_dir else "synthetic texture (no --frost-dir)",
    })
    return out


def run(args: argparse.Namespace) -> int:
    names = [n.strip() for n in args.corruptions.split(",")] if args.corruptions else None
    severities = tuple(int(s) for s in args.severities.split(","))
    if any(not 1 <= s <= 5 for s in severities):
        raise ValueError(f"severities must be in 1..5, got {args.severities}")
    torch.set_num_threads(max(1, torch.get_num_threads()))
    out = write_corrupted_set(args.dataset, args.kind, args.out, data_root=args.data_root, names=names,
                              severities=severities, seed=args.seed, chunk=args.chunk,
                              frost_dir=args.frost_dir, limit=args.limit)
    print(f"wrote {out}")
    return 0
