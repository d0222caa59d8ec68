"""``noisymix bench official-loop``: our trainer beside the public NoisyMix training loop, on one GPU,
in one benchmark run (issue 38).

The public loop is its ``cifar.py`` (github.com/erichson/NoisyMix), run unchanged with the
NoisyMix README's CIFAR-10 recipe (``--arch preactresnet18 --augmix 1 --jsd 1 --alpha 1.0
--manifold_mixup 1 --add_noise_level 0.5 --mult_noise_level 0.5 --sparse_level 0.65``), with two
things put in from outside, in a child process: a CIFAR-shaped synthetic data set in place of
torchvision's ``CIFAR10`` (50,000 random uint8 32x32 images, nothing downloaded; its transforms,
PIL AugMix, ``DataLoader`` and model untouched), and the ``DataLoader``'s worker count (4 as
shipped; 16 to use every core of the lent machine).  Where the ``robustness`` library is not
installed, its ``ImageFolder`` (imported by the code's ``src/get_data.py``, used only for ImageNet
and -C folders, never by ``cifar.py``) is torchvision's.  Timing: CUDA-synchronised wall time of
``--steps`` optimizer steps after ``--warmup`` steps, data loading included; the run is stopped
there (no test pass, nothing saved).  Give the public code's folder with ``--code`` (a checkout of
the repository: it is read, not copied into this project).

Ours: ``noisymix train --preset noisymix`` (PreActResNet-18, CIFAR-10 recipe) on a CIFAR-10 folder
of the same synthetic images in the real format, two epochs of 391 steps each: the second epoch's
images/s from ``metrics.jsonl`` (the first includes cuDNN's autotuning and the first chunk's
start-up), at our default bf16 autocast and also in fp32 as the public loop trains.  Reported per
loop: steps/s and the projected time of 200 epochs (391 steps each).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["RECIPE"]

#: the NoisyMix README's CIFAR command (PreActResNet-18), less --seed
RECIPE = ["--arch", "preactresnet18", "--augmix", "1", "--jsd", "1", "--alpha", "1.0", "--manifold_mixup", "1",
          "--add_noise_level", "0.5", "--mult_noise_level", "0.5", "--sparse_level", "0.65", "--seed", "1"]
STEPS_PER_EPOCH = 391  # 50,000 images in batches of 128


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--code", default=None, help="folder of the public NoisyMix code (its cifar.py); without it "
                        "only our trainer is timed")
    parser.add_argument("--workers", default="4,16", help="DataLoader workers of the public loop, comma-separated")
    parser.add_argument("--steps", type=int, default=200, help="timed steps of the public loop")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    parser.add_argument("--images", type=int, default=50_000, help="synthetic training images (CIFAR-10: 50,000)")
    parser.add_argument("--ours-epochs", type=int, default=2, help="epochs of our trainer (the last one is timed)")
    parser.add_argument("--child-timeout", type=float, default=300.0, help="seconds for each run")
    parser.add_argument("--ours-set", action="append", default=[], metavar="KEY=VALUE",
                        help="a --set of our runs (repeatable; e.g. width=4 for a CPU smoke run)")
    parser.add_argument("--ours-variants", default="amp=true;amp=false",
                        help="our runs, ';'-separated, each a ','-separated list of --set keys (default: bf16 "
                        "autocast, our default, and fp32 as the public loop trains)")


def _public_loop(code: Path, workers: int, steps: int, warmup: int, images: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "timing.json"
        command = [sys.executable, "-m", "noisymix_app.bench.bench_official_loop", "--child", str(code), str(workers),
                   str(steps), str(warmup), str(images), str(out)]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        if not out.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            return {"workers": workers, "error": " | ".join(tail)[:500]}
        record = json.loads(out.read_text())
    seconds = record["seconds"]
    rate = steps / seconds
    return {"workers": workers, "steps": steps, "warmup": warmup, "seconds": round(seconds, 3),
            "steps_per_s": round(rate, 3), "projected_200_epochs_min": round(200 * STEPS_PER_EPOCH / rate / 60, 1),
            "process_s": round(time.perf_counter() - start, 1)}


def _ours(data_root: Path, epochs: int, variant: str, device: str, timeout: float, sets: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        command = [sys.executable, "-m", "noisymix_app.cli", "train", "--preset", "noisymix", "--out", str(run),
                   "--set", f"data_root={data_root}", "--set", f"epochs={epochs}", "--set", f"device={device}",
                   *[a for kv in [*sets, *variant.split(",")] for a in ("--set", kv)]]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            return {"variant": variant, "error": (done.stdout + done.stderr).strip().splitlines()[-1][-500:]}
        entries = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        batch = json.loads((run / "config.json").read_text())["config"]["optim"]["batch_size"]
    rate = entries[-1]["images_per_s"] / batch
    return {"variant": variant, "epochs": epochs, "steps_per_s": round(rate, 3),
            "cross_entropy": [round(e["cross_entropy"], 4) for e in entries],
            "projected_200_epochs_min": round(200 * STEPS_PER_EPOCH / rate / 60, 1),
            "epoch_seconds": [round(e["seconds"], 2) for e in entries], "process_s": round(wall, 1)}


def run(args: argparse.Namespace) -> dict:
    workers = [int(w) for w in args.workers.split(",") if w.strip()]
    public = []
    if args.code:
        code = Path(args.code).resolve()  # the child runs in a folder of its own
        if not (code / "cifar.py").is_file():
            raise ValueError(f"--code {code}: no cifar.py there (give a checkout of the public NoisyMix code)")
        public = [_public_loop(code, w, args.steps, args.warmup, args.images, args.child_timeout) for w in workers]
    from fullscale.data.cifar import write_cifar_fixture

    with tempfile.TemporaryDirectory() as data_root:  # one CIFAR-10 folder for every variant of ours
        write_cifar_fixture(data_root, "cifar10", n_train=args.images, n_test=100)
        ours = [_ours(Path(data_root), args.ours_epochs, v.strip(), args.device, args.child_timeout, args.ours_set)
                for v in args.ours_variants.split(";") if v.strip()]
    result = {"benchmark": "official-loop", "recipe": " ".join(RECIPE), "public": public, "ours": ours,
              "cpu_count": os.cpu_count(), "target": "ours >= 3x the public loop's steps/s at 16 workers"}
    best_public = {r["workers"]: r["steps_per_s"] for r in public if "steps_per_s" in r}
    for r in ours:
        if "steps_per_s" in r:
            r["speedup_over_public"] = {w: round(r["steps_per_s"] / s, 2) for w, s in best_public.items()}
    if 16 in best_public and ours and "steps_per_s" in ours[0]:
        result["met"] = ours[0]["steps_per_s"] >= 3 * best_public[16]
    return result


def _child(code: str, workers: int, steps: int, warmup: int, images: int, out: str) -> None:
    """Run the public ``cifar.py`` as ``__main__`` with synthetic data and ``workers`` loader workers;
    stop after ``warmup + steps`` optimizer steps and write the timed seconds."""
    import runpy

    import numpy as np
    import torch
    import torchvision.datasets
    from PIL import Image

    class SyntheticCIFAR10(torch.utils.data.Dataset):
        """torchvision's CIFAR10 as cifar.py uses it: ``(root, train, transform, download)``, PIL images."""

        def __init__(self, root: str, train: bool = True, transform=None, download: bool = False) -> None:
            n = images if train else 1000
            rng = np.random.default_rng(0 if train else 1)
            self.data = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
            self.targets = rng.integers(0, 10, n).tolist()
            self.transform = transform

        def __getitem__(self, i: int):
            image = Image.fromarray(self.data[i])
            return (self.transform(image) if self.transform else image), self.targets[i]

        def __len__(self) -> int:
            return len(self.data)

    class Done(Exception):
        pass

    torchvision.datasets.CIFAR10 = SyntheticCIFAR10
    # augmentations.py uses ``np.int``, removed in NumPy 1.24: the builtin it aliased stands in
    if "int" not in np.__dict__:
        np.__dict__["int"] = int
    # src/get_data.py (imported by src/__init__.py, used only for ImageNet and -C folders) imports
    # ``robustness.tools.folder.ImageFolder`` from the robustness library; where that is not
    # installed, torchvision's ImageFolder stands in (cifar.py never calls it)
    try:
        import robustness.tools.folder  # noqa: F401
    except ImportError:
        import types

        for name in ("robustness", "robustness.tools", "robustness.tools.folder"):
            sys.modules[name] = types.ModuleType(name)
        sys.modules["robustness.tools.folder"].ImageFolder = torchvision.datasets.ImageFolder
    loader_init = torch.utils.data.DataLoader.__init__

    def with_workers(self, *a, **kw):
        kw["num_workers"] = workers
        loader_init(self, *a, **kw)

    torch.utils.data.DataLoader.__init__ = with_workers
    sgd_step = torch.optim.SGD.step
    count, marks = [0], {}

    def timed_step(self, *a, **kw):
        result = sgd_step(self, *a, **kw)
        count[0] += 1
        if count[0] in (warmup, warmup + steps):
            torch.cuda.synchronize()
            marks[count[0]] = time.perf_counter()
        if count[0] == warmup + steps:
            raise Done
        return result

    torch.optim.SGD.step = timed_step
    sys.path.insert(0, code)
    sys.argv = [str(Path(code) / "cifar.py"), *RECIPE]
    try:
        runpy.run_path(str(Path(code) / "cifar.py"), run_name="__main__")
    except Done:
        Path(out).write_text(json.dumps({"seconds": marks[warmup + steps] - marks[warmup]}))
        os._exit(0)  # the loader's workers are daemons: leave without waiting for them


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--child":
    _child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7])
