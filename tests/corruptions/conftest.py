"""Make ``corruption_reference`` (the slow per-image references) importable from these tests
(the suite runs with --import-mode=importlib, which puts no test folder on sys.path), and run
them on one torch thread."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here on one torch thread (tests/conftest.py)."""
