"""Puzzle Mix's graph cuts in helper processes (``fullscale.puzzlemix.solve_masks`` with ``workers`` > 1,
issue 38): the same masks as pyGCO's cuts one image at a time, the same training step as in one
thread, and a helper that dies or cannot start costs a warning, never a mask."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("gco", reason="Puzzle Mix needs gco-wrapper (pip install 'noisymix[puzzlemix]')")

import gco

import fullscale.puzzlemix.masks as puzzlemix_masks
from fullscale.models import create_model
from fullscale.puzzlemix import solve_masks
from fullscale.training.methods import METHODS
from fullscale.training.presets import resolve_config
from fullscale.training.step import step_loss


def _problem(seed: int, batch: int, n: int, n_labels: int, high: int):
    """Random integer energies; a small ``high`` makes many ties, where a cut's tie-breaking shows (pyGCO
    aborts the process on energies of 20000 and more; the recipe's reach about 6000)."""
    rng = np.random.default_rng(seed)
    unary = rng.integers(0, high, (batch, n, n, n_labels), dtype=np.int32)
    edge_x = rng.integers(0, high, (batch, n - 1, n), dtype=np.int32)
    edge_y = rng.integers(0, high, (batch, n, n - 1), dtype=np.int32)
    return unary, edge_x, edge_y


def _one_by_one(unary, edge_x, edge_y) -> np.ndarray:
    """pyGCO's alpha-beta swap called here image by image: the masks every way must give."""
    n_labels = unary.shape[-1]
    cost = np.array([[(i - j) ** 2 / (n_labels - 1) ** 2 for j in range(n_labels)] for i in range(n_labels)],
                    dtype=np.float32)
    labels = np.stack([gco.cut_grid_graph(unary[i], cost, edge_x[i], edge_y[i], algorithm="swap")
                       for i in range(len(unary))])
    return (1.0 - labels.reshape(unary.shape[:3]) / (n_labels - 1)).astype(np.float32)


def _helpers_alive() -> list[subprocess.Popen]:
    helpers = puzzlemix_masks._HELPERS[1] if puzzlemix_masks._HELPERS is not None else []
    return [proc for proc in helpers if proc.poll() is None]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 7), n=st.sampled_from([2, 3, 4, 5, 8, 16]),
       n_labels=st.sampled_from([2, 3, 4]), high=st.sampled_from([3, 50, 8000]), workers=st.integers(2, 4))
def test_helper_processes_give_exactly_the_masks_of_one_cut_at_a_time(seed, batch, n, n_labels, high, workers):
    problem = _problem(seed, batch, n, n_labels, high)
    expected = _one_by_one(*problem)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to in-thread cuts would hide the helpers
        shared = solve_masks(*problem, workers=workers)
    alone = solve_masks(*problem, workers=1)
    assert shared.dtype == np.float32 and shared.shape == (batch, n, n)
    assert np.array_equal(shared, expected) and np.array_equal(alone, expected)
    if batch > 1:
        assert len(_helpers_alive()) >= min(workers, batch) - 1


def test_a_step_is_the_same_in_one_thread_and_with_helper_processes():
    method = METHODS["puzzlemix"]
    x_u8 = torch.randint(0, 256, (12, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, 10, (12,), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    model = create_model("preactresnet18", 10, width=4)
    results = []
    for workers in (1, 3):
        cfg = resolve_config("puzzlemix", ["width=4", "puzzlemix.block_nums=8,16", f"puzzlemix.workers={workers}"])
        assert cfg.puzzlemix.workers == workers
        copy_ = copy.deepcopy(model)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            parts = step_loss(copy_, copy_, x_u8, y, method, cfg, 10, torch.Generator().manual_seed(5),
                              torch.Generator().manual_seed(7))
        parts.total.backward()
        results.append((parts.total.detach(), [p.grad.clone() for p in copy_.parameters()]))
    assert len(_helpers_alive()) >= 2
    (loss_one, grads_one), (loss_pool, grads_pool) = results
    assert torch.equal(loss_one, loss_pool)
    assert all(torch.equal(a, b) for a, b in zip(grads_one, grads_pool))


def test_a_helper_that_died_costs_one_warning_and_the_cuts_go_on_in_this_thread(monkeypatch):
    monkeypatch.setattr(puzzlemix_masks, "_HELPERS_FAILED", False)  # restored after the test
    problem = _problem(3, 6, 8, 3, 50)
    expected = _one_by_one(*problem)
    assert np.array_equal(solve_masks(*problem, workers=2), expected)
    (helper, *_) = _helpers_alive()
    helper.kill()
    helper.wait()
    with pytest.warns(RuntimeWarning, match="graph-cut helper process failed") as caught:
        masks = solve_masks(*problem, workers=2)
    assert np.array_equal(masks, expected)
    (warning,) = [w for w in caught if "graph-cut" in str(w.message)]
    assert "\n" not in str(warning.message) and "in this thread" in str(warning.message)
    assert _helpers_alive() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once: later batches cut in this thread quietly
        assert np.array_equal(solve_masks(*problem, workers=2), expected)
    assert _helpers_alive() == []


@pytest.mark.parametrize("executable", ["/nonexistent/python3", shutil.which("true") or "/bin/true"])
def test_helpers_that_cannot_start_cost_one_warning_and_the_cuts_go_on_in_this_thread(monkeypatch, executable):
    monkeypatch.setattr(puzzlemix_masks, "_HELPERS_FAILED", False)
    puzzlemix_masks._close_pool()
    monkeypatch.setattr(sys, "executable", executable)  # no such program / one that exits at once
    problem = _problem(4, 5, 4, 4, 8000)
    with pytest.warns(RuntimeWarning, match="graph-cut helper process failed"):
        masks = solve_masks(*problem, workers=3)
    assert np.array_equal(masks, _one_by_one(*problem))
    assert puzzlemix_masks._HELPERS is None


def test_a_failing_cut_raises_as_in_one_thread_and_the_helpers_stay_in_step():
    good = _problem(5, 6, 4, 3, 50)
    unary, edge_x, edge_y = good
    bad = (unary, edge_x, edge_y[:, :, :2])  # a wrong edge shape: pyGCO refuses it
    with pytest.raises(AssertionError, match="sizes of edges"):
        solve_masks(*bad, workers=1)
    with pytest.raises(AssertionError, match="sizes of edges"):
        solve_masks(*bad, workers=3)
    # the helpers' answers to the bad batch were read: the next batch gets its own masks
    assert np.array_equal(solve_masks(*good, workers=3), _one_by_one(*good))


def test_the_helper_module_imports_no_torch():
    code = "import sys, fullscale.puzzlemix.cuts; print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_the_helpers_end_with_the_interpreter():
    code = ("import numpy as np, fullscale.puzzlemix.masks as pm\n"
            "u = np.zeros((4, 4, 4, 3), np.int32)\n"
            "ex, ey = np.ones((4, 3, 4), np.int32), np.ones((4, 4, 3), np.int32)\n"
            "pm.solve_masks(u, ex, ey, workers=3)\n"
            "print(' '.join(str(p.pid) for p in pm._HELPERS[1]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stderr == ""
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 10
    while any(os.path.exists(f"/proc/{pid}") for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)  # waited for at exit, not left as zombies
