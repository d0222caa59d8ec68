"""One training step of every method of the CIFAR tables: the views, the draws, the forward pass
with M_{lambda,xi}, the loss.  Shared by the trainer (``loop``), the stacked members
(``members``), the benchmarks and the tests.

One step:

1. crop + flip the batch; build the views: the image (Baseline, mixing methods), one AugMix
   view (AugMix without JSD), or clean + two AugMix views (JSD methods);
2. draw the partners and lambda (one lambda per batch, as the public code; lambda = 1 without
   mixing) and the transform point k uniformly from ``model.stages`` (``input`` only for Mixup);
   then the mixing's batch op, if it has one (``Mixing.batch_op``, ``fullscale.mixings``: CutMix's box, or
   Puzzle Mix's masks: a saliency forward/backward of the clean loss on the unwrapped model, the
   block count, the graph cuts, transport; ``fullscale.puzzlemix.puzzlemix_step``; the label weight
   of each pair is its mask's mean);
3. forward with M_{lambda,xi} applied at stage k (``noisymix.noisy_feature_mixup``, same
   partners and lambda for the three views, additive level x view index as the public code);
4. L = CE(clean logits, mixed labels) + gamma JS(clean, aug1, aug2) (``noisymix.noisymix_loss``;
   a mixing with its own loss, Puzzle Mix, uses that: ``Mixing.loss``).

Steps 1-2 but the batch op are made for a chunk of steps at once by the trainer
(``fullscale.training.draws``: one call's views and draws for many steps, every random choice on
the host, nothing read back from the device); ``drawn_step_loss`` runs steps 2 (the batch op) to 4
on one step's share.  ``step_loss`` is the one-batch door: ``draws.draw_step`` then the same.
The batch op and the noise draw from the run's device generator ``g``, in that order.

The step makes only the method's views: what the data needs first (the in-memory sets' crop and
flip, a transfer run's RandomResizedCrop + flip upsampled on the device, nothing for streamed
ImageNet, which its loader crops and flips) is the data source's own device transform
(``data.device_transform``), handed to the views.  Under torchrun with ``ddp_draws=shared`` every rank uses one
lambda and the same transform point, as one process on the whole batch would (the chunk's keys,
``draws.chunk_generators``), while crops, AugMix views, partners and noise stay per rank.

Nothing in a step reads a value back from the device: argument checks happen where the
configuration is read, and the loss history stays on the device (``history_row``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

import noisymix
from fullscale.mixings import kind_config
from fullscale.training.config import TrainConfig
from fullscale.training.draws import StepDraws, draw_step, make_views, step_mix_config
from fullscale.training.hooks import transform_stage
from fullscale.training.methods import Method
from noisymix.loss import noisymix_loss
from noisymix.mixing import mix_targets, noisy_feature_mixup

__all__ = ["StepDraws", "apply_batch_op", "draw_step", "drawn_step_loss", "epoch_entry", "epoch_sums", "history_row",
           "make_views", "method_loss", "mix_features", "step_loss", "step_mix_config"]


def mix_features(h: Tensor, draw: noisymix.MixDraw, mix_cfg: noisymix.MixConfig, g: torch.Generator,
                 views: int) -> Tensor:
    """M_{lambda,xi} of the features ``h`` at the transform point; in float32 under bf16 autocast:
    the same random numbers and precision as on the CPU."""
    return noisy_feature_mixup(h.float(), draw, mix_cfg, generator=g, views=views).to(h.dtype)


def method_loss(logits: Tensor, targets: Tensor, method: Method, cfg: TrainConfig,
                extra: Any = None) -> noisymix.LossParts:
    """Step 4: the mixing's own loss if it has one, else CE + gamma JSD (``noisymix_loss``)."""
    if method.kind.loss is not None:
        return method.kind.loss(logits, targets, extra, kind_config(cfg, method.kind))
    return noisymix_loss(logits.float(), targets, views=method.views, gamma=cfg.jsd_weight,
                         jsd_variant=cfg.jsd_variant)


def apply_batch_op(s: StepDraws, y: Tensor, method: Method, cfg: TrainConfig, core: nn.Module,
                   g: torch.Generator) -> StepDraws:
    """The rest of step 2: the mixing's batch op (CutMix's box, Puzzle Mix's masks) on the views."""
    if method.kind.batch_op is None:
        return s
    x, draw, extra = method.kind.batch_op(core, s.x, y, s.draw, kind_config(cfg, method.kind), generator=g)
    return StepDraws(x, draw, s.mix_cfg, s.stage, extra)


def drawn_step_loss(model: nn.Module, core: nn.Module, s: StepDraws, y: Tensor, method: Method, cfg: TrainConfig,
                    num_classes: int, g: torch.Generator) -> noisymix.LossParts:
    """Steps 2 (the batch op) to 4 of one step whose views and draws ``s`` are made; ``core`` is the
    unwrapped model (hooks), ``g`` the run's device generator (batch op, noise)."""
    s = apply_batch_op(s, y, method, cfg, core, g)
    x = s.x
    if x.is_cuda:  # the layout of the model's weights, set once after every input transform
        x = x.contiguous(memory_format=torch.channels_last)
    if s.stage is not None:
        with transform_stage(core, s.stage, lambda h: mix_features(h, s.draw, s.mix_cfg, g, method.views)):
            logits = model(x)
    else:
        logits = model(x)
    return method_loss(logits, mix_targets(y, s.draw, num_classes), method, cfg, s.extra)


def step_loss(model: nn.Module, core: nn.Module, x_u8: Tensor, y: Tensor, method: Method, cfg: TrainConfig,
              num_classes: int, g: torch.Generator, stage_g: torch.Generator) -> noisymix.LossParts:
    """One batch's loss (the one-batch door): views, partners and lambda from ``g``, the transform
    point from ``stage_g`` (``draws.draw_step``), then ``drawn_step_loss``."""
    return drawn_step_loss(model, core, draw_step(x_u8, y, method, cfg, core.stages, g, stage_g), y, method, cfg,
                           num_classes, g)


# --------------------------------------------------------------------------- what a step records


def history_row(parts: noisymix.LossParts, images: int) -> Tensor:
    """A step's row of the epoch's loss history: images, loss, CE, JSD (on the device: no sync; a
    fill, not a tensor copied from the host, which would wait for the device)."""
    return torch.stack([parts.total.new_full((), float(images)), parts.total.detach(),
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
