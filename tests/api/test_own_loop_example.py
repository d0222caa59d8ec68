"""docs/examples/own_loop.py runs (a few steps) and adds at most 10 lines to a plain loop."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "own_loop.py"


def test_the_example_trains_a_model_that_is_not_ours(capsys):
    spec = importlib.util.spec_from_file_location("own_loop", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    accuracy = module.main(["--steps", "3", "--batch-size", "16"])
    out = capsys.readouterr().out
    assert "step    0  loss" in out and "step    2  loss" in out and "clean test accuracy" in out
    assert 0.0 <= accuracy <= 1.0


def test_noisymix_adds_at_most_ten_lines():
    lines = [line for line in EXAMPLE.read_text().splitlines() if "# NoisyMix" in line]
    assert 1 <= len(lines) <= 10
    assert any("nm.loss(x_u8, y)" in line for line in lines)
