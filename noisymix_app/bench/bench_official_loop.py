"""``noisymix bench official-loop``: our trainer beside the public NoisyMix training loop, on one GPU,
in one benchmark run (issue 38).

The public loop is its ``cifar.py`` (github.com/erichson/NoisyMix), run unchanged with the
NoisyMix README's CIFAR-10 recipe (``--arch preactresnet18 --augmix 1 --jsd 1 --alpha 1.0
--manifold_mixup 1 --add_noise_level 0.5 --mult_noise_level 0.5 --sparse_level 0.65``), with two
things put in from outside, in a child process: the synthetic CIFAR-shaped set below in place of
torchvision's ``CIFAR10`` (nothing downloaded; its transforms, PIL AugMix, ``DataLoader`` and model
untouched), and the ``DataLoader``'s worker count (4 as shipped; 16 to use every core of the lent
machine).  Where the ``robustness`` library is not installed, its ``ImageFolder`` (imported by the
code's ``src/get_data.py``, used only for ImageNet and -C folders, never by ``cifar.py``) is
torchvision's.  Timing: CUDA-synchronised wall time of ``--steps`` optimizer steps after
``--warmup`` steps, data loading included; the run is stopped there (no test pass, nothing saved).
Each step's loss is kept on the device and read once at the end (the mean of every 20 steps, and
the first non-finite step if any).  Give the public code's folder with ``--code`` (a checkout of
the repository: it is read, not copied into this project).

Ours: ``noisymix train --preset noisymix`` (PreActResNet-18, CIFAR-10 recipe) on the same images
(one CIFAR-10 folder in the real format, read by both loops), two epochs of 391 steps each: the
second epoch's images/s from ``metrics.jsonl`` (the first includes cuDNN's autotuning and the first
chunk's start-up), at our default bf16 autocast and also in fp32 as the public loop trains.
Reported per loop: steps/s and the projected time of 200 epochs (391 steps each).

**The synthetic set** (``write_synthetic_cifar``, issue 47).  The tests' fixture
(``write_cifar_fixture``: one mean colour per class plus noise) is separable by the mean colour
alone: at lr 0.1 an independent plain SGD loop drove its loss to 0.17 within 8 steps and then spiked
to 5.4 (benchmarks/results/issue38-synthetic-divergence.txt), so it measured the data, not the
recipe, and the public loop ran on uniform random images (nothing to learn).  Here a class is a
texture, not a colour: a plaid of two sinusoidal gratings at +-theta (symmetric under the
horizontal flip of the recipe) of one of five orientations and two spatial frequencies, at a random
phase (any crop of it is the same class), a random contrast, in a random colour over a random
background colour, with a fainter grating of another class on top and Gaussian pixel noise.  The
mean colour carries no label (a check in ``tests/benchmarks``), a network must see the texture.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = ["CLASS_TEXTURES", "RECIPE", "synthetic_cifar_images", "write_synthetic_cifar"]

#: the NoisyMix README's CIFAR command (PreActResNet-18), less --seed
RECIPE = ["--arch", "preactresnet18", "--augmix", "1", "--jsd", "1", "--alpha", "1.0", "--manifold_mixup", "1",
          "--add_noise_level", "0.5", "--mult_noise_level", "0.5", "--sparse_level", "0.65", "--seed", "1"]
STEPS_PER_EPOCH = 391  # 50,000 images in batches of 128
#: the synthetic set's classes: (orientation in degrees, cycles across the image) of their plaid
CLASS_TEXTURES = tuple((theta, cycles) for cycles in (2.5, 5.0) for theta in (0.0, 22.5, 45.0, 67.5, 90.0))


def synthetic_cifar_images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` synthetic CIFAR-shaped images (n, 3, 32, 32) uint8 and their labels (see the module
    docstring), from ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(CLASS_TEXTURES), n)
    yy, xx = np.meshgrid(np.arange(32.0), np.arange(32.0), indexing="ij")

    def plaid(classes: np.ndarray) -> np.ndarray:
        theta = np.deg2rad(np.array([CLASS_TEXTURES[c][0] for c in classes]))[:, None, None]
        freq = (2 * np.pi * np.array([CLASS_TEXTURES[c][1] for c in classes]) / 32)[:, None, None]
        out = np.zeros((len(classes), 32, 32))
        for sign in (1.0, -1.0):  # +-theta: the same class after a horizontal flip
            phase = rng.uniform(0, 2 * np.pi, (len(classes), 1, 1))
            out += np.cos(freq * (xx * np.cos(sign * theta) + yy * np.sin(sign * theta)) + phase)
        return out / 2

    def colours(k: int) -> np.ndarray:
        v = rng.normal(size=(k, 3))
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    others = (labels + rng.integers(1, len(CLASS_TEXTURES), n)) % len(CLASS_TEXTURES)
    contrast = rng.uniform(35, 80, (n, 1, 1, 1))
    images = (rng.uniform(60, 195, (n, 3, 1, 1))
              + contrast * colours(n)[:, :, None, None] * plaid(labels)[:, None]
              + 0.5 * contrast * colours(n)[:, :, None, None] * plaid(others)[:, None]
              + rng.normal(0, 20, (n, 3, 32, 32)))
    return np.clip(np.rint(images), 0, 255).astype(np.uint8), labels


def write_synthetic_cifar(root: str | Path, n_train: int, n_test: int, seed: int = 0) -> Path:
    """A CIFAR-10 folder (the real pickle format, read by ``load_dataset("cifar10", ...)``) of the
    synthetic set: ``n_train`` training and ``n_test`` test images; its folder."""
    from fullscale.data.cifar import LAYOUT
    from noisymix_infra.io import write_bytes

    layout = LAYOUT["cifar10"]
    folder = Path(root) / layout["folder"]
    for split, n, split_seed in (("train", n_train, seed), ("test", n_test, seed + 1)):
        images, labels = synthetic_cifar_images(n, split_seed)
        files = layout[split]
        for i, name in enumerate(files):
            part = slice(i * n // len(files), (i + 1) * n // len(files))
            content = {b"data": images[part].reshape(-1, 3072), layout["label_key"]: labels[part].tolist(),
                       b"filenames": [f"{name}_{j}.png".encode() for j in range(len(labels[part]))]}
            write_bytes(folder / name, pickle.dumps(content, protocol=2))
    names = [f"texture{k}".encode() for k in range(len(CLASS_TEXTURES))]
    write_bytes(folder / layout["meta"], pickle.dumps({b"label_names": names}, protocol=2))
    return folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--code", default=None, help="folder of the public NoisyMix code (its cifar.py); without it "
                        "only our trainer is timed")
    parser.add_argument("--workers", default="4,16", help="DataLoader workers of the public loop, comma-separated")
    parser.add_argument("--public-seeds", default="1", help="--seed of the public loop's runs, comma-separated")
    parser.add_argument("--steps", type=int, default=200, help="timed steps of the public loop")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    parser.add_argument("--images", type=int, default=50_000, help="synthetic training images (CIFAR-10: 50,000)")
    parser.add_argument("--ours-epochs", type=int, default=2, help="epochs of our trainer (the last one is timed)")
    parser.add_argument("--child-timeout", type=float, default=300.0,
                        help="seconds for each run; a run past it is killed and recorded as an error, the others kept")
    parser.add_argument("--ours-set", action="append", default=[], metavar="KEY=VALUE",
                        help="a --set of our runs (repeatable; e.g. width=4 for a CPU smoke run)")
    parser.add_argument("--ours-variants", default="amp=true;amp=false",
                        help="our runs, ';'-separated, each a ','-separated list of --set keys (default: bf16 "
                        "autocast, our default, and fp32 as the public loop trains)")


def _run_child(command: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess | str:
    """Run one child; a child past ``timeout`` is killed with its whole process group (the public
    loop's ``DataLoader`` workers too) and answered by the one-line reason, a string (issue 54: the
    ``TimeoutExpired`` traceback lost every figure measured before it)."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, **kwargs)
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return f"timed out after {timeout:g} s (--child-timeout); killed"
    return subprocess.CompletedProcess(command, child.returncode, stdout, stderr)


def _public_command(code: Path, workers: int, steps: int, warmup: int, data_root: Path, seed: int,
                    out: Path) -> list[str]:
    return [sys.executable, "-m", "noisymix_app.bench.bench_official_loop", "--child", str(code), str(workers),
            str(steps), str(warmup), str(data_root), str(seed), str(out)]


def _public_loop(code: Path, workers: int, steps: int, warmup: int, data_root: Path, seed: int,
                 timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "timing.json"
        command = _public_command(code, workers, steps, warmup, data_root, seed, out)
        start = time.perf_counter()
        done = _run_child(command, timeout, cwd=tmp, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        if isinstance(done, str):
            return {"workers": workers, "seed": seed, "error": done}
        if not out.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            return {"workers": workers, "seed": seed, "error": " | ".join(tail)[:500]}
        record = json.loads(out.read_text())
    seconds = record["seconds"]
    rate = steps / seconds
    return {"workers": workers, "seed": seed, "steps": steps, "warmup": warmup, "seconds": round(seconds, 3),
            "loss_every_20_steps": record["losses"], "first_non_finite_step": record["first_non_finite_step"],
            "steps_per_s": round(rate, 3), "projected_200_epochs_min": round(200 * STEPS_PER_EPOCH / rate / 60, 1),
            "process_s": round(time.perf_counter() - start, 1)}


#: the preset our runs train
OURS_PRESET = "noisymix"


def _ours_sets(data_root: Path, epochs: int, variant: str, device: str, sets: list[str]) -> list[str]:
    """The ``--set`` items of one run of ours: the data, epochs and device, ``--ours-set``, the variant's."""
    return [f"data_root={data_root}", f"epochs={epochs}", f"device={device}", *sets,
            *(kv for kv in variant.split(",") if kv.strip())]


def _ours_command(run: Path, data_root: Path, epochs: int, variant: str, device: str, sets: list[str]) -> list[str]:
    return [sys.executable, "-m", "noisymix_app.cli", "train", "--preset", OURS_PRESET, "--out", str(run),
            *[a for kv in _ours_sets(data_root, epochs, variant, device, sets) for a in ("--set", kv)]]


def _check_ours(args: argparse.Namespace, variants: list[str]) -> None:
    """Every run of ours resolved as ``noisymix train`` resolves it (the one ``--set`` dialect,
    ``noisymix_infra.config``): an unknown key, a value of the wrong type or a key given twice (by
    ``--ours-set``, a variant or the benchmark's own data, epochs and device) is one line before the data
    or any run (issue 60: ``--ours-set nope=1`` exited 0, every run an error cut to its last characters)."""
    from fullscale.training.config import FLAT_KEYS
    from fullscale.training.presets import resolve_config
    from noisymix_infra.config import check_distinct

    for variant in variants:
        sets = _ours_sets(Path("data"), args.ours_epochs, variant, args.device, args.ours_set)
        try:
            check_distinct(sets, FLAT_KEYS)
            resolve_config(OURS_PRESET, sets)
        except (ValueError, TypeError) as error:
            detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ValueError(f"--ours-set / --ours-variants (run {variant!r}): {detail}") from None


def _ours(data_root: Path, epochs: int, variant: str, device: str, timeout: float, sets: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        command = _ours_command(run, data_root, epochs, variant, device, sets)
        start = time.perf_counter()
        done = _run_child(command, timeout)
        wall = time.perf_counter() - start
        if isinstance(done, str):
            return {"variant": variant, "error": done}
        if done.returncode != 0:
            last = (done.stdout + done.stderr).strip().splitlines() or [f"exit {done.returncode}"]
            return {"variant": variant, "error": last[-1][:500]}  # its start: where `train` names the cause
        entries = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        batch = json.loads((run / "config.json").read_text())["config"]["optim"]["batch_size"]
    rate = entries[-1]["images_per_s"] / batch
    return {"variant": variant, "epochs": epochs, "steps_per_s": round(rate, 3),
            "cross_entropy": [round(e["cross_entropy"], 4) for e in entries],
            "projected_200_epochs_min": round(200 * STEPS_PER_EPOCH / rate / 60, 1),
            "epoch_seconds": [round(e["seconds"], 2) for e in entries], "process_s": round(wall, 1)}


def run(args: argparse.Namespace) -> dict:
    workers = [int(w) for w in args.workers.split(",") if w.strip()]
    code = Path(args.code).resolve() if args.code else None  # the child runs in a folder of its own
    if code is not None and not (code / "cifar.py").is_file():
        raise ValueError(f"--code {code}: no cifar.py there (give a checkout of the public NoisyMix code)")
    seeds = [int(s) for s in args.public_seeds.split(",") if s.strip()]
    variants = [v.strip() for v in args.ours_variants.split(";") if v.strip()]
    _check_ours(args, variants)
    with tempfile.TemporaryDirectory() as data_root:  # one CIFAR-10 folder for both loops and every variant
        write_synthetic_cifar(data_root, n_train=args.images, n_test=1000)
        public = [_public_loop(code, w, args.steps, args.warmup, Path(data_root), seed, args.child_timeout)
                  for w in workers for seed in seeds] if args.code else []
        ours = [_ours(Path(data_root), args.ours_epochs, v, args.device, args.child_timeout, args.ours_set)
                for v in variants]
    result = {"benchmark": "official-loop", "recipe": " ".join(RECIPE), "public": public, "ours": ours,
              "data": f"write_synthetic_cifar: {args.images} training images, both loops",
              "cpu_count": os.cpu_count(),
              "target": "ours >= 5x the public loop's steps/s at 16 workers and >= 160 steps/s (issue 47)"}
    best_public: dict[int, float] = {}
    for r in public:
        if "steps_per_s" in r:
            best_public[r["workers"]] = max(best_public.get(r["workers"], 0.0), r["steps_per_s"])
    for r in ours:
        if "steps_per_s" in r:
            r["speedup_over_public"] = {w: round(r["steps_per_s"] / s, 2) for w, s in best_public.items()}
    if 16 in best_public and ours and "steps_per_s" in ours[0]:
        result["met"] = ours[0]["steps_per_s"] >= max(5 * best_public[16], 160)
    return result


def _child(code: str, workers: int, steps: int, warmup: int, data_root: str, seed: int, out: str) -> None:
    """Run the public ``cifar.py`` as ``__main__`` with ``--seed seed``, the CIFAR-10 folder
    ``data_root`` (our loader reads it: the images ours trains on) and ``workers`` loader workers;
    stop after ``warmup + steps`` optimizer steps and write the timed seconds and the losses."""
    import runpy

    import numpy as np
    import torch
    import torchvision.datasets
    from PIL import Image

    from fullscale.data import load_dataset

    class SyntheticCIFAR10(torch.utils.data.Dataset):
        """torchvision's CIFAR10 as cifar.py uses it: ``(root, train, transform, download)``, PIL images."""

        def __init__(self, root: str, train: bool = True, transform=None, download: bool = False) -> None:
            split = load_dataset("cifar10", "train" if train else "test", data_root)
            self.data = split.images.permute(0, 2, 3, 1).contiguous().numpy()  # HWC, as torchvision's
            self.targets = split.labels.tolist()
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
            if torch.cuda.is_available():  # (a CPU smoke run of the child)
                torch.cuda.synchronize()
            marks[count[0]] = time.perf_counter()
        if count[0] == warmup + steps:
            raise Done
        return result

    torch.optim.SGD.step = timed_step
    losses: list = []
    backward = torch.Tensor.backward

    def kept_backward(self, *a, **kw):  # the step's loss, kept on the device (no synchronisation)
        if self.dim() == 0:
            losses.append(self.detach().float())
        return backward(self, *a, **kw)

    torch.Tensor.backward = kept_backward
    sys.path.insert(0, code)
    sys.argv = [str(Path(code) / "cifar.py"), *RECIPE[:-1], str(seed)]
    try:
        runpy.run_path(str(Path(code) / "cifar.py"), run_name="__main__")
    except Done:
        values = torch.stack(losses).cpu() if losses else torch.zeros(0)
        bad = (~torch.isfinite(values)).nonzero()
        means = [round(float(v), 4) for v in values[: len(values) // 20 * 20].view(-1, 20).mean(1)]
        Path(out).write_text(json.dumps({"seconds": marks[warmup + steps] - marks[warmup], "losses": means,
                                         "first_non_finite_step": int(bad[0, 0]) + 1 if len(bad) else None}))
        os._exit(0)  # the loader's workers are daemons: leave without waiting for them


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--child":
    _child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7]),
           sys.argv[8])
