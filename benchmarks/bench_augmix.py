"""``noisymix bench augmix``: batched AugMix (clean + 2 views) vs the public per-image PIL pipeline.

The reference is ``aug()`` of github.com/erichson/NoisyMix (aug_utils.py / augmentations.py),
rewritten here from its definitions: per image, PIL ops drawn with a numpy RNG, three chains,
Dirichlet/Beta mixing, ``ToTensor``-style conversion.  Both produce the three JSD views of the
same source images in the same process on the same cores; the figure is the ratio of images/s.
Must reach: >= 10x on CPU; on a GPU >= 100,000 source images/s.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from PIL import Image, ImageOps

from benchmarks._timing import best_seconds
from fullscale.augment import AugMixConfig, augmix, to_float


def _reference_ops(size: int, rng: np.random.Generator):
    def level(sev):
        return rng.uniform(0.1, sev)

    def flip(v):
        return -v if rng.uniform() > 0.5 else v

    def affine(img, coeffs):
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


def _reference_views(pils: list[Image.Image], ops, rng: np.random.Generator, severity: int = 3,
                     width: int = 3) -> torch.Tensor:
    def to_tensor(im):
        return torch.from_numpy(np.asarray(im, dtype=np.float32) / 255.0).permute(2, 0, 1)

    def aug(im):
        ws = np.float32(rng.dirichlet([1] * width))
        m = np.float32(rng.beta(1, 1))
        mix = torch.zeros(3, im.size[1], im.size[0])
        for i in range(width):
            a = im.copy()
            for _ in range(rng.integers(1, 4)):
                a = ops[rng.integers(len(ops))](a, severity)
            mix += ws[i] * to_tensor(a)
        return (1 - m) * to_tensor(im) + m * mix

    return torch.stack([torch.stack((to_tensor(im), aug(im), aug(im))) for im in pils])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--images", type=int, default=2048, help="source images for the batched op")
    parser.add_argument("--reference-images", type=int, default=256, help="source images for PIL")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")


def run(args: argparse.Namespace) -> dict:
    if args.threads:
        torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (args.images, 3, args.size, args.size), generator=gen, dtype=torch.uint8)
    device_images = images.to(args.device)
    g = torch.Generator(device=args.device).manual_seed(0)
    cfg = AugMixConfig()

    def batched():
        return to_float(device_images), augmix(device_images, cfg, generator=g), augmix(device_images, cfg,
                                                                                          generator=g)

    ours_s = best_seconds(batched, device=args.device)
    pils = [Image.fromarray(im.permute(1, 2, 0).numpy()) for im in images[:args.reference_images]]
    rng = np.random.default_rng(0)
    ops = _reference_ops(args.size, rng)
    ref_s = best_seconds(lambda: _reference_views(pils, ops, rng), device="cpu", repeats=2)
    ours_rate = args.images / ours_s
    ref_rate = args.reference_images / ref_s
    return {
        "what": "clean + 2 AugMix views (width 3, depth 1-3, severity 3) per source image",
        "device": args.device,
        "size": args.size,
        "batched_images_per_s": round(ours_rate, 1),
        "reference_pil_images_per_s": round(ref_rate, 1),
        "speedup": round(ours_rate / ref_rate, 2),
        "target_speedup_cpu": 10.0,
        "target_gpu_images_per_s": 100_000,
    }
