"""``noisymix bench graph-equal`` (issue 53, goal 1) on the CPU: the plumbing of its two comparisons.

On a CPU nothing is captured (the static-buffer body runs eagerly), so the figures only show that
every part runs and that the verdict reads the stated bounds; the device run (``scripts/gpu-check``)
gives the figures.  A bound of zero must turn the verdict (a gap of float rounding is not zero).
"""

from __future__ import annotations

import argparse
import json

import pytest

from noisymix_app.bench import bench_graph_equal as bench
from noisymix_app.cli import main


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"device": "cpu", "steps": 2, "batch_size": 128, "width": 64, "members": 2,
                                 "quick": True, **kw})


def test_graph_equal_runs_both_comparisons_and_states_its_bounds(tmp_path, one_torch_thread):
    out = tmp_path / "equal.json"
    assert main(["bench", "--device", "cpu", "--out", str(out), "graph-equal", "--", "--quick", "--steps", "2"]) == 0
    result = json.loads(out.read_text())
    assert result["captured"] is False and set(result["precisions"]) == {"bf16", "fp32"}
    for name, row in result["precisions"].items():
        assert row["bound"] == bench.BOUNDS[name]
        assert row["synced"]["steps"] == 2 and row["free"]["steps"] == 2 and row["chaos_floor"]["steps"] == 2
        assert row["synced"]["max_step_loss_gap"] <= row["bound"] and row["holds"] is True
        assert row["members"]["members"] == 2 and row["members"]["holds"] is True
    assert result["holds"] is True


def test_a_bound_of_zero_turns_the_verdict(monkeypatch, one_torch_thread):
    monkeypatch.setattr(bench, "BOUNDS", {"bf16": 0.0, "fp32": 0.0})
    result = bench.run(_args(members=0))
    assert result["holds"] is False


@pytest.mark.parametrize("steps", ["0", "-3"])
def test_a_step_count_below_one_is_refused_in_one_line(steps, tmp_path, capsys):
    assert main(["bench", "--device", "cpu", "--out", str(tmp_path / "x.json"), "graph-equal", "--",
                 "--steps", steps]) == 2
    assert "--steps" in capsys.readouterr().err and not (tmp_path / "x.json").exists()
