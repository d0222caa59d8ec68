"""One torch thread for these tests: the models are tiny, and two threads on a shared 2-core
machine spin against each other (measured: 16 s instead of 1.2 s for the -C end-to-end test)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here on one torch thread (tests/conftest.py)."""
