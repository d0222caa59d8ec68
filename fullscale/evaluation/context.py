"""What a suite is given and what changes its numbers: ``EvalOptions`` (stored with every
result; a resume needs equal options), ``Context`` (the model, the run's config, the data root and
the resume state) and the batch sizes by device."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from fullscale.data import (
    Preprocess,
)
from fullscale.vocabulary import (
    P_WEATHER_CHOICES,
)

__all__ = ["ACCELERATOR_BATCH", "CPU_BATCH", "FGSM_EPSILONS", "PROTOCOLS", "Context", "EvalOptions", "Results"]

#: how a suite picks and preprocesses its images: ours (the paper's), or RobustBench's leaderboard
PROTOCOLS = ("ours", "robustbench")

#: pixel-space epsilons of the FGSM suite (images in [0, 1]): 1, 2, 4 and 8 grey levels
FGSM_EPSILONS = (1 / 255, 2 / 255, 4 / 255, 8 / 255)
Results = tuple[dict, dict, list]
# Images per model call when none is given.  Issue 22 measured 64 and 500 alike at 2 threads; at the
# main job's one thread per run the traced, frozen PreActResNet-18 (width 16, stride-2 stem) ran 5,300
# images/s at 100 and 5,900 at 500 (issue 58, benchmarks/RESULTS.md), and a -P batch of 64 held only two
# 31-frame sequences.  An accelerator wants large calls too.
CPU_BATCH = 500
ACCELERATOR_BATCH = 500


@dataclass(frozen=True)
class EvalOptions:
    """Everything that changes a suite's numbers (stored in the JSON; a resume needs equal options)."""

    # images per model call; 0: by device (CPU_BATCH on the CPU, ACCELERATOR_BATCH elsewhere)
    batch_size: int = 0
    workers: int = 2  # DataLoader processes decoding image folders / videos
    rms_estimator: str = "exact"  # "exact" | "public" (fullscale.metrics.rms_calibration_error)
    epsilons: tuple[float, ...] = FGSM_EPSILONS
    corruptions: tuple[str, ...] | None = None  # None: every standard -C / -P name present
    weather: str = "snow"  # the -P weather column: "snow" (paper) or "spatter" (public script)
    alexnet_flip: str | None = None  # JSON of AlexNet's flip probabilities, for mFR
    preprocess: Preprocess = field(default_factory=Preprocess)
    # a -C set missing one of the 15 is an error unless asked for: its means are not the benchmark's
    partial: bool = False
    # "robustbench": its images and preprocessing (fullscale.evaluation.robustbench); "ours" the defaults
    protocol: str = "ours"
    # protocol=robustbench, ImageNet suites: robustbench's helper_files/imagenet_test_image_ids.txt
    image_list: str | None = None

    def __post_init__(self) -> None:
        if self.batch_size < 0 or self.workers < 0:
            raise ValueError(f"need batch_size >= 0 (0: by device) and workers >= 0, "
                             f"got {self.batch_size}, {self.workers}")
        if self.rms_estimator not in ("exact", "public"):
            raise ValueError(f"rms_estimator must be 'exact' or 'public', got {self.rms_estimator!r}")
        if self.weather not in P_WEATHER_CHOICES:
            raise ValueError(f"weather must be one of {P_WEATHER_CHOICES}, got {self.weather!r}")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {self.protocol!r}")
        if not self.epsilons or any(not 0 <= e <= 1 for e in self.epsilons):
            raise ValueError(f"FGSM epsilons must be in [0, 1] (pixel scale), got {self.epsilons}")

    def as_dict(self) -> dict:
        return {"batch_size": self.batch_size, "rms_estimator": self.rms_estimator,
                "epsilons": list(self.epsilons), "weather": self.weather,
                "corruptions": None if self.corruptions is None else list(self.corruptions),
                "alexnet_flip": self.alexnet_flip,
                "preprocess": {"resize": self.preprocess.resize, "crop": self.preprocess.crop,
                               **({"exact": True} if self.preprocess.exact else {})},
                "partial": self.partial,
                # only where asked for, so results made before the protocols resume and compare as before
                **({"protocol": self.protocol, "image_list": self.image_list} if self.protocol != "ours" else {}),
                }


@dataclass
class Context:
    """What a suite needs: the model, the run's config, the data root, options and resume state."""

    model: nn.Module
    device: torch.device
    config: dict
    data_root: Path | None
    options: EvalOptions = field(default_factory=EvalOptions)
    done: dict = field(default_factory=dict)
    # the data identity each entry of ``done`` was computed from (a -C set's file and labels hashes):
    # an entry of another set under the same name is recomputed, not reused (issue 23)
    done_identity: dict = field(default_factory=dict)
    on_result: Callable[..., None] = lambda name, entry, identity=None: None
    clean_accuracy: float | None = None  # for relative mCE / the -C summary, when known
    # where clean_accuracy was read (RUN/eval/clean.json: its path, data and options), for the summary
    clean_accuracy_from: dict | None = None

    @property
    def num_classes(self) -> int:
        return int(self.config["num_classes"])

    @property
    def batch_size(self) -> int:
        """``options.batch_size``, or by device when it is 0 (``CPU_BATCH``, ``ACCELERATOR_BATCH``)."""
        if self.options.batch_size:
            return self.options.batch_size
        return CPU_BATCH if self.device.type == "cpu" else ACCELERATOR_BATCH

