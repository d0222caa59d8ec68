"""Transfer learning (tab:results_transfer): ImageNet ResNet-50s fine-tuned on CIFAR-10/100.

The recipe is the public NoisyMix ``transfer_learning/`` code (built on MadryLab ``robustness``):

- ``tools.replace_fc_layer``: the source's classifier is replaced by a fresh ``nn.Linear(2048, K)``
  (torch's default initialisation); every other weight is the source's (``load_source_backbone``).
- ``constants.DEFAULT_TRAIN_TRANSFORMS`` / ``DEFAULT_TEST_TRANSFORMS`` replace the robustness
  library's CIFAR transforms (``datasets.make_loaders_CIFAR10`` overrides them): training views
  are ``RandomResizedCrop(224)`` + ``RandomHorizontalFlip()`` of the 32x32 image; test images are
  ``Resize(256)`` + ``CenterCrop(224)``.  (The library's own CIFAR transforms, ``RandomCrop(32,
  padding=4)``, colour jitter and rotation, are not used.)  The model, its test resize and its
  normalisation are ``fullscale.models.transfer``; the training views
  ``fullscale.augment.resized_crop``.
- ``tools.get_fine_tuning_params(model, freeze_level)``: ``-1`` trains everything; level ``k``
  freezes every parameter up to and including those of ``layer{k}`` (``4``: only ``fc`` trains,
  the fixed-feature variant).  ``robustness.train`` then calls ``model.train()`` on the whole
  model every epoch, so the frozen layers' BatchNorm running statistics still update (and they
  normalise with batch statistics); ``freeze_bn_stats=True`` is the named alternative that keeps
  frozen BatchNorm layers in eval mode.
- ``parameters.csv`` (cifar10 / cifar100): SGD momentum 0.9 (no Nesterov), weight decay 5e-4,
  batch 64, 150 epochs, lr x 0.1 every 50 epochs (``fullscale.training.schedule.step_lr_factor``);
  lr 0.001 for full fine-tuning, 0.01 at ``freeze_level`` 4.

Data stays 32x32 uint8 on the device; the upsampling is batched per step
(``random_resized_crop_flip`` for training views, the model's own ``EvalResize`` for clean and
-C test images alike): no 224x224 copy of the data set exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from noisymix_infra.io import read_state_dict

if TYPE_CHECKING:
    from fullscale.training.config import TrainConfig

__all__ = ["FREEZE_LEVELS", "apply_freeze", "check_config", "frozen_batchnorms", "load_source_backbone",
           "set_train_mode", "trainable_parameter_names"]

#: -1: train everything; k: freeze up to and including layer k (the public ``--freeze-level``)
FREEZE_LEVELS = (-1, 1, 2, 3, 4)
_CLASSIFIER = ("fc.weight", "fc.bias")


# --------------------------------------------------------------------------- the source weights


def load_source_backbone(model: nn.Module, path: str | Path) -> dict[str, Tensor]:
    """Copy the ResNet-50 weights of ``path`` into ``model`` (a ``resnet50_transfer``), all but the
    classifier, which keeps its fresh initialisation (the public ``replace_fc_layer``).  Return the
    loaded backbone tensors.  The file must hold exactly torchvision's ResNet-50 keys (``fc.*`` and
    BatchNorm's ``num_batches_tracked`` may be absent, as in older torchvision files): anything else
    is one ValueError listing the missing and unexpected keys, or the mismatched shapes."""
    path = Path(path)
    state = read_state_dict(path, "a ResNet-50 state dict (expected names -> tensors)", nonempty=True)
    own = {k: v for k, v in model.state_dict().items() if k not in _CLASSIFIER}
    optional = {k for k in own if k.endswith("num_batches_tracked")}
    missing = sorted(set(own) - set(state) - optional)
    unexpected = sorted(set(state) - set(own) - set(_CLASSIFIER))
    if missing or unexpected:
        if not set(state) & set(own):
            raise ValueError(f"{path} is not a ResNet-50 state dict (none of its {len(state)} keys is one of "
                             f"torchvision's resnet50, e.g. {next(iter(state))!r})")
        raise ValueError(f"{path} is not a torchvision ResNet-50 state dict: missing {len(missing)} keys "
                         f"{_listing(missing)}; unexpected {len(unexpected)} keys {_listing(unexpected)}")
    shapes = [f"{k} {tuple(state[k].shape)} (expected {tuple(own[k].shape)})" for k in own
              if k in state and state[k].shape != own[k].shape]
    if shapes:
        raise ValueError(f"{path} is not a ResNet-50 of this width: {len(shapes)} shapes differ: {_listing(shapes)}")
    backbone = {k: state[k] for k in own if k in state}
    with torch.no_grad():
        for name, value in model.state_dict().items():
            if name in backbone:
                value.copy_(backbone[name])
    return backbone


def _listing(items: list[str], limit: int = 8) -> str:
    if not items:
        return "[]"
    more = f", ... ({len(items) - limit} more)" if len(items) > limit else ""
    return "[" + ", ".join(items[:limit]) + more + "]"


# --------------------------------------------------------------------------- the run's config


def check_config(cfg: TrainConfig) -> None:
    """The transfer fields of a ``TrainConfig`` that must agree (checked when training starts)."""
    transfer, dataset = cfg.transfer, cfg.data.dataset
    if cfg.is_transfer:
        if not transfer.source_weights:
            raise ValueError("model=resnet50_transfer fine-tunes a source: set source_weights=PATH "
                             "(a ResNet-50 state dict: a run's final.pt or a torchvision-format file)")
        if dataset not in ("cifar10", "cifar100"):
            raise ValueError(f"model=resnet50_transfer fine-tunes on cifar10 or cifar100, got dataset={dataset!r}")
        if not Path(transfer.source_weights).is_file():
            raise FileNotFoundError(f"source_weights={transfer.source_weights}: no such file")
    elif transfer.source_weights or transfer.freeze_level != -1 or transfer.freeze_bn_stats or transfer.source_row:
        raise ValueError("source_weights, source_row, freeze_level and freeze_bn_stats belong to transfer runs "
                         f"(model=resnet50_transfer); this run's model is {cfg.model.name!r}")
    if cfg.optim.lr_schedule == "step" and not cfg.optim.lr_milestones:
        raise ValueError("lr_schedule=step needs lr_milestones=E1,E2,... (epochs where lr is multiplied by lr_gamma)")


# --------------------------------------------------------------------------- freezing


def trainable_parameter_names(model: nn.Module, freeze_level: int) -> list[str]:
    """The parameters the public ``get_fine_tuning_params`` leaves trainable, in order: all for
    ``-1``; for level k, walking ``named_parameters()`` in order, everything up to and including
    the last parameter whose name contains ``layer{k}`` is frozen, the rest trains."""
    if freeze_level not in FREEZE_LEVELS:
        raise ValueError(f"freeze_level must be one of {FREEZE_LEVELS} (-1: train everything), got {freeze_level}")
    names = [name for name, _ in model.named_parameters()]
    if freeze_level == -1:
        return names
    tag = f"layer{freeze_level}"
    if not any(tag in name for name in names):
        raise ValueError(f"freeze_level {freeze_level}: the model has no {tag} parameters")
    trainable, freeze = [], True
    for name in names:  # the public loop, line by line
        if not freeze and tag not in name:
            trainable.append(name)
        if freeze and tag in name:
            freeze = False
    return trainable


def apply_freeze(model: nn.Module, freeze_level: int) -> list[str]:
    """``requires_grad = False`` on every parameter the public code freezes; return the frozen names.
    (Frozen parameters never get a gradient, so SGD, weight decay included, leaves them as they are.)"""
    keep = set(trainable_parameter_names(model, freeze_level))
    frozen = []
    for name, param in model.named_parameters():
        if name not in keep:
            param.requires_grad_(False)
            frozen.append(name)
    return frozen


def frozen_batchnorms(model: nn.Module) -> list[nn.Module]:
    """BatchNorm layers whose affine parameters are all frozen."""
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
            and all(not p.requires_grad for p in m.parameters(recurse=False))]


def set_train_mode(model: nn.Module, *, freeze_bn_stats: bool) -> None:
    """``model.train()`` as ``robustness.train`` does (frozen layers' BatchNorm statistics update);
    with ``freeze_bn_stats``, frozen BatchNorm layers stay in eval mode (running statistics fixed)."""
    model.train()
    if freeze_bn_stats:
        for bn in frozen_batchnorms(model):
            bn.eval()
