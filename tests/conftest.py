"""Shared test set-up: quiet progress bars, one torch thread per xdist worker, hypothesis
profiles, and a clean skip for GPU-only tests on machines without CUDA."""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import HealthCheck, settings

os.environ.setdefault("NOISYMIX_PROGRESS", "0")
os.environ.setdefault("MPLBACKEND", "Agg")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two workers on two cores: more intra-op threads would only oversubscribe them.
    torch.set_num_threads(1)

settings.register_profile(
    "default", deadline=None, max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
