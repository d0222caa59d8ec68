"""NoisyMix in a user's own training loop, on any torch model: the trainer's step, one call.

``NoisyMix(model, num_classes, generator=g)`` holds the method's settings (a method of
``fullscale.training.methods``, ``noisymix`` by default, with its strengths; ``overrides`` as
``--set`` takes them) and the model's mixing points (module paths, ``default_stages`` of
``fullscale.training.hooks`` unless given).  ``nm.loss(x_u8, y)`` is one step's loss:

1. the views from the uint8 batch on its device: random crop + flip, then clean + two AugMix views
   (``fullscale.augment.augmix``), the partners and lambda, and the mixing point, uniform over the
   stages, on a CPU generator (``fullscale.training.draws.draw_step``);
2. the model's forward with M_{lambda,xi} at that point, then CE on the mixed labels + gamma JSD
   (``fullscale.training.step.drawn_step_loss``: ``transform_stage``, ``mix_features``,
   ``noisymix.loss.noisymix_loss``).

One implementation with two doors: these are the trainer's own functions (``step.step_loss`` is
the same two calls), so on our models a step here equals the trainer's on the same seeds
(tests/api/test_noisymix_api.py).  The trainer makes step 1 for a chunk of steps at once
(``draws.RunDraws``); here it is one batch at a time.  Mixings with a batch op (CutMix, Puzzle
Mix) run it as the trainer does; torchrun's shared lambda is the trainer's alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

import noisymix
from fullscale.training.draws import draw_step
from fullscale.training.generators import stream_seed
from fullscale.training.hooks import check_stages, default_stages
from fullscale.training.methods import get_method
from fullscale.training.presets import resolve_config
from fullscale.training.step import drawn_step_loss

__all__ = ["NoisyMix"]

#: the stream of the transform point's CPU generator, as the trainer seeds it (``Generators.create``)
_STAGE_STREAM = 501


class NoisyMix:
    """One step of ``method`` on ``model``: ``loss(x_u8, y)`` (see the module docstring).

    Args:
        model: any ``nn.Module`` taking float images in [0, 1] (N, 3, H, W) (normalising inside,
            or mixing on the images as given).
        num_classes: the number of classes of ``y``.
        generator: the views, draws and noise (on the batch's device; the only source of randomness).
        stages: the mixing points as module paths (``"input"``: the input); default ``default_stages``.
        method: a method name (``noisymix``, ``augmix_jsd``, ``nfm``, ...); its strengths are the defaults.
        overrides: config keys to change, e.g. ``{"mix.noise.add": 0.3, "jsd_weight": 6}``.
        crop_flip: random crop (``data.crop_padding`` pixels) and flip first; ``False`` for batches
            that come cropped and flipped.
        stage_generator: the CPU generator of the mixing point; default seeded from ``generator``'s
            seed as the trainer seeds its own.
    """

    def __init__(self, model: nn.Module, num_classes: int, *, generator: torch.Generator,
                 stages: Sequence[str] | None = None, method: str = "noisymix",
                 overrides: Mapping[str, Any] | None = None, crop_flip: bool = True,
                 stage_generator: torch.Generator | None = None) -> None:
        get_method(method)  # an unknown method: one line
        settings = [f"{k}={v}" for k, v in (overrides or {}).items()]
        if not crop_flip:  # the trainer's switch for batches cropped and flipped by their loader
            settings.append("data.dataset=imagenet")
        self.cfg = resolve_config(method, settings)
        self.method = get_method(self.cfg.method)
        self.model, self.num_classes, self.generator = model, int(num_classes), generator
        self.stages = check_stages(model, default_stages(model) if stages is None else stages)
        self.stage_generator = stage_generator or noisymix.generator_for(
            stream_seed(generator.initial_seed(), _STAGE_STREAM))

    def parts(self, x_u8: Tensor, y: Tensor) -> noisymix.LossParts:
        """One step's loss and its parts (CE, JSD) for the uint8 batch ``x_u8`` (N, 3, H, W), labels ``y``."""
        s = draw_step(x_u8, y, self.method, self.cfg, self.stages, self.generator, self.stage_generator)
        return drawn_step_loss(self.model, self.model, s, y, self.method, self.cfg, self.num_classes, self.generator)

    def loss(self, x_u8: Tensor, y: Tensor) -> Tensor:
        """One step's loss (a scalar to ``backward``)."""
        return self.parts(x_u8, y).total

    def __repr__(self) -> str:
        return f"NoisyMix(method={self.method.name!r}, stages={self.stages})"
