"""``scripts/gpu-check``, the one prepared script of a GPU call (issue 53), under hostile use (issue 54).

Probed: ``scripts/gpu-check --smok OUT`` (a typo) was taken as OUT, the real OUT as the public code,
and the GPU mode ran, writing ``/log.txt`` and ``/official.json`` at the root and running ``pip install
-e .``; it also deleted and wrote fixed paths under ``/tmp``.  Here: an unknown option, a bad count of
arguments, an OUT that holds files and a PUBLIC_CODE without ``cifar.py`` are each refused in one line
with nothing written; the script names no fixed path and installs only under ``--install``; and the CPU
smoke run (slow) writes under OUT alone, every JSON there beside the machine that made it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu-check"


def _run(args: list[str], cwd: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env})


@pytest.mark.parametrize("args", [
    ["--smok", "OUT"], ["OUT", "--smok"], ["--train200", "OUT"], ["-x", "OUT"],  # unknown options
    [], ["OUT", "CODE", "EXTRA"], [""],  # arguments
    ["--train-200", "OUT", "CODE"],  # goal 3 takes no public code
])
def test_bad_arguments_are_refused_in_one_line_and_nothing_is_written(args, tmp_path):
    (tmp_path / "CODE").mkdir()
    (tmp_path / "CODE" / "cifar.py").write_text("")
    before = sorted(p.name for p in tmp_path.iterdir())
    done = _run(args, tmp_path)
    assert done.returncode == 2, done
    err = done.stderr.strip()
    assert err.startswith("gpu-check: ") and "\n" not in err and done.stdout == "", err
    if any(a.startswith("-") and a not in ("--train-200",) for a in args):
        assert "unknown option" in err and next(a for a in args if a.startswith("-")) in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no OUT, no log, nothing


def test_an_out_that_holds_files_and_a_code_folder_without_cifar_py_are_refused(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("keep")
    done = _run([str(full)], tmp_path)
    assert done.returncode == 2 and "not an empty folder" in done.stderr and "\n" not in done.stderr.strip()
    assert [p.name for p in full.iterdir()] == ["mine.txt"]
    (tmp_path / "file").write_text("x")
    assert _run([str(tmp_path / "file")], tmp_path).returncode == 2
    (tmp_path / "code").mkdir()
    done = _run([str(tmp_path / "new"), str(tmp_path / "code")], tmp_path)
    assert done.returncode == 2 and "no cifar.py" in done.stderr and not (tmp_path / "new").exists()


def test_help_names_the_usage_and_writes_nothing(tmp_path):
    done = _run(["--help"], tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("usage: scripts/gpu-check")
    assert list(tmp_path.iterdir()) == []


def test_the_script_names_no_fixed_path_and_installs_only_when_asked():
    code = [line for line in SCRIPT.read_text().splitlines() if not line.lstrip().startswith("#")]
    text = "\n".join(code)
    # a path of its own, not one under a variable: "$out/tmp" is OUT's, " /tmp" or "=/tmp" a fixed one
    assert not re.search(r"(?<![\w}])/(tmp|log\.txt|official\.json)\b", text)
    installs = [i for i, line in enumerate(code) if "pip install" in line]
    assert len(installs) == 1 and code[installs[0] - 1].strip() == 'if [ "$install" = 1 ]; then'


def test_the_gpu_mode_without_cuda_is_refused_in_one_line_and_writes_nothing(tmp_path):
    """Issue 60: the GPU mode on a machine where torch sees no CUDA exited 0, its CUDA tests all skipped and
    recorded as passed.  It is refused before OUT is made (CUDA hidden here, so a CUDA machine tests it too)."""
    done = _run([str(tmp_path / "out")], tmp_path, CUDA_VISIBLE_DEVICES="", TOTAL_SECONDS="1")  # a regression ends soon
    err = done.stderr.strip()
    assert done.returncode == 2 and err.startswith("gpu-check: ") and "\n" not in err and done.stdout == "", done
    assert "CUDA" in err and "--smoke" in err
    assert list(tmp_path.iterdir()) == []


RECORD = SCRIPT.with_name("junit-record")


def _junit(tmp_path, outcomes: list[str]) -> Path:
    cases = "".join(f'<testcase classname="tests.gpu.t" name="test_{i}" time="0.1">'
                    + ("" if outcome == "passed" else f'<{outcome} message="m">m</{outcome}>') + "</testcase>"
                    for i, outcome in enumerate(outcomes))
    path = tmp_path / "tests.xml"
    path.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
    return path


@pytest.mark.parametrize("outcomes, mode, verdict, status", [
    (["passed", "passed"], "--gpu", "passed", 0),
    (["skipped", "skipped"], "--gpu", "failed", 1),  # all skipped: never passed
    (["passed", "skipped"], "--gpu", "failed", 1),
    (["passed", "failure"], "--gpu", "failed", 1),
    (["passed", "skipped"], "--smoke", "passed with skips", 0),  # a CPU skips the CUDA tests: said so
    (["skipped"], "--smoke", "nothing ran", 0),
    ([], "--gpu", "failed", 1),
])
def test_the_tests_record_never_counts_a_skipped_test_as_passed(tmp_path, outcomes, mode, verdict, status):
    target = tmp_path / "tests.json"
    done = subprocess.run(["python3", str(RECORD), mode, str(_junit(tmp_path, outcomes)), str(target), "0", "3"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == status, done
    record = json.loads(target.read_text())
    assert record["verdict"].startswith(verdict), record
    assert record["counts"]["passed"] == outcomes.count("passed")
    assert record["counts"]["skipped"] == outcomes.count("skipped")


def test_a_missing_junit_report_is_recorded_as_an_error(tmp_path):
    target = tmp_path / "tests.json"
    done = subprocess.run(["python3", str(RECORD), "--gpu", str(tmp_path / "none.xml"), str(target), "0", "3"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and json.loads(target.read_text())["verdict"].startswith("failed")


@pytest.mark.slow
def test_the_cpu_smoke_run_writes_under_out_alone_and_stamps_every_json(tmp_path):
    """The whole smoke run (a few minutes on two loaded cores): every part runs, each JSON of the
    script and the benchmarks holds the machine, and nothing is written outside OUT (HOME and TMPDIR
    point to watched folders)."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    out = tmp_path / "out"
    done = _run(["--smoke", str(out)], tmp_path, timeout=1500, HOME=str(home), TMPDIR=str(tmp), TOTAL_SECONDS="1200")
    assert done.returncode == 0, done.stdout[-3000:]
    assert list(home.iterdir()) == [] and list(tmp.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "out", "tmp"]
    for name in ("machine.json", "tests.json", "official.json", "reproduce.json", "summary.json", "verdicts.json"):
        assert (out / name).is_file(), name
    for path in [*out.glob("*.json"), out / "gpu" / "gpu.json"]:
        if path.name != "machine.json":
            stamp = json.loads(path.read_text())["gpu_check"]
            assert stamp["device"] == "cpu" and stamp["torch"], path
    tests = json.loads((out / "tests.json").read_text())
    assert tests["counts"]["failure"] == tests["counts"]["error"] == 0 and tests["counts"]["passed"] > 0
    assert json.loads((out / "reproduce.json").read_text())["exit"] == 0
    assert "ours" in json.loads((out / "official.json").read_text())
