"""End-to-end paths of issue 38's benchmarks at toy sizes: `noisymix bench step-ops` and `noisymix
bench official-loop` (our side only: the public code is not here).  The figures themselves are the
commands' in benchmarks/RESULTS.md."""

from __future__ import annotations

import json

import pytest

from noisymix_app.cli import main


def test_bench_step_ops_writes_each_methods_ops_and_syncs_per_step(tmp_path):
    out = tmp_path / "ops.json"
    assert main(["bench", "--out", str(out), "step-ops", "--", "--batches", "8", "--steps", "2"]) == 0
    result = json.loads(out.read_text())
    rows = {r["method"]: r for r in result["rows"]}
    assert set(rows) == {"baseline", "noisymix"} and rows["baseline"]["ops_ratio_to_reference"] == 1.0
    # the ratio is the ops of the two methods' rows, and the verdict follows the two targets
    assert rows["noisymix"]["ops_ratio_to_reference"] == pytest.approx(
        rows["noisymix"]["ops_per_step"] / rows["baseline"]["ops_per_step"], abs=1e-3)
    assert result["met"] == all(r["ops_ratio_to_reference"] <= 1.5 and r["syncs_per_step"] <= 2
                                for r in result["rows"])


def test_bench_step_ops_needs_a_reference_and_another_method(tmp_path, capsys):
    assert main(["bench", "--out", str(tmp_path / "ops.json"), "step-ops", "--", "--methods", "baseline"]) == 2
    assert "reference" in capsys.readouterr().err


def test_bench_official_loop_times_our_trainer_without_the_public_code(tmp_path):
    out = tmp_path / "loop.json"
    assert main(["bench", "--out", str(out), "official-loop", "--", "--images", "64", "--ours-epochs", "1",
                 "--ours-set", "width=4", "--ours-set", "batch_size=32", "--ours-variants", "amp=false"]) == 0
    result = json.loads(out.read_text())
    assert result["public"] == [] and "met" not in result
    (ours,) = result["ours"]
    assert ours["variant"] == "amp=false" and ours["steps_per_s"] > 0 and len(ours["cross_entropy"]) == 1
    # 200 epochs of 391 steps at the measured rate
    assert ours["projected_200_epochs_min"] == pytest.approx(200 * 391 / ours["steps_per_s"] / 60, rel=0.01)


def test_bench_official_loop_refuses_a_folder_without_cifar_py(tmp_path, capsys):
    assert main(["bench", "--out", str(tmp_path / "x.json"), "official-loop", "--", "--code", str(tmp_path)]) == 2
    assert "cifar.py" in capsys.readouterr().err
