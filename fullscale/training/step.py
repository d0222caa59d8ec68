"""One training step of every method of the CIFAR tables: the views, the draws, the forward pass
with M_{lambda,xi}, the loss.  Shared by the trainer (``loop``), the stacked members
(``members``), the benchmarks and the tests.

One step (``step_loss``):

1. crop + flip the batch; build the views: the image (Baseline, mixing methods), one AugMix
   view (AugMix without JSD), or clean + two AugMix views (JSD methods);
2. draw the partners and lambda once (``noisymix.draw_mix``; one lambda per batch, as the public
   code; lambda = 1 without mixing), then the mixing's batch op, if it has one (``Mixing.batch_op``
   in ``methods``: CutMix's box, or Puzzle Mix's masks: a saliency forward/backward of the clean
   loss on the unwrapped model, the block count, the graph cuts, transport;
   ``fullscale.puzzlemix.puzzlemix_step``; the label weight of each pair is its mask's mean),
   then the transform point k uniformly from ``model.stages`` (``input`` only for Mixup) on a CPU
   generator, so that choosing it never waits for the GPU;
3. forward with M_{lambda,xi} applied at stage k (``noisymix.noisy_feature_mixup``, same
   partners and lambda for the three views, additive level x view index as the public code);
4. L = CE(clean logits, mixed labels) + gamma JS(clean, aug1, aug2) (``noisymix.noisymix_loss``;
   a mixing with its own loss, Puzzle Mix, uses that: ``Mixing.loss``).

Steps 1-3 draw from the run's device generator in exactly this order (tests replay it).
Transfer runs (``model=resnet50_transfer``) make their views with RandomResizedCrop + flip
upsampled on the device (``fullscale.augment.resized_crop``); streamed ImageNet batches come
cropped and flipped by the loader.  Under torchrun with ``ddp_draws=shared`` every rank uses rank
0's lambda (``share_lambda``) and the same transform point, as one process on the whole batch
would, while crops, AugMix views, partners and noise stay per rank.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

import noisymix
from fullscale.augment import augmix, random_crop_flip, random_resized_crop_flip, to_float
from fullscale.training.config import TrainConfig
from fullscale.training.data import STREAMED
from fullscale.training.hooks import transform_stage
from fullscale.training.methods import Method
from noisymix.loss import noisymix_loss
from noisymix.mixing import draw_mix, mix_targets, noisy_feature_mixup

__all__ = ["StepDraws", "draw_stage", "draw_step", "epoch_entry", "epoch_sums", "history_row", "make_views",
           "method_loss", "mix_features", "share_lambda", "step_loss", "step_mix_config"]


def make_views(x_u8: Tensor, method: Method, cfg: TrainConfig, g: torch.Generator) -> Tensor:
    """Step 1: the views the network sees, (views x N, 3, H, W) float."""
    if cfg.is_transfer:  # the public transfer code's training view, upsampled to image_size on the device
        return random_resized_crop_flip(x_u8, cfg.data.image_size, generator=g)
    if cfg.data.dataset not in STREAMED:  # streamed batches come cropped and flipped by the loader
        x_u8 = random_crop_flip(x_u8, generator=g, padding=cfg.data.crop_padding)
    if not method.augmentations:
        return to_float(x_u8)
    if not method.jsd:
        return augmix(x_u8, cfg.augmix, generator=g)
    return torch.cat([to_float(x_u8), augmix(x_u8, cfg.augmix, generator=g),
                      augmix(x_u8, cfg.augmix, generator=g)])


def step_mix_config(method: Method, cfg: TrainConfig) -> noisymix.MixConfig:
    """The MixConfig a step of ``method`` uses: lambda only if it mixes, noise only if it injects."""
    alpha = cfg.mix.alpha if method.mixing != "none" else 0.0
    noise = cfg.mix.noise if method.noise else noisymix.NoiseConfig()
    return dataclasses.replace(cfg.mix, alpha=alpha, noise=noise)


def share_lambda(draw: noisymix.MixDraw, mix_cfg: noisymix.MixConfig, cfg: TrainConfig) -> None:
    """Under torchrun with ``ddp_draws=shared``: rank 0's lambda on every rank (in place), so a
    step mixes the whole batch with one lambda as the single-process recipe (one lambda per
    batch, the public code). Per-sample lambdas stay per rank, as the samples they belong to."""
    if (cfg.runtime.ddp_draws == "shared" and mix_cfg.mixes and not mix_cfg.lam_per_sample and dist.is_available()
            and dist.is_initialized() and dist.get_world_size() > 1):
        dist.broadcast(draw.lam, src=0)


def draw_stage(method: Method, model: nn.Module, stage_g: torch.Generator) -> str:
    """The step's transform point: uniform over ``model.stages`` (the input only for Mixup)."""
    stages = model.stages if method.any_stage else ("input",)
    return stages[int(torch.randint(len(stages), (1,), generator=stage_g))]


@dataclasses.dataclass
class StepDraws:
    """What steps 1-2 drew for one batch."""

    x: Tensor  # the views, after the mixing's batch op
    draw: noisymix.MixDraw  # partners and lambda
    mix_cfg: noisymix.MixConfig
    stage: str | None  # the transform point; None: no transform inside the network
    extra: Any  # what the mixing's batch op hands its loss (Puzzle Mix: the clean logits)


def draw_step(x_u8: Tensor, y: Tensor, method: Method, cfg: TrainConfig, core: nn.Module, g: torch.Generator,
              stage_g: torch.Generator) -> StepDraws:
    """Steps 1-2 for one batch, in the order of the run's generators; ``core``: the unwrapped
    model (its ``stages``; the saliency pass of Puzzle Mix)."""
    x = make_views(x_u8, method, cfg, g)
    mix_cfg = step_mix_config(method, cfg)
    draw = draw_mix(y.shape[0], mix_cfg, generator=g)
    share_lambda(draw, mix_cfg, cfg)
    extra = None
    if method.kind.batch_op is not None:
        x, draw, extra = method.kind.batch_op(core, x, y, draw, cfg, generator=g)
    stage = draw_stage(method, core, stage_g) if method.feature_transform else None
    return StepDraws(x, draw, mix_cfg, stage, extra)


def mix_features(h: Tensor, draw: noisymix.MixDraw, mix_cfg: noisymix.MixConfig, g: torch.Generator,
                 views: int) -> Tensor:
    """M_{lambda,xi} of the features ``h`` at the transform point; in float32 under bf16 autocast:
    the same random numbers and precision as on the CPU."""
    return noisy_feature_mixup(h.float(), draw, mix_cfg, generator=g, views=views).to(h.dtype)


def method_loss(logits: Tensor, targets: Tensor, method: Method, cfg: TrainConfig,
                extra: Any = None) -> noisymix.LossParts:
    """Step 4: the mixing's own loss if it has one, else CE + gamma JSD (``noisymix_loss``)."""
    if method.kind.loss is not None:
        return method.kind.loss(logits, targets, extra, cfg)
    return noisymix_loss(logits.float(), targets, views=method.views, gamma=cfg.jsd_weight,
                         jsd_variant=cfg.jsd_variant)


def step_loss(model: nn.Module, core: nn.Module, x_u8: Tensor, y: Tensor, method: Method, cfg: TrainConfig,
              num_classes: int, g: torch.Generator, stage_g: torch.Generator) -> noisymix.LossParts:
    """One step's loss (see the module docstring); ``core`` is the unwrapped model (hooks),
    ``g`` the device generator, ``stage_g`` the CPU generator of the transform point."""
    s = draw_step(x_u8, y, method, cfg, core, g, stage_g)
    x = s.x
    if x.is_cuda:  # the layout of the model's weights, set once after every input transform
        x = x.contiguous(memory_format=torch.channels_last)
    if s.stage is not None:
        with transform_stage(core, s.stage, lambda h: mix_features(h, s.draw, s.mix_cfg, g, method.views)):
            logits = model(x)
    else:
        logits = model(x)
    return method_loss(logits, mix_targets(y, s.draw, num_classes), method, cfg, s.extra)


# --------------------------------------------------------------------------- what a step records


def history_row(parts: noisymix.LossParts, images: int) -> Tensor:
    """A step's row of the epoch's loss history: images, loss, CE, JSD (on the device: no sync)."""
    return torch.stack([parts.total.new_tensor(float(images)), parts.total.detach(),
                        parts.cross_entropy.detach(), parts.jsd.detach()])


def epoch_sums(history: Tensor) -> Tensor:
    """(steps, 4) history -> images, then loss, CE and JSD summed over them."""
    return torch.cat([history[:, :1].sum(0), (history[:, :1] * history[:, 1:]).sum(0)])


def epoch_entry(epoch: int, sums: Tensor, lr: float, images: float, seconds: float) -> dict:
    """The metrics entry of an epoch (``metrics.jsonl``): mean loss parts over the ``sums[0]``
    images, the learning rate at its end, ``images`` trained per second."""
    n = float(sums[0])
    return {"epoch": epoch + 1, "loss": float(sums[1] / n), "cross_entropy": float(sums[2] / n),
            "jsd": float(sums[3] / n), "lr": lr, "images_per_s": images / seconds, "seconds": seconds}
