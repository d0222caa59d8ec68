"""Timing helpers shared by the benchmarks: wall time with a device sync, best of repeats."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

__all__ = ["best_seconds"]


def best_seconds(fn: Callable[[], object], *, device: str, repeats: int = 3, warmup: int = 1) -> float:
    """The fastest of ``repeats`` timed calls (after ``warmup`` untimed ones), synchronising CUDA."""
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best
