"""Transform a model's features at a named stage, for one forward pass (feature mixing).

``model.stages`` names the mixing points: ``"input"`` is the output of the model's
``normalize`` submodule (the normalised image, as the public code mixes after normalisation),
any other name is a submodule whose output is replaced.

Under ``torch.compile`` a hook registered per step (a new closure holding that step's lambda,
partners and noise draws) is traced into: the mixing code's generator calls and argument checks
break the graph about two dozen times (22 graphs for PreActResNet-18 on torch 2.13), and its
guards depend on which module holds a hook and on the closure.  ``install_stage_hooks`` instead
puts one permanent hook on every stage, once, before compiling: each calls a compiler-disabled
function that applies the step's transform if its stage is the step's.  The compiled model is
then a small fixed set of graphs (the segments between stages: 6 for PreActResNet-18), the same
whatever the stage, lambda or noise of a step; the transform itself runs eagerly (a few
elementwise ops and a gather).
``transform_stage`` uses those hooks when they are installed.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

__all__ = ["install_stage_hooks", "stage_module", "transform_stage"]


def stage_module(model: nn.Module, stage: str) -> nn.Module:
    stages = getattr(model, "stages", ())
    if stage not in stages:
        raise ValueError(f"{type(model).__name__} has no mixing stage {stage!r}; stages: {stages}")
    return model.normalize if stage == "input" else getattr(model, stage)


class _Slot:
    """The transform of the current forward pass: ``(stage, fn)`` or ``None``."""

    current: tuple[str, Callable[[Tensor], Tensor]] | None = None


@torch.compiler.disable
def _apply_slot(slot: _Slot, stage: str, out: Tensor) -> Tensor:
    current = slot.current
    if current is None or current[0] != stage:
        return out
    return current[1](out)


def _slot_hook(slot: _Slot, stage: str, _module: nn.Module, _inputs: object, out: Tensor) -> Tensor:
    return _apply_slot(slot, stage, out)


def install_stage_hooks(model: nn.Module) -> None:
    """One permanent forward hook per stage of ``model`` (before ``torch.compile``; idempotent)."""
    if getattr(model, "_stage_slot", None) is not None:
        return
    slot = _Slot()
    for stage in getattr(model, "stages", ()):
        stage_module(model, stage).register_forward_hook(functools.partial(_slot_hook, slot, stage))
    model._stage_slot = slot


@contextlib.contextmanager
def transform_stage(model: nn.Module, stage: str, fn: Callable[[Tensor], Tensor]) -> Iterator[None]:
    """Within the block, the output of ``stage`` is replaced by ``fn(output)``."""
    module = stage_module(model, stage)
    slot = getattr(model, "_stage_slot", None)
    if slot is not None:
        if slot.current is not None:
            raise RuntimeError(f"transform_stage: a transform at {slot.current[0]!r} is already active")
        slot.current = (stage, fn)
        try:
            yield
        finally:
            slot.current = None
        return
    handle = module.register_forward_hook(lambda _m, _i, out: fn(out))
    try:
        yield
    finally:
        handle.remove()
