"""``noisymix bench step-ops``: the aten operations a training step dispatches, and how many of them
make the host wait for the device, NoisyMix against Baseline at the same batch (issue 38's CPU
proxies of the GPU step's cost).

A GPU step of a small model is bound by kernel launches and by the host waiting for the device:
every ``.item()``, ``nonzero``, boolean mask or device-to-host copy drains the queue the step's
own kernels need.  The same Python code dispatches the same aten operations on the CPU, so counting
them there (``noisymix_infra.op_count.OpCounter`` around ``noisymix train``) measures the GPU step's
overhead without a GPU.  Per step, as the difference of two runs (one epoch on N and on 2N digits):
what every step costs, with what a run pays once (model, data, checks at the end) cancelled.

Counted as on a GPU: the views made in one pass per chunk (the CPU's cache-sized AugMix passes
are a CPU-only optimisation, off here) and the loss history read every ``CUDA_CHECK_EVERY`` steps
(the CPU reads it every step, where that waits for nothing).  Targets: NoisyMix ops <= 1.5x
Baseline's, <= 2 host syncs per step.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import torch

from noisymix_infra.op_count import OpCounter

__all__ = ["count_step_ops", "gpu_shaped"]

THREADS = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batches", default="16,32,64", help="batch sizes, comma-separated")
    parser.add_argument("--methods", default="baseline,noisymix", help="presets digits-<method>, the first the "
                        "reference")
    parser.add_argument("--steps", type=int, default=8, help="steps of the shorter run (the longer has twice)")
    parser.add_argument("--width", type=int, default=4, help="PreActResNet-18 width (the count does not depend on it)")


@contextlib.contextmanager
def gpu_shaped() -> Iterator[None]:
    """Within the block, a CPU run dispatches what a GPU run does: AugMix in one pass per call and the
    loss history read at CUDA's interval."""
    augmix_module = sys.modules["fullscale.augment.augmix"]
    import fullscale.training.checks as checks

    saved = augmix_module._CPU_CHUNK, checks.CPU_CHECK_EVERY
    augmix_module._CPU_CHUNK, checks.CPU_CHECK_EVERY = 1 << 40, checks.CUDA_CHECK_EVERY
    try:
        yield
    finally:
        augmix_module._CPU_CHUNK, checks.CPU_CHECK_EVERY = saved


def _count_run(method: str, batch: int, images: int, width: int) -> OpCounter:
    from fullscale.training.loop import train
    from fullscale.training.presets import resolve_config

    cfg = resolve_config(f"digits-{method}", [f"width={width}", "epochs=1", f"batch_size={batch}",
                                              f"train_subset={images}", "device=cpu"])
    with tempfile.TemporaryDirectory() as tmp, gpu_shaped(), OpCounter() as ops:
        train(cfg, Path(tmp) / "run")
    return ops


def count_step_ops(method: str, batch: int, steps: int = 8, width: int = 4) -> dict:
    """Per step of ``method`` at ``batch``: aten ops, host syncs and which (difference of one epoch of
    ``steps`` and of ``2 * steps`` steps)."""
    short, long = _count_run(method, batch, steps * batch, width), _count_run(method, batch, 2 * steps * batch, width)
    syncs = {k: (long.sync_counts[k] - short.sync_counts[k]) / steps for k in long.sync_counts}
    return {"method": method, "batch": batch, "ops_per_step": (long.total - short.total) / steps,
            "syncs_per_step": (long.syncs - short.syncs) / steps,
            "syncs_by_op": {k: round(v, 3) for k, v in syncs.items() if v}}


def run(args: argparse.Namespace) -> dict:
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if len(methods) < 2:
        raise ValueError("--methods needs a reference and at least one other method, e.g. baseline,noisymix")
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        counted = [count_step_ops(m, batch, args.steps, args.width) for m in methods]
        reference = counted[0]["ops_per_step"]
        for row in counted:
            rows.append({**row, "ops_ratio_to_reference": round(row["ops_per_step"] / reference, 3)})
    return {"benchmark": "step-ops", "reference": methods[0], "device_counted": "cpu",
            "torch": torch.__version__, "rows": rows, "target_ops_ratio": 1.5, "target_syncs_per_step": 2,
            "met": all(r["ops_ratio_to_reference"] <= 1.5 and r["syncs_per_step"] <= 2 for r in rows)}
