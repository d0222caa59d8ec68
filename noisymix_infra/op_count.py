"""Count the aten operations a piece of code dispatches, and those that wait for the device.

A GPU step is fast when the host never waits for the device: the host queues kernels ahead while
the device works.  Any operation whose result the host must read (``.item()``, ``bool(t)``, a
boolean-mask index, ``nonzero``, a device-to-host copy) drains that queue.  Counting on the CPU
finds them without a GPU: the same Python code dispatches the same aten operations on either
device, so ``OpCounter`` around a CPU step counts what a GPU step would dispatch and which of those
would synchronise (issue 38: the counts are the CPU proxies of the GPU step's cost).

    with OpCounter() as ops:
        step()
    ops.total, ops.syncs, ops.sync_counts
"""

from __future__ import annotations

import collections

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["SYNC_OPS", "OpCounter"]

#: aten operations whose result the host reads back (or whose output shape depends on data):
#: on CUDA each waits for every kernel queued before it
SYNC_OPS = frozenset({
    "_local_scalar_dense",  # .item(), float(t), int(t), bool(t)
    "is_nonzero",
    "nonzero",
    "masked_select",
    "all",  # all/any: counted as the check they are part of (their result is read with bool())
    "any",
    "unique",
    "_unique2",
    "unique_consecutive",
    "bincount",  # sizes its output by the input's maximum
    "repeat_interleave",  # with a tensor of repeats: output size from the data
    "equal",
    "allclose",
    "_assert_async",
})


def _is_mask(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype == torch.bool


class OpCounter(TorchDispatchMode):
    """Counts every aten operation dispatched inside the block, and those in ``SYNC_OPS``, plus
    boolean-mask indexing (``x[mask]``, ``x[mask] = v``) and device-to-host copies, which also
    wait for the device."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()
        self.sync_counts: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        self.counts[name] += 1
        if name in SYNC_OPS:
            self.sync_counts[name] += 1
        elif name in ("index", "index_put", "index_put_") and len(args) > 1 and any(
                _is_mask(i) for i in (args[1] or ()) if i is not None):
            self.sync_counts[f"{name}(bool mask)"] += 1
        elif name in ("_to_copy", "copy_") and self._to_host(name, args, kwargs):
            self.sync_counts[f"{name}(device to host)"] += 1
        return func(*args, **kwargs)

    @staticmethod
    def _to_host(name: str, args: tuple, kwargs: dict) -> bool:
        if name == "copy_":
            dst, src = args[0], args[1]
            return isinstance(src, torch.Tensor) and src.device.type != "cpu" and dst.device.type == "cpu"
        src = args[0]
        device = kwargs.get("device")
        return (isinstance(src, torch.Tensor) and src.device.type != "cpu" and device is not None
                and torch.device(device).type == "cpu")

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def syncs(self) -> int:
        return sum(self.sync_counts.values())
