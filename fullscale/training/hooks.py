"""Transform a model's features at a named stage, for one forward pass (feature mixing).

A stage is a mixing point.  Our models name theirs in ``model.stages``: ``"input"`` is the output
of the model's ``normalize`` submodule (the normalised image, as the public code mixes after
normalisation), any other name is a submodule whose output is replaced.  Any other model names its
points by module path (``"layer1"``, ``"stages.2"``, ``"model.block1"``; ``nn.Module.get_submodule``):
the output of that submodule is replaced; ``"input"`` is the output of its ``normalize`` submodule
if it has one (RobustBench's ``Sequential(normalize=..., model=...)``), else the model's own input
(the image as the caller feeds it).  ``default_stages`` finds the points of the usual layouts (the
public code's k in {0, 1, 2, 3}: the input and the outputs of the first three residual stages):

* ``model.stages`` as a tuple of names: ours (PreActResNet, WRN, ResNet-50);
* ``layer1`` ... ``layer4``: torchvision's and timm's ResNets (and wide_resnet50_2): input, layer1-3;
* ``stages.0`` ... (an ``nn.Sequential`` called ``stages``): timm's stage-based models (ConvNeXt,
  RegNet, ...): input, stages.0-2;
* ``block1`` ... ``block3``: the public NoisyMix / RobustBench WideResNet: input, block1-3;
* ``Sequential(normalize=..., model=...)`` (RobustBench's ``normalize_model``): the inner model's,
  under ``model.``, the input being the normaliser's output.

Otherwise ``default_stages`` raises one line listing the model's candidate module paths.

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
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import Tensor, nn

__all__ = ["default_stages", "install_stage_hooks", "module_paths", "stage_module", "transform_stage"]

#: how many residual stages the public code mixes after (k in {0, 1, 2, 3}: the input, then three)
_RESIDUAL_POINTS = 3


def _declared_stages(model: nn.Module) -> tuple[str, ...] | None:
    """``model.stages`` when it is a tuple of names (ours); timm's ``stages`` is a module."""
    stages = getattr(model, "stages", None)
    if isinstance(stages, tuple | list) and all(isinstance(s, str) for s in stages):
        return tuple(stages)
    return None


def _input_is_model_input(model: nn.Module, stage: str) -> bool:
    """``"input"`` of a model without a ``normalize`` submodule: its own input is transformed."""
    return stage == "input" and not isinstance(getattr(model, "normalize", None), nn.Module)


def module_paths(model: nn.Module, depth: int = 2) -> list[str]:
    """The module paths of ``model`` up to ``depth`` dots deep (candidates for mixing points)."""
    return [name for name, _ in model.named_modules() if name and name.count(".") < depth]


def stage_module(model: nn.Module, stage: str) -> nn.Module:
    """The module whose output is the stage's features (for ``"input"`` without a ``normalize``
    submodule: the model itself, whose input is transformed)."""
    declared = _declared_stages(model)
    if declared is not None and stage in declared:
        return model.normalize if stage == "input" else getattr(model, stage)
    if stage == "input":
        normalize = getattr(model, "normalize", None)
        return normalize if isinstance(normalize, nn.Module) else model
    try:
        return model.get_submodule(stage) if isinstance(stage, str) and stage else _missing(model, stage)
    except AttributeError:
        return _missing(model, stage)


def _missing(model: nn.Module, stage: object) -> nn.Module:
    declared = _declared_stages(model)
    if declared is not None:  # ours: its named stages are the candidates
        raise ValueError(f"{type(model).__name__} has no mixing stage {stage!r}; its stages: {', '.join(declared)}")
    paths = module_paths(model)
    shown = ", ".join(paths[:40]) + (f", ... ({len(paths)})" if len(paths) > 40 else "")
    raise ValueError(f"{type(model).__name__} has no module {stage!r} to mix at; its module paths: {shown}")


def default_stages(model: nn.Module) -> tuple[str, ...]:
    """The mixing points of ``model`` (see the module docstring), or one line saying how to name them."""
    declared = _declared_stages(model)
    if declared is not None:
        return declared
    children = dict(model.named_children())
    if set(children) >= {"normalize", "model"} and isinstance(children["model"], nn.Module):
        inner = default_stages(children["model"])
        return ("input", *(f"model.{s}" for s in inner if s != "input"))
    for pattern in ("layer{}", "block{}"):
        names = [pattern.format(i) for i in range(1, _RESIDUAL_POINTS + 1)]
        if all(n in children for n in names):
            return ("input", *names)
    stages = children.get("stages")
    if isinstance(stages, nn.Sequential | nn.ModuleList) and len(stages) >= _RESIDUAL_POINTS:
        return ("input", *(f"stages.{i}" for i in range(_RESIDUAL_POINTS)))
    paths = module_paths(model, depth=1)
    raise ValueError(f"{type(model).__name__}: no known mixing points (torchvision/timm layer1..4, timm stages.N, "
                     f"WRN block1..3); name them, e.g. stages=('input', '{paths[0] if paths else 'features'}', ...); "
                     f"its modules: {', '.join(paths[:40])}")


def check_stages(model: nn.Module, stages: Sequence[str]) -> tuple[str, ...]:
    """``stages`` as a tuple, each resolved to a module of ``model`` (a name it lacks: one line)."""
    stages = tuple(stages)
    if not stages:
        raise ValueError("no mixing points given (stages is empty)")
    for stage in stages:
        stage_module(model, stage)
    return stages


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


def _slot_pre_hook(slot: _Slot, stage: str, _module: nn.Module, inputs: tuple) -> tuple:
    return (_apply_slot(slot, stage, inputs[0]), *inputs[1:])


def _hook(model: nn.Module, stage: str, output_hook: Callable, input_hook: Callable) -> object:
    """The forward hook (or, for a model's own input, pre-hook) of ``stage``; its handle."""
    if _input_is_model_input(model, stage):
        return model.register_forward_pre_hook(input_hook)
    return stage_module(model, stage).register_forward_hook(output_hook)


def install_stage_hooks(model: nn.Module, stages: Sequence[str] | None = None) -> None:
    """One permanent forward hook per stage of ``model`` (``stages``: default ``default_stages``),
    before ``torch.compile``; idempotent."""
    if getattr(model, "_stage_slot", None) is not None:
        return
    slot = _Slot()
    for stage in (default_stages(model) if stages is None else stages):
        _hook(model, stage, functools.partial(_slot_hook, slot, stage), functools.partial(_slot_pre_hook, slot, stage))
    model._stage_slot = slot


@contextlib.contextmanager
def transform_stage(model: nn.Module, stage: str, fn: Callable[[Tensor], Tensor]) -> Iterator[None]:
    """Within the block, the output of ``stage`` is replaced by ``fn(output)`` (a model's own
    ``"input"``: its input by ``fn(input)``)."""
    stage_module(model, stage)  # a stage the model lacks: one line, before anything runs
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
    handle = _hook(model, stage, lambda _m, _i, out: fn(out), lambda _m, inputs: (fn(inputs[0]), *inputs[1:]))
    try:
        yield
    finally:
        handle.remove()
