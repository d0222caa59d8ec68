"""The training configuration: frozen dataclasses in groups, written to ``RUN/config.json``.

``TrainConfig`` holds the method, its strengths and the seed at the top, and five groups: ``model``
(which network), ``data`` (what it trains on), ``optim`` (SGD and its schedule), ``runtime`` (where
and how it runs) and ``transfer`` (fine-tuning a source model); each kind of mixing with options
adds its own group, declared with the kind (``fullscale.mixings``: ``puzzlemix``).  Each group checks its own fields.
Keys are dotted (``--set optim.lr=0.05``); the flat names of runs made before the groups
(``--set lr=0.05``) are aliases (``FLAT_KEYS``, ``fullscale.run_record``), and an old flat
``config.json`` reads back with ``train_config_from_dict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from fullscale.augment import AugMixConfig
from fullscale.mixings import config_groups
from fullscale.models.preact_resnet import check_stem_stride
from fullscale.run_record import FLAT_KEYS, flat_config, grouped_config
from noisymix.loss import PUBLIC_CODE_JSD_WEIGHT
from noisymix.mixing import MixConfig
from noisymix_infra.config import check_types, config_from_dict
from noisymix_infra.io import printable
from noisymix_infra.validate import check_device_name, check_seed

__all__ = ["FLAT_KEYS", "DataConfig", "ModelConfig", "OptimConfig", "RuntimeConfig", "TrainConfig", "TransferConfig",
           "check_run_config", "flat_config", "grouped_config", "train_config_from_dict"]


@dataclass(frozen=True)
class ModelConfig:
    """The network: ``create_model(name, num_classes, **kwargs)``."""

    name: str = "preactresnet18"  # preactresnet18, wrn28_4, wrn28_2, resnet50, resnet50_transfer
    width: int = 0  # 0: the model's own default (64 for PreActResNet-18); smaller for CPU runs
    # preactresnet18 only: 2 makes its first convolution stride 2 (a quarter of the arithmetic; the
    # laptop plan's upscaled digits), 1 is the public model (fullscale.models.preact_resnet)
    stem_stride: int = 1

    def __post_init__(self) -> None:
        if self.width < 0:
            raise ValueError(f"width must be >= 0, got {self.width}")
        check_stem_stride(self.stem_stride)  # the model's own rule, here so --set refuses it at once

    @property
    def kwargs(self) -> dict[str, int | str]:
        """The options given to the model: those that differ from its defaults (every model but
        preactresnet18 refuses ``stem_stride`` by name, and old runs recorded none of them)."""
        kwargs: dict[str, int | str] = {"width": self.width} if self.width else {}
        if self.stem_stride != 1:
            kwargs["stem_stride"] = self.stem_stride
        return kwargs


@dataclass(frozen=True)
class DataConfig:
    """What the run trains on and how it is read."""

    dataset: str = "cifar10"  # cifar10, cifar100, digits (built in), imagenet
    data_root: str = ""  # the training data folder (--data-root); digits needs none
    crop_padding: int = 4  # pixels of zero padding before the random crop (CIFAR, digits)
    train_subset: int = 0  # > 0: train on the first N training images only (quick runs)
    heldout: int = 0  # > 0: hold out the last N training images for per-epoch accuracy
    # The training images' side: dataset=imagenet streams RandomResizedCrops of this side from disk
    # (fullscale.data.imagenet); transfer runs upsample their 32x32 images to it on the device.
    image_size: int = 224
    # dataset=imagenet (data_root: the ImageNet root, train/<wnid>/*.JPEG): decoding processes per rank
    workers: int = 8
    decoder: str = "auto"  # dataset=imagenet: the JPEG decoder (fullscale.data.imagenet)
    max_bad_fraction: float = 0.001  # dataset=imagenet: the fraction of unreadable files that stops the run

    def __post_init__(self) -> None:
        if self.train_subset < 0 or self.heldout < 0:
            raise ValueError(f"train_subset and heldout must be >= 0, got {self.train_subset}, {self.heldout}")
        if self.image_size < 1 or self.workers < 0:
            raise ValueError(f"need image_size >= 1 and workers >= 0, got {self.image_size}, {self.workers}")
        if not 0 <= self.max_bad_fraction <= 1:
            raise ValueError(f"max_bad_fraction must be in [0, 1], got {self.max_bad_fraction}")


@dataclass(frozen=True)
class OptimConfig:
    """SGD and its learning-rate schedule."""

    epochs: int = 200  # training epochs
    batch_size: int = 128  # images per step (per process under torchrun)
    lr: float = 0.1  # initial learning rate of SGD
    lr_min: float = 1e-6  # the cosine schedule's final learning rate
    momentum: float = 0.9  # SGD momentum
    nesterov: bool = True  # Nesterov momentum (the public code)
    weight_decay: float = 5e-4  # L2 weight decay of SGD
    # Learning-rate schedule: "cosine" (per step, down to lr_min: the public CIFAR code) or "step"
    # (lr x lr_gamma at each epoch of lr_milestones: robustness' StepLR of the transfer code).
    lr_schedule: Literal["cosine", "step"] = "cosine"
    lr_milestones: tuple[int, ...] = ()  # lr_schedule=step: the epochs where lr is multiplied by lr_gamma
    lr_gamma: float = 0.1  # lr_schedule=step: the factor at each of lr_milestones

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0 or self.lr_min < 0 or self.lr_min > self.lr:
            raise ValueError(f"need 0 <= lr_min <= lr and lr > 0, got lr={self.lr}, lr_min={self.lr_min}")
        if self.lr_schedule not in ("cosine", "step"):
            raise ValueError(f"lr_schedule must be 'cosine' or 'step', got {self.lr_schedule!r}")
        if list(self.lr_milestones) != sorted(set(self.lr_milestones)) or any(m < 1 for m in self.lr_milestones):
            raise ValueError(f"lr_milestones must be increasing epochs >= 1, got {self.lr_milestones}")
        if not 0 < self.lr_gamma <= 1:
            raise ValueError(f"lr_gamma must be in (0, 1], got {self.lr_gamma}")


@dataclass(frozen=True)
class RuntimeConfig:
    """Where and how the run executes (none of it changes what a single process computes)."""

    device: str = "auto"  # auto, cpu, cuda or cuda:N
    amp: bool = True  # bf16 autocast on CUDA
    compile: bool = False  # torch.compile the model (CUDA)
    # CUDA only: each step (mixing, noise, forward, loss, backward, SGD update) replayed as a CUDA
    # graph, one per transform point (fullscale.training.graphed); the same run up to float rounding
    cuda_graph: bool = False
    # Under torchrun: "shared" draws each step's lambda and transform point alike on every rank,
    # as one process training on the whole batch would (the public code's recipe); per-sample
    # noise, partners and augmentations stay per rank. "per_rank": every rank draws its own.
    ddp_draws: Literal["shared", "per_rank"] = "shared"
    # Under torchrun on CUDA: batch statistics over the whole batch (torch.nn.SyncBatchNorm);
    # one process already normalises over its whole batch, so it changes nothing there.
    sync_bn: bool = False
    # the steps between mid-epoch checkpoints (0: at epoch ends only; an ImageNet epoch is long)
    checkpoint_every: int = 0

    def __post_init__(self) -> None:
        check_device_name(self.device, allow_auto=True)
        if self.ddp_draws not in ("shared", "per_rank"):
            raise ValueError(f"ddp_draws must be 'shared' or 'per_rank', got {self.ddp_draws!r}")
        if self.checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be >= 0, got {self.checkpoint_every}")


@dataclass(frozen=True)
class TransferConfig:
    """Transfer learning (model.name=resnet50_transfer; fullscale.training.transfer, fullscale.models.transfer)."""

    # the source ResNet-50 state dict (a run's final.pt or a torchvision-format file)
    source_weights: str = ""
    # the table row it stands for (fullscale.vocabulary.TRANSFER_ROWS: baseline, puzzlemix, mixup,
    # autoaugment, augmix, noisymix)
    source_row: str = ""
    freeze_level: int = -1  # the public --freeze-level (-1: train everything; 4: only the classifier)
    # whether frozen BatchNorm layers keep their statistics (the public code lets them update)
    freeze_bn_stats: bool = False

    def __post_init__(self) -> None:
        if self.freeze_level not in (-1, 1, 2, 3, 4):
            raise ValueError(f"freeze_level must be -1 (train everything) or 1..4, got {self.freeze_level}")


def _with_mixing_groups(cls: type) -> type:
    """``cls`` with one more field per kind of mixing that has options (``fullscale.mixings``:
    ``Mixing.config``), named as the kind and holding its defaults (``TrainConfig.puzzlemix``):
    a kind's options are its own group, declared with the kind, and this class names none of them.
    The class keeps its name and module (pickles, ``--list-keys`` reads the comments of its source)."""
    groups = [(name, group, field(default_factory=group)) for name, group in config_groups()]
    return make_dataclass(cls.__name__, groups, bases=(cls,), frozen=True,
                          namespace={"__module__": cls.__module__, "__doc__": cls.__doc__})


@_with_mixing_groups
@dataclass(frozen=True)
class TrainConfig:
    """Defaults are the public NoisyMix CIFAR recipe: SGD Nesterov 0.9, lr 0.1, weight decay
    5e-4, batch 128, 200 epochs, cosine schedule per step down to 1e-6.  The groups of the kinds of
    mixing with options (``puzzlemix``, for method=puzzlemix) are added by ``_with_mixing_groups``."""

    #: ``--set lr=0.05`` is ``--set optim.lr=0.05`` (``noisymix_infra.config.apply_overrides`` reads this)
    KEY_ALIASES: ClassVar[dict[str, str]] = FLAT_KEYS

    preset: str = "baseline"  # the preset's name (set by --preset; recorded, not read)
    method: str = "baseline"  # baseline, augmix_jsd, nfm, noisymix, ... (train --list-presets)
    seed: int = 0  # initial weights, data order and every draw (0 .. 2**63 - 1)
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    transfer: TransferConfig = field(default_factory=TransferConfig)
    mix: MixConfig = field(default_factory=lambda: MixConfig(alpha=0.0))
    augmix: AugMixConfig = field(default_factory=AugMixConfig)
    jsd_weight: float = PUBLIC_CODE_JSD_WEIGHT  # gamma, the weight of the Jensen-Shannon stability term
    jsd_variant: Literal["exact", "augmix"] = "exact"  # exact: generalized JSD; augmix: the AugMix code's form

    def __post_init__(self) -> None:
        check_seed(self.seed)
        # the fields that must agree with each other (a transfer run needs source_weights, ...) are
        # checked when training starts (fullscale.training.transfer.check_config): overrides apply
        # one at a time

    @property
    def is_transfer(self) -> bool:
        """A fine-tuning run (``fullscale.training.transfer``)."""
        return self.model.name == "resnet50_transfer"

    @property
    def model_kwargs(self) -> dict[str, int | str]:
        """``create_model``'s options: the model group's, and a transfer model's upsampling side and
        the normalisation of its data set (the transfer code's)."""
        kwargs = self.model.kwargs
        if self.is_transfer:
            kwargs.update(image_size=self.data.image_size, normalization=self.data.dataset)
        return kwargs


def train_config_from_dict(data: dict[str, Any]) -> TrainConfig:
    """The ``TrainConfig`` of the config part of a ``config.json``: grouped, or the flat layout of a
    run made before the groups (its keys through ``FLAT_KEYS``; keys added since take their defaults).
    A value of the wrong type (``"optim": 3``, ``"epochs": "x"``) is a one-line ``ValueError``."""
    try:
        cfg = config_from_dict(TrainConfig, grouped_config(data))
    except TypeError as error:  # a group given as a number, a seed as a string, ...
        raise ValueError(f"not a training config ({str(error).splitlines()[0][:160]})") from None
    check_types(cfg, "the training config")
    return cfg


def check_run_config(config: dict, where: str | Path) -> None:
    """Refuse (one line naming the file) a run's config part that is not a training config: a group
    given as a number (``"optim": 3``), a value of the wrong type, an unknown key (issue 41: such a
    ``config.json`` was read, and the tables showed epochs ``None``)."""
    try:
        train_config_from_dict(grouped_config(config))
    except (TypeError, ValueError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{printable(str(where))}: not a training config noisymix reads ({detail[:200]})") from None
