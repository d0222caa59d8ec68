"""The figures of ``noisymix bench gpu`` (``bench_gpu``): each a call of the existing benchmark code
at a size scaled by the budget (``FigureContext.n``), returning its record (value, unit, target, met, ...).
``gpu_figures(ctx)`` names them in order of importance; ``bench_gpu`` runs each in its own process
within the budget and writes the files."""

from __future__ import annotations

import importlib
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from noisymix_app.bench._options import options

#: figures other benchmarks provide, looked up by name in ``noisymix_app.bench.cli.BENCHMARKS``
OPTIONAL_BENCHMARKS = {"imagenet_loader": "imagenet-loader", "transfer_step": "transfer",
                       "puzzlemix_step": "puzzlemix"}


class FigureContext:
    """What every figure needs: device, quick flag, the current size scale."""

    def __init__(self, device: torch.device, quick: bool, seeds: int, sleep: float | None = None) -> None:
        self.device, self.quick, self.seeds, self.sleep = device, quick, seeds, sleep
        self.cuda = device.type == "cuda"
        self.scale = 1.0

    def n(self, full: int, quick: int, least: int = 1) -> int:
        """A size: ``quick`` in quick mode, else ``full`` times the scale (at least ``least``)."""
        return quick if self.quick else max(least, int(full * self.scale))

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)


def _met(value: float | None, target: float, below: bool) -> bool | None:
    if value is None or not math.isfinite(value):
        return None
    return value <= target if below else value >= target


# ---- figures ------------------------------------------------------------------------------------

def _augmix(ctx: FigureContext, size: int) -> dict:
    from fullscale.augment import AugMixConfig, augmix, to_float
    from noisymix.random import generator_for
    from noisymix_app.bench._timing import best_seconds

    n = ctx.n(8192 if size == 32 else 512, 32 if size == 32 else 4)
    g = generator_for(0, ctx.device)
    x = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=g, device=ctx.device)
    cfg = AugMixConfig()

    def views() -> None:
        to_float(x), augmix(x, cfg, generator=g), augmix(x, cfg, generator=g)

    repeats = 3 if not ctx.quick else 1
    rate = n / best_seconds(views, device=str(ctx.device), repeats=repeats)
    target = 100_000 if size == 32 else None
    return {"value": round(rate, 1), "unit": "source images/s (clean + 2 views)", "images": n, "samples": repeats,
            "target": f">= {target:,}" if target else None,
            "met": _met(rate, target, below=False) if target and ctx.cuda else None}


def _cifar10c_generation(ctx: FigureContext) -> dict:
    from fullscale.vocabulary import CORRUPTIONS
    from noisymix_app.bench import bench_corruptions
    from noisymix_app.bench.bench_corruptions import cifar10c_figure

    n = ctx.n(10_000, 8, least=100)
    names = ",".join(CORRUPTIONS[:3]) if ctx.quick else None
    r = cifar10c_figure(options(bench_corruptions, mode="cifar10c", images=n, corruptions=names, chunk=10_000,
                          device=str(ctx.device)))
    per = len(r["per_corruption_seconds"])
    projected = r["seconds"] * 10_000 / n * 15 / per
    return {"value": round(projected, 1), "unit": "s for 10,000 x 15 x 5 (projected)", "images": n,
            "measured_s": r["seconds"], "corruptions": per, "per_corruption_s": r["per_corruption_seconds"],
            "target": "< 60", "met": _met(projected, 60, below=True) if ctx.cuda else None}


def _cifar10c_evaluation(ctx: FigureContext) -> dict:
    from noisymix_app.bench import bench_evaluate

    n = ctx.n(2000, 16, least=500)  # per severity block: 15 x 5 blocks on disk (0.46 GB at 2000)
    r = bench_evaluate.run(options(bench_evaluate, device=str(ctx.device), images=n, corruptions=15,
                                   width=8 if ctx.quick else 64, batch=16 if ctx.quick else 1000, compare_batches=""))
    value = r["suite_projected_cifar10c_s"]
    return {"value": value, "unit": "s for 750,000 images, PreActResNet-18 (projected)", "images_per_block": n,
            "model_only_projected_s": r["model_projected_cifar10c_s"], "width": r["width"],
            "target": "< 60", "met": _met(value, 60, below=True) if ctx.cuda else None}


def _cifar10p_generation(ctx: FigureContext) -> dict:
    from fullscale.corruptions.perturbations import PERTURBATIONS, perturbation_sequence
    from noisymix.random import generator_for

    n = ctx.n(1000, 2, least=50)
    names = list(PERTURBATIONS)[:2] if ctx.quick else list(PERTURBATIONS)
    g = generator_for(0, ctx.device)
    x = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g, device=ctx.device)
    ctx.sync()
    start = time.perf_counter()
    for name in names:
        perturbation_sequence(x, name, generator=g).cpu()
    ctx.sync()
    seconds = time.perf_counter() - start
    projected = seconds * 10_000 / n * len(PERTURBATIONS) / len(names)
    return {"value": round(projected, 1), "unit": f"s for 10,000 images x {len(PERTURBATIONS)} -P sets (projected)",
            "images": n, "sets": len(names), "measured_s": round(seconds, 2), "target": None, "met": None}


def _step(ctx: FigureContext, precision: str, memory_format: str, compiled: bool,
          model: str = "preactresnet18") -> dict:
    from noisymix_app.bench import bench_train_step

    resnet50 = model == "resnet50"
    if resnet50:
        batch, size = ctx.n(64, 2, least=8), (64 if ctx.quick else 224)
    else:
        batch, size = ctx.n(128, 4, least=32), 32
    # a repeat is whole chunks of steps (the views made a chunk at a time, as in training); quick: 1 step.
    # Quick width 8, not 4: torch 2.13's CPU backward of a 4-channel channels_last fp32 network crashes
    # (SIGSEGV inside the convolution backward) on an AVX2 CPU (AMD EPYC); 8 and 16 run
    args = options(  # train-step's own parser gives every other option (issue 32: no hand-built Namespace)
        bench_train_step, device=str(ctx.device), batch=batch, width=8 if ctx.quick else None, size=size,
        model=model, steps=1 if ctx.quick else None, repeats=1 if ctx.quick else 3,
        warmup=(2 if compiled else 1) if ctx.quick else 1, compile=compiled,
        precision=precision, memory_format=memory_format,
        compile_backend="eager" if (compiled and not ctx.cuda) else "inductor")
    r = bench_train_step.run(args)
    out = {"value": r["ratio"], "unit": "NoisyMix step / plain step (same 3 views, views' cost amortized)",
           "target": "<= 1.3", "samples": args.repeats, "ratio": True,
           "met": _met(r["ratio"], 1.3, below=True) if ctx.cuda else None,
           **{k: r[k] for k in ("noisymix_step_s", "plain_step_s", "views_only_s", "views_one_batch_s", "chunk_steps",
                                "steps", "batch", "image_size", "bf16", "channels_last", "compile", "model",
                                "noisymix_source_images_per_s", "peak_memory_gib")
              if k in r}}
    for k in ("recompiles_after_warmup", "compile_backend"):
        if k in r:
            out[k] = r[k]
    if not resnet50:
        minutes = r["projected_200_epochs_cifar_min"]
        out["projected_200_epochs_min"] = minutes
        out["projected_target"] = "<= 15 min"
        out["projected_met"] = _met(minutes, 15, below=True) if ctx.cuda else None
    return out


def _digits_precision(ctx: FigureContext) -> dict:
    """The same digits run in bf16 autocast and in fp32, seeds 0.. each: mean clean and Digits-C
    accuracy (15 corruptions x 5 severities of the digits test set, made once on the device)."""
    from fullscale.corruptions import CORRUPTIONS, corrupt
    from fullscale.data import load_dataset
    from fullscale.evaluation import logits_of
    from fullscale.run_model import load_run_model
    from fullscale.training.loop import train
    from fullscale.training.presets import resolve_config
    from noisymix.random import generator_for

    test = load_dataset("digits", "test")
    images, labels = test.images, test.labels
    names = CORRUPTIONS[:2] if ctx.quick else CORRUPTIONS
    severities = (1,) if ctx.quick else (1, 2, 3, 4, 5)
    sets = []
    for k, name in enumerate(names):
        for s in severities:
            sets.append(corrupt(images.to(ctx.device), name, s, generator=generator_for(100 * k + s, ctx.device)).cpu())
    corrupted = torch.cat(sets)
    corrupted_labels = labels.repeat(len(sets))
    overrides = (["width=4", "epochs=1", "train_subset=64", "batch_size=32"] if ctx.quick
                 else ["width=16", f"epochs={max(2, int(15 * ctx.scale))}", "batch_size=128"])
    rows: dict[str, list[dict]] = {"bf16": [], "fp32": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(ctx.seeds):
            for precision in ("bf16", "fp32"):
                amp = "true" if precision == "bf16" else "false"
                cfg = resolve_config("noisymix", ["dataset=digits", f"seed={seed}", f"amp={amp}",
                                                  f"device={ctx.device.type}", *overrides])
                run_dir = Path(tmp) / f"{precision}-{seed}"
                start = time.perf_counter()
                train(cfg, run_dir)
                seconds = time.perf_counter() - start
                model, _ = load_run_model(run_dir, device=ctx.device)
                clean = (logits_of(model, images, ctx.device).argmax(1) == labels).float().mean().item()
                c = (logits_of(model, corrupted, ctx.device).argmax(1) == corrupted_labels).float().mean().item()
                rows[precision].append({"seed": seed, "clean": round(100 * clean, 2), "digits_c": round(100 * c, 2),
                                        "train_s": round(seconds, 1)})

    def mean(precision: str, key: str) -> float:
        return round(sum(r[key] for r in rows[precision]) / len(rows[precision]), 2)

    gap_clean = round(abs(mean("bf16", "clean") - mean("fp32", "clean")), 2)
    gap_c = round(abs(mean("bf16", "digits_c") - mean("fp32", "digits_c")), 2)
    worst = max(gap_clean, gap_c)
    return {"value": worst, "unit": "points: bf16 vs fp32 mean accuracy, the larger gap of clean and Digits-C",
            "target": "<= 1", "met": _met(worst, 1.0, below=True) if ctx.cuda else None,
            "clean_gap": gap_clean, "digits_c_gap": gap_c, "runs": rows, "overrides": overrides,
            "digits_c_images": len(corrupted_labels),
            "note": "bf16 autocast is a CUDA setting: on the CPU both runs train in fp32"}


def _optional(ctx: FigureContext, key: str) -> dict:
    from noisymix_app.bench.cli import BENCHMARKS

    name = OPTIONAL_BENCHMARKS[key]
    if name not in BENCHMARKS:
        return {"skipped": f"no `noisymix bench {name}` in this checkout"}
    if ctx.quick:
        return {"skipped": f"`noisymix bench {name}` exists; not run in --quick"}
    module = importlib.import_module(BENCHMARKS[name])
    return {"result": module.run(options(module, device=str(ctx.device)))}


def gpu_figures(ctx: FigureContext) -> dict[str, Callable[[], dict]]:
    # in order of importance: what runs late is what a short budget shrinks or skips (torch.compile
    # costs a minute or more of compilation per figure, whatever the size)
    figures: dict[str, Callable[[], dict]] = {
        "augmix_32": lambda: _augmix(ctx, 32),
        "augmix_224": lambda: _augmix(ctx, 224),
        "cifar10c_generation": lambda: _cifar10c_generation(ctx),
        "cifar10c_evaluation": lambda: _cifar10c_evaluation(ctx),
        "step_bf16_channels_last": lambda: _step(ctx, "bf16", "channels_last", False),
        "step_fp32_channels_last": lambda: _step(ctx, "fp32", "channels_last", False),
        "step_bf16_contiguous": lambda: _step(ctx, "bf16", "contiguous", False),
        "step_wrn28_4": lambda: _step(ctx, "bf16", "channels_last", False, model="wrn28_4"),
        "step_resnet50_224": lambda: _step(ctx, "bf16", "channels_last", False, model="resnet50"),
        "digits_precision": lambda: _digits_precision(ctx),
        "cifar10p_generation": lambda: _cifar10p_generation(ctx),
        "step_bf16_channels_last_compiled": lambda: _step(ctx, "bf16", "channels_last", True),
        "step_fp32_channels_last_compiled": lambda: _step(ctx, "fp32", "channels_last", True),
    }
    for key in OPTIONAL_BENCHMARKS:
        figures[key] = lambda k=key: _optional(ctx, k)
    if ctx.sleep is not None:  # --sleep-figure: a figure that hangs, to check the budget stops it
        figures["sleep"] = lambda: (time.sleep(ctx.sleep), {"value": ctx.sleep, "unit": "s slept"})[1]
    return figures
