"""One torch thread for these tests: the models are tiny, and two threads on a shared 2-core
machine spin against each other (measured: 16 s instead of 1.2 s for the -C end-to-end test)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
