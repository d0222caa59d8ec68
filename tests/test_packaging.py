"""Issue 21, item 2: the installed distribution claims only import names that are ours alone.

``app``, ``figures`` and ``benchmarks`` are names of unrelated packages on the public index; the
folders keep the layout's names and install as ``noisymix_``-prefixed packages
(``[tool.setuptools.package-dir]`` in pyproject.toml)."""

from __future__ import annotations

import ast
import importlib.metadata
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPECTED_TOP_LEVEL = {"noisymix", "noisymix_infra", "noisymix_app", "noisymix_figures", "noisymix_benchmarks",
                      "theory", "toy", "fullscale"}
#: the bare names the folders had as packages before; no module may import them any more
FORMER_NAMES = {"app", "infra", "figures", "benchmarks"}


def _pyproject() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_installed_distribution_claims_exactly_the_expected_top_level_names():
    top_level = importlib.metadata.distribution("noisymix").read_text("top_level.txt")
    assert top_level is not None, "the installed noisymix distribution has no top_level.txt"
    assert set(top_level.split()) == EXPECTED_TOP_LEVEL


def test_the_package_list_covers_every_package_folder():
    """The explicit list in pyproject.toml (needed for the folder -> name map) misses no subpackage."""
    setuptools = _pyproject()["tool"]["setuptools"]
    folder_of = {name: folder for name, folder in setuptools["package-dir"].items()}
    listed = set(setuptools["packages"])
    expected = set()
    for name in EXPECTED_TOP_LEVEL:
        folder = ROOT / folder_of.get(name, name)
        for init in folder.rglob("__init__.py"):
            parts = init.parent.relative_to(folder).parts
            expected.add(".".join((name, *parts)))
    assert listed == expected


def test_no_module_imports_a_former_bare_name():
    offenders = []
    for path in ROOT.rglob("*.py"):
        if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
            continue  # virtual environments and caches
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                          if n.split(".")[0] in FORMER_NAMES]
    assert not offenders, offenders
