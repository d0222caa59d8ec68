"""One torch thread for the theory tests: they are thousands of tiny tensor ops, for which a second
intra-op thread only adds spin-waiting (10x slower on a busy 2-core machine, measured)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
