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

import operator
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
        if not isinstance(model, nn.Module):  # its modules are the mixing points
            raise TypeError(f"model must be a torch nn.Module (its modules are the mixing points), "
                            f"got {type(model).__name__}")
        num_classes = _class_count(num_classes)
        for name, given in (("generator", generator), ("stage_generator", stage_generator)):
            if not isinstance(given, torch.Generator) and not (name == "stage_generator" and given is None):
                raise TypeError(f"{name} must be a torch.Generator (e.g. torch.Generator(device).manual_seed(0)), "
                                f"got {_type_name(given)}")
        get_method(method)  # an unknown method: one line
        settings = [f"{k}={v}" for k, v in (overrides or {}).items()]
        if not crop_flip:  # the trainer's switch for batches cropped and flipped by their loader
            settings.append("data.dataset=imagenet")
        self.cfg = resolve_config(method, settings)
        self.method = get_method(self.cfg.method)
        self.model, self.num_classes, self.generator = model, num_classes, generator
        self.stages = check_stages(model, default_stages(model) if stages is None else stages)
        self.stage_generator = stage_generator or noisymix.generator_for(
            stream_seed(generator.initial_seed(), _STAGE_STREAM))

    def parts(self, x_u8: Tensor, y: Tensor) -> noisymix.LossParts:
        """One step's loss and its parts (CE, JSD) for the uint8 batch ``x_u8`` (N, 3, H, W), labels ``y``."""
        _check_batch(x_u8, y)
        s = draw_step(x_u8, y, self.method, self.cfg, self.stages, self.generator, self.stage_generator)
        return drawn_step_loss(self._logits, self.model, s, y, self.method, self.cfg, self.num_classes,
                               self.generator)

    def _logits(self, x: Tensor) -> Tensor:
        """The model's forward, refused (one line) unless it gives one row of ``num_classes`` logits
        per image: a tuple or dict forward was an ``AttributeError`` deep in the loss (issue 48)."""
        logits = self.model(x)
        if not isinstance(logits, Tensor):
            raise ValueError(f"the model's forward returns {type(logits).__name__}, not a tensor of logits "
                             f"(images, classes): give NoisyMix a model whose forward returns the logits alone")
        if logits.ndim != 2 or logits.shape != (x.shape[0], self.num_classes):
            raise ValueError(f"the model gives logits of shape {tuple(logits.shape)} for {x.shape[0]} images; "
                             f"expected ({x.shape[0]}, {self.num_classes}): num_classes={self.num_classes}")
        return logits

    def loss(self, x_u8: Tensor, y: Tensor) -> Tensor:
        """One step's loss (a scalar to ``backward``)."""
        return self.parts(x_u8, y).total

    def __repr__(self) -> str:
        return f"NoisyMix(method={self.method.name!r}, stages={self.stages})"


def _type_name(value: object) -> str:
    """``int``, ``numpy.random._generator.Generator``: a type by its module too, where the bare name
    (``Generator``) would read as the expected one."""
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _class_count(num_classes: object) -> int:
    """``num_classes`` as an int >= 2, refused (one line) otherwise: 10.7 silently became 10, and 0
    or -1 were a traceback in the targets (issue 48)."""
    if isinstance(num_classes, bool):
        raise TypeError(f"num_classes must be a whole number >= 2, got {num_classes!r}")
    try:
        count = operator.index(num_classes)
    except TypeError:
        raise TypeError(f"num_classes must be a whole number >= 2, got {num_classes!r} "
                        f"({type(num_classes).__name__})") from None
    if count < 2:
        raise ValueError(f"num_classes must be >= 2 (the classes of the labels), got {count}")
    return count


def _check_batch(x_u8: object, y: object) -> None:
    """Refuse (one line) what is not a uint8 batch (N >= 1, 3, H, W) with N integer labels, before
    any draw: a float batch in [0, 1] was "not 3 views of 8 samples", an empty batch a
    ZeroDivisionError, labels of another length a reshape error, uint8 labels a scatter error
    (issue 48)."""
    if not isinstance(x_u8, Tensor) or not isinstance(y, Tensor):
        raise TypeError(f"x_u8 and y must be torch tensors, got {type(x_u8).__name__} and {type(y).__name__}")
    if x_u8.dtype != torch.uint8:
        raise TypeError(f"x_u8 must be a uint8 image batch (N, 3, H, W) in 0..255, got {x_u8.dtype} (images in "
                        "[0, 1]: (x * 255).round().to(torch.uint8)); the augmentations work on uint8 as the trainer's")
    if x_u8.ndim != 4 or x_u8.shape[1] != 3:
        raise ValueError(f"x_u8 must be a batch of images (N, 3, H, W), got shape {tuple(x_u8.shape)}")
    if x_u8.shape[0] == 0:
        raise ValueError("x_u8 is an empty batch (0 images): a step needs at least one image")
    if y.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"y must hold class indices as int64 (torch.long), got {y.dtype}: y.long()")
    if y.ndim != 1 or y.shape[0] != x_u8.shape[0]:
        raise ValueError(f"y must be one label per image: {x_u8.shape[0]} images, labels of shape {tuple(y.shape)}")
