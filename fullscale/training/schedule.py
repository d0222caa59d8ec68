"""The optimiser and its learning-rate schedule, per step.

SGD (Nesterov in the public NoisyMix/AugMix CIFAR and ImageNet code; plain momentum in the
transfer code) with a ``LambdaLR`` stepped once per training step:

- ``cosine``: from ``lr`` down to ``lr_min`` (the public code's ``get_lr``);
- ``step``: lr x ``lr_gamma`` at each epoch of ``lr_milestones`` (robustness' ``StepLR``, stepped
  once per epoch, of the public transfer code; the public Puzzle Mix recipe's milestones).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

from fullscale.training.config import TrainConfig

__all__ = ["cosine_lr_factor", "lr_factor", "make_optimizer", "make_scheduler", "step_lr_factor"]


def cosine_lr_factor(step: int, total: int, cfg: TrainConfig) -> float:
    """Learning-rate factor of the public code's LambdaLR: cosine from 1 to lr_min / lr."""
    optim = cfg.optim
    return (optim.lr_min + (optim.lr - optim.lr_min) * 0.5 * (1 + math.cos(step / total * math.pi))) / optim.lr


def step_lr_factor(step: int, steps_per_epoch: int, milestones: tuple[int, ...], gamma: float) -> float:
    """robustness' ``StepLR`` (stepped once per epoch) as a per-step factor: lr x gamma^(number of
    milestones reached by the current epoch); ``step_lr=50`` over 150 epochs is milestones 50, 100."""
    epoch = step // steps_per_epoch
    return gamma ** sum(epoch >= m for m in milestones)


def lr_factor(step: int, total: int, steps_per_epoch: int, cfg: TrainConfig) -> float:
    """The factor of ``cfg.optim.lr`` at ``step`` of ``total`` (``cfg.optim.lr_schedule``)."""
    if cfg.optim.lr_schedule == "step":
        return step_lr_factor(step, steps_per_epoch, cfg.optim.lr_milestones, cfg.optim.lr_gamma)
    return cosine_lr_factor(step, total, cfg)


def make_optimizer(parameters: Iterable[torch.nn.Parameter], cfg: TrainConfig) -> torch.optim.SGD:
    return torch.optim.SGD(parameters, lr=cfg.optim.lr, momentum=cfg.optim.momentum, nesterov=cfg.optim.nesterov,
                           weight_decay=cfg.optim.weight_decay)


def make_scheduler(optimizer: torch.optim.Optimizer, cfg: TrainConfig,
                   steps_per_epoch: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Per-step schedule over the run's ``epochs x steps_per_epoch`` steps."""
    total = cfg.optim.epochs * steps_per_epoch
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, total, steps_per_epoch, cfg))
