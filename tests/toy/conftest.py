"""One torch thread for the toy tests, as ``noisymix toy`` runs by default (``--threads 1``):
the toy's matrices are tiny, and on a shared CPU extra OpenMP threads only spin."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here on one torch thread (tests/conftest.py)."""
