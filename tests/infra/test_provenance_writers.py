"""Every results file names the code that wrote it: ``provenance.commit`` equals ``git rev-parse
HEAD`` of this checkout (asked of git here, not of ``noisymix_infra.provenance``)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from noisymix_app.cli import main
from theory.results import checks_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def head() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except OSError:
        pytest.skip("git is not installed")
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return done.stdout.strip()


def test_theory_json(tmp_path, head):
    assert main(["verify", "--out", str(tmp_path), "--only", "prop1", "--no-sympy", "--points", "5"]) == 0
    record = json.loads((tmp_path / "theory.json").read_text())
    assert record["provenance"]["commit"] == head
    assert {c["id"] for c in checks_of(record)} == {"prop1"}


def test_theory_json_written_before_provenance_still_reads():
    rows = [{"id": "thm1", "verdict": "holds"}]
    assert checks_of(rows) == rows
    with pytest.raises(ValueError, match=r"theory\.json: expected"):
        checks_of({"rows": rows})


def test_toy_json(tmp_path, head):
    assert main(["toy", "--seeds", "1", "--epochs", "1", "--schemes", "baseline", "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "toy.json").read_text())["provenance"]["commit"] == head


def test_figures_report(tmp_path, head):
    (tmp_path / "results").mkdir()  # a toy.json: a folder without results is refused (issue 41)
    toy = Path(__file__).parents[1] / "figures" / "toy_fixture.json"
    (tmp_path / "results" / "toy.json").write_text(toy.read_text())
    assert main(["figures", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "out"),
                 "--no-examples"]) == 0
    assert f"commit `{head}`" in (tmp_path / "out" / "REPORT.md").read_text()


def test_benchmark_json(tmp_path, head, monkeypatch):
    from noisymix_app.bench import cli as bench_cli

    fake = types.ModuleType("fake_bench")
    fake.add_arguments = lambda parser: parser.add_argument("--size", type=int, default=3)
    fake.run = lambda args: {"size": args.size}
    monkeypatch.setitem(sys.modules, "fake_bench", fake)
    monkeypatch.setitem(bench_cli.BENCHMARKS, "fake", "fake_bench")
    out = tmp_path / "b.json"
    args = argparse.Namespace(name="fake", out=str(out), device="cpu", threads=None, options=["--size", "5"])
    assert bench_cli.run(args) == 0
    record = json.loads(out.read_text())
    assert record["size"] == 5 and record["provenance"]["commit"] == head
