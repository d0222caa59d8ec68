"""``noisymix bench corruptions``: our batched corruptions vs the public ``imagecorruptions``
package (github.com/bethgelab/imagecorruptions), ImageNet parameters, 224x224 images.

Both run in this process on the same cores: ours on batches of ``--images`` images (torch's
threads), the package one image at a time as it is used (numpy / scipy / scikit-image /
OpenCV).  The package is for this benchmark only (``pip install imagecorruptions``); it predates
numpy 2, SciPy 1.14, setuptools 81 and scikit-image 0.19, so ``_load_imagecorruptions`` patches
those four names here, never in the library.  Must reach: median speedup >= 10x on CPU.

``--mode cifar10c`` instead times generating a CIFAR-10-C-sized set (``--images`` 32x32 images
x 15 corruptions x 5 severities, CIFAR parameters) on ``--device``: the GPU figure (< 60 s for
10,000 images).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
import types
import warnings

import numpy as np
import torch

from fullscale.corruptions import CORRUPTIONS, SPECS, corrupt
from noisymix.random import generator_for
from noisymix_app.bench._timing import paired_best_seconds


def _load_imagecorruptions() -> types.ModuleType | None:
    """The imagecorruptions package, importable on current numpy / scipy / scikit-image."""
    try:
        import scipy.ndimage
        import skimage.filters
    except ImportError:
        return None
    if not hasattr(np, "float_"):
        np.float_ = np.float64  # noqa: NPY201 (removed in numpy 2; the package still uses it)
    if "scipy.ndimage.interpolation" not in sys.modules:
        shim = types.ModuleType("scipy.ndimage.interpolation")
        shim.map_coordinates = scipy.ndimage.map_coordinates
        sys.modules["scipy.ndimage.interpolation"] = shim
    try:
        import pkg_resources  # noqa: F401
    except ImportError:
        shim = types.ModuleType("pkg_resources")

        def resource_filename(package: str, name: str) -> str:
            import os
            return os.path.join(os.path.dirname(importlib.util.find_spec(package).origin), name)

        shim.resource_filename = resource_filename
        sys.modules["pkg_resources"] = shim
    try:
        with warnings.catch_warnings():  # its scipy.ndimage.interpolation import is deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module("imagecorruptions.corruptions")
    except ImportError:
        return None
    original = skimage.filters.gaussian

    def gaussian(image, sigma=1, multichannel=None, **kwargs):  # 'multichannel' became channel_axis
        if multichannel:
            kwargs["channel_axis"] = -1
        return original(image, sigma=sigma, **kwargs)

    module.gaussian = gaussian
    return importlib.import_module("imagecorruptions")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=("speedup", "cifar10c"), default="speedup")
    parser.add_argument("--images", type=int, default=64, help="batch size (speedup) / set size (cifar10c)")
    parser.add_argument("--reference-images", type=int, default=16, help="images the package corrupts per timing")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls of each side, alternating (best kept)")
    parser.add_argument("--severity", type=int, default=3)
    parser.add_argument("--corruptions", default=None, help="comma-separated subset")
    parser.add_argument("--chunk", type=int, default=10000, help="images per batch (cifar10c)")


def _speedup(args: argparse.Namespace) -> dict:
    ic = _load_imagecorruptions()
    if ic is None:
        raise ValueError("the speedup benchmark needs `pip install imagecorruptions scikit-image "
                         "opencv-python-headless` (benchmark environment only)")
    names = args.corruptions.split(",") if args.corruptions else list(SPECS)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (args.images, 3, 224, 224), dtype=torch.uint8, generator=g)
    x = torch.nn.functional.avg_pool2d(x.float(), 5, stride=1, padding=2).round().to(torch.uint8)  # less noise-like
    xd = x.to(args.device)
    arrays = list(x[:args.reference_images].permute(0, 2, 3, 1).numpy())
    np.random.seed(0)  # noqa: NPY002 (the package draws from numpy's global generator)
    rows = {}
    for name in names:
        gd = generator_for(0, args.device)

        def ours(n=name, gen=gd):
            return corrupt(xd, n, args.severity, generator=gen, params="imagenet")

        def theirs(n=name):
            for a in arrays:  # the package's API: uint8 HxWx3 in, uint8 out
                ic.corrupt(a, severity=args.severity, corruption_name=n)

        ours_s, theirs_s = paired_best_seconds(ours, theirs, device=args.device, repeats=args.repeats)
        ours_rate, theirs_rate = args.images / ours_s, len(arrays) / theirs_s
        rows[name] = {"ours_images_per_s": round(ours_rate, 1), "imagecorruptions_images_per_s": round(theirs_rate, 1),
                      "speedup": round(ours_rate / theirs_rate, 2)}
    return {"mode": "speedup", "params": "imagenet", "size": 224, "severity": args.severity, "batch": args.images,
            "device": args.device, "torch_threads": torch.get_num_threads(), "per_corruption": rows,
            "median_speedup": statistics.median(r["speedup"] for r in rows.values()), "target_median": 10}


def cifar10c_figure(args: argparse.Namespace) -> dict:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (args.images, 3, 32, 32), dtype=torch.uint8, generator=g).to(args.device)
    names = args.corruptions.split(",") if args.corruptions else list(CORRUPTIONS)
    per = {}
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    corrupt(x[:8], "contrast", 1, generator=generator_for(0, args.device))  # warm-up
    sync()
    start = time.perf_counter()
    for name in names:
        t0 = time.perf_counter()
        for severity in range(1, 6):
            for k in range(0, len(x), args.chunk):
                y = corrupt(x[k:k + args.chunk], name, severity, generator=generator_for(k, args.device))
                y.cpu()  # as the writer: the result leaves the device
        sync()
        per[name] = round(time.perf_counter() - t0, 2)
    total = time.perf_counter() - start
    return {"mode": "cifar10c", "images": args.images, "corruptions": len(names), "severities": 5,
            "device": args.device, "seconds": round(total, 2), "per_corruption_seconds": per, "target_seconds": 60}


def run(args: argparse.Namespace) -> dict:
    return _speedup(args) if args.mode == "speedup" else cifar10c_figure(args)
