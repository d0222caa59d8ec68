"""``noisymix bench NAME``: speed benchmarks, each a module with ``add_arguments(parser)`` and
``run(args) -> dict``; the dict is printed and written as JSON (``--out FILE``).

Every benchmark measures a ratio against a reference run side by side in the same process
(e.g. our batched AugMix against the per-image PIL pipeline), so the figure does not depend on
how fast the machine is.  Recorded results: ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform

import torch

from infra.io import write_json

BENCHMARKS: dict[str, str] = {
    "augmix": "benchmarks.bench_augmix",
    "corruptions": "benchmarks.bench_corruptions",
    "evaluate": "benchmarks.bench_evaluate",
    "puzzlemix": "benchmarks.bench_puzzlemix",
    "toy": "benchmarks.bench_toy",
    "train-step": "benchmarks.bench_train_step",
    "verify": "benchmarks.bench_verify",
}


def machine() -> dict[str, object]:
    """What the numbers were measured on."""
    info: dict[str, object] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
    return info


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, help="write the result JSON here")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=sorted(BENCHMARKS), help="which benchmark")
    _common(parser)
    parser.add_argument("options", nargs=argparse.REMAINDER,
                        help="the benchmark's own options (noisymix bench NAME --help)")


def run(args: argparse.Namespace) -> int:
    module = importlib.import_module(BENCHMARKS[args.name])
    own = argparse.ArgumentParser(prog=f"noisymix bench {args.name}")
    # --out/--device may come before or after the name; the benchmark's options follow it.
    own.set_defaults(out=args.out, device=args.device)
    own.add_argument("--out", default=args.out, help="write the result JSON here")
    own.add_argument("--device", default=args.device)
    module.add_arguments(own)
    options = own.parse_args([o for o in args.options if o != "--"])
    measured = module.run(options)
    # Read the machine after the run: a benchmark may set its own thread count.
    result = {"benchmark": args.name, "machine": machine(), **measured}
    print(json.dumps(result, indent=2, sort_keys=True))
    if options.out:
        write_json(options.out, result)
    return 0
