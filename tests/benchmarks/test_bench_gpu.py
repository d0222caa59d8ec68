"""``noisymix bench gpu --device cpu --quick``: the whole GPU suite end to end at tiny sizes on
the CPU, so that the first run on a GPU is a measurement, not debugging."""

from __future__ import annotations

import json

import pytest
import torch

from noisymix_app.cli import main


@pytest.mark.slow
def test_quick_cpu_run_writes_every_figure(tmp_path):
    threads = torch.get_num_threads()
    try:
        assert main(["bench", "gpu", "--device", "cpu", "--out", str(tmp_path), "--quick"]) == 0
    finally:
        torch.set_num_threads(threads)
    result = json.loads((tmp_path / "gpu.json").read_text())
    from noisymix_benchmarks.bench_gpu import OPTIONAL_BENCHMARKS, WEIGHTS

    assert set(result["figures"]) == set(WEIGHTS)
    for name, record in result["figures"].items():
        assert "error" not in record, (name, record)
        if name in OPTIONAL_BENCHMARKS:
            assert "skipped" in record or "result" in record
        else:
            assert isinstance(record["value"], int | float), name
    steps = [r for n, r in result["figures"].items() if n.startswith("step_")]
    assert all(r["noisymix_step_s"] > 0 and r["plain_step_s"] > 0 for r in steps)
    compiled = result["figures"]["step_bf16_channels_last_compiled"]
    assert compiled["compile"] and compiled["recompiles_after_warmup"] == 0  # the fixed set of graphs
    assert len(result["figures"]["digits_precision"]["runs"]["fp32"]) == 1
    assert result["gpu_tests"]["ok"] and result["provenance"]["load_average"] is not None
    assert result["environment"]["device"] == "cpu" and "packages" in result["environment"]
    table = (tmp_path / "gpu.md").read_text()
    assert "| augmix_32 |" in table and "CUDA tests" in table


def test_full_sizes_refuse_the_cpu_and_name_quick(tmp_path, capsys):
    assert main(["bench", "gpu", "--device", "cpu", "--out", str(tmp_path)]) == 2
    assert "--quick" in capsys.readouterr().err


def test_unknown_figure_is_named(tmp_path, capsys):
    assert main(["bench", "gpu", "--device", "cpu", "--out", str(tmp_path), "--quick", "--only", "nonsense"]) == 2
    assert "augmix_32" in capsys.readouterr().err


def test_a_spent_budget_skips_the_remaining_figures_and_still_writes_the_files(tmp_path):
    assert main(["bench", "gpu", "--device", "cpu", "--out", str(tmp_path), "--quick", "--budget", "6",
                 "--tests", "none", "--only", "augmix_32,digits_precision,step_bf16_channels_last_compiled"]) == 0
    result = json.loads((tmp_path / "gpu.json").read_text())
    figures = result["figures"]
    assert "value" in figures["augmix_32"]
    for name in ("digits_precision", "step_bf16_channels_last_compiled"):  # need 30 s and 90 s
        assert "time budget" in figures[name]["skipped"], figures[name]
    assert result["gpu_tests"] is None and "skipped" in (tmp_path / "gpu.md").read_text()
