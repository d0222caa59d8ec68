"""``noisymix bench corruptions``: batched corruptions vs per-image references (CIFAR parameters).

The references are the per-image numpy/scipy/PIL definitions of ``make_cifar_c.py``
(github.com/hendrycks/robustness), rewritten here for the corruptions whose libraries we have
(scipy for blurs and zoom, PIL for pixelate/JPEG, numpy for noise/contrast, the Python pixel
loop of glass blur).  Both run on the same images in one process; the figure is the speedup
per corruption and its median.  Must reach: median >= 10x.
"""

from __future__ import annotations

import argparse
import io
import statistics

import numpy as np
import torch
from PIL import Image
from scipy import ndimage

from benchmarks._timing import best_seconds
from fullscale.corruptions import corrupt
from fullscale.corruptions._filters import disk_kernel


def _references(severity: int, rng: np.random.Generator) -> dict:
    def gaussian_noise(a):
        return np.clip(a + rng.normal(size=a.shape, scale=0.1), 0, 1)

    def shot_noise(a):
        return np.clip(rng.poisson(a * 50) / 50, 0, 1)

    def contrast(a):
        m = a.mean(axis=(0, 1), keepdims=True)
        return np.clip((a - m) * 0.15 + m, 0, 1)

    def defocus_blur(a):
        k = disk_kernel(1.5, 0.1).numpy()
        return np.stack([ndimage.correlate(a[..., c], k, mode="mirror") for c in range(3)], -1)

    def gaussian_blur(a):
        return ndimage.gaussian_filter(a, sigma=(1, 1, 0), mode="nearest", truncate=4.0)

    def zoom_blur(a):
        out = np.zeros_like(a)
        for z in np.arange(1, 1.26, 0.01):
            ch = int(np.ceil(32 / z))
            top = (32 - ch) // 2
            img = ndimage.zoom(a[top:top + ch, top:top + ch], (z, z, 1), order=1)
            trim = (img.shape[0] - 32) // 2
            out += img[trim:trim + 32, trim:trim + 32]
        return (a + out) / 27

    def glass_blur(a):
        x = np.uint8(ndimage.gaussian_filter(a, sigma=(0.4, 0.4, 0)) * 255)
        for _ in range(2):
            for h in range(31, 1, -1):
                for w in range(31, 1, -1):
                    dx, dy = rng.integers(-1, 1, size=(2,))
                    hp, wp = h + dy, w + dx
                    x[h, w], x[hp, wp] = x[hp, wp], x[h, w]
        return ndimage.gaussian_filter(x / 255, sigma=(0.4, 0.4, 0))

    def pixelate(a):
        p = Image.fromarray(np.uint8(a * 255))
        return np.asarray(p.resize((20, 20), Image.BOX).resize((32, 32), Image.BOX)) / 255

    def jpeg_compression(a):
        buf = io.BytesIO()
        Image.fromarray(np.uint8(a * 255)).save(buf, "JPEG", quality=40)
        return np.asarray(Image.open(buf)) / 255

    return {f.__name__: f for f in (gaussian_noise, shot_noise, contrast, defocus_blur, gaussian_blur,
                                     zoom_blur, glass_blur, pixelate, jpeg_compression)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--reference-images", type=int, default=100)


def run(args: argparse.Namespace) -> dict:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (args.images, 3, 32, 32), dtype=torch.uint8, generator=g)
    xd = x.to(args.device)
    gd = torch.Generator(device=args.device).manual_seed(0)
    arrays = list(x[:args.reference_images].permute(0, 2, 3, 1).numpy().astype(np.float64) / 255)
    rng = np.random.default_rng(0)
    rows = {}
    for name, ref in _references(5, rng).items():
        ours = args.images / best_seconds(lambda n=name: corrupt(xd, n, 5, generator=gd), device=args.device)
        theirs = args.reference_images / best_seconds(lambda r=ref: [r(a) for a in arrays], device="cpu",
                                                      repeats=1)
        rows[name] = {"ours_images_per_s": round(ours, 1), "reference_images_per_s": round(theirs, 1),
                      "speedup": round(ours / theirs, 1)}
    return {"severity": 5, "size": 32, "device": args.device, "per_corruption": rows,
            "median_speedup": statistics.median(r["speedup"] for r in rows.values()), "target_median": 10}
