"""Puzzle Mix's graph cuts for one share of a batch: what ``fullscale.puzzlemix.solve_masks`` runs in
its own thread and, as ``python -m fullscale.puzzlemix.cuts``, in each of its helper processes.

Only numpy and pyGCO (gco-wrapper) here, never torch, so a helper starts in a fraction of a second
(the ``__init__`` of ``fullscale`` imports nothing, that of ``fullscale.puzzlemix`` only
``importlib``).  pyGCO's C wrapper keeps its graphs in one global table per process, unlocked
(gco/cgco.cpp): a process runs one cut at a time, and each helper process has a table of its own.

A helper reads tasks ``(unary, cost, edge_x, edge_y)`` pickled on its stdin and answers each with
``(True, labels)`` or ``(False, exception)`` pickled on its stdout; it ends at the end of its stdin
(the parent closed it, or exited).
"""

from __future__ import annotations

import os
import pickle
import signal
import sys

import numpy as np

__all__ = ["cut_chunk", "serve"]


def cut_chunk(unary: np.ndarray, cost: np.ndarray, edge_x: np.ndarray, edge_y: np.ndarray) -> np.ndarray:
    """Alpha-beta swap on each (n, n) grid of the share, one after another; the labels (k, n * n), int.

    ``unary`` (k, n, n, L), ``cost`` (L, L) label cost, ``edge_x`` (k, n - 1, n), ``edge_y`` (k, n, n - 1)."""
    import gco

    labels = [gco.cut_grid_graph(unary[i], cost, edge_x[i], edge_y[i], algorithm="swap") for i in range(len(unary))]
    return np.stack(labels) if labels else np.zeros((0, unary.shape[1] * unary.shape[2]), dtype=np.int64)


def serve() -> None:
    """A helper process's loop (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; we end with its pipe
    tasks = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed (by Python or the C library) goes to stderr, not into the answers
    sys.stdout = sys.stderr
    while True:
        try:
            task = pickle.load(tasks)
        except EOFError:
            return
        try:
            answer = (True, cut_chunk(*task))
        except Exception as error:  # handed back, raised by the parent
            answer = (False, error)
        try:
            pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
            answers.flush()
        except BrokenPipeError:  # the parent is gone or closed its end: nobody to answer
            os._exit(0)


if __name__ == "__main__":
    serve()
