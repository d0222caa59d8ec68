"""``noisymix bench train-step``: the cost of NoisyMix's step over a plain step on the same views.

Side by side in one process: (a) a full NoisyMix step — crop/flip, two AugMix views, the draw,
noisy feature mixup at a random stage, CE + JSD, backward, SGD — and (b) a plain forward/backward/
SGD step on an already prepared batch of the same 3B images.  Target: ratio <= 1.25 on a GPU
(where augmentation is cheap next to the network); on a CPU the AugMix views weigh more.
Also reported: the projected time of 200 CIFAR epochs (50,000 images) at the measured rate.
"""

from __future__ import annotations

import argparse

import torch

from benchmarks._timing import best_seconds
from fullscale.cli_train import resolve_config
from fullscale.methods import METHODS
from fullscale.models import create_model
from fullscale.train import _loss


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=32, help="source images per step (public: 128)")
    parser.add_argument("--width", type=int, default=16, help="PreActResNet-18 width (paper: 64)")
    parser.add_argument("--steps", type=int, default=3)


def run(args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    cfg = resolve_config("noisymix", [f"width={args.width}"])
    model = create_model("preactresnet18", 10, width=args.width).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True)
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randint(0, 256, (args.batch, 3, 32, 32), dtype=torch.uint8, device=device, generator=g)
    y = torch.randint(0, 10, (args.batch,), device=device, generator=g)
    views = torch.rand(3 * args.batch, 3, 32, 32, device=device, generator=g)
    amp = device.type == "cuda"

    def noisymix_steps():
        for _ in range(args.steps):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                parts = _loss(model, model, x, y, METHODS["noisymix"], cfg, 10, g)
            opt.zero_grad()
            parts.total.backward()
            opt.step()

    def plain_steps():
        for _ in range(args.steps):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                loss = torch.nn.functional.cross_entropy(model(views).float(), y.repeat(3))
            opt.zero_grad()
            loss.backward()
            opt.step()

    ours = best_seconds(noisymix_steps, device=args.device) / args.steps
    plain = best_seconds(plain_steps, device=args.device) / args.steps
    rate = args.batch / ours
    return {
        "device": args.device, "batch": args.batch, "width": args.width,
        "noisymix_step_s": round(ours, 4), "plain_step_s": round(plain, 4),
        "ratio": round(ours / plain, 3), "target_ratio_gpu": 1.25,
        "source_images_per_s": round(rate, 1),
        "projected_200_epochs_cifar_h": round(200 * 50_000 / rate / 3600, 2),
    }
