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
import os
import platform
import sys
from pathlib import Path

import torch

from noisymix_app.bench._options import check, parser_for
from noisymix_infra.io import printable, read_json, write_json
from noisymix_infra.provenance import provenance
from noisymix_infra.threads import add_threads_argument, torch_threads

BENCHMARKS: dict[str, str] = {
    "augmix": "noisymix_app.bench.bench_augmix",
    "corruptions": "noisymix_app.bench.bench_corruptions",
    "evaluate": "noisymix_app.bench.bench_evaluate",
    "first-run": "noisymix_app.bench.bench_first_run",
    "gpu": "noisymix_app.bench.bench_gpu",
    "graph-equal": "noisymix_app.bench.bench_graph_equal",
    "imagenet-loader": "noisymix_app.bench.bench_imagenet_loader",
    "main-job": "noisymix_app.bench.bench_main_job",
    "members": "noisymix_app.bench.bench_members",
    "official-loop": "noisymix_app.bench.bench_official_loop",
    "protocol": "noisymix_app.bench.bench_protocol",
    "puzzlemix": "noisymix_app.bench.bench_puzzlemix",
    "schedule": "noisymix_app.bench.bench_schedule",
    "step-ops": "noisymix_app.bench.bench_step_ops",
    "toy": "noisymix_app.bench.bench_toy",
    "train-step": "noisymix_app.bench.bench_train_step",
    "threads": "noisymix_app.bench.bench_threads",
    "transfer": "noisymix_app.bench.bench_transfer",
    "verify": "noisymix_app.bench.bench_verify",
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


def is_bench_result(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a result file this command wrote: ``{"benchmark", "provenance", ...}`` with the
    machine it ran on (``machine``; ``bench gpu``'s gpu.json: ``environment``)."""
    try:
        record = read_json(path)
    except (OSError, ValueError):
        return False
    return (isinstance(record, dict) and {"benchmark", "provenance"} <= set(record)
            and ("machine" in record or "environment" in record))


def check_out(out: str, *, folder: bool = False) -> None:
    """Refuse (one line) an ``--out`` this command may not write: a file that is not a result of ours
    (a run's final.pt, a -C set's labels.npy), a folder (for a result file), and for ``bench gpu``
    (``folder``) a file, a folder of another command, or one whose gpu.json is not ours."""
    from noisymix_infra.folder_kind import KINDS, check_out_path, folder_kind

    path = Path(out)
    if folder:
        check_out_path(out)
        found = folder_kind(path)
        if found is not None:
            raise ValueError(f"--out {printable(out)} is {KINDS[found]}; give a folder of its own")
        if (path / "gpu.json").exists() and not is_bench_result(path / "gpu.json"):
            raise ValueError(f"--out {printable(out)} holds a gpu.json that noisymix bench did not write; "
                             "give another --out")
        return
    if not str(out).strip():
        raise ValueError("--out is empty: give a file name for the result JSON")
    if path.is_dir():
        raise ValueError(f"--out {printable(out)} is a folder: give a file name for the result JSON")
    check_out_path(path.parent, "--out's folder")  # not inside a run, a set or a figures report
    found = folder_kind(path.parent)
    if found is not None:
        raise ValueError(f"--out {printable(out)}: its folder is {KINDS[found]}, which holds only that command's "
                         "files; give another --out")
    if path.exists() or path.is_symlink():
        if path.is_symlink() or not is_bench_result(path):
            raise ValueError(f"--out {printable(out)} exists and is not a result of noisymix bench: it is not "
                             "replaced; give a new file name")


def run(args: argparse.Namespace) -> int:
    module = importlib.import_module(BENCHMARKS[args.name])
    own = parser_for(module, prog=f"noisymix bench {args.name}")
    # --out/--device may come before or after the name; the benchmark's options follow it.
    own.set_defaults(out=args.out, device=args.device)
    # --threads as every command (noisymix_infra.threads): given after the name, else before it, else the
    # benchmark's own default (its THREADS), else NOISYMIX_THREADS or torch's.
    outer = getattr(args, "threads", None)
    add_threads_argument(own, outer if outer is not None else getattr(module, "THREADS", None))
    options = own.parse_args([o for o in args.options if o != "--"])
    check(own, options)  # sizes, repeats and the device: one line before any work
    if options.out is not None:  # where the result goes, before the benchmark runs (issue 41)
        check_out(options.out, folder=getattr(module, "WRITES_OUT_DIR", False))
    with torch_threads(options.threads):
        load_before = [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None
        measured = module.run(options)
        # Read the machine after the run, inside the thread count: a benchmark may set its own.  The
        # load average before and after (provenance) says how busy the machine was beside the figure.
        result = {"benchmark": args.name, "machine": {**machine(), "load_average_before": load_before},
                  "provenance": provenance(), **measured}
    print(json.dumps(result, indent=2, sort_keys=True))
    if options.out and not getattr(module, "WRITES_OUT_DIR", False):  # bench gpu: --out is its folder
        write_json(options.out, result)
    failed = measured.get("failed_figures") or []
    if failed:  # the others were measured and written; the command still fails, naming each
        errors = measured.get("figures", {})
        detail = "; ".join(f"{name}: {errors.get(name, {}).get('error', '?')}" for name in failed)
        print(f"noisymix bench {args.name}: {len(failed)} figure(s) failed: {printable(detail)[:600]}",
              file=sys.stderr)
        return 1
    return 0
