"""Moving small host-made tensors to the device without waiting for it."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["to_device"]


def to_device(t: Tensor, device: torch.device | str) -> Tensor:
    """``t`` on ``device``.  From the host to a GPU through pinned memory with ``non_blocking``: the
    copy is queued behind the device's work like a kernel, where a copy from pageable memory makes
    the host wait until every queued kernel has run (issue 38: draws made on the host reach the
    device without a synchronisation)."""
    device = torch.device(device)
    if t.device.type == "cpu" and device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)
