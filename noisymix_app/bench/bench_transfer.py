"""``noisymix bench transfer``: the fine-tuning step at 224 x 224 with the data kept as 32 x 32 uint8
and upsampled on the device per step (``fullscale.augment.resized_crop``), against the naive way, a pre-
upsampled float32 copy of the data set sliced per step.

Side by side in one process, on the same ResNet-50 (``resnet50_transfer``, SGD momentum 0.9): (a)
ours: index a batch of the uint8 set, ``random_resized_crop_flip`` to ``image_size``, forward /
backward / SGD; (b) naive: index a batch of the pre-upsampled float copy (no augmentation at all: a
lower bound of its cost), forward / backward / SGD. Reported: images/s of each and their ratio, the
peak memory of each (CUDA: ``max_memory_allocated``; CPU: the process's peak resident set, reset
before each variant; measured on one step of each, before the timing), and the bytes of each stored
data set, measured on a subset of ``--subset`` images and projected to the 50,000 CIFAR training
images (the float copy: 50,000 x 3 x 224 x 224 x 4 bytes = 30.1 GB). CPU defaults are small (batch
4, 2 steps): a CPU ResNet-50 step at 224 takes seconds. Timing: warm-up calls of both, then
``--repeats`` rounds alternating the two variants, the best round of each kept.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from fullscale.augment.resized_crop import random_resized_crop_flip
from fullscale.models import create_model

CIFAR_TRAIN = 50_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=None, help="images per step (default: 64 on CUDA, the "
                        "public recipe's; 4 on the CPU)")
    parser.add_argument("--subset", type=int, default=None, help="images in the stored sets (default: 2048 on "
                        "CUDA, 64 on the CPU)")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=None, help="timed steps per repeat (default 20 CUDA, 2 CPU)")
    parser.add_argument("--repeats", type=int, default=None, help="alternating timed rounds, the best "
                        "kept (default 3 CUDA, 2 CPU)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed calls of each first (default 5 CUDA, "
                        "3 CPU)")


def _peak_reset(device: torch.device) -> int:
    """Reset the peak-memory counter; return the memory in use now (the peak's starting point)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        return int(torch.cuda.memory_allocated(device))
    Path("/proc/self/clear_refs").write_text("5")  # Linux: reset the peak resident set (VmHWM)
    return _status("VmRSS")


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return -1


def _peak_bytes(device: torch.device) -> int:
    return int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else _status("VmHWM")


def _time(fn: Callable[[], object], device: torch.device, steps: int) -> float:
    """Mean seconds per call over ``steps`` calls."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - t0) / steps


def run(args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    batch = args.batch or (64 if cuda else 4)
    subset = max(args.subset or (2048 if cuda else 64), batch)
    steps = args.steps or (20 if cuda else 2)
    repeats = args.repeats or (3 if cuda else 2)
    args.warmup = args.warmup if args.warmup is not None else (5 if cuda else 3)
    size = args.image_size
    model = create_model("resnet50_transfer", 10, image_size=size).to(device)
    if cuda:
        model = model.to(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, weight_decay=5e-4)
    g = torch.Generator(device=device).manual_seed(0)
    labels = torch.randint(0, 10, (subset,), device=device, generator=g)

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        if cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            loss = F.cross_entropy(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def batch_index() -> torch.Tensor:
        return torch.randint(0, subset, (batch,), device=device, generator=g)

    # memory first, one variant at a time: reset the peak, build the stored set, take one step
    ours_start = _peak_reset(device)
    images_u8 = torch.randint(0, 256, (subset, 3, 32, 32), dtype=torch.uint8, device=device, generator=g)

    def ours() -> None:  # (a) uint8 32x32 on the device, upsampled per step
        i = batch_index()
        step(random_resized_crop_flip(images_u8[i], size, generator=g), labels[i])

    ours()
    ours_peak = _peak_bytes(device)
    naive_start = _peak_reset(device)
    upsampled = torch.cat([F.interpolate(images_u8[s:s + 256].float() / 255, size=(size, size), mode="bilinear",
                                         align_corners=False) for s in range(0, subset, 256)])

    def naive() -> None:  # (b) the subset upsampled once to float32 size x size, sliced per step
        i = batch_index()
        step(upsampled[i], labels[i])

    naive()
    naive_peak = _peak_bytes(device)
    # then time them alternately, after warm-up calls of both (the CPU allocator and oneDNN settle)
    for _ in range(args.warmup):
        ours()
        naive()
    times: dict[str, float] = {"ours": float("inf"), "naive": float("inf")}
    for _ in range(repeats):
        for name, fn in (("ours", ours), ("naive", naive)):
            times[name] = min(times[name], _time(fn, device, steps))
    ours_s, naive_s = times["ours"], times["naive"]
    # the upsampling alone (index + RandomResizedCrop + flip to size x size), best of 10 batches
    transform_s = min(_time(lambda: random_resized_crop_flip(images_u8[batch_index()], size, generator=g), device, 1)
                      for _ in range(10))
    ours_bytes = images_u8.numel() * images_u8.element_size()
    naive_bytes = upsampled.numel() * upsampled.element_size()
    per = {"ours": ours_bytes / subset, "naive": naive_bytes / subset}
    return {
        "benchmark": "transfer", "device": str(device), "batch": batch, "subset": subset, "image_size": size,
        "steps": steps, "repeats": repeats, "warmup": args.warmup, "threads": torch.get_num_threads(),
        "images_per_s": {"ours_on_device_upsampling": batch / ours_s, "naive_preupsampled_copy": batch / naive_s},
        "speed_ratio_ours_over_naive": naive_s / ours_s,
        "seconds_per_step": {"ours": ours_s, "naive": naive_s, "upsampling_alone": transform_s},
        "peak_memory_bytes": {"ours": ours_peak, "naive": naive_peak,
                              "what": "CUDA max_memory_allocated" if cuda else "process peak resident set (VmHWM)"},
        "memory_at_start_bytes": {"ours": ours_start, "naive": naive_start},
        "stored_data_bytes_subset": {"ours": ours_bytes, "naive": naive_bytes},
        "stored_data_bytes_full_cifar_projected": {k: v * CIFAR_TRAIN for k, v in per.items()},
    }
