"""Issue 58, goal 6: the README's promise is generated from the first-run record, never typed."""

from __future__ import annotations

import pytest

from noisymix_app.bench.bench_first_run import BEGIN, END, promise, update_readme

RECORD = {"repo": "/x", "commit": "0123456789abcdef", "cpu_model": "AMD EPYC", "cpu_count": 2,
          "steps": [{"name": "make env", "wall_s": 54.0, "load_before": [0.1, 0.2, 0.3]},
                    {"name": "make reproduce", "wall_s": 690.0, "load_before": [0.25, 0.3, 0.3]},
                    {"name": "make test", "wall_s": 280.0, "load_before": [1.9, 0.8, 0.4]},
                    {"name": "reproduce analogue-methods", "wall_s": 1500.0, "load_before": [0.2, 0.9, 0.7]}]}


def test_the_promise_states_each_measured_figure_with_its_load():
    text = promise(RECORD)
    assert "fresh clones of `0123456789ab` on 2 cores of AMD EPYC" in text
    # make env as measured (the last invocation that made it, not necessarily the reproduce's): a figure of its own
    assert "`make env` 0.9 min; `make reproduce` 11.5 min (load average 0.25 before)" in text
    assert "before it" not in text
    assert "`make test` 4.7 min (load average 1.90 before)" in text
    # a plan's figure names the commit it was measured at: plans change (issue 63: the eight-method plan's seeds)
    assert "`noisymix reproduce --plan analogue-methods` 25.0 min (the plan as of `0123456789ab`; load average " \
           "0.20 before)" in text


def test_the_readme_takes_the_promise_between_its_markers_only(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{BEGIN}\nold promise\n{END}\nrest\n")
    update_readme(readme, RECORD)
    text = readme.read_text()
    assert "old promise" not in text and promise(RECORD) in text and text.startswith("intro\n")
    readme.write_text("no markers\n")
    with pytest.raises(ValueError, match="markers"):
        update_readme(readme, RECORD)


def test_the_command_clones_and_times_each_make_target_end_to_end(tmp_path):
    """The whole path in a second: a repository whose Makefile's targets are instant (`make env`, `make
    reproduce`, `make test`), cloned fresh, each target timed and the record written; its README block is
    refused (issue 64: a clone of another repository whose targets do nothing said "`make reproduce` 0.0 min")."""
    import json
    import subprocess

    from noisymix_app.cli import main

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "Makefile").write_text("env:\n\ttouch made-env\nreproduce:\n\ttest -f made-env\ntest:\n\ttrue\n")
    for argv in (["init", "-q"], ["add", "Makefile"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)
    readme = tmp_path / "README.md"
    readme.write_text(f"{BEGIN}\n{END}\n")
    out = tmp_path / "first-run.json"
    kept = tmp_path / "record.json"
    assert main(["bench", "first-run", "--out", str(out), "--", "--repo", str(repo), "--record", str(kept),
                 "--workdir", str(tmp_path / "w")]) == 0
    record = json.loads(out.read_text())
    assert [s["name"] for s in record["steps"]] == ["make env", "make reproduce"]
    assert (tmp_path / "w" / "clone" / "made-env").is_file()  # the targets ran in the clone, in order
    assert "`make reproduce`" in promise(record)
    # a second invocation adds `make test` to the kept record, keeps the main job's figure, replaces make env's
    assert main(["bench", "first-run", "--", "--repo", str(repo), "--record", str(kept), "--test",
                 "--no-reproduce", "--workdir", str(tmp_path / "w2")]) == 0
    both = json.loads(kept.read_text())
    assert sorted(s["name"] for s in both["steps"]) == ["make env", "make reproduce", "make test"]
    # the README block of another repository's instant targets: refused, the README untouched
    assert main(["bench", "first-run", "--", "--repo", str(repo), "--record", str(kept), "--test",
                 "--no-reproduce", "--workdir", str(tmp_path / "w3"), "--readme", str(readme)]) == 2
    assert readme.read_text() == f"{BEGIN}\n{END}\n"
    # a clone that is not fresh is refused before anything runs
    assert main(["bench", "first-run", "--", "--repo", str(repo), "--workdir", str(tmp_path / "w")]) == 2


@pytest.mark.slow
def test_a_fresh_clone_runs_end_to_end(tmp_path):
    """The benchmark's own path: a clone of this checkout, `make env` and the quick plan (several minutes)."""
    import argparse

    from noisymix_app.bench.bench_first_run import ROOT, run

    record = run(argparse.Namespace(repo=str(ROOT), workdir=str(tmp_path / "w"), test=False, plans="", quick=True,
                                    no_reproduce=False, record=None, readme=None))
    assert [s["name"] for s in record["steps"]] == ["make env", "reproduce quick"]  # the quick plan's path
    assert all(s["wall_s"] > 0 for s in record["steps"]) and len(record["commit"]) == 40
