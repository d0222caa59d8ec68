"""`noisymix bench schedule` (issue 58): the tail's idle core-seconds and the replay of an order worked by
hand, and the benchmark end to end on the quick plan (its numbers are meaningless; the comparison that
chooses the default order runs on an idle machine)."""

from __future__ import annotations

import json

import pytest

from noisymix_app.bench.bench_schedule import replay, tail_idle
from noisymix_app.cli import main


def test_the_tail_is_each_workers_idle_time_after_its_last_run():
    # 2 workers; runs ended at 1, 4, 5, 9: the last two ends are each worker's last; one idles 9 - 5 = 4 s
    assert tail_idle([4.0, 1.0, 9.0, 5.0], 2) == (4.0, 4.0)
    # 3 workers, two runs: the third worker never ran, idle the whole 6 s; the other from 2 to 6
    assert tail_idle([2.0, 6.0], 3) == (4.0, 4.0 + 6.0)
    assert tail_idle([], 2) == (0.0, 0.0)


def test_replay_takes_the_long_run_first_and_shortens_the_tail():
    """Two one-second Baseline runs and a three-second NoisyMix run (the launcher's estimate: three views
    against one), in that order, on 2 workers.  By hand: the plan's order runs both Baselines (0-1), then
    NoisyMix (1-4): 4 s, one worker idle from 1 to 4 (3 core-seconds); longest first runs NoisyMix (0-3)
    beside the Baselines one after the other (0-1, 1-2): 3 s, idle from 2 to 3 (1); shortest first is the
    plan's order here."""
    from noisymix_app.reproduce.plans import PLANS
    from noisymix_app.sweep.plan import plan_from_reproduce

    runs = {s.name: s for s in plan_from_reproduce(PLANS["laptop"], "/c", seeds=(0, 1), perturbed="/p").runs}
    specs = [runs["baseline-seed0"], runs["baseline-seed1"], runs["noisymix-seed0"]]
    seconds = {"baseline-seed0": 1.0, "baseline-seed1": 1.0, "noisymix-seed0": 3.0}
    assert replay(seconds, "plan", specs, 2) == {"makespan_s": 4.0, "tail_idle_core_s": 3.0}
    assert replay(seconds, "longest", specs, 2) == {"makespan_s": 3.0, "tail_idle_core_s": 1.0}
    assert replay(seconds, "shortest", specs, 2) == {"makespan_s": 4.0, "tail_idle_core_s": 3.0}


def test_bench_schedule_runs_each_order_and_replays_them(tmp_path):
    out = tmp_path / "schedule.json"
    assert main(["bench", "schedule", "--out", str(out), "--", "--quick", "--workers", "2",
                 "--workdir", str(tmp_path / "w")]) == 0
    result = json.loads(out.read_text())
    assert result["plan"] == "quick" and result["runs"] == 4 and result["workers"] == 2
    assert [s["order"] for s in result["sweeps"]] == ["longest", "plan"]
    assert result["cpu_model"] and result["machine"]["load_average_before"] is not None
    for sweep in result["sweeps"]:
        ends = [t for _, t in sweep["ended"]]
        assert len(ends) == 4 and sweep["tail_idle_core_s"] == pytest.approx(tail_idle(ends, 2)[1], abs=0.11)
        assert max(n for _, n in sweep["timeline"]) == 2 and sweep["timeline"][-1][1] == 0
    longest = next(s for s in result["sweeps"] if s["order"] == "longest")
    assert longest["ended"][0][0].startswith("noisymix")  # both workers took a NoisyMix run first
    assert set(result["run_seconds_median"]) == {f"{m}-seed{k}" for m in ("baseline", "noisymix") for k in (0, 1)}
    for order, figures in result["replay"].items():
        assert figures["makespan_s"] >= result["lower_bound_s"] - 0.1, order
    assert result["fastest_measured"] in ("longest", "plan")


def test_bench_schedule_refuses_an_unknown_order_before_any_work(tmp_path, capsys):
    assert main(["bench", "schedule", "--", "--orders", "longest,random", "--workdir", str(tmp_path / "w")]) == 2
    assert "--orders" in capsys.readouterr().err and not (tmp_path / "w").exists()


def test_bench_schedule_refuses_a_negative_busy_spell_before_any_work(tmp_path, capsys):
    assert main(["bench", "schedule", "--", "--busy", "-1", "--workdir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert "--busy" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "w").exists()


@pytest.mark.slow
def test_bench_schedule_busy_compares_the_sweep_idle_and_under_a_busy_spell(tmp_path):
    """--busy S end to end: the sweep with workers following the free cores, idle and with one core busy
    for its first S seconds; the cost is the difference of the walls, the one-worker replay the sum of
    the runs (the arithmetic alone, on given sweeps, is the fast test below)."""
    out = tmp_path / "busy.json"
    assert main(["bench", "schedule", "--out", str(out), "--", "--quick", "--workers", "2", "--busy", "3",
                 "--workdir", str(tmp_path / "w")]) == 0
    result = json.loads(out.read_text())
    assert [(s["busy_s"], s["follow"]) for s in result["sweeps"]] == [(0.0, True), (3.0, True)]
    assert result["wall_idle_s"] == [result["sweeps"][0]["wall_s"]]
    assert result["wall_busy_s"] == [result["sweeps"][1]["wall_s"]]
    assert result["cost_s"] == pytest.approx(result["wall_busy_s"][0] - result["wall_idle_s"][0], abs=0.051)
    assert result["ideal_cost_s"] == 1.5
    least = [min(s["run_s"][k] for s in result["sweeps"]) for k in result["sweeps"][0]["run_s"]]
    most = [max(s["run_s"][k] for s in result["sweeps"]) for k in result["sweeps"][0]["run_s"]]
    assert sum(least) - 0.1 <= result["one_worker_replay_s"] <= sum(most) + 0.1  # the median of two lies between
    for sweep in result["sweeps"]:
        assert sweep["timeline"][-1][1] == 0 and max(n for _, n in sweep["timeline"]) <= 2


def test_busy_takes_the_cost_from_the_walls_and_replays_the_runs_on_one_worker(tmp_path, monkeypatch):
    """``_busy`` on given sweeps (no run): the medians of the idle and busy walls, their difference, the
    ideal (S / workers), and the one-worker replay: every run one after another."""
    from noisymix_app.bench import bench_schedule
    from noisymix_app.reproduce.plans import PLANS
    from noisymix_app.sweep.plan import plan_from_reproduce

    runs = plan_from_reproduce(PLANS["laptop"], "/c", seeds=(0,), perturbed="/p")
    seconds = {spec.name: 10.0 * (i + 1) for i, spec in enumerate(runs.runs)}  # 10, 20, 30, 40
    walls = iter([50.0, 80.0, 70.0, 52.0])  # round 0: idle, busy; round 1: busy, idle
    made = []

    def sweep(runs_, folder, order, workers, busy=0.0, follow=False):
        made.append((folder.name, busy, follow))
        return {"busy_s": busy, "wall_s": next(walls), "run_s": dict(seconds)}

    monkeypatch.setattr(bench_schedule, "_sweep", sweep)
    result = bench_schedule._busy(60.0, runs, tmp_path, "longest", 2, 2, "laptop", 1)
    assert made == [("sweep-idle-0", 0.0, True), ("sweep-busy-0", 60.0, True),
                    ("sweep-busy-1", 60.0, True), ("sweep-idle-1", 0.0, True)]
    assert result["wall_idle_s"] == [50.0, 52.0] and result["wall_busy_s"] == [80.0, 70.0]
    assert result["cost_s"] == 75.0 - 51.0 and result["ideal_cost_s"] == 30.0
    assert result["one_worker_replay_s"] == sum(seconds.values()) == 100.0

