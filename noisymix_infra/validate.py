"""Checks of the values every command takes (a device, a seed): one line naming the key, before any
work.  The trainer's config, evaluation, the corruptions and the Python API share them (issue 42)."""

from __future__ import annotations

import re

__all__ = ["check_device_name", "check_seed"]


def check_device_name(name: str, *, allow_auto: bool = False, key: str = "device") -> None:
    """Refuse, in one line, device names the trainer, evaluation and corruptions cannot run on:
    torch knows ``meta`` (tensors without data: every result would be empty) and ``hpu`` & co.,
    which fail deep inside a step (issue 23).  Whether a CUDA device exists is checked later."""
    allowed = r"(auto|cpu|mps|cuda(:\d+)?)" if allow_auto else r"(cpu|mps|cuda(:\d+)?)"
    if not isinstance(name, str) or not re.fullmatch(allowed, name):
        choices = "auto, cpu, cuda, cuda:N or mps" if allow_auto else "cpu, cuda, cuda:N or mps"
        raise ValueError(f"{key}={name!r} is not a device this toolkit runs on; use {choices}")


def check_seed(seed: int, key: str = "seed") -> None:
    """torch's generators take seeds in 0 .. 2**63 - 1 (a larger one fails deep inside as
    "Overflow when unpacking long long"): say so in one line naming the key (issue 23)."""
    if not 0 <= seed < 2**63:
        raise ValueError(f"{key}={seed} is out of range: seeds are integers in 0 .. 2**63 - 1")
