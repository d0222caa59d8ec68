"""NoisyMix in a user's own training loop, on any torch model: the trainer's step, one call.

``NoisyMix(model, num_classes, generator=g)`` holds the method's settings (a method of
``fullscale.training.methods``, ``noisymix`` by default, with its strengths; ``overrides`` as
``--set`` takes them) and the model's mixing points (module paths, ``default_stages`` of
``fullscale.training.hooks`` unless given).  ``nm.loss(x_u8, y)`` is one step's loss:

1. the views from the uint8 batch on its device: random crop + flip, then clean + two AugMix views
   (``make_views``: ``fullscale.augment.augmix``);
2. the partners and lambda (``noisymix.draw_mix``), then the mixing point, uniform over the stages,
   on a CPU generator (``draw_stage``);
3. the model's forward with M_{lambda,xi} at that point (``transform_stage`` + ``mix_features``);
4. CE on the mixed labels + gamma JSD (``method_loss``: ``noisymix.loss.noisymix_loss``).

These are the functions ``fullscale.training.step.step_loss`` calls, in its order, on the same
generators: on our models (whose ``stages`` it reads) a step here equals the trainer's on the same
seeds (tests/api/test_noisymix_api.py).  Mixings with a batch op (CutMix, Puzzle Mix) run it as the
trainer does; torchrun's shared lambda is the trainer's alone.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

import noisymix
from fullscale.training.generators import stream_seed
from fullscale.training.hooks import check_stages, default_stages, transform_stage
from fullscale.training.methods import get_method
from fullscale.training.presets import resolve_config
from fullscale.training.step import draw_stage, make_views, method_loss, mix_features, step_mix_config
from noisymix.mixing import draw_mix, mix_targets

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
        method, cfg, g = self.method, self.cfg, self.generator
        x = make_views(x_u8, method, cfg, g)
        mix_cfg = step_mix_config(method, cfg)
        draw = draw_mix(y.shape[0], mix_cfg, generator=g)
        extra = None
        if method.kind.batch_op is not None:
            x, draw, extra = method.kind.batch_op(self.model, x, y, draw, cfg, generator=g)
        stage = (draw_stage(method, types.SimpleNamespace(stages=self.stages), self.stage_generator)
                 if method.feature_transform else None)
        if x.is_cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        if stage is None:
            logits = self.model(x)
        else:
            with transform_stage(self.model, stage, lambda h: mix_features(h, draw, mix_cfg, g, method.views)):
                logits = self.model(x)
        return method_loss(logits, mix_targets(y, draw, self.num_classes), method, cfg, extra)

    def loss(self, x_u8: Tensor, y: Tensor) -> Tensor:
        """One step's loss (a scalar to ``backward``)."""
        return self.parts(x_u8, y).total

    def __repr__(self) -> str:
        return f"NoisyMix(method={self.method.name!r}, stages={self.stages})"
