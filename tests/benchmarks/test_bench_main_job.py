"""`noisymix bench main-job` end to end on the quick plan (issue 34): two whole reproduce runs
timed one after the other, and the comparison of their claims."""

from __future__ import annotations

import json

from noisymix_app.cli import main


def test_bench_main_job_runs_both_plans_and_compares_them(tmp_path):
    out = tmp_path / "main-job.json"
    assert main(["bench", "main-job", "--out", str(out), "--", "--quick", "--workdir", str(tmp_path / "w")]) == 0
    result = json.loads(out.read_text())
    ref, new = result["reference"], result["new"]
    assert ref["plan"] == new["plan"] == "quick" and ref["wall_s"] > 0 and new["wall_s"] > 0
    assert result["ratio_wall"] == round(new["wall_s"] / ref["wall_s"], 3)
    # the quick plan's two methods make the same claims in both runs: same ids, deterministic verdicts
    assert result["claims_both"] == sorted(new["claims"]) and "robust_noisymix_vs_baseline" in result["claims_both"]
    assert result["verdicts_changed"] == {}
    assert set(new["where_s"]) == {"train", "evaluate", "other"} and new["where_s"]["train"] > 0


def test_bench_main_job_refuses_an_unknown_plan_before_any_work(tmp_path, capsys):
    code = main(["bench", "main-job", "--", "--plans", "laptop,nonsense", "--workdir", str(tmp_path / "w")])
    assert code == 2 and "--plans" in capsys.readouterr().err and not (tmp_path / "w").exists()
