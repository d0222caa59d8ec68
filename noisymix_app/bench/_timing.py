"""Timing helpers shared by the benchmarks: wall time with a device sync, best of repeats."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

__all__ = ["best_seconds", "paired_best_seconds"]


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


def paired_best_seconds(first: Callable[[], object], second: Callable[[], object], *, device: str,
                        repeats: int = 3) -> tuple[float, float]:
    """The fastest of ``repeats`` timed calls of each of two functions, taken in alternation
    (after one untimed call each), so that a burst of load on a shared machine hits both sides."""
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    first(), second()
    sync()
    best = [float("inf"), float("inf")]
    for _ in range(repeats):
        for k, fn in enumerate((first, second)):
            start = time.perf_counter()
            fn()
            sync()
            best[k] = min(best[k], time.perf_counter() - start)
    return best[0], best[1]
