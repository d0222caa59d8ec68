"""End-to-end paths of `noisymix bench puzzlemix` and `noisymix bench transfer` at toy sizes (the
figures themselves are measured by the commands in benchmarks/RESULTS.md, not here)."""

from __future__ import annotations

import json
import math

from noisymix_app.cli import main


def test_bench_puzzlemix_times_both_steps_and_writes_the_ratio(tmp_path):
    out = tmp_path / "p.json"
    assert main(["bench", "--out", str(out), "puzzlemix", "--", "--batch", "4", "--width", "4", "--steps", "1",
                 "--repeats", "1", "--warmup", "0"]) == 0
    result = json.loads(out.read_text())
    assert result["puzzlemix_step_s"] > 0 and result["plain_step_s"] > 0
    # the step times are written rounded to 0.1 ms, the ratio from the unrounded times
    assert math.isclose(result["ratio"], result["puzzlemix_step_s"] / result["plain_step_s"], rel_tol=0.02)
    assert result["target_ratio"] == 2.3 and "commit" in result["provenance"]


def test_bench_transfer_counts_the_stored_data_of_both_ways(tmp_path):
    out = tmp_path / "t.json"
    assert main(["bench", "--out", str(out), "transfer", "--", "--batch", "2", "--subset", "4", "--image-size", "40",
                 "--steps", "1", "--repeats", "1", "--warmup", "0"]) == 0
    result = json.loads(out.read_text())
    # 4 CIFAR images stay uint8 32x32x3; the naive copy holds them as float32 at 40x40x3
    stored = result["stored_data_bytes_subset"]
    assert stored == {"ours": 4 * 3 * 32 * 32, "naive": 4 * 3 * 40 * 40 * 4}
    assert result["speed_ratio_ours_over_naive"] > 0


def test_bench_members_times_both_ways_and_writes_the_ratio(tmp_path):
    out = tmp_path / "m.json"
    assert main(["bench", "--out", str(out), "members", "--", "--members", "2", "--widths", "2",
                 "--thread-counts", "1", "--methods", "baseline", "--epochs", "1", "--batch-size", "256"]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["members"] == 2 and row["width"] == 2 and row["threads"] == 1
    assert math.isclose(row["speedup"], row["one_after_another_s"] / row["stacked_s"], rel_tol=0.02)


def test_bench_train_step_builds_the_stem_it_is_given(tmp_path):
    out = tmp_path / "s.json"
    assert main(["bench", "--out", str(out), "train-step", "--", "--batch", "2", "--width", "2", "--stem-stride",
                 "2", "--steps", "1", "--repeats", "1", "--warmup", "0"]) == 0
    result = json.loads(out.read_text())
    assert result["stem_stride"] == 2 and result["width"] == 2
    assert math.isclose(result["ratio"], result["noisymix_step_s"] / result["plain_step_s"], rel_tol=0.02)


def test_bench_evaluate_compares_batches_and_the_frozen_cpu_model(tmp_path):
    out = tmp_path / "e.json"
    assert main(["bench", "--out", str(out), "evaluate", "--", "--images", "16", "--width", "2",
                 "--compare-batches", "8"]) == 0
    result = json.loads(out.read_text())
    assert result["batch"] == 500 and set(result["model_images_per_s_by_batch"]) == {"500", "8"}  # CPU_BATCH
    assert result["frozen_used"] is True
    assert math.isclose(result["frozen_over_eager"], result["frozen_images_per_s"] / result["model_images_per_s"],
                        rel_tol=0.02)


def test_bench_protocol_refuses_a_bad_grid_point_before_any_work(tmp_path, capsys):
    for grid in ("8x", "8xtwelve", "0x12", "8x12x32x1"):
        assert main(["bench", "protocol", "--", "--grid", grid, "--workdir", str(tmp_path / "w")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--grid point" in err[0], err
    for bad in ("stem_stride=3", "no_such_key=1"):  # a bad --set override: the same
        assert main(["bench", "protocol", "--", "--grid", "8x1", "--set", bad, "--workdir", str(tmp_path / "w")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and bad.split("=")[0] in err[0], err
    assert not (tmp_path / "w").exists()  # no corrupted set was made
