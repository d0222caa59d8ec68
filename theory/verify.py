"""The verifier: every check, by id, and the files ``noisymix verify`` writes.

Registry (id -> builder of its checks).  Each builder takes the eps grid and a seed and returns
``theory.checks.Check`` rows; ``theory.symbolic`` adds sympy's rows to jsd, prop1, thm1 and thm2.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from noisymix_infra.threads import torch_threads
from theory.calculus import eps_grid
from theory.checks import Check
from theory.checks_jsd import jsd_checks
from theory.checks_nfm import lemma1_checks, theorem1_checks
from theory.checks_robust import theorem3_checks
from theory.checks_stability import lemma2_checks, prop1_checks, theorem2_checks

__all__ = ["CHECKS", "VerifyConfig", "run_checks", "verify"]

CHECKS: dict[str, Callable[[np.ndarray, int], list[Check]]] = {
    "jsd": lambda eps, seed: jsd_checks(seed, eps=eps),
    "lemma1": lemma1_checks,
    "prop1": prop1_checks,
    "thm1": theorem1_checks,
    "lemma2": lemma2_checks,
    "thm2": theorem2_checks,
    "thm3": theorem3_checks,
}
SYMBOLIC_IDS = ("jsd", "prop1", "thm1", "thm2")


@dataclass(frozen=True)
class VerifyConfig:
    """What to run: the eps grid, the seed, which ids, and whether sympy witnesses them."""

    points: int = 13
    eps_low: float = 1e-4
    eps_high: float = 1e-1
    seed: int = 0
    ids: tuple[str, ...] = tuple(CHECKS)
    symbolic: bool = True

    def __post_init__(self) -> None:
        unknown = sorted(set(self.ids) - set(CHECKS))
        if unknown or not self.ids:
            raise ValueError(f"unknown or no check ids {unknown}; choose from {list(CHECKS)}")
        eps_grid(self.points, self.eps_low, self.eps_high)  # validates the grid


def run_checks(
    config: VerifyConfig, *, progress: Callable | None = None, threads: int | None = 1
) -> tuple[list[Check], dict[str, float]]:
    """All checks of ``config``, in registry order, and the seconds each id took.

    ``threads``: torch's CPU threads meanwhile (``noisymix_infra.threads.torch_threads``), 1 by default:
    the checks are thousands of small tensor ops, a second intra-op thread buys nothing, and on
    a busy 2-core machine its spin-waiting made the run 10-20x slower (measured).  Restored after.
    """
    with torch_threads(threads):
        return _run_checks(config, progress)


def _symbolic_rows() -> dict[str, list[Check]]:
    """The sympy witnesses (run in a second process: sympy is pure Python, the checks are torch)."""
    from theory.symbolic import symbolic_checks  # sympy imports take a second: only when asked

    with torch_threads(1):
        return symbolic_checks()


def _start_symbolic() -> tuple[ProcessPoolExecutor | None, Future | None]:
    """Start the sympy witnesses beside the torch checks (the machine has two cores)."""
    try:
        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return pool, pool.submit(_symbolic_rows)
    except (OSError, RuntimeError):  # no second process here: run them in line later
        return None, None


def _run_checks(config: VerifyConfig, progress: Callable | None) -> tuple[list[Check], dict[str, float]]:
    from noisymix_infra.progress import progress as bar

    eps = eps_grid(config.points, config.eps_low, config.eps_high)
    symbolic = config.symbolic and bool(set(SYMBOLIC_IDS) & set(config.ids))
    steps = list(config.ids) + (["sympy"] if symbolic else [])
    pool, future = _start_symbolic() if symbolic else (None, None)
    rows: dict[str, list[Check]] = {}
    timings: dict[str, float] = {}
    try:
        for step in (progress or bar)(steps, desc="noisymix verify", unit="check"):
            start = time.perf_counter()
            if step == "sympy":
                try:
                    extra = future.result() if future is not None else _symbolic_rows()
                except BrokenProcessPool:
                    extra = _symbolic_rows()
                for key, checks in extra.items():
                    if key in rows:
                        rows[key].extend(checks)
            else:
                rows[step] = CHECKS[step](eps, config.seed)
            timings[step] = time.perf_counter() - start
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    if symbolic:
        timings["sympy (waited for; ran beside the others)"] = timings.pop("sympy")
    return [c for key in config.ids for c in rows[key]], timings


def verify(out: str | Path, config: VerifyConfig | None = None, *, threads: int | None = 1) -> dict[str, object]:
    """Run the checks and write ``theory.json``, ``theory.md`` and ``convergence.png`` into ``out``."""
    from theory.report import write_report

    config = config or VerifyConfig()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out must be a directory, got the file {out}")
    from noisymix_infra.folder_kind import check_plain_out

    # the root, a run's or a set's folder, a user's own theory.md: refused before the checks (issue 41)
    check_plain_out(out, "theory.json", ("theory.md", "convergence.png"))
    start = time.perf_counter()
    checks, timings = run_checks(config, threads=threads)
    seconds = time.perf_counter() - start
    write_report(out, checks, config=config, timings=timings, seconds=seconds)
    return {
        "checks": len(checks),
        "fails": sum(c.verdict == "fails" for c in checks),
        "seconds": seconds,
        "timings": timings,
    }
