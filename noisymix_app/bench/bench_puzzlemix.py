"""``noisymix bench puzzlemix``: the cost of a Puzzle Mix step over a plain step, same model and batch.

Side by side in one process, on the same PreActResNet-18 and batch: (a) the trainer's Puzzle Mix step
(``fullscale.training.step.step_loss`` with the ``puzzlemix`` preset: crop/flip, the draw, the saliency pass
-- an extra forward and input backward of the clean loss --, the block energy, the graph cuts,
transport, mixing, then forward, soft-target CE; backward, SGD), (b) a plain forward/backward/SGD step on
the batch, and, with ``--public-code DIR`` (a directory holding the public code's ``mixup.py``,
github.com/snu-mllab/PuzzleMix, not shipped here), (c) the public code's step as its ``main.py``
runs it (saliency, ``mixup_graph`` with a process pool of ``--public-mp`` workers, BCE on softmax),
and its ratio to the same plain step.  The saliency pass alone costs about 2/3 of a plain step,
so the floor is about 1.6-2x; target <= 2.3x and no slower than the public code's ratio.

The graph cuts three ways (``--cut-ways``), taking turns in each round, alone on the batch's problems
at each of ``--cut-blocks`` and inside the whole step: ``one`` (``workers=1``: in this thread),
``processes`` (the trainer's ``workers`` > 1: this thread and helper processes, issue 38) and
``threads`` (the thread pool used before, each cut under one lock; kept here only), each with its
min and median and its speedup over ``one``; the masks of the three are checked equal.
``--busy-cores N`` runs N busy loops beside the timing (a user's machine is never idle).

On CUDA: PreActResNet-18 width 64, batch 128 (the paper's); on the CPU width 64, batch 32.
Recipe: 3 labels, beta 1.2, gamma 0.5, eta 0.2, neighbourhood 4, transport at 4 pixels, eps 0.8.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import multiprocessing
import os
import statistics
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import fullscale.puzzlemix.masks as puzzlemix_masks
import fullscale.puzzlemix.mixing as puzzlemix_mixing
from fullscale.models import create_model
from fullscale.puzzlemix import PuzzleMixConfig, block_costs, saliency, solve_masks
from fullscale.training.methods import METHODS
from fullscale.training.presets import resolve_config
from fullscale.training.step import step_loss
from noisymix_infra.provenance import provenance


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=None, help="images per step (default 128 CUDA, 32 CPU)")
    parser.add_argument("--width", type=int, default=64, help="PreActResNet-18 width (the paper's 64)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per repeat (default 10 CUDA, 2 CPU)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--workers", type=int, default=0, help="our graph-cut processes, this one included "
                        "(0: min(8, CPUs)); also the old thread pool's threads")
    parser.add_argument("--cut-ways", default=None, help="comma-separated graph-cut ways to time side by "
                        f"side, from {', '.join(WAYS)} (default all; one alone where --workers is one worker)")
    parser.add_argument("--cut-blocks", default="2,4,8,16", help="comma-separated blocks per side at which the "
                        "graph cuts alone are timed (divisors of 32; default the recipe's 2,4,8,16)")
    parser.add_argument("--cut-repeats", type=int, default=30, help="rounds of the graph cuts alone")
    parser.add_argument("--busy-cores", type=int, default=0, help="busy loops (python: while True: pass) "
                        "running beside the timing, ended after it; started after the torch thread count is "
                        "chosen (give --threads to fix it)")
    parser.add_argument("--public-code", default=None, help="directory with the public code's mixup.py "
                        "(github.com/snu-mllab/PuzzleMix); its step is timed beside ours")
    parser.add_argument("--public-mp", type=int, default=8, help="the public code's graph-cut processes "
                        "(its --mp, default 8)")


WAYS = ("one", "threads", "processes")


def _ways(args: argparse.Namespace) -> tuple[str, ...]:
    """``--cut-ways`` as a tuple, refused in one line if a name is unknown or repeated, or if a pool is
    asked for with one worker."""
    if args.cut_ways is None:
        return WAYS if _pool_size(args.workers) > 1 else ("one",)
    ways = tuple(w.strip() for w in str(args.cut_ways).split(","))
    unknown = [w for w in ways if w not in WAYS]
    if unknown or not ways or len(set(ways)) != len(ways):
        raise ValueError(f"--cut-ways {args.cut_ways!r}: give distinct names from {', '.join(WAYS)}, "
                         "comma-separated")
    if set(ways) - {"one"} and _pool_size(args.workers) < 2:
        raise ValueError(f"--workers {args.workers} is one worker here: the ways threads and processes need "
                         "--workers >= 2 (or --cut-ways one)")
    return ways


def _blocks(text: str) -> tuple[int, ...]:
    try:
        blocks = tuple(int(b) for b in str(text).split(","))
    except ValueError:
        blocks = ()
    if not blocks or any(b < 1 or 32 % b for b in blocks):
        raise ValueError(f"--cut-blocks {text!r}: give comma-separated divisors of the 32-pixel width "
                         "(1, 2, 4, 8, 16, 32)")
    return blocks


def _pool_size(workers: int) -> int:
    return workers or min(8, os.cpu_count() or 1)


_OLD_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _thread_pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench-puzzlemix-gco")


def locked_thread_masks(unary: np.ndarray, edge_x: np.ndarray, edge_y: np.ndarray, *, workers: int = 0) -> np.ndarray:
    """``solve_masks`` as it was before issue 38: a thread pool of ``workers`` threads, each cut under one
    lock (pyGCO's global table of graphs is not thread-safe), so one cut at a time."""
    import gco

    n_labels = unary.shape[-1]
    cost = puzzlemix_masks._label_cost(n_labels)

    def one(i: int) -> np.ndarray:
        with _OLD_LOCK:
            return gco.cut_grid_graph(unary[i], cost, edge_x[i], edge_y[i], algorithm="swap")

    labels = list(_thread_pool(_pool_size(workers)).map(one, range(len(unary))))
    block_num = unary.shape[1]
    return (1.0 - np.stack(labels).reshape(-1, block_num, block_num) / (n_labels - 1)).astype(np.float32)


def _way_masks(way: str, workers: int) -> Callable[..., np.ndarray]:
    """The graph cuts of ``way``: a function of (unary, edge_x, edge_y)."""
    if way == "threads":
        return lambda *problem: locked_thread_masks(*problem, workers=workers)
    return lambda *problem: solve_masks(*problem, workers=1 if way == "one" else workers)


@contextlib.contextmanager
def _cuts_by(way: str, workers: int) -> Iterator[None]:
    """The trainer's step cutting ``way``'s way: ``one`` and ``processes`` are its own ``workers``
    (given in its config); ``threads`` swaps the old thread pool in for ``solve_masks``."""
    if way != "threads":
        yield
        return
    own = puzzlemix_mixing.solve_masks  # the name puzzle_mix calls
    puzzlemix_mixing.solve_masks = locked_thread_masks
    try:
        yield
    finally:
        puzzlemix_mixing.solve_masks = own


@contextlib.contextmanager
def _busy_cores(count: int) -> Iterator[None]:
    """``count`` busy-loop processes for the duration, ended (and waited for) after it."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def _spread(times: list[float]) -> dict[str, float]:
    return {"min_s": round(min(times), 5), "median_s": round(statistics.median(times), 5)}


def _speedups(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Each way's speedup over ``one`` (its time over theirs: > 1 is faster), of the mins and of the medians."""
    if "one" not in times:
        return {}
    return {way: {"min": round(min(times["one"]) / min(t), 3),
                  "median": round(statistics.median(times["one"]) / statistics.median(t), 3)}
            for way, t in times.items() if way != "one"}


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
    ways, blocks = _ways(args), _blocks(args.cut_blocks)  # one line each, before any work
    with _busy_cores(args.busy_cores):
        return {**_run(args, ways, blocks), "busy_cores": args.busy_cores}


def _run(args: argparse.Namespace, ways: tuple[str, ...], blocks: tuple[int, ...]) -> dict:
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

    def puzzlemix_step(config=train_cfg) -> None:  # the trainer's step: crop/flip, draw, saliency, masks, mix, loss
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            parts = step_loss(core, core, x_u8, y, METHODS["puzzlemix"], config, 10, g, stage_g)
        opt.zero_grad(set_to_none=True)
        parts.total.backward()
        opt.step()

    # the trainer's own step ("puzzlemix") is its way's; each other way of --cut-ways is timed beside it
    own_way = "processes" if _pool_size(args.workers) > 1 else "one"
    one_cfg = resolve_config("puzzlemix", [f"width={args.width}", "puzzlemix.workers=1"])

    def way_step(way: str) -> Callable[[], None]:
        def step() -> None:
            with _cuts_by(way, args.workers):
                puzzlemix_step(one_cfg if way == "one" else train_cfg)
        return step

    steps_to_time = {"plain": plain_step, "puzzlemix": puzzlemix_step}
    steps_to_time.update({f"puzzlemix[{way}]": way_step(way) for way in ways if way != own_way})
    pool = None
    if args.public_code:
        public_step, pool = _public(args, core, opt, x, y, device)
        steps_to_time["public"] = public_step
    try:
        times = _interleaved(steps_to_time, device, steps, args.repeats, args.warmup,
                             lambda r: (g.manual_seed(1000 + r), stage_g.manual_seed(2000 + r)))
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    best = {name: min(t) for name, t in times.items()}
    plain, ours = best["plain"], best["puzzlemix"]
    by_way = {way: times["puzzlemix" if way == own_way else f"puzzlemix[{way}]"] for way in ways}
    out: dict = {
        "provenance": provenance(),
        "device": torch.cuda.get_device_name(device) if cuda else "cpu",
        "torch_threads": torch.get_num_threads(), "cpus": os.cpu_count(), "load_average": list(os.getloadavg()),
        "batch": batch, "width": args.width, "steps": steps, "repeats": args.repeats, "warmup": args.warmup,
        "graph_cut_workers": _pool_size(cfg.workers), "trainer_cut_way": own_way,
        "bf16": cuda,
        "plain_step_s": round(plain, 4), "puzzlemix_step_s": round(ours, 4), "ratio": round(ours / plain, 3),
        "target_ratio": 2.3,
        "step_by_cut_way": {**{way: _spread(t) for way, t in by_way.items()}, "plain": _spread(times["plain"]),
                            "speedup_vs_one": _speedups(by_way)},
    }
    out["graph_cut"] = _graph_cuts(core, x, y, cfg, g, ways, blocks, args.workers, args.cut_repeats)
    out["load_average_after"] = [round(v, 2) for v in os.getloadavg()]
    if args.public_code:
        out.update({"public_step_s": round(best["public"], 4), "public_ratio": round(best["public"] / plain, 3),
                    "public_graph_cut_processes": args.public_mp})
    return out


def _interleaved(fns: dict[str, Callable[[], None]], device: torch.device, steps: int, repeats: int,
                 warmup: int, reseed: Callable[[int], None] = lambda _: None) -> dict[str, list[float]]:
    """The mean time of ``steps`` calls of each function in each of ``repeats`` rounds, the functions
    taking turns within a round (so a busy spell of the machine hits them alike); ``reseed(round)``
    before each function's turn, so that each draws the same (block counts, partners) in a round."""
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(repeats):
        for name, fn in fns.items():
            reseed(r)
            sync()
            start = time.perf_counter()
            for _ in range(steps):
                fn()
            sync()
            times[name].append((time.perf_counter() - start) / steps)
    return times


def _graph_cuts(core, x, y, cfg: PuzzleMixConfig, g: torch.Generator, ways: tuple[str, ...],
                blocks: tuple[int, ...], workers: int, repeats: int) -> dict:
    """The batch's graph cuts alone at each block count, the ways taking turns in each of ``repeats``
    rounds (after one untimed call each: the helper processes start there); their masks must agree."""
    sal, _, _ = saliency(core, x, y)
    perm = torch.randperm(len(x), generator=g, device=g.device)
    timings: dict = {}
    for n in blocks:
        problem = block_costs(x, sal, perm, 0.5, n, cfg)[:3]
        cuts = {way: _way_masks(way, workers) for way in ways}
        masks = {way: cut(*problem) for way, cut in cuts.items()}
        if any(not np.array_equal(m, masks[ways[0]]) for m in masks.values()):
            raise RuntimeError(f"bench puzzlemix: the graph-cut ways {', '.join(ways)} gave different masks "
                               f"at {n} blocks")
        times: dict[str, list[float]] = {way: [] for way in ways}
        for _ in range(repeats):
            for way, cut in cuts.items():
                start = time.perf_counter()
                cut(*problem)
                times[way].append(time.perf_counter() - start)
        timings[f"blocks_{n}"] = {**{way: _spread(t) for way, t in times.items()}, "speedup_vs_one": _speedups(times)}
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
