"""The README's promises: its test command is what CI runs, and every path it names exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def _readme_commands() -> list[str]:
    return [c.strip() for c in re.findall(r"```bash\n(.*?)\n```", _readme(), flags=re.S)]


def test_ci_runs_the_readme_test_command():
    commands = _readme_commands()
    assert commands[:2] == ["make reproduce", "make test"], "the set-up is two commands: the main job, the tests"
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in ci_lines


def _make_recipe(target: str) -> list[str]:
    """The recipe lines of ``target`` in the Makefile."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_the_make_targets_run_the_documented_commands():
    """`make test` is the fast suite the README names; `make reproduce` the main job into results/."""
    assert _make_recipe("test") == ['$(VENV)/bin/python -m pytest -n 2 -m "not slow" $(ARGS)']
    assert 'python -m pytest -n 2 -m "not slow"' in _readme()
    assert _make_recipe("reproduce") == ["$(VENV)/bin/noisymix reproduce --out results $(ARGS)"]
    # both make the environment first, and it is remade when the project's requirements change
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^reproduce: env$", makefile, flags=re.M) and re.search(r"^test: env$", makefile, flags=re.M)
    assert re.search(r"^\$\(VENV\)/\.ready: pyproject\.toml scripts/make-env$", makefile, flags=re.M)


def test_make_env_prefers_the_cpu_build_without_a_gpu_and_never_waits_long(tmp_path):
    """scripts/make-env's torch choice, with pip and nvidia-smi replaced by recorders: without a GPU
    and with the CPU index out of reach it asks pip as configured, at once (no retries on the index)."""
    import os
    import subprocess
    import sys

    bindir = tmp_path / "bin"
    bindir.mkdir()
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "calls"
    # a fake interpreter: `-c "import torch"` fails (no torch yet), the index probe fails (offline),
    # `-m pip ...` records its arguments
    (venv / "bin" / "python").write_text(
        "#!/usr/bin/env bash\n"
        f'if [ "$1" = "-m" ]; then echo "$@" >> {log}; exit 0; fi\n'
        "exit 1\n")
    (venv / "bin" / "python").chmod(0o755)
    (bindir / "nvidia-smi").write_text("#!/usr/bin/env bash\nexit 9\n")  # no GPU answers, even on a GPU host
    (bindir / "nvidia-smi").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "PYTHON": sys.executable}
    subprocess.run(["bash", str(ROOT / "scripts" / "make-env"), str(venv)], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=60)
    calls = log.read_text().splitlines()
    assert calls == ["-m pip install torch==2.13.0", "-m pip install -e .[test]"]


def test_every_path_the_readme_names_exists():
    text = _readme()
    candidates = set(re.findall(r"\]\(([^)#]+)\)", text))  # Markdown links and images
    candidates |= set(re.findall(r"`((?:noisymix|theory|toy|fullscale|figures|benchmarks|tests|docs)"
                                 r"/[\w./-]*)`", text))
    missing = [c for c in candidates
               if not c.startswith(("http", "results/", "runs/")) and not (ROOT / c).exists()]
    assert not missing, f"README names paths that do not exist: {missing}"


def _summary_block() -> str:
    from noisymix_app.reproduce.readme import BEGIN, END

    text = _readme()
    assert text.count(BEGIN) == 1 and text.count(END) == 1, "README needs one pair of reproduce-summary markers"
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def test_the_readme_shows_the_committed_reproduce_summary():
    """Issue 10, item 9: the small-scale numbers are a copy of the files `noisymix reproduce` wrote; issue
    52: the README shows the short block (the answer, the claims table, one figure) of the summary whose
    whole rendering is docs/reproduce-summary.md."""
    committed = (ROOT / "docs" / "reproduce-summary.md").read_text().strip()
    record = json.loads((ROOT / "docs" / "reproduce-summary.json").read_text())
    # the Markdown and the README's block are renderings of the JSON committed beside them
    from noisymix_app.reproduce.summary import render, render_readme
    assert render(record).strip() == committed, (
        "docs/reproduce-summary.md is not the rendering of docs/reproduce-summary.json: run "
        "`noisymix reproduce --out results --update-readme` (or `python -m noisymix_app.reproduce.summary "
        "--rerender docs/reproduce-summary.json` after a change of the report code alone)")
    assert _summary_block() == render_readme(record).strip(), (
        "README's small-scale section differs from the rendering of docs/reproduce-summary.json: run "
        "`noisymix reproduce --out results --update-readme`")


def test_the_reproduce_summary_is_not_stale():
    """The summary names its commit; the code that makes the numbers must not have changed since."""
    import shutil
    import subprocess

    from noisymix_app.reproduce.summary import CODE_PATHS

    record = json.loads((ROOT / "docs" / "reproduce-summary.json").read_text())
    commit = record["git"]["commit"]
    assert commit, "docs/reproduce-summary.json names no commit (made outside a git checkout?)"
    assert record["git"]["code_dirty"] is False, (
        "the reproduce summary was made from a tree with uncommitted changes to the code; commit, then rerun")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("git or the repository history is unavailable: cannot check the summary's commit")
    if subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip(f"the summary's commit {commit[:12]} is not in this clone's history (shallow clone?)")
    changed = subprocess.run(["git", "diff", "--name-only", commit, "HEAD", "--", *CODE_PATHS],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert not changed, (f"code changed after the reproduce summary's commit {commit[:12]}: {changed[:8]}; "
                         "rerun `noisymix reproduce --out results --update-readme` and commit the result")


def _finished(out: Path) -> str:
    """A summary.json that the README's writer takes: the main job's plan, finished and complete (issue 60)."""
    import dataclasses

    from noisymix_app.reproduce.plans import PLANS

    plan = json.loads(json.dumps(dataclasses.asdict(PLANS["laptop"])))
    return json.dumps({"plan": plan, "plan_name": "laptop", "complete": True, "theory": {"n": 1}, "toy": {"n": 1},
                       "table": {}, "runs": _runs_of(plan, out)})


def _runs_of(plan: dict, out: Path) -> dict:
    """The run hashes a summary records (issue 64): each run's weights, written under ``out``."""
    from noisymix_app.reproduce.summary import run_hashes

    for m in plan["methods"]:
        for s in plan["seeds"]:
            (out / "runs" / f"{m}-seed{s}").mkdir(parents=True, exist_ok=True)
            (out / "runs" / f"{m}-seed{s}" / "final.pt").write_bytes(f"{m}{s}".encode())
    return run_hashes(out, plan)


def test_update_readme_replaces_only_the_marked_block(tmp_path):
    from noisymix_app.reproduce.readme import BEGIN, END, update_readme

    out = tmp_path / "results"
    out.mkdir()
    (out / "SUMMARY.md").write_text("| a | 1.0 ± 0.1 |\n")
    (out / "summary.json").write_text(_finished(out))
    (tmp_path / "README.md").write_text(f"intro\n{BEGIN}\nold numbers\n{END}\nrest\n")
    update_readme(out, root=tmp_path)
    assert (tmp_path / "README.md").read_text() == f"intro\n{BEGIN}\n| a | 1.0 ± 0.1 |\n{END}\nrest\n"
    assert (tmp_path / "docs" / "reproduce-summary.md").read_text() == "| a | 1.0 ± 0.1 |\n"
    # with the short block beside it (issue 52) the README takes the block, docs/ the whole summary
    (out / "README-BLOCK.md").write_text("the answer\n")
    update_readme(out, root=tmp_path)
    assert (tmp_path / "README.md").read_text() == f"intro\n{BEGIN}\nthe answer\n{END}\nrest\n"
    assert (tmp_path / "docs" / "reproduce-summary.md").read_text() == "| a | 1.0 ± 0.1 |\n"
    (tmp_path / "README.md").write_text("no markers\n")
    with pytest.raises(ValueError, match="markers"):
        update_readme(out, root=tmp_path)


def test_the_readme_figures_come_from_the_run_of_its_summary():
    """Issue 22: each figure the README shows is the file ``--update-readme`` copied from the run
    whose summary the README prints (its sha256 is recorded beside that summary)."""
    from noisymix_app.reproduce.readme import readme_figures, stale_figures

    assert readme_figures(_readme()), "the README shows no figure of the main job"
    assert stale_figures(ROOT) == [], (
        "README figures differ from the ones recorded with docs/reproduce-summary.json: run "
        "`noisymix reproduce --out results --update-readme` and commit the result")


def test_a_stale_figure_is_caught(tmp_path):
    """The check above can fail: a run's figures are copied with their hashes; replacing one
    afterwards (a figure of another run) or showing one the run did not write is reported."""
    from noisymix_app.reproduce.readme import BEGIN, END, stale_figures, update_readme

    out = tmp_path / "results"
    (out / "figures").mkdir(parents=True)
    (out / "SUMMARY.md").write_text("numbers\n")
    (out / "summary.json").write_text(_finished(out))
    (out / "figures" / "a.png").write_bytes(b"figure of this run")
    (tmp_path / "README.md").write_text(f"{BEGIN}\nold\n{END}\n![a](docs/figures/a.png)\n")
    update_readme(out, root=tmp_path)
    assert (tmp_path / "docs" / "figures" / "a.png").read_bytes() == b"figure of this run"
    assert stale_figures(tmp_path) == []
    (tmp_path / "docs" / "figures" / "a.png").write_bytes(b"figure of an older run")
    assert stale_figures(tmp_path) == ["docs/figures/a.png"]
    (tmp_path / "README.md").write_text(f"{BEGIN}\nold\n{END}\n![b](docs/figures/b.png)\n")
    assert stale_figures(tmp_path) == ["docs/figures/b.png"]


def test_the_commands_table_lists_each_command_once():
    """Issue 21: the table listed `noisymix toy` and `noisymix train` twice, with different texts."""
    section = _readme().split("## The commands", 1)[1].split("\n## ", 1)[0]
    commands = [re.match(r"\| `noisymix ([\w-]+)", line).group(1) for line in section.splitlines()
                if line.startswith("| `noisymix ")]
    assert commands and len(commands) == len(set(commands)), commands
    from noisymix_app.cli import COMMANDS

    assert set(commands) == set(COMMANDS), "the table and the front door's commands differ"
