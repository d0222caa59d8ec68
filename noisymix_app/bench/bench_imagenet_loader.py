"""``noisymix bench imagenet-loader``: train-time decode + random-resized-crop + flip, images/s on
one core, our worker path against the per-image PIL pipeline of the public code, same files, same run.

The reference is the public ``imagenet.py`` train transform (google-research/augmix, erichson/NoisyMix:
torchvision ``ImageFolder`` loader + ``RandomResizedCrop(224)`` + ``RandomHorizontalFlip()`` +
``ToTensor()`` + ``Normalize``), rewritten here without torchvision: PIL open, ``convert("RGB")``,
``crop(box).resize(224, BILINEAR)``, flip, float tensor / 255, normalised.  Both sides draw the
same crop boxes (``crop_box`` from the same per-sample seed), so they do the same work per file.

Ours: ``fullscale.data.imagenet.decode_train`` (box drawn on the header's size, DCT-scaled
decoding where the box allows it, torch's antialiased uint8 resize) for every decoder of ``DECODERS`` (full-size PIL,
PIL draft, simplejpeg when installed), returning uint8 (3, 224, 224) (float conversion and
normalisation happen batched on the device).  Files: ``--files`` JPEGs of about 500x375 at
quality 90 cut from the real sample photos of scikit-learn / scikit-image.  The sides run
alternately ``--repeats`` times in this one process; the best of each is reported, as images per
CPU second of the process (``time.process_time``: what one worker core delivers, and less
disturbed by other jobs on a shared machine than wall time, also reported), with the load average
and the cores one would need to feed ``--target`` images/s (per-core rate, assuming linear
scaling over worker processes).  Then the private memory of 2 DataLoader workers after 5 and
after ``--memory-batches`` batches of 25 (it must not grow with the batches read), and with
``--loader-workers N`` the wall images/s of the whole loader (N processes, batches of 256; on a
machine with N free cores, the figure to set against the ~2,750 img/s a ResNet-50 step takes).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from fullscale.data.imagenet import (
    DECODERS,
    RunSampler,
    TrainCrop,
    crop_box,
    decode_train,
    read_imagenet,
    sample_seed,
    train_loader,
)
from fullscale.data.imagenet_fixture import write_photo_jpegs

_MEAN = torch.tensor([0.485, 0.456, 0.406])[:, None, None]
_STD = torch.tensor([0.229, 0.224, 0.225])[:, None, None]


def _reference(path: Path, seed: int, size: int) -> torch.Tensor:
    """The public per-image pipeline (PIL + torchvision-equivalent transforms), one file."""
    g = torch.Generator().manual_seed(seed)
    with Image.open(path) as f:
        image = f.convert("RGB")
    top, left, h, w = crop_box(image.size[0], image.size[1], (0.08, 1.0), (3 / 4, 4 / 3), g)
    image = image.crop((left, top, left + w, top + h)).resize((size, size), Image.Resampling.BILINEAR)
    if float(torch.rand((), generator=g)) < 0.5:
        image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    tensor = torch.from_numpy(np.array(image, dtype=np.uint8)).permute(2, 0, 1).contiguous()
    return tensor.float().div(255).sub_(_MEAN).div_(_STD)


def _rate(fn, paths: list[Path]) -> tuple[float, float]:
    """(images per CPU second of this process, images per wall second)."""
    cpu, wall = time.process_time(), time.perf_counter()
    for i, path in enumerate(paths):
        fn(path, sample_seed(0, 0, i))
    return len(paths) / (time.process_time() - cpu), len(paths) / (time.perf_counter() - wall)


def _private_mb(pid: int) -> float:
    """Private dirty memory of a process in MB (Linux ``smaps_rollup``): what a worker holds of its own."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _worker_memory(folder: Path, batches: int) -> dict:
    """Private memory of 2 loader workers after the 5th and the last of ``batches`` batches of 25."""
    files = read_imagenet(folder, "train")
    sampler = RunSampler(len(files), 25, 0, math.ceil(batches * 25 / len(files)) + 1)
    iterator = iter(train_loader(files, TrainCrop(), sampler, workers=2, seed=0, prefetch=2))
    early = late = None
    for i, _ in enumerate(iterator):
        if i == 4:
            early = [round(_private_mb(w.pid), 1) for w in iterator._workers]
        if i == batches - 1:
            late = [round(_private_mb(w.pid), 1) for w in iterator._workers]
            break
    del iterator
    return {"batches": batches, "images": batches * 25, "private_mb_after_5_batches": early,
            "private_mb_at_the_end": late}


def _loader_rate(folder: Path, workers: int, batches: int) -> dict:
    """Wall images/s of the whole train loader (``workers`` processes, batches of 256, or of all
    the files if fewer) over ``batches`` batches after 2 warm-up ones: what training is fed."""
    files = read_imagenet(folder, "train")
    size = min(256, len(files))
    sampler = RunSampler(len(files), size, 0, math.ceil((batches + 2) / (len(files) // size)))
    iterator = iter(train_loader(files, TrainCrop(), sampler, workers=workers, seed=0))
    for _ in range(2):
        next(iterator)
    start = time.perf_counter()
    images = sum(len(next(iterator).labels) for _ in range(batches))
    seconds = time.perf_counter() - start
    del iterator
    return {"workers": workers, "batches": batches, "batch_size": size, "images_per_s": round(images / seconds, 1)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--files", type=int, default=100, help="number of ~500x375 q90 JPEGs")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--memory-batches", type=int, default=128,
                        help="batches of 25 for the worker-memory check (2 workers; 0: skip; Linux only)")
    parser.add_argument("--loader-workers", type=int, default=0,
                        help="also measure the whole train loader with this many worker processes (0: skip)")
    parser.add_argument("--loader-batches", type=int, default=20,
                        help="batches (of 256, or of --files if fewer) for --loader-workers")
    parser.add_argument("--target", type=float, default=2750.0,
                        help="images/s a ResNet-50 step consumes (one H100, bf16: ~2,500-3,000)")


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(1)  # one worker core: a DataLoader worker decodes one image at a time
    decoders = [d for d in DECODERS if d != "simplejpeg" or importlib.util.find_spec("simplejpeg")]
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_photo_jpegs(Path(tmp) / "train" / "n01440764", args.files, seed=0)
        sides = {"reference (public PIL pipeline)": lambda p, s: _reference(p, s, args.size)}
        for d in decoders:
            crop = TrainCrop(size=args.size, decoder=d)
            sides[f"ours ({d})"] = lambda p, s, crop=crop: decode_train(p, crop, s)
        for fn in sides.values():  # warm-up: file cache, imports
            _rate(fn, paths[:10])
        best, best_wall = dict.fromkeys(sides, 0.0), dict.fromkeys(sides, 0.0)
        for _ in range(args.repeats):
            for name, fn in sides.items():
                cpu, wall = _rate(fn, paths)
                best[name], best_wall[name] = max(best[name], cpu), max(best_wall[name], wall)
        memory = (_worker_memory(Path(tmp), args.memory_batches)
                  if args.memory_batches > 4 and Path("/proc/self/smaps_rollup").exists() else None)
        loader = _loader_rate(Path(tmp), args.loader_workers, args.loader_batches) if args.loader_workers else None
    reference = best["reference (public PIL pipeline)"]
    fastest = max((n for n in best if n.startswith("ours")), key=best.get)
    return {
        "images_per_s_per_core": {n: round(v, 1) for n, v in best.items()},
        "images_per_s_wall": {n: round(v, 1) for n, v in best_wall.items()},
        "ratio_vs_reference": {n: round(v / reference, 2) for n, v in best.items() if n.startswith("ours")},
        "fastest": fastest,
        "cores_to_feed_target": {n: round(args.target / v, 1) for n, v in best.items()},
        "target_images_per_s": args.target,
        "files": args.files, "repeats": args.repeats, "size": args.size,
        "worker_memory": memory,
        "loader": loader,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
