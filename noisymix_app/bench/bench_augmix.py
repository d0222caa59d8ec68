"""``noisymix bench augmix``: batched AugMix (clean + 2 views) vs the public per-image PIL pipeline.

The reference is ``aug()`` of github.com/erichson/NoisyMix (aug_utils.py, augmentations.py; the
same ops as github.com/google-research/augmix), rewritten here from its definitions: per image,
PIL ops drawn with a numpy RNG, ``width`` chains of depth 1..3, Dirichlet/Beta mixing and a
``ToTensor``-style conversion.  Two simplifications make the reference slightly *faster* than the
public code, so the ratio is conservative: op indices come from ``rng.integers`` instead of
``np.random.choice`` over a list, and there is no ``Normalize`` (our models normalise inside).

Both sides produce the three JSD views (clean, view 1, view 2) of the same source images in one
process on the same number of cores (``--cores N``: N torch threads for ours, N worker processes
for PIL), measured alternately ``--repeats`` times, best of each.  Must reach: >= 10x on CPU;
on a GPU (``--device cuda``, timed with CUDA events) >= 100,000 source images/s.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time

import numpy as np
import torch
from PIL import Image, ImageOps

from fullscale.augment import AugMixConfig, augmix, to_float
from noisymix_infra.threads import torch_threads

_SEVERITY, _WIDTH = 3, 3  # the public code's defaults (AugMixConfig() below)


# ---- the per-image reference (public aug(), PIL) ------------------------------------------------

def _reference_ops(size: int, rng: np.random.Generator) -> list:
    def level(severity: float) -> float:
        return rng.uniform(0.1, severity)

    def flip(v: float) -> float:
        return -v if rng.uniform() > 0.5 else v

    def affine(img: Image.Image, coeffs: tuple) -> Image.Image:
        return img.transform((size, size), Image.AFFINE, coeffs, resample=Image.BILINEAR)

    return [
        lambda im, s: ImageOps.autocontrast(im),
        lambda im, s: ImageOps.equalize(im),
        lambda im, s: ImageOps.posterize(im, 4 - int(level(s) * 4 / 10)),
        lambda im, s: im.rotate(flip(int(level(s) * 30 / 10)), resample=Image.BILINEAR),
        lambda im, s: ImageOps.solarize(im, 256 - int(level(s) * 256 / 10)),
        lambda im, s: affine(im, (1, flip(level(s) * 0.3 / 10), 0, 0, 1, 0)),
        lambda im, s: affine(im, (1, 0, 0, flip(level(s) * 0.3 / 10), 1, 0)),
        lambda im, s: affine(im, (1, 0, flip(int(level(s) * size / 3 / 10)), 0, 1, 0)),
        lambda im, s: affine(im, (1, 0, 0, 0, 1, flip(int(level(s) * size / 3 / 10)))),
    ]


def _to_tensor(im: Image.Image) -> torch.Tensor:
    return torch.from_numpy(np.asarray(im, dtype=np.float32) / 255.0).permute(2, 0, 1)


def _reference_views(arrays: np.ndarray, seed: int) -> int:
    """Clean + two AugMix views of every (H, W, 3) uint8 image, one image at a time; returns the count."""
    rng = np.random.default_rng(seed)
    size = arrays.shape[1]
    ops = _reference_ops(size, rng)

    def aug(im: Image.Image) -> torch.Tensor:
        ws = np.float32(rng.dirichlet([1] * _WIDTH))
        m = np.float32(rng.beta(1, 1))
        mix = torch.zeros(3, size, size)
        for i in range(_WIDTH):
            a = im.copy()
            for _ in range(rng.integers(1, 4)):
                a = ops[rng.integers(len(ops))](a, _SEVERITY)
            mix += ws[i] * _to_tensor(a)
        return (1 - m) * _to_tensor(im) + m * mix

    for array in arrays:
        im = Image.fromarray(array)
        torch.stack((_to_tensor(im), aug(im), aug(im)))
    return len(arrays)


def _reference_rate(arrays: np.ndarray, pool: multiprocessing.pool.Pool | None, cores: int) -> float:
    """Source images/s of the PIL pipeline on ``cores`` processes (the pool already warm)."""
    start = time.perf_counter()
    if pool is None:
        done = _reference_views(arrays, 0)
    else:
        done = sum(pool.starmap(_reference_views, [(arrays[i::cores], i) for i in range(cores)]))
    return done / (time.perf_counter() - start)


# ---- ours ---------------------------------------------------------------------------------------

def _batched_rate(images: torch.Tensor, cfg: AugMixConfig, g: torch.Generator) -> float:
    def run() -> None:
        to_float(images), augmix(images, cfg, generator=g), augmix(images, cfg, generator=g)

    if images.device.type == "cuda":
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        torch.cuda.synchronize()
        return images.shape[0] / (start.elapsed_time(stop) / 1000)
    start_s = time.perf_counter()
    run()
    return images.shape[0] / (time.perf_counter() - start_s)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--images", type=int, default=2048, help="source images per batched call")
    parser.add_argument("--reference-images", type=int, default=256, help="source images for PIL per repeat")
    parser.add_argument("--size", type=int, default=32, help="image side")
    parser.add_argument("--cores", type=int, default=1,
                        help="cores for both sides: torch threads for ours, processes for PIL")
    parser.add_argument("--repeats", type=int, default=3, help="alternating timed runs; best of each")


def run(args: argparse.Namespace) -> dict:
    if min(args.images, args.reference_images, args.size, args.cores, args.repeats) < 1:
        raise ValueError("--images, --reference-images, --size, --cores and --repeats must be >= 1")
    with torch_threads(args.cores):  # --cores: the same count for both sides
        return _run(args)


def _run(args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    images = torch.randint(0, 256, (args.images, 3, args.size, args.size),
                           generator=torch.Generator().manual_seed(0), dtype=torch.uint8)
    arrays = images[:args.reference_images].permute(0, 2, 3, 1).contiguous().numpy()
    images = images.to(device)
    g = torch.Generator(device=device).manual_seed(0)
    cfg = AugMixConfig(width=_WIDTH, severity=_SEVERITY)
    pool = multiprocessing.get_context("fork").Pool(args.cores) if args.cores > 1 else None
    try:
        _batched_rate(images, cfg, g)  # warm-up (allocator, CUDA context, kernels)
        _reference_rate(arrays[:8], pool, args.cores)
        ours, ref = [], []
        for _ in range(args.repeats):  # alternate, so background load hits both sides alike
            ours.append(_batched_rate(images, cfg, g))
            ref.append(_reference_rate(arrays, pool, args.cores))
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return {
        "what": "source images/s, each giving clean + 2 AugMix views (width 3, depth 1-3, severity 3, "
                "the 9 basic ops)",
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "size": args.size,
        "cores": args.cores,
        "batched_images": args.images,
        "batched_images_per_s": round(max(ours), 1),
        "batched_images_per_s_all": [round(r, 1) for r in ours],
        "reference_pil_images_per_s": round(max(ref), 1),
        "reference_pil_images_per_s_all": [round(r, 1) for r in ref],
        "speedup": round(max(ours) / max(ref), 2),
        "target_speedup_cpu": 10.0,
        "target_gpu_images_per_s": 100_000,
    }
