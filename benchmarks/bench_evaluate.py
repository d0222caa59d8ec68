"""``noisymix bench evaluate``: images/s of a CIFAR-C-style evaluation (PreActResNet-18).

Measures ``fullscale.evaluation.logits_of`` on a severity block as the -C suites run it
(uint8 -> float on the device, batched inference, bf16 + channels_last on CUDA), and projects
the time of a full CIFAR-10-C evaluation (15 x 5 x 10,000 = 750,000 images; target < 60 s on a GPU).
"""

from __future__ import annotations

import argparse

import torch

from benchmarks._timing import best_seconds
from fullscale.evaluation import logits_of
from fullscale.models import create_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--width", type=int, default=64, help="PreActResNet-18 width (paper: 64)")
    parser.add_argument("--batch", type=int, default=1000)


def run(args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    model = create_model("preactresnet18", 10, width=args.width).to(device).eval()
    if device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    x = torch.randint(0, 256, (args.images, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    seconds = best_seconds(lambda: logits_of(model, x, device, batch=args.batch), device=args.device, repeats=2)
    rate = args.images / seconds
    return {"device": args.device, "width": args.width, "images_per_s": round(rate, 1),
            "projected_cifar10c_s": round(750_000 / rate, 1), "target_gpu_s": 60}
