"""One torch thread for the toy tests, as ``noisymix toy`` runs by default (``--threads 1``):
the toy's matrices are tiny, and on a shared CPU extra OpenMP threads only spin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
