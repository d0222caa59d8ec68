"""``noisymix bench train-step``: the cost of NoisyMix's step over a plain step on the same views.

Side by side in one process, on the same model: (a) a full NoisyMix step -- crop/flip, two AugMix
views, the draw, noisy feature mixup at a random stage, CE + JSD, backward, SGD -- and (b) a plain
forward/backward/SGD step on an already prepared batch of the same 3B images.  Also (c) the
views alone (crop/flip + two AugMix views), which is most of the difference.  Target: ratio
<= 1.25 on a GPU.  On CUDA: bf16 autocast, channels_last, CUDA-event timing, PreActResNet-18
width 64 and batch 128 (the paper's) unless given; on the CPU width 16, batch 32.  Reported:
source images/s and the projected time of 200 CIFAR epochs (50,000 images) at that rate.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from fullscale.models import create_model
from fullscale.training.hooks import install_stage_hooks
from fullscale.training.methods import METHODS
from fullscale.training.presets import resolve_config
from fullscale.training.step import make_views, step_loss


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=None, help="source images per step (default: 128 on "
                        "CUDA as the public code, 32 on the CPU)")
    parser.add_argument("--width", type=int, default=None, help="PreActResNet-18 width (default: 64 on "
                        "CUDA as the paper, 16 on the CPU)")
    parser.add_argument("--stem-stride", type=int, default=1, choices=(1, 2),
                        help="PreActResNet-18's first convolution stride (2: the laptop plan's model)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per repeat (default 20 CUDA, 3 CPU)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls first (the CPU allocator and "
                        "oneDNN need about five steps to settle)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (CUDA)")
    parser.add_argument("--compile-backend", default="inductor",
                        help="torch.compile backend (eager / aot_eager: cheap checks of the compiled path on a CPU)")
    parser.add_argument("--model", default="preactresnet18", help="preactresnet18 (CIFAR) or resnet50 (ImageNet)")
    parser.add_argument("--size", type=int, default=None, help="image side (default: 32; 224 for resnet50)")
    parser.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto",
                        help="autocast dtype (auto: bf16 on CUDA, fp32 on the CPU)")
    parser.add_argument("--memory-format", choices=("auto", "channels_last", "contiguous"), default="auto",
                        help="model and views layout (auto: channels_last on CUDA)")


def _seconds_per_call(fn: Callable[[], object], device: torch.device, steps: int, repeats: int,
                      warmup: int) -> float:
    """Best over ``repeats`` of the mean time of ``steps`` calls, after ``warmup`` untimed calls;
    CUDA events on a GPU, wall time on the CPU."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device)
            start.record()
            for _ in range(steps):
                fn()
            end.record()
            torch.cuda.synchronize(device)
            seconds = start.elapsed_time(end) / 1000
        else:
            t0 = time.perf_counter()
            for _ in range(steps):
                fn()
            seconds = time.perf_counter() - t0
        best = min(best, seconds / steps)
    return best


def _graphs() -> int:
    """Graphs torch.compile has made in this process so far (a recompile adds one)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def run(args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    resnet50 = args.model == "resnet50"
    batch = args.batch or ((64 if resnet50 else 128) if cuda else (4 if resnet50 else 32))
    width = args.width or (64 if cuda else 16)
    steps = args.steps or (20 if cuda else 3)
    size = args.size or (224 if resnet50 else 32)
    classes = 1000 if resnet50 else 10
    bf16 = args.precision == "bf16" or (args.precision == "auto" and cuda)
    channels_last = args.memory_format == "channels_last" or (args.memory_format == "auto" and cuda)
    cfg = resolve_config("noisymix", [] if resnet50 else [f"width={width}", f"stem_stride={args.stem_stride}"])
    method = METHODS["noisymix"]
    core = create_model(args.model, classes, **cfg.model_kwargs if not resnet50 else {}).to(device)
    if channels_last:
        core = core.to(memory_format=torch.channels_last)
    if args.compile:
        install_stage_hooks(core)  # as the trainer does before compiling: no recompile per step
    model = torch.compile(core, backend=args.compile_backend) if args.compile else core
    opt = torch.optim.SGD(core.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    g = torch.Generator(device=device).manual_seed(0)
    stage_g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 256, (batch, 3, size, size), dtype=torch.uint8, device=device, generator=g)
    y = torch.randint(0, classes, (batch,), device=device, generator=g)
    views = torch.rand(3 * batch, 3, size, size, device=device, generator=g)
    if channels_last:
        views = views.contiguous(memory_format=torch.channels_last)

    def noisymix_step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            parts = step_loss(model, core, x, y, method, cfg, classes, g, stage_g)
        opt.zero_grad(set_to_none=True)
        parts.total.backward()
        opt.step()

    def plain_step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = torch.nn.functional.cross_entropy(model(views).float(), y.repeat(3))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    # alternate the two per repeat, so that a burst of load on a shared machine hits both sides
    for _ in range(args.warmup):
        noisymix_step()
        plain_step()
    graphs_after_warmup = _graphs()
    ours, plain = float("inf"), float("inf")
    for _ in range(args.repeats):
        ours = min(ours, _seconds_per_call(noisymix_step, device, steps, 1, 0))
        plain = min(plain, _seconds_per_call(plain_step, device, steps, 1, 0))
    recompiles = _graphs() - graphs_after_warmup
    peaks = {}
    for name, step in (("noisymix", noisymix_step), ("plain", plain_step)):
        if cuda:  # the peak of one step (weights, optimizer state, activations), GiB
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            step()
            torch.cuda.synchronize(device)
            peaks[name] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
    augment = _seconds_per_call(lambda: make_views(x, method, cfg, g), device, steps, args.repeats, args.warmup)
    rate = batch / ours
    return {
        "device": torch.cuda.get_device_name(device) if cuda else "cpu",
        "threads": torch.get_num_threads(), "bf16": bf16, "channels_last": channels_last, "compile": args.compile,
        "compile_backend": args.compile_backend if args.compile else None,
        "recompiles_after_warmup": recompiles if args.compile else None,
        "model": args.model, "image_size": size, "peak_memory_gib": peaks or None,
        "batch": batch, "width": None if resnet50 else width,
        "stem_stride": None if resnet50 else args.stem_stride, "steps": steps, "repeats": args.repeats,
        "warmup": args.warmup,
        "noisymix_step_s": round(ours, 5), "plain_step_s": round(plain, 5), "views_only_s": round(augment, 5),
        "ratio": round(ours / plain, 3), "target_ratio_gpu": 1.25,
        "noisymix_source_images_per_s": round(rate, 1), "plain_source_images_per_s": round(batch / plain, 1),
        "projected_200_epochs_cifar_h": round(200 * 50_000 / rate / 3600, 2),
        "projected_200_epochs_cifar_min": round(200 * 50_000 / rate / 60, 1),
    }
