"""``noisymix bench evaluate``: images/s of a CIFAR-C-style evaluation of PreActResNet-18.

Two figures: ``model`` — ``fullscale.evaluation.logits_of`` on one in-memory severity block
(uint8 -> float on the device, batched inference, bf16 + channels_last on CUDA), at each batch
size of ``--compare-batches`` and, on the CPU, also through the traced and frozen model that the
-C suites run there (``cpu_inference_model``), side by side in this process; ``suite`` — the
whole -C suite (``fullscale.evaluation.corrupted_npy``) on a set written to a temporary directory in
the standard layout (memory-mapped reads one severity block at a time, the sha256 of every file,
the accuracies).  Both are projected to a full CIFAR-10-C evaluation: 15 x 5 x 10,000 = 750,000
images, target < 60 s on a GPU.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from fullscale.evaluation import (
    ACCELERATOR_BATCH,
    CPU_BATCH,
    Context,
    EvalOptions,
    corrupted_npy,
    cpu_inference_model,
    logits_of,
)
from fullscale.models import create_model
from fullscale.vocabulary import CORRUPTIONS
from noisymix_app.bench._timing import best_seconds
from noisymix_infra.io import save_npy

FULL = 15 * 5 * 10_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--images", type=int, default=2000, help="images per severity block")
    parser.add_argument("--corruptions", type=int, default=1, help="corruption files in the suite run (<= 15)")
    parser.add_argument("--width", type=int, default=64, help="PreActResNet-18 width (paper: 64)")
    parser.add_argument("--batch", type=int, default=0, help="images per model call (0: the evaluation's default "
                        "for the device)")
    parser.add_argument("--compare-batches", default="", help="further batch sizes timed beside --batch, e.g. 64,500")


def run(args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    model = create_model("preactresnet18", 10, width=args.width).to(device).eval()
    if device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (args.images, 3, 32, 32), dtype=torch.uint8, generator=g)
    batch = args.batch or (CPU_BATCH if device.type == "cpu" else ACCELERATOR_BATCH)
    seconds = best_seconds(lambda: logits_of(model, x, device, batch=batch), device=args.device, repeats=2)
    model_rate = args.images / seconds
    by_batch = {batch: round(model_rate, 1)}
    for other in (int(b) for b in args.compare_batches.split(",") if b.strip()):
        by_batch[other] = round(args.images / best_seconds(lambda b=other: logits_of(model, x, device, batch=b),
                                                           device=args.device, repeats=2), 1)
    frozen = {}
    if device.type == "cpu":
        fast = cpu_inference_model(model, x[:batch])
        rate = args.images / best_seconds(lambda: logits_of(fast, x, device, batch=batch), device=args.device,
                                          repeats=2)
        frozen = {"frozen_used": fast is not model, "frozen_images_per_s": round(rate, 1),
                  "frozen_over_eager": round(rate / model_rate, 2)}

    names = CORRUPTIONS[:max(1, min(args.corruptions, 15))]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        block = x.permute(0, 2, 3, 1).numpy()
        for name in names:
            save_npy(root / f"{name}.npy", np.concatenate([block] * 5))
        save_npy(root / "labels.npy", np.zeros(args.images, np.int64))
        ctx = Context(model, device, {"num_classes": 10}, root,
                      EvalOptions(batch_size=batch, partial=len(names) < len(CORRUPTIONS)))
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        corrupted_npy(ctx)
        if device.type == "cuda":
            torch.cuda.synchronize()
        suite_seconds = time.perf_counter() - start
    suite_rate = len(names) * 5 * args.images / suite_seconds
    return {"device": args.device, "width": args.width, "images_per_block": args.images, "batch": batch,
            "model_images_per_s": round(model_rate, 1), "model_projected_cifar10c_s": round(FULL / model_rate, 1),
            "model_images_per_s_by_batch": by_batch, **frozen,
            "suite_corruptions": len(names), "suite_images_per_s": round(suite_rate, 1),
            "suite_projected_cifar10c_s": round(FULL / suite_rate, 1), "target_gpu_s": 60}
