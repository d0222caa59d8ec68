"""One torch thread for the theory tests: they are thousands of tiny tensor ops, for which a second
intra-op thread only adds spin-waiting (10x slower on a busy 2-core machine, measured)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here on one torch thread (tests/conftest.py)."""
