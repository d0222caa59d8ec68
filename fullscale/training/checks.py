"""How a run is told to have diverged: a non-finite loss, non-finite weights or logits, or a finite
loss that ended far above its start (issue 32).

A non-finite loss stops the run naming the step and the loss parts before the next checkpoint is
written, so the last good one stays.  On CUDA the loop reads the loss history every
``CUDA_CHECK_EVERY`` steps (not every step, which would stall the GPU queue); on the CPU the check
runs before every update.  Weights are checked before every checkpoint and at the end
(``check_weights``): the last update of an epoch is taken after its loss was checked.  A run whose
losses stayed finite but ended far above their start, or at chance accuracy after a blow-up, is
reported as diverged in the same way (``divergence``) and not saved as ``final.pt``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from fullscale.augment import to_float
from fullscale.data import ImageSet
from fullscale.data.imagenet import StreamingImageNet
from fullscale.training.config import TrainConfig
from fullscale.training.data import InMemoryData

__all__ = ["CPU_CHECK_EVERY", "CUDA_CHECK_EVERY", "DIVERGED_RATIO", "NonFiniteLoss", "accuracy", "check_finite",
           "check_interval", "check_weights",
           "divergence", "end_accuracy"]

# steps between the checks of the loss history on CUDA (each check waits for the GPU), and on the
# CPU (where a check waits for nothing: every step, before its update)
CUDA_CHECK_EVERY = 25
CPU_CHECK_EVERY = 1


def check_interval(device: torch.device) -> int:
    """Steps between two reads of the loss history on ``device``."""
    return CUDA_CHECK_EVERY if device.type == "cuda" else CPU_CHECK_EVERY

# A finished run is reported as diverged (``divergence``) when its last epoch's training
# cross-entropy is more than DIVERGED_RATIO x its start, or when the cross-entropy rose above that
# during the run and the accuracy ended at chance.  The start is the first epoch's mean, capped at
# ln(classes), what a model that knows nothing scores: a run that blew up within its first epoch
# (lr=1.5: 2.8, 81, 3022) is measured against where it should have started.  Healthy runs end
# below their start (digits, epochs=2: 1.8 -> 0.84 baseline, 2.0 -> 1.6 NoisyMix, 1.7 -> 0.90
# AugMix+JSD), so a factor 2 leaves a wide margin; the cross-entropy, not the total, because
# gamma x JSD (gamma 12) may grow while a healthy model learns.  Chance alone is not enough: a
# short healthy run (the tests' 2 steps, or 3 epochs of 512 digits at lr 0.3: 10-26 % held out)
# is still at chance without having diverged.
DIVERGED_RATIO = 2.0
# images of the training set the chance test scores, when the run holds none out
_CHANCE_IMAGES = 1000


class NonFiniteLoss(RuntimeError):
    """The run diverged: the loss or the weights became NaN or infinite (the message names the
    epoch, step and loss parts), or a finite loss ended far above its start (``divergence``).
    The name stays for the callers that tell it from a crash (``noisymix_app.sweep`` never retries it)."""


def check_finite(history: Tensor, start: int, stop: int, epoch: int, checkpoint: Path, who: str = "") -> int:
    """Raise ``NonFiniteLoss`` naming the first step in ``[start, stop)`` whose loss is not
    finite; return ``stop`` (the steps checked so far).  ``who``: the run, where the model trains
    several (`` (seed 3)``)."""
    bad = ~torch.isfinite(history[start:stop, 1:]).all(1)
    if bool(bad.any()):
        step = start + int(bad.nonzero()[0, 0])
        total, ce, jsd = (float(v) for v in history[step, 1:])
        kept = checkpoint if checkpoint.exists() else "none (first epoch)"
        raise NonFiniteLoss(f"non-finite loss at epoch {epoch + 1}, step {step + 1}{who}: total={total}, "
                            f"cross_entropy={ce}, jsd={jsd}; stopped, the last good checkpoint is {kept}")
    return stop


def divergence(metrics: list[dict], num_classes: int,
                accuracy: Callable[[], tuple[float, int] | None]) -> str | None:
    """Why a run whose every loss was finite diverged all the same, or ``None`` (thresholds: see
    ``DIVERGED_RATIO``): its last epoch's training cross-entropy is more than ``DIVERGED_RATIO`` x
    its start, or the cross-entropy rose above that during the run and ``accuracy()`` (accuracy,
    images scored; ``None``: not measurable) ended at chance (at most 1.5 x 1/classes, or 3
    binomial standard errors above it).  ``accuracy`` is called only after such a rise, so healthy
    runs pay nothing.  (lr=1.5 on digits ended at a loss of 1017 and 10 % accuracy, "finished";
    issue 32.)"""
    ce = [float(m.get("cross_entropy", m.get("loss", math.nan))) for m in metrics]
    if not ce or not all(math.isfinite(v) for v in ce):  # non-finite losses stop the run as they happen
        return None
    classes = max(int(num_classes), 2)
    start = min(ce[0], math.log(classes))
    limit = DIVERGED_RATIO * start
    if ce[-1] > limit:
        return (f"diverged: the training cross-entropy ended at {ce[-1]:.4g}, more than {DIVERGED_RATIO:g} x its "
                f"start {start:.4g} (first epoch {ce[0]:.4g}, ln {classes} = {math.log(classes):.4g})")
    if max(ce) > limit:
        scored = accuracy()
        if scored is not None:
            acc, n = scored
            chance = 1 / classes
            at_chance = max(1.5 * chance, chance + 3 * math.sqrt(chance * (1 - chance) / max(n, 1)))
            if acc <= at_chance:
                return (f"diverged: the training cross-entropy rose to {max(ce):.4g} (more than {DIVERGED_RATIO:g} x "
                        f"its start {start:.4g}) and the accuracy ended at chance ({acc:.1%} of {n} images; "
                        f"chance {chance:.1%})")
    return None


def end_accuracy(core: nn.Module, data: InMemoryData | StreamingImageNet, heldout: ImageSet | None,
                  cfg: TrainConfig) -> tuple[float, int] | None:
    """The final model's accuracy and the images it was scored on, for ``divergence``: the
    held-out images if any, else the first ``_CHANCE_IMAGES`` training images; ``None`` where the
    model's inputs are made per step (streamed ImageNet, upsampled transfer runs)."""
    if heldout is not None:
        return accuracy(core, heldout.images, heldout.labels), len(heldout)
    if not isinstance(data, InMemoryData) or cfg.is_transfer:
        return None
    n = min(len(data), _CHANCE_IMAGES)
    return accuracy(core, data.images[:n], data.labels[:n]), n


def check_weights(core: nn.Module, when: str, checkpoint: Path, probe: Tensor | None = None) -> None:
    """Raise ``NonFiniteLoss`` before saving weights that hold NaN/inf, or finite weights whose
    logits on ``probe`` (a few training images) are not finite (a diverged run: lr 1e38 leaves
    weights of 3e37 that overflow in the next layer; issue 23): the last update of an epoch is
    taken after its loss was checked, so only the weights show it went wrong.  Every checkpoint
    passed this check when it was saved, so the one kept is good."""
    bad = [name for name, value in core.state_dict().items()
           if value.is_floating_point() and not bool(torch.isfinite(value).all())]
    what = f"non-finite weights {when} ({bad[0]}{' and others' if len(bad) > 1 else ''})" if bad else None
    if what is None and probe is not None:
        was_training = core.training
        core.eval()
        with torch.inference_mode():
            finite = bool(torch.isfinite(core(probe).float()).all())
        core.train(was_training)
        if not finite:
            what = f"diverged {when}: the weights are finite, the logits of {len(probe)} training images are not"
    if what:
        kept = checkpoint if checkpoint.exists() else "none (first epoch)"
        raise NonFiniteLoss(f"{what}; not saved, the last good checkpoint is {kept}")


@torch.inference_mode()
def accuracy(model: nn.Module, images_u8: Tensor, labels: Tensor, batch: int = 1000) -> float:
    was_training = model.training
    model.eval()
    correct = sum(int((model(to_float(images_u8[i:i + batch])).argmax(1) == labels[i:i + batch]).sum())
                  for i in range(0, len(labels), batch))
    model.train(was_training)
    return correct / len(labels)
