"""Make ``corruption_reference`` (the slow per-image references) importable from these tests
(the suite runs with --import-mode=importlib, which puts no test folder on sys.path), and run
them on one torch thread."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """These tests run many small tensor ops: one intra-op thread is faster, and immune to the
    oversubscription that makes OpenMP's spinning threads crawl on a busy 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
