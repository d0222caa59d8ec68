"""The training configuration: one frozen dataclass, written to ``RUN/config.json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from fullscale.augment import AugMixConfig
from fullscale.puzzlemix import PuzzleMixConfig
from noisymix.loss import PUBLIC_CODE_JSD_WEIGHT
from noisymix.mixing import MixConfig

__all__ = ["TrainConfig"]


@dataclass(frozen=True)
class TrainConfig:
    """Defaults are the public NoisyMix CIFAR recipe: SGD Nesterov 0.9, lr 0.1, weight decay
    5e-4, batch 128, 200 epochs, cosine schedule per step down to 1e-6."""

    preset: str = "baseline"  # the preset's name (set by --preset; recorded, not read)
    method: str = "baseline"  # baseline, augmix_jsd, nfm, noisymix, ... (train --list-presets)
    model: str = "preactresnet18"  # preactresnet18, wrn28_4, wrn28_2, resnet50, resnet50_transfer
    width: int = 0  # 0: the model's own default (64 for PreActResNet-18); smaller for CPU runs
    # preactresnet18 only: 2 makes its first convolution stride 2 (a quarter of the arithmetic; the
    # laptop plan's upscaled digits), 1 is the public model (fullscale.models.preact_resnet)
    stem_stride: int = 1
    dataset: str = "cifar10"  # cifar10, cifar100, digits (built in), imagenet
    data_root: str = ""  # the training data folder (--data-root); digits needs none
    epochs: int = 200  # training epochs
    batch_size: int = 128  # images per step (per process under torchrun)
    lr: float = 0.1  # initial learning rate of SGD
    lr_min: float = 1e-6  # the cosine schedule's final learning rate
    momentum: float = 0.9  # SGD momentum
    nesterov: bool = True  # Nesterov momentum (the public code)
    weight_decay: float = 5e-4  # L2 weight decay of SGD
    seed: int = 0  # initial weights, data order and every draw (0 .. 2**63 - 1)
    mix: MixConfig = field(default_factory=lambda: MixConfig(alpha=0.0))
    augmix: AugMixConfig = field(default_factory=AugMixConfig)
    puzzlemix: PuzzleMixConfig = field(default_factory=PuzzleMixConfig)  # method=puzzlemix only
    jsd_weight: float = PUBLIC_CODE_JSD_WEIGHT  # gamma, the weight of the Jensen-Shannon stability term
    jsd_variant: Literal["exact", "augmix"] = "exact"  # exact: generalized JSD; augmix: the AugMix code's form
    crop_padding: int = 4  # pixels of zero padding before the random crop (CIFAR, digits)
    train_subset: int = 0  # > 0: train on the first N training images only (quick runs)
    heldout: int = 0  # > 0: hold out the last N training images for per-epoch accuracy
    device: str = "auto"  # auto, cpu, cuda or cuda:N
    amp: bool = True  # bf16 autocast on CUDA
    compile: bool = False  # torch.compile the model (CUDA)
    # Under torchrun: "shared" draws each step's lambda and transform point alike on every rank,
    # as one process training on the whole batch would (the public code's recipe); per-sample
    # noise, partners and augmentations stay per rank. "per_rank": every rank draws its own.
    ddp_draws: Literal["shared", "per_rank"] = "shared"
    # Under torchrun on CUDA: batch statistics over the whole batch (torch.nn.SyncBatchNorm);
    # one process already normalises over its whole batch, so it changes nothing there.
    sync_bn: bool = False
    # The training images' side: dataset=imagenet streams RandomResizedCrops of this side from disk
    # (fullscale.data.imagenet); transfer runs upsample their 32x32 images to it on the device.
    image_size: int = 224
    # dataset=imagenet (data_root: the ImageNet root, train/<wnid>/*.JPEG): decoding processes per
    # rank, the JPEG decoder, the fraction of unreadable files that stops the run, and (any dataset)
    # the steps between mid-epoch checkpoints (0: at epoch ends only; an ImageNet epoch is long).
    workers: int = 8
    decoder: str = "auto"
    max_bad_fraction: float = 0.001
    checkpoint_every: int = 0
    # Learning-rate schedule: "cosine" (per step, down to lr_min: the public CIFAR code) or "step"
    # (lr x lr_gamma at each epoch of lr_milestones: robustness' StepLR of the transfer code).
    lr_schedule: Literal["cosine", "step"] = "cosine"
    lr_milestones: tuple[int, ...] = ()
    lr_gamma: float = 0.1
    # Transfer learning (fullscale.transfer, model=resnet50_transfer): the source ResNet-50 state
    # dict (a run's final.pt or a torchvision-format file), the table row it stands for
    # (fullscale.vocabulary.TRANSFER_ROWS: baseline, puzzlemix, mixup, autoaugment, augmix, noisymix),
    # the public --freeze-level (-1: train everything; 4: only the classifier), whether frozen
    # BatchNorm layers keep their statistics (the public code lets them update).
    source_weights: str = ""
    source_row: str = ""
    freeze_level: int = -1
    freeze_bn_stats: bool = False

    def __post_init__(self) -> None:
        check_device_name(self.device, allow_auto=True)
        check_seed(self.seed)
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0 or self.lr_min < 0 or self.lr_min > self.lr:
            raise ValueError(f"need 0 <= lr_min <= lr and lr > 0, got lr={self.lr}, lr_min={self.lr_min}")
        if self.stem_stride not in (1, 2):
            raise ValueError(f"stem_stride must be 1 (the public model) or 2, got {self.stem_stride}")
        if self.width < 0 or self.train_subset < 0 or self.heldout < 0:
            raise ValueError("width, train_subset and heldout must be >= 0")
        if self.image_size < 1 or self.workers < 0 or self.checkpoint_every < 0:
            raise ValueError(f"need image_size >= 1, workers >= 0, checkpoint_every >= 0, got {self.image_size}, "
                             f"{self.workers}, {self.checkpoint_every}")
        if not 0 <= self.max_bad_fraction <= 1:
            raise ValueError(f"max_bad_fraction must be in [0, 1], got {self.max_bad_fraction}")
        if self.lr_schedule not in ("cosine", "step"):
            raise ValueError(f"lr_schedule must be 'cosine' or 'step', got {self.lr_schedule!r}")
        if list(self.lr_milestones) != sorted(set(self.lr_milestones)) or any(m < 1 for m in self.lr_milestones):
            raise ValueError(f"lr_milestones must be increasing epochs >= 1, got {self.lr_milestones}")
        if not 0 < self.lr_gamma <= 1:
            raise ValueError(f"lr_gamma must be in (0, 1], got {self.lr_gamma}")
        if self.freeze_level not in (-1, 1, 2, 3, 4):
            raise ValueError(f"freeze_level must be -1 (train everything) or 1..4, got {self.freeze_level}")
        # the fields that must agree with each other (a transfer run needs source_weights, ...) are
        # checked when training starts (fullscale.transfer.check_config): overrides apply one at a time
        if self.ddp_draws not in ("shared", "per_rank"):
            raise ValueError(f"ddp_draws must be 'shared' or 'per_rank', got {self.ddp_draws!r}")

    @property
    def transfer(self) -> bool:
        """A fine-tuning run of ``fullscale.transfer``."""
        return self.model == "resnet50_transfer"

    @property
    def model_kwargs(self) -> dict[str, int | str]:
        kwargs: dict[str, int | str] = {"width": self.width} if self.width else {}
        if self.stem_stride != 1:  # only then: every other model refuses the option by name
            kwargs["stem_stride"] = self.stem_stride
        if self.transfer:  # upsampling side and the transfer code's normalisation of the data set
            kwargs.update(image_size=self.image_size, normalization=self.dataset)
        return kwargs


def check_device_name(name: str, *, allow_auto: bool = False, key: str = "device") -> None:
    """Refuse, in one line, device names the trainer, evaluation and corruptions cannot run on:
    torch knows ``meta`` (tensors without data: every result would be empty) and ``hpu`` & co.,
    which fail deep inside a step (issue 23).  Whether a CUDA device exists is checked later."""
    import re

    allowed = r"(auto|cpu|mps|cuda(:\d+)?)" if allow_auto else r"(cpu|mps|cuda(:\d+)?)"
    if not isinstance(name, str) or not re.fullmatch(allowed, name):
        choices = "auto, cpu, cuda, cuda:N or mps" if allow_auto else "cpu, cuda, cuda:N or mps"
        raise ValueError(f"{key}={name!r} is not a device this toolkit runs on; use {choices}")


def check_seed(seed: int, key: str = "seed") -> None:
    """torch's generators take seeds in 0 .. 2**63 - 1 (a larger one fails deep inside as
    "Overflow when unpacking long long"): say so in one line naming the key (issue 23)."""
    if not 0 <= seed < 2**63:
        raise ValueError(f"{key}={seed} is out of range: seeds are integers in 0 .. 2**63 - 1")
