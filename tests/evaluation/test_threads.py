"""``noisymix evaluate``'s thread default: every command's, the free cores (it was one thread on the
CPU, against spinning OpenMP threads on a busy machine; the free cores are as fast there and faster
idle: benchmarks/RESULTS.md, "Threads on a busy machine")."""

from __future__ import annotations

import pytest
import torch

import fullscale.cli_evaluate as cli_evaluate
from noisymix_app.cli import main


@pytest.mark.parametrize("extra,device,expected", [([], "cpu", None), (["--threads", "2"], "cpu", 2),
                                                    ([], "cuda", None)])
def test_evaluate_thread_default(monkeypatch, tmp_path, extra, device, expected):
    """``expected`` None: every command's default, the free cores (``auto_threads``, here 3)."""
    import noisymix_infra.threads as threads

    monkeypatch.delenv(threads.ENV, raising=False)
    monkeypatch.setattr(threads, "auto_threads", lambda sample_seconds=0.25: 3)
    seen = {}

    def fake_evaluate(run_dir, suite, **kwargs):
        seen["threads"] = torch.get_num_threads()
        return {"summary": {}}

    monkeypatch.setattr(cli_evaluate, "evaluate", fake_evaluate)
    before = torch.get_num_threads()
    torch.set_num_threads(5)
    try:
        assert main(["evaluate", str(tmp_path), "--suite", "clean", "--device", device, *extra]) == 0
    finally:
        torch.set_num_threads(before)
    assert seen["threads"] == (3 if expected is None else expected)
