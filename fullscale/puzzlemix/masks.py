"""Puzzle Mix's masks (step 3 of ``fullscale.puzzlemix``): alpha-beta swap on each pair's grid
(pyGCO, the library the public code uses), the batch shared between this thread and helper
processes (``python -m fullscale.puzzlemix.cuts``), started once and reused.  The graph cut needs
``pip install noisymix[puzzlemix]`` (gco-wrapper); it is imported on first use."""

from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from fullscale.puzzlemix.cuts import cut_chunk

__all__ = ["solve_masks"]


def _gco() -> Any:
    try:
        import gco
    except ImportError:
        raise ImportError("Puzzle Mix needs the graph-cut library gco-wrapper: pip install 'noisymix[puzzlemix]'") \
            from None
    return gco


def _label_cost(n_labels: int) -> np.ndarray:
    cost = np.zeros([n_labels, n_labels], dtype=np.float32)
    for i in range(n_labels):
        for j in range(n_labels):
            cost[i, j] = (i - j)**2 / (n_labels - 1)**2
    return cost


def _workers(workers: int) -> int:
    return workers or min(8, os.cpu_count() or 1)


# One batch at a time per process, whichever thread calls: pyGCO's C wrapper keeps its graphs in a
# global std::map keyed by a global counter, neither locked (gco/cgco.cpp), so two threads inside it
# at once can cut each other's graph (a rare mask from another image, seen once as a same-seed
# mismatch), and the helpers' pipes carry one batch at a time.
_GCO_LOCK = threading.Lock()
_HELPERS: tuple[int, list[subprocess.Popen]] | None = None  # (pid, helper processes): started once, reused
_HELPERS_FAILED = False  # helpers that could not start or died: in-thread cuts from then on


def _pool(count: int) -> list[subprocess.Popen]:
    """``count`` helper processes (``python -m fullscale.puzzlemix.cuts``), started on first use and
    kept for the process's life (more started when more are asked for; a forked child starts its
    own).  Fork + exec of a fresh interpreter, never a fork of this process, whose torch threads may
    hold locks; each imports numpy and pyGCO only and has pyGCO's global table to itself.  Not
    multiprocessing: its spawn and forkserver run the caller's main script again in every worker
    (its imports, torch's too), and a script without a ``__main__`` guard then fails.  Called under
    ``_GCO_LOCK``."""
    global _HELPERS
    if _HELPERS is None or _HELPERS[0] != os.getpid():
        _HELPERS = (os.getpid(), [])
    helpers = _HELPERS[1]
    if len(helpers) >= count:  # every batch after the first: nothing to start
        return helpers[:count]
    root = str(Path(__file__).resolve().parents[2])  # the fullscale package found here, not another
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    while len(helpers) < count:
        helpers.append(subprocess.Popen([sys.executable, "-m", "fullscale.puzzlemix.cuts"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env))
    return helpers[:count]


@atexit.register
def _close_pool() -> None:
    """End the helpers: the end of its stdin ends each (it also ends when this process dies)."""
    global _HELPERS
    if _HELPERS is not None and _HELPERS[0] == os.getpid():
        for proc in _HELPERS[1]:
            for pipe in (proc.stdin, proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
        for proc in _HELPERS[1]:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    _HELPERS = None


def _cut_shared(unary: np.ndarray, cost: np.ndarray, edge_x: np.ndarray, edge_y: np.ndarray,
                workers: int) -> np.ndarray | None:
    """The labels, the batch split in ``workers`` shares of consecutive images: the first cut in this
    thread, each other one in a helper process meanwhile.  ``None`` (and a one-line warning) if the
    helpers cannot start or one died: the caller cuts in-thread.  Called under ``_GCO_LOCK``."""
    global _HELPERS_FAILED
    shares = np.array_split(np.arange(len(unary)), min(workers, len(unary)))
    try:
        helpers = _pool(workers - 1)
        for proc, share in zip(helpers, shares[1:]):
            pickle.dump((unary[share], cost, edge_x[share], edge_y[share]), proc.stdin, pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()
        try:
            own = cut_chunk(unary[shares[0]], cost, edge_x[shares[0]], edge_y[shares[0]])
        finally:  # the answers read even if this thread's cut failed: the next batch must find none waiting
            answers = [pickle.load(proc.stdout) for proc in helpers[:len(shares) - 1]]  # in the order sent
    except (OSError, EOFError, pickle.UnpicklingError) as error:  # could not start, or a helper died
        _HELPERS_FAILED = True
        _close_pool()
        reason = " ".join(f"{type(error).__name__}: {error}".split())
        warnings.warn(f"Puzzle Mix: a graph-cut helper process failed ({reason}); cutting in this thread from "
                      "now on (same masks, slower)", RuntimeWarning, stacklevel=3)
        return None
    for ok, value in answers:
        if not ok:
            raise value
    return np.concatenate([own] + [value for _, value in answers])


def solve_masks(unary: np.ndarray, edge_x: np.ndarray, edge_y: np.ndarray, *, workers: int = 0) -> np.ndarray:
    """Alpha-beta swap on each (n, n) grid of the batch; the labels (B, n, n) as mask values
    ``1 - label / (L - 1)`` (float32).  ``workers`` processes cut at once (0: min(8, CPUs); 1: this
    thread alone): this thread and ``workers - 1`` helper processes, each a share of consecutive
    images; the same masks either way."""
    _gco()  # the missing library named in one line, here rather than in a worker
    n_labels = unary.shape[-1]
    cost = _label_cost(n_labels)
    workers = _workers(workers)
    with _GCO_LOCK:
        labels = None
        if workers > 1 and len(unary) > 1 and not _HELPERS_FAILED:
            labels = _cut_shared(unary, cost, edge_x, edge_y, workers)
        if labels is None:
            labels = cut_chunk(unary, cost, edge_x, edge_y)
    block_num = unary.shape[1]
    return (1.0 - labels.reshape(-1, block_num, block_num) / (n_labels - 1)).astype(np.float32)
