"""A run's random streams carried from step to step: the batch order and the device draws.

Both are saved in every checkpoint, so ``resume`` continues with the draws an uninterrupted run
would have made.  The order is the same on every torchrun rank; the device stream (the noise of
M_{lambda,xi}, a mixing's batch op) is per rank.  The views, partners, lambdas and transform points
are not carried: each chunk of steps draws them from generators keyed by (seed, epoch, chunk,
rank) (``fullscale.training.draws``).  Checkpoints written before that also hold a
``stage_generator``, which a resume ignores.
"""

from __future__ import annotations

import dataclasses
import hashlib

import torch
from torch import Tensor

import noisymix
from fullscale.training.config import TrainConfig
from fullscale.training.process import Process

__all__ = ["Generators", "stream_seed"]

# seeds of torch's generators: 0 .. 2**64 - 1
_GENERATOR_SEEDS = 2**64


@dataclasses.dataclass
class Generators:
    """The run's carried random streams (both in the checkpoint): batch order (the same on every
    rank) and the device draws of a step (noise, batch ops; per rank)."""

    order: torch.Generator
    aug: torch.Generator

    @classmethod
    def create(cls, cfg: TrainConfig, process: Process) -> Generators:
        return cls(noisymix.generator_for(cfg.seed, process.device),
                   noisymix.generator_for(stream_seed(cfg.seed, 1 + process.rank), process.device))

    def state(self) -> dict[str, Tensor]:
        return {"order_generator": self.order.get_state(), "aug_generator": self.aug.get_state()}

    def restore(self, state: dict) -> None:
        self.order.set_state(state["order_generator"].cpu())
        self.aug.set_state(state["aug_generator"].cpu())


def stream_seed(seed: int, stream: int) -> int:
    """The generator seed of one of a run's streams (``stream``: 1 + rank for the device draws; 501 +
    rank was the transform point's before chunked draws): ``seed * 1000 + stream``, the streams of every run made so
    far, while that is a seed torch takes (< 2**64, i.e. run seeds up to about 1.8e16); above, a
    64-bit hash of (seed, stream), so that every documented run seed (0 .. 2**63 - 1) trains and
    distinct seeds keep distinct streams (the product overflowed torch's generator; issue 32)."""
    value = seed * 1000 + stream
    if 0 <= value < _GENERATOR_SEEDS:
        return value
    digest = hashlib.blake2b(f"noisymix-stream/{int(seed)}/{int(stream)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")
