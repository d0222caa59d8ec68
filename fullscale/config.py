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

    preset: str = "baseline"
    method: str = "baseline"
    model: str = "preactresnet18"
    width: int = 0  # 0: the model's own default (64 for PreActResNet-18); smaller for CPU runs
    dataset: str = "cifar10"
    data_root: str = ""
    epochs: int = 200
    batch_size: int = 128
    lr: float = 0.1
    lr_min: float = 1e-6
    momentum: float = 0.9
    nesterov: bool = True
    weight_decay: float = 5e-4
    seed: int = 0
    mix: MixConfig = field(default_factory=lambda: MixConfig(alpha=0.0))
    augmix: AugMixConfig = field(default_factory=AugMixConfig)
    puzzlemix: PuzzleMixConfig = field(default_factory=PuzzleMixConfig)  # method=puzzlemix only
    jsd_weight: float = PUBLIC_CODE_JSD_WEIGHT
    jsd_variant: Literal["exact", "augmix"] = "exact"
    crop_padding: int = 4
    train_subset: int = 0  # > 0: train on the first N training images only (quick runs)
    heldout: int = 0  # > 0: hold out the last N training images for per-epoch accuracy
    device: str = "auto"
    amp: bool = True  # bf16 autocast on CUDA
    compile: bool = False
    # Under torchrun: "shared" draws each step's lambda and transform point alike on every rank,
    # as one process training on the whole batch would (the public code's recipe); per-sample
    # noise, partners and augmentations stay per rank. "per_rank": every rank draws its own.
    ddp_draws: Literal["shared", "per_rank"] = "shared"
    # Under torchrun on CUDA: batch statistics over the whole batch (torch.nn.SyncBatchNorm);
    # one process already normalises over its whole batch, so it changes nothing there.
    sync_bn: bool = False

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0 or self.lr_min < 0 or self.lr_min > self.lr:
            raise ValueError(f"need 0 <= lr_min <= lr and lr > 0, got lr={self.lr}, lr_min={self.lr_min}")
        if self.width < 0 or self.train_subset < 0 or self.heldout < 0:
            raise ValueError("width, train_subset and heldout must be >= 0")
        if self.ddp_draws not in ("shared", "per_rank"):
            raise ValueError(f"ddp_draws must be 'shared' or 'per_rank', got {self.ddp_draws!r}")

    @property
    def model_kwargs(self) -> dict[str, int]:
        return {"width": self.width} if self.width else {}
