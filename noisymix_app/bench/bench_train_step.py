"""``noisymix bench train-step``: the cost of NoisyMix's step over a plain step on the same views.

Side by side in one process, on the same model: (a) the trainer's NoisyMix steps -- views and
draws made a chunk of steps at a time (``fullscale.training.draws``: crop/flip, two AugMix views,
partners, lambdas, transform points), then per step noisy feature mixup at the drawn stage, CE +
JSD, backward, SGD -- timed over whole chunks, so the views' cost is in the step, amortized as in
training; and (b) a plain forward/backward/SGD step on an already prepared batch of the same 3B
images.  Also (c) the views alone, per step of a chunk (``views_only_s``) and for one batch made
alone (``views_one_batch_s``, the cost before chunking).  Target: ratio <= 1.3 on a GPU (issue
38).  On CUDA: bf16 autocast, channels_last, CUDA-event timing, PreActResNet-18 width 64 and batch
128 (the paper's) unless given; on the CPU width 16, batch 32.  Reported: source images/s and the
projected time of 200 CIFAR epochs (50,000 images) at that rate.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from fullscale.models import create_model
from fullscale.training.data import InMemoryData
from fullscale.training.draws import RunDraws, chunk_generators, chunk_steps, draw_chunk, make_views
from fullscale.training.hooks import install_stage_hooks
from fullscale.training.methods import METHODS
from fullscale.training.presets import resolve_config
from fullscale.training.process import Process
from fullscale.training.step import drawn_step_loss


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=None, help="source images per step (default: 128 on "
                        "CUDA as the public code, 32 on the CPU)")
    parser.add_argument("--width", type=int, default=None, help="PreActResNet-18 width (default: 64 on "
                        "CUDA as the paper, 16 on the CPU)")
    parser.add_argument("--stem-stride", type=int, default=1, choices=(1, 2),
                        help="PreActResNet-18's first convolution stride (2: the laptop plan's model)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per repeat (default: two chunks of "
                        "views on CUDA, 3 on the CPU)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls first (the CPU allocator and "
                        "oneDNN need about five steps to settle)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (CUDA)")
    parser.add_argument("--compile-backend", default="inductor",
                        help="torch.compile backend (eager / aot_eager: cheap checks of the compiled path on a CPU)")
    parser.add_argument("--model", default="preactresnet18", help="preactresnet18 or wrn28_4 (CIFAR), or resnet50 "
                        "(ImageNet)")
    parser.add_argument("--size", type=int, default=None, help="image side (default: 32; 224 for resnet50)")
    parser.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto",
                        help="autocast dtype (auto: bf16 on CUDA, fp32 on the CPU)")
    parser.add_argument("--memory-format", choices=("auto", "channels_last", "contiguous"), default="auto",
                        help="model and views layout (auto: channels_last on CUDA)")
    parser.add_argument("--trace", default=None, metavar="FILE",
                        help="also profile one chunk of NoisyMix steps and write the trace (Chrome JSON) here, "
                        "with the top operations by device time beside it (FILE.txt)")


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
    preact = args.model == "preactresnet18"
    batch = args.batch or ((64 if resnet50 else 128) if cuda else (4 if resnet50 else 32))
    width = args.width or (64 if cuda else 16)
    size = args.size or (224 if resnet50 else 32)
    classes = 1000 if resnet50 else 10
    bf16 = args.precision == "bf16" or (args.precision == "auto" and cuda)
    channels_last = args.memory_format == "channels_last" or (args.memory_format == "auto" and cuda)
    overrides = ([f"model={args.model}"] + ([f"width={width}", f"stem_stride={args.stem_stride}"] if preact else []))
    cfg = resolve_config("noisymix", overrides)
    method = METHODS["noisymix"]
    core = create_model(args.model, classes, **cfg.model_kwargs).to(device)
    if channels_last:
        core = core.to(memory_format=torch.channels_last)
    if args.compile:
        install_stage_hooks(core)  # as the trainer does before compiling: no recompile per step
    model = torch.compile(core, backend=args.compile_backend) if args.compile else core
    opt = torch.optim.SGD(core.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    g = torch.Generator(device=device).manual_seed(0)
    # the trainer's path: views and draws a chunk of steps at a time (``draws.RunDraws``), the step on
    # its share (``step.drawn_step_loss``); a timed repeat is ``chunks`` whole chunks, so the views'
    # cost is in the step time, amortized as in training
    chunk = chunk_steps(method.views, batch, (3, size, size), 1 << 30)
    steps = args.steps or (2 * chunk if cuda else 3)
    chunk = min(chunk, steps)  # the chunk the timed steps use (an epoch of ``steps``), so the views' figure is theirs
    data = InMemoryData(torch.randint(0, 256, (steps * batch, 3, size, size), dtype=torch.uint8, device=device,
                                      generator=g),
                        torch.randint(0, classes, (steps * batch,), device=device, generator=g), classes, "synthetic")
    draws = RunDraws(cfg, method, steps, (3, size, size))
    one_process = Process(device, 0, 1)
    x, y = data.images[:batch], data.labels[:batch]
    views = torch.rand(3 * batch, 3, size, size, device=device, generator=g)
    if channels_last:
        views = views.contiguous(memory_format=torch.channels_last)
    epoch = [0]

    def noisymix_steps() -> None:  # ``steps`` trainer steps, views made a chunk at a time
        def batches_from(first: int):
            return data.batches(g, batch, one_process, start_step=first)

        for _, d, labels in draws.epoch(batches_from, epoch[0], 0, core):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                parts = drawn_step_loss(model, core, d, labels, method, cfg, classes, g)
            opt.zero_grad(set_to_none=True)
            parts.total.backward()
            opt.step()
        epoch[0] += 1

    def plain_steps() -> None:
        for _ in range(steps):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = torch.nn.functional.cross_entropy(model(views).float(), y.repeat(3))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    # alternate the two per repeat, so that a burst of load on a shared machine hits both sides
    for _ in range(max(1, args.warmup // max(steps, 1)) if args.warmup else 0):
        noisymix_steps()
        plain_steps()
    graphs_after_warmup = _graphs()
    ours, plain = float("inf"), float("inf")
    for _ in range(args.repeats):
        ours = min(ours, _seconds_per_call(noisymix_steps, device, 1, 1, 0) / steps)
        plain = min(plain, _seconds_per_call(plain_steps, device, 1, 1, 0) / steps)
    recompiles = _graphs() - graphs_after_warmup
    peaks = {}
    for name, fn in (("noisymix", noisymix_steps), ("plain", plain_steps)):
        if cuda:  # the peak of a repeat (weights, optimizer state, activations, a chunk of views), GiB
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            fn()
            torch.cuda.synchronize(device)
            peaks[name] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
    if args.trace:  # one step in the middle of a chunk (its views already made): what every step costs
        def batches_from(first: int):
            return data.batches(g, batch, one_process, start_step=first)

        stream = draws.epoch(batches_from, epoch[0], 0, core)

        def one_step() -> None:
            _, d, labels = next(stream)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                parts = drawn_step_loss(model, core, d, labels, method, cfg, classes, g)
            opt.zero_grad(set_to_none=True)
            parts.total.backward()
            opt.step()

        one_step(), one_step()
        _trace(one_step, cuda, args.trace)
        stream.close()
    part = [(x, y)] * chunk
    gens = chunk_generators(0, 0, 0)
    augment = _seconds_per_call(lambda: draw_chunk(part, method, cfg, core.stages, gens), device, 1, args.repeats,
                                1) / chunk
    single = _seconds_per_call(lambda: make_views(x, method, cfg, g), device, 3, args.repeats, 1)
    rate = batch / ours
    return {
        "device": torch.cuda.get_device_name(device) if cuda else "cpu",
        "threads": torch.get_num_threads(), "bf16": bf16, "channels_last": channels_last, "compile": args.compile,
        "compile_backend": args.compile_backend if args.compile else None,
        "recompiles_after_warmup": recompiles if args.compile else None,
        "model": args.model, "image_size": size, "peak_memory_gib": peaks or None,
        "batch": batch, "width": width if preact else None,
        "stem_stride": args.stem_stride if preact else None, "steps": steps, "repeats": args.repeats,
        "warmup": args.warmup, "chunk_steps": chunk,
        "noisymix_step_s": round(ours, 6), "plain_step_s": round(plain, 6), "views_only_s": round(augment, 6),
        "views_one_batch_s": round(single, 6),
        "ratio": round(ours / plain, 3), "target_ratio_gpu": 1.3,
        "noisymix_source_images_per_s": round(rate, 1), "plain_source_images_per_s": round(batch / plain, 1),
        "projected_200_epochs_cifar_h": round(200 * 50_000 / rate / 3600, 3),
        "projected_200_epochs_cifar_min": round(200 * 50_000 / rate / 60, 2),
    }


def _trace(steps: Callable[[], None], cuda: bool, path: str) -> None:
    """The profiler's trace of one call of ``steps`` (Chrome trace JSON; gzipped where ``path`` ends
    in .gz) and its top operations (``path`` + .txt)."""
    from pathlib import Path

    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        steps()
        if cuda:
            torch.cuda.synchronize()
    if path.endswith(".gz"):
        import gzip

        plain = path[:-3]
        prof.export_chrome_trace(plain)
        Path(path).write_bytes(gzip.compress(Path(plain).read_bytes()))
        Path(plain).unlink()
    else:
        prof.export_chrome_trace(path)
    sort = "cuda_time_total" if cuda else "cpu_time_total"
    Path(path + ".txt").write_text(prof.key_averages().table(sort_by=sort, row_limit=40))
