"""``noisymix bench puzzlemix``: the cost of a Puzzle Mix step over a plain step, same model and batch.

Side by side in one process, on the same PreActResNet-18 and batch: (a) the trainer's Puzzle Mix step
(``fullscale.training.step.step_loss`` with the ``puzzlemix`` preset: crop/flip, the draw, the saliency pass
-- an extra forward and input backward of the clean loss --, the block energy, the graph cuts in
a thread pool, transport, mixing, then forward, soft-target CE; backward, SGD), (b) a plain forward/backward/SGD step on
the batch, and, with ``--public-code DIR`` (a directory holding the public code's ``mixup.py``,
github.com/snu-mllab/PuzzleMix, not shipped here), (c) the public code's step as its ``main.py``
runs it (saliency, ``mixup_graph`` with a process pool of ``--public-mp`` workers, BCE on softmax),
and its ratio to the same plain step.  The saliency pass alone costs about 2/3 of a plain step,
so the floor is about 1.6-2x; target <= 2.3x and no slower than the public code's ratio.

On CUDA: PreActResNet-18 width 64, batch 128 (the paper's); on the CPU width 64, batch 32.
Recipe: 3 labels, beta 1.2, gamma 0.5, eta 0.2, neighbourhood 4, transport at 4 pixels, eps 0.8.
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from fullscale.models import create_model
from fullscale.puzzlemix import PuzzleMixConfig, block_costs, saliency, solve_masks
from fullscale.training.methods import METHODS
from fullscale.training.presets import resolve_config
from fullscale.training.step import step_loss
from noisymix_app.bench._timing import best_seconds
from noisymix_infra.provenance import provenance


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=None, help="images per step (default 128 CUDA, 32 CPU)")
    parser.add_argument("--width", type=int, default=64, help="PreActResNet-18 width (the paper's 64)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per repeat (default 10 CUDA, 2 CPU)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--workers", type=int, default=0, help="our graph-cut threads (0: min(8, CPUs))")
    parser.add_argument("--public-code", default=None, help="directory with the public code's mixup.py "
                        "(github.com/snu-mllab/PuzzleMix); its step is timed beside ours")
    parser.add_argument("--public-mp", type=int, default=8, help="the public code's graph-cut processes "
                        "(its --mp, default 8)")


def _public_step(pm, model, opt, x, y, mean, std, pool, device: torch.device, rng: np.random.Generator):
    """The public ``main.train`` step for ``--train mixup --graph True`` (clean_lam 0, adv_p 0),
    with its README's CIFAR recipe, on the normalised batch; the model normalises inside, so it
    sees z * std + mean.  Its draws (block count, partners, lambda) from ``rng``, as it draws them."""
    z = (x - mean) / std
    z_var = z.clone().requires_grad_(True)
    model.eval()
    loss = F.cross_entropy(model(z_var * std + mean), y)
    loss.backward(retain_graph=True)
    unary = torch.sqrt(torch.mean(z_var.grad ** 2, dim=1))
    model.train()
    opt.zero_grad()
    block_num = 2 ** int(rng.integers(1, 5))
    indices = rng.permutation(z.size(0))
    lam = rng.beta(1.0, 1.0)
    out, ratio = pm.mixup_graph(z, unary, indices, block_num=block_num, alpha=lam, beta=1.2, gamma=0.5, eta=0.2,
                                neigh_size=4, n_labels=3, mean=mean, std=std, transport=True, t_eps=0.8,
                                t_size=4, mp=pool, device=device.type)
    target = F.one_hot(y, 10).float()
    target = target * ratio.unsqueeze(-1) + target[indices] * (1 - ratio.unsqueeze(-1))
    output = model(out * std + mean)
    loss = F.binary_cross_entropy(F.softmax(output, dim=1), target)
    loss.backward()
    opt.step()


def run(args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    batch = args.batch or (128 if cuda else 32)
    steps = args.steps or (10 if cuda else 2)
    core = create_model("preactresnet18", 10, width=args.width).to(device)
    opt = torch.optim.SGD(core.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.rand(batch, 3, 32, 32, device=device, generator=g)
    y = torch.randint(0, 10, (batch,), device=device, generator=g)
    x_u8 = (x * 255).round().to(torch.uint8)
    train_cfg = resolve_config("puzzlemix", [f"width={args.width}", f"puzzlemix.workers={args.workers}"])
    cfg = train_cfg.puzzlemix
    stage_g = torch.Generator().manual_seed(1)
    if cuda:
        core = core.to(memory_format=torch.channels_last)

    def plain_step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            loss = F.cross_entropy(core(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def puzzlemix_step() -> None:  # the trainer's step: crop/flip, draw, saliency, masks, mix, loss
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            parts = step_loss(core, core, x_u8, y, METHODS["puzzlemix"], train_cfg, 10, g, stage_g)
        opt.zero_grad(set_to_none=True)
        parts.total.backward()
        opt.step()

    steps_to_time = {"plain": plain_step, "puzzlemix": puzzlemix_step}
    pool = None
    if args.public_code:
        public_step, pool = _public(args, core, opt, x, y, device)
        steps_to_time["public"] = public_step
    try:
        best = _interleaved(steps_to_time, device, steps, args.repeats, args.warmup)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    plain, ours = best["plain"], best["puzzlemix"]
    out: dict = {
        "provenance": provenance(),
        "device": torch.cuda.get_device_name(device) if cuda else "cpu",
        "torch_threads": torch.get_num_threads(), "cpus": os.cpu_count(), "load_average": list(os.getloadavg()),
        "batch": batch, "width": args.width, "steps": steps, "repeats": args.repeats, "warmup": args.warmup,
        "graph_cut_threads": cfg.workers or min(8, os.cpu_count() or 1),
        "bf16": cuda,
        "plain_step_s": round(plain, 4), "puzzlemix_step_s": round(ours, 4), "ratio": round(ours / plain, 3),
        "target_ratio": 2.3,
    }
    out["graph_cut"] = _graph_cut_threads(core, x, y, cfg, g)
    if args.public_code:
        out.update({"public_step_s": round(best["public"], 4), "public_ratio": round(best["public"] / plain, 3),
                    "public_graph_cut_processes": args.public_mp})
    return out


def _interleaved(fns: dict[str, Callable[[], None]], device: torch.device, steps: int, repeats: int,
                 warmup: int) -> dict[str, float]:
    """Best over ``repeats`` rounds of the mean time of ``steps`` calls of each function, the
    functions taking turns within a round (so a busy spell of the machine hits them alike)."""
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            sync()
            start = time.perf_counter()
            for _ in range(steps):
                fn()
            sync()
            best[name] = min(best[name], (time.perf_counter() - start) / steps)
    return best


def _graph_cut_threads(core, x, y, cfg: PuzzleMixConfig, g: torch.Generator) -> dict:
    """The batch's graph cuts alone, in one thread and in the pool: whether pyGCO releases the GIL
    (its C library is called through ctypes, which does)."""
    sal, _, _ = saliency(core, x, y)
    perm = torch.randperm(len(x), generator=g, device=g.device)
    threads = cfg.workers or min(8, os.cpu_count() or 1)
    timings = {}
    for n in (8, 16):
        problem = block_costs(x, sal, perm, 0.5, n, cfg)[:3]
        one = best_seconds(partial(solve_masks, *problem, workers=1), device="cpu", repeats=3)
        pool = best_seconds(partial(solve_masks, *problem, workers=threads), device="cpu", repeats=3)
        timings[f"blocks_{n}"] = {"one_thread_s": round(one, 4), f"{threads}_threads_s": round(pool, 4),
                                  "speedup": round(one / pool, 2)}
    return timings


def _public(args, core, opt, x, y, device):
    """The public code's step (its ``mixup.py`` from ``--public-code``) and its process pool."""
    folder = Path(args.public_code).resolve()
    if not (folder / "mixup.py").exists():
        raise ValueError(f"--public-code {folder}: no mixup.py there (the public PuzzleMix code's)")
    sys.path.insert(0, str(folder))
    try:
        pm = importlib.import_module("mixup")
    finally:
        sys.path.remove(str(folder))
    mean = torch.tensor([0.4914, 0.4822, 0.4465], device=device).view(1, 3, 1, 1)
    std = torch.tensor([0.2470, 0.2435, 0.2616], device=device).view(1, 3, 1, 1)
    rng = np.random.default_rng(0)
    # its mixup_graph builds the mask tensor from a list of arrays; torch warns, once per step
    warnings.filterwarnings("ignore", message="Creating a tensor from a list of numpy.ndarrays")
    pool = multiprocessing.get_context("fork").Pool(args.public_mp) if args.public_mp > 0 else None
    return (lambda: _public_step(pm, core, opt, x, y, mean, std, pool, device, rng)), pool
