"""Issue 64 (cause 2 and 1): ``noisymix bench first-run`` checks ``--record`` and the README before the clone
and any timed step, in one line; ``--readme`` states only a whole record of this project's own commits (a
clone of another repository is refused before its steps run, a "0.0 min" make target and a record without
a promised figure are refused before the README is written); ``--record`` merges under a lock, re-reading
the file there, so two invocations at once lose nothing."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest

from noisymix_app.bench import bench_first_run
from noisymix_app.bench.bench_first_run import BEGIN, END, ROOT, merge_record, update_readme
from noisymix_app.cli import main


def _repo(tmp_path):
    """A repository of another project whose make targets are instant (each leaves a file in the clone)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "Makefile").write_text("env:\n\ttouch made-env\nreproduce:\n\ttouch made-reproduce\ntest:\n\ttrue\n")
    for argv in (["init", "-q"], ["add", "Makefile"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)
    return repo


def _head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def _whole(commit: str) -> dict:
    return {"commit": commit, "cpu_model": "x", "cpu_count": 2,
            "steps": [{"name": n, "wall_s": 600.0, "commit": commit, "load_before": [0.1, 0.1, 0.1]}
                      for n in ("make env", "make reproduce", "make test", "reproduce analogue-methods")]}


@pytest.mark.parametrize(("content", "words"), [
    ('{"steps": "x"}', "'steps' must be a list"),
    ("[1]", "must be a JSON object, got a list"),
    ('{"steps": [{"name": "make env", "wall_s": "fast"}]}', "wall_s must be seconds"),
    ('{"steps": [1]}', "steps[0] is not a step"),
    ('{"steps": [', "not a first-run record"),
])
def test_a_bad_record_is_one_line_before_the_clone(content, words, tmp_path, capsys):
    record = tmp_path / "record.json"
    record.write_text(content)
    work = tmp_path / "w"
    assert main(["bench", "first-run", "--", "--repo", str(_repo(tmp_path)), "--record", str(record),
                 "--workdir", str(work)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err
    assert not work.exists() and record.read_text() == content  # no clone, no step, the record as it was


def test_a_readme_without_markers_or_a_promise_left_out_is_refused_before_the_clone(tmp_path, capsys):
    repo, work = _repo(tmp_path), tmp_path / "w"
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    assert main(["bench", "first-run", "--", "--repo", str(repo), "--workdir", str(work), "--readme",
                 str(readme)]) == 2
    assert "markers" in capsys.readouterr().err
    readme.write_text(f"a\n{BEGIN}\nold\n{END}\n")
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"steps": [{"name": "make test", "wall_s": 300.0}]}))
    for flags, missing in ((["--quick", "--test", "--plans", "analogue-methods"], "make reproduce"),
                           (["--no-reproduce", "--plans", "analogue-methods", "--record", str(record)],
                            "make reproduce"),
                           (["--test"], "reproduce analogue-methods")):
        assert main(["bench", "first-run", "--", "--repo", str(repo), "--workdir", str(work), "--readme",
                     str(readme), *flags]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"would leave out {missing}" in err, err
    assert not work.exists() and readme.read_text() == f"a\n{BEGIN}\nold\n{END}\n"


def test_a_clone_of_another_repository_is_refused_for_the_readme_before_its_steps(tmp_path, capsys):
    record = tmp_path / "record.json"
    record.write_text(json.dumps(_whole(_head())))
    readme = tmp_path / "README.md"
    readme.write_text(f"{BEGIN}\nold\n{END}\n")
    work = tmp_path / "w"
    assert main(["bench", "first-run", "--", "--repo", str(_repo(tmp_path)), "--workdir", str(work), "--record",
                 str(record), "--readme", str(readme)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not hold" in err, err
    assert not (work / "clone" / "made-env").exists()  # no step was timed
    assert readme.read_text() == f"{BEGIN}\nold\n{END}\n"


def test_a_make_target_of_no_time_or_a_missing_figure_is_not_written_into_the_readme(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"{BEGIN}\nold\n{END}\n")
    record = _whole(_head())
    record["steps"][1]["wall_s"] = 0.4  # make reproduce that did nothing: "0.0 min"
    with pytest.raises(ValueError, match=r"`make reproduce` took 0\.4 s"):
        update_readme(readme, record)
    record = _whole(_head())
    record["steps"] = record["steps"][:2]
    with pytest.raises(ValueError, match="no figure of make test"):
        update_readme(readme, record)
    assert readme.read_text() == f"{BEGIN}\nold\n{END}\n"
    with pytest.raises(ValueError, match="does not hold"):
        bench_first_run._check_own(_whole("0" * 40))
    bench_first_run._check_own(_whole(_head()))  # this project's own commit: taken


def test_two_records_at_once_lose_nothing(tmp_path, monkeypatch):
    """Another invocation holds the record's lock and writes its step; this one, asking meanwhile, waits and
    merges into what the other wrote (read under the lock), so both figures are kept."""
    from noisymix_app.analogue import freeze

    path = tmp_path / "record.json"
    path.write_text(json.dumps({"steps": []}))
    asked = threading.Event()
    real = freeze.package_lock

    def watched(target, *args, **kwargs):
        asked.set()
        return real(target, *args, **kwargs)

    monkeypatch.setattr(freeze, "package_lock", watched)
    step = {"wall_s": 60.0, "commit": "c"}
    with real(path):
        other = threading.Thread(target=merge_record, args=(path, {"steps": [{"name": "make test", **step}]}))
        other.start()
        assert asked.wait(60)
        path.write_text(json.dumps({"steps": [{"name": "make env", **step}]}))  # the first invocation's merge
    other.join(60)
    assert sorted(s["name"] for s in json.loads(path.read_text())["steps"]) == ["make env", "make test"]
