"""What the training loop trains (``loop.train_runs``): its ``Run`` records, the ``Trainee`` that
turns one step's draws into each run's loss, and the ``Setup`` holding them ready.

A run alone is one ``Run`` and its network (``Alone``); seeds stacked as one network are one ``Run``
each and the stack (``members.Stacked``).  Everything the loop does beyond a step (epochs, resume,
checkpoints, checks, the finish) is written once, over the runs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import torch
from torch import Tensor, nn

from fullscale.augment import to_float
from fullscale.data import ImageSet
from fullscale.data.imagenet import StreamingImageNet
from fullscale.training.checkpoint import config_identity
from fullscale.training.config import TrainConfig
from fullscale.training.data import InMemoryData, device_transform, view_shape
from fullscale.training.draws import RunDraws, StepDraws
from fullscale.training.generators import Generators
from fullscale.training.graphed import Replayer
from fullscale.training.methods import Method
from fullscale.training.process import Process
from fullscale.training.step import drawn_step_loss
from noisymix.loss import LossParts

__all__ = ["Alone", "Run", "Setup", "Trainee", "run_draws"]


@dataclasses.dataclass
class Run:
    """One run folder the loop trains: a run alone, or one seed of a stacked group (``members``)."""

    cfg: TrainConfig
    out: Path
    generators: Generators  # its carried streams (order, device draws)
    record: dict  # its config.json
    draws: RunDraws  # its views and draws, made a chunk of steps at a time
    # torch's global generator as its weights left it (stacked members: theirs were drawn in turn,
    # and no member draws from it after, having no dropout); None: the live global generator
    torch_state: Tensor | None = None
    metrics: list[dict] = dataclasses.field(default_factory=list)

    @property
    def checkpoint(self) -> Path:
        return self.out / "checkpoint.pt"

    @property
    def identity(self) -> str:
        """The run's ``config_identity``, stored in its checkpoints."""
        return config_identity(self.record)


class Trainee(Protocol):
    """How the loop's model trains its runs: one network (``Alone``) or seeds stacked as one
    (``members.Stacked``)."""

    core: nn.Module  # the network the hooks reach (its ``stages``: the transform points)
    model: nn.Module  # what the step calls (set to train mode each epoch)

    def losses(self, draws: Sequence[StepDraws], labels: Sequence[Tensor], runs: Sequence[Run]) -> list[LossParts]:
        """Steps 2-4 of each run's step (``fullscale.training.step``), its draws already made."""

    def states(self) -> list[dict[str, Tensor]]:
        """Each run's weights in the plain model's layout (what ``create_model`` loads)."""

    def optimizer_states(self, optimizer: torch.optim.Optimizer) -> list[dict]:
        """Each run's optimiser state as a run alone would hold it."""

    def load(self, states: Sequence[dict], optimizer: torch.optim.Optimizer, optimizer_states: Sequence[dict]) -> None:
        """The inverse of ``states`` and ``optimizer_states`` (resume)."""

    def networks(self) -> Iterator[nn.Module]:
        """Each run's network in the plain layout, in turn (checks of its weights, its accuracy)."""


@dataclasses.dataclass
class Alone:
    """A run alone: its network (``core``: hooks, checkpoints) and what the step calls (``model``:
    ``core``, DDP and/or compiled around it)."""

    core: nn.Module
    model: nn.Module
    method: Method
    cfg: TrainConfig
    num_classes: int

    def losses(self, draws: Sequence[StepDraws], labels: Sequence[Tensor], runs: Sequence[Run]) -> list[LossParts]:
        return [drawn_step_loss(self.model, self.core, draws[0], labels[0], self.method, self.cfg, self.num_classes,
                                runs[0].generators.aug)]

    def states(self) -> list[dict[str, Tensor]]:
        return [self.core.state_dict()]

    def optimizer_states(self, optimizer: torch.optim.Optimizer) -> list[dict]:
        return [optimizer.state_dict()]

    def load(self, states: Sequence[dict], optimizer: torch.optim.Optimizer, optimizer_states: Sequence[dict]) -> None:
        self.core.load_state_dict(states[0])
        optimizer.load_state_dict(optimizer_states[0])

    def networks(self) -> Iterator[nn.Module]:
        yield self.core


@dataclasses.dataclass
class Setup:
    """Runs ready to train: everything read and checked, nothing written (``_prepare``,
    ``members.train_members``)."""

    cfg: TrainConfig  # the runs' config (theirs differ in the seed alone)
    method: Method
    process: Process
    data: InMemoryData | StreamingImageNet
    heldout: ImageSet | None
    trainee: Trainee
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    runs: list[Run]
    steps_per_epoch: int
    # runtime.cuda_graph: the step replayed as CUDA graphs (``graphed``; stacked members: ``graphed_members``)
    graphed: Replayer | None = None

    @functools.cached_property
    def probe(self) -> Tensor | None:
        """A few training images whose logits must stay finite (``check_weights``), made once;
        streamed and upsampled inputs are made per step (None)."""
        data = self.data
        return (to_float(data.images[:16]) if isinstance(data, InMemoryData) and not self.cfg.is_transfer
                and data.images.dim() == 4 else None)


def run_draws(cfg: TrainConfig, method: Method, data: InMemoryData | StreamingImageNet, process: Process,
              steps_per_epoch: int) -> RunDraws:
    """A run's chunked draws on this process's share of the data, through the data's own device transform."""
    return RunDraws(cfg, method, steps_per_epoch, view_shape(cfg, data), rank=process.rank, world=process.world,
                    transform=device_transform(cfg))
