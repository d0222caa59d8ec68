"""`noisymix bench puzzlemix`'s graph-cut ways (issue 38) at toy sizes: the cuts one at a time, in the
old locked thread pool and in helper processes, side by side; its new options refused in one line.
The figures themselves are the command's, not these tests'."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("gco", reason="Puzzle Mix needs gco-wrapper (pip install 'noisymix[puzzlemix]')")

from noisymix_app.cli import main

TOY = ["--batch", "6", "--width", "4", "--steps", "1", "--warmup", "0"]


def test_bench_puzzlemix_times_each_cut_way_alone_and_in_the_step(tmp_path):
    out = tmp_path / "p.json"
    assert main(["bench", "--out", str(out), "puzzlemix", "--", *TOY, "--repeats", "2", "--workers", "2",
                 "--cut-blocks", "2,8", "--cut-repeats", "3", "--busy-cores", "1"]) == 0
    result = json.loads(out.read_text())
    assert result["busy_cores"] == 1 and result["trainer_cut_way"] == "processes"
    assert result["graph_cut_workers"] == 2 and len(result["load_average_after"]) == 3
    ways = ("one", "threads", "processes")
    assert set(result["graph_cut"]) == {"blocks_2", "blocks_8"}
    for figures in [*result["graph_cut"].values(), result["step_by_cut_way"]]:
        for way in ways:
            assert 0 < figures[way]["min_s"] <= figures[way]["median_s"]
        # each speedup is one's time over the way's, of the mins and of the medians; the times are
        # written rounded to 1e-5 s (toy cuts take ~1e-4 s), the speedups to 1e-3, from the times unrounded
        for way in ("threads", "processes"):
            speedup = figures["speedup_vs_one"][way]
            for stat in ("min", "median"):
                one, theirs = figures["one"][f"{stat}_s"], figures[way][f"{stat}_s"]
                low, high = (one - 5e-6) / (theirs + 5e-6), (one + 5e-6) / max(theirs - 5e-6, 1e-9)
                assert low - 5e-4 <= speedup[stat] <= high + 5e-4, (way, stat, speedup, one, theirs)
    # the trainer's own step (workers 2: helper processes) is the processes way's, and the plain step the same
    assert result["step_by_cut_way"]["processes"]["min_s"] == pytest.approx(result["puzzlemix_step_s"], abs=1e-4)
    assert result["step_by_cut_way"]["plain"]["min_s"] == pytest.approx(result["plain_step_s"], abs=1e-4)


def test_bench_puzzlemix_with_one_worker_times_the_one_way_alone(tmp_path):
    out = tmp_path / "p.json"
    assert main(["bench", "--out", str(out), "puzzlemix", "--", *TOY, "--repeats", "1", "--workers", "1",
                 "--cut-blocks", "4", "--cut-repeats", "1"]) == 0
    result = json.loads(out.read_text())
    assert result["trainer_cut_way"] == "one" and result["busy_cores"] == 0
    assert set(result["graph_cut"]["blocks_4"]) == {"one", "speedup_vs_one"}
    assert result["graph_cut"]["blocks_4"]["speedup_vs_one"] == {}
    assert result["step_by_cut_way"]["one"]["min_s"] == pytest.approx(result["puzzlemix_step_s"], abs=1e-4)


@pytest.mark.parametrize(("options", "named"), [
    (["--cut-ways", "one,gpu"], "--cut-ways"),
    (["--cut-ways", "one,one"], "--cut-ways"),
    (["--cut-ways", ""], "--cut-ways"),
    (["--workers", "1", "--cut-ways", "one,processes"], "--workers"),
    (["--cut-blocks", "3"], "--cut-blocks"),
    (["--cut-blocks", "8,x"], "--cut-blocks"),
    (["--cut-blocks", "0"], "--cut-blocks"),
    (["--cut-repeats", "0"], "--cut-repeats"),
    (["--busy-cores", "-1"], "--busy-cores"),
])
def test_bench_puzzlemix_refuses_a_bad_cut_option_in_one_line_and_writes_nothing(tmp_path, capsys, options,
                                                                                  named):
    out = tmp_path / "p.json"
    assert main(["bench", "--out", str(out), "puzzlemix", "--", *TOY, *options]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "\n" not in err and named in err and "Traceback" not in err
    assert captured.out == "" and not out.exists()
