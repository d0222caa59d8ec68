"""The README's promises: its test command is what CI runs, and every path it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(.*?)\n```", _readme(), flags=re.S)
    test_command = next(c.strip() for c in commands if "pytest" in c)
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines


def test_every_path_the_readme_names_exists():
    text = _readme()
    candidates = set(re.findall(r"\]\(([^)#]+)\)", text))  # Markdown links and images
    candidates |= set(re.findall(r"`((?:noisymix|theory|toy|fullscale|figures|benchmarks|tests|docs)"
                                 r"/[\w./-]*)`", text))
    missing = [c for c in candidates
               if not c.startswith(("http", "results/", "runs/")) and not (ROOT / c).exists()]
    assert not missing, f"README names paths that do not exist: {missing}"
