"""Transform a model's features at a named stage, for one forward pass (feature mixing).

``model.stages`` names the mixing points: ``"input"`` is the output of the model's
``normalize`` submodule (the normalised image, as the public code mixes after normalisation),
any other name is a submodule whose output is replaced.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from torch import Tensor, nn

__all__ = ["stage_module", "transform_stage"]


def stage_module(model: nn.Module, stage: str) -> nn.Module:
    stages = getattr(model, "stages", ())
    if stage not in stages:
        raise ValueError(f"{type(model).__name__} has no mixing stage {stage!r}; stages: {stages}")
    return model.normalize if stage == "input" else getattr(model, stage)


@contextlib.contextmanager
def transform_stage(model: nn.Module, stage: str, fn: Callable[[Tensor], Tensor]) -> Iterator[None]:
    """Within the block, the output of ``stage`` is replaced by ``fn(output)``."""
    handle = stage_module(model, stage).register_forward_hook(lambda _m, _i, out: fn(out))
    try:
        yield
    finally:
        handle.remove()
