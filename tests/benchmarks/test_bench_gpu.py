"""``noisymix bench gpu --device cpu --quick``: the whole GPU suite end to end at tiny sizes on
the CPU, so that the first run on a GPU is a measurement, not debugging."""

from __future__ import annotations

import json
from pathlib import Path

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
    from noisymix_app.bench.bench_gpu import CPU_SKIPPED, OPTIONAL_BENCHMARKS, WEIGHTS

    assert set(result["figures"]) == set(WEIGHTS)
    for name, record in result["figures"].items():
        if name in OPTIONAL_BENCHMARKS or name in CPU_SKIPPED:
            assert "skipped" in record or "result" in record
        elif "error" in record:  # torch 2.13's CPU fp32 channels-last backward crashes on some CPUs
            assert name == "step_fp32_channels_last" and "crashed" in record["error"], (name, record)
        else:
            assert record["samples"] == 1 and record["status"] == "smoke only", name
    steps = [r for n, r in result["figures"].items() if n.startswith("step_") and "value" in r]
    assert steps and all(r["noisymix_step_s"] > 0 and r["value"] is None for r in steps)  # no ratio of 1 sample
    assert len(result["figures"]["digits_precision"]["runs"]["fp32"]) == 1
    assert "not run" in result["gpu_tests"]["not_run"] and result["provenance"]["load_average"] is not None
    assert result["environment"]["device"] == "cpu" and "packages" in result["environment"]
    table = (tmp_path / "gpu.md").read_text()
    assert "| augmix_32 |" in table and "CUDA tests: not run" in table and "say nothing about a GPU" in table


def test_full_sizes_refuse_the_cpu_and_name_quick(tmp_path, capsys):
    assert main(["bench", "gpu", "--device", "cpu", "--out", str(tmp_path)]) == 2
    assert "--quick" in capsys.readouterr().err


def test_unknown_figure_is_named(tmp_path, capsys):
    assert main(["bench", "gpu", "--device", "cpu", "--out", str(tmp_path), "--quick", "--only", "nonsense"]) == 2
    assert "augmix_32" in capsys.readouterr().err


def test_a_spent_budget_skips_the_remaining_figures_and_still_writes_the_files(tmp_path):
    assert main(["bench", "gpu", "--device", "cpu", "--out", str(tmp_path), "--quick", "--budget", "15",
                 "--tests", "none", "--only", "augmix_32,digits_precision,step_bf16_channels_last_compiled"]) == 0
    result = json.loads((tmp_path / "gpu.json").read_text())
    figures = result["figures"]
    assert "value" in figures["augmix_32"]
    assert "time budget" in figures["digits_precision"]["skipped"]  # needs 30 s
    assert "torch.compile on the CPU" in figures["step_bf16_channels_last_compiled"]["skipped"]
    assert result["gpu_tests"] == {"not_run": "not run: --tests none"}
    assert "skipped" in (tmp_path / "gpu.md").read_text()


def test_a_figure_past_the_budget_is_killed_and_the_files_are_written_as_figures_finish(tmp_path, capsys):
    """Issue 21: a hung figure (here one that sleeps) is stopped at the budget, reported
    "skipped: budget", and gpu.json holds every figure finished before it."""
    import time

    start = time.monotonic()
    assert main(["bench", "gpu", "--device", "cpu", "--out", str(tmp_path), "--quick", "--budget", "14",
                 "--only", "augmix_32,sleep,cifar10p_generation", "--sleep-figure", "600"]) == 0
    assert time.monotonic() - start < 60
    figures = json.loads((tmp_path / "gpu.json").read_text())["figures"]
    assert figures["augmix_32"]["samples"] == 1 and figures["augmix_32"]["status"] == "smoke only"
    assert figures["sleep"]["skipped"].startswith("budget: killed")
    assert "time budget" in figures["cifar10p_generation"]["skipped"]  # nothing left for it
    assert "say nothing about a GPU" in capsys.readouterr().err


def test_cuda_tests_are_not_run_without_cuda_and_found_from_the_package(tmp_path, monkeypatch):
    """Issue 21: run from outside the repository the CUDA tests were reported as failed."""
    import argparse

    from noisymix_app.bench.bench_gpu import _test_paths

    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(tests=None, quick=True)
    paths, why = _test_paths(args, torch.device("cpu"))
    assert paths is None and why.startswith("not run: no CUDA")
    paths, why = _test_paths(args, torch.device("cuda"))
    assert why is None and paths[0].endswith("tests/gpu") and Path(paths[0]).is_absolute()


def test_a_ratio_from_one_sample_is_not_reported():
    from noisymix_app.bench.bench_gpu import MIN_SAMPLES, _with_samples

    one = _with_samples({"value": 0.517, "ratio": True, "met": True, "samples": 1})
    assert one["value"] is None and one["met"] is None and one["status"] == "smoke only"
    enough = _with_samples({"value": 1.1, "ratio": True, "samples": MIN_SAMPLES})
    assert enough["value"] == 1.1 and "status" not in enough
