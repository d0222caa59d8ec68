"""The whole training step as one CUDA graph, replayed step after step (issue 47, ``cuda_graph=true``).

At batch 128 a PreActResNet-18 step on an H100/H200 is bound by kernel launches, not arithmetic
(issue 47: three times the images cost 1.13x the time).  A CUDA graph launches the step's
thousands of kernels as one: steps 2 to 4 of ``fullscale.training.step`` (the mixing of partners
and lambda, the noise of M_{lambda,xi} drawn inside the graph, the forward pass, the loss of
``noisymix.noisymix_loss``), the backward pass and the SGD update.

What a graph holds and what it does not:

- **Inputs** live in static buffers (the step's views, partners, lambda, labels, each learning
  rate): each step copies its own into them (device to device, no synchronisation), then replays.
- **The noise** of M_{lambda,xi} draws from the run's device generator inside the graph: the graph
  registers it (``CUDAGraph.register_generator_state``), so each replay draws fresh numbers and
  advances the generator as the eager step does, and a checkpoint stores the same state.
- **The transform point** is a Python choice (a hook on one stage), so there is one graph per point
  (input, layer1, layer2, layer3 for PreActResNet-18; one for methods without a point) and per
  batch shape (a short last batch), all in one memory pool.
- **The views** (crop, flip, AugMix) are not in the graph: they are made for a chunk of 113 steps
  at once outside it (``fullscale.training.draws``: a few large kernels per chunk, not per step).
- **The update** is SGD written with a learning-rate tensor (``sgd_update``), because
  ``torch.optim.SGD.step`` reads a tensor learning rate back to the host, which a capture forbids;
  it keeps ``torch.optim.SGD``'s state (``momentum_buffer``), so checkpoints and resume are
  unchanged.  The same update as torch's up to float rounding (``tests/trainer/test_graphed.py``).

The first ``WARMUP_STEPS`` steps of each graph run eagerly on a side stream (cuDNN picks its
algorithms, the momentum buffers are made), as torch's CUDA-graph notes ask; they are real training
steps.  On the CPU the same static-buffer step runs eagerly (``capture=False``): the tests hold it
against the ordinary step, and the device test (``tests/gpu/test_graphed_step.py``) the captured one
against it.  The eager step stays the default (``runtime.cuda_graph=false``) and is unchanged.
Stacked members (``members``) are captured by ``graphed_members`` on the same ``Replayer`` (issue 53).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from fullscale.training.config import TrainConfig
from fullscale.training.draws import StepDraws, step_mix_config
from fullscale.training.methods import Method
from fullscale.training.step import drawn_step_loss
from noisymix.loss import LossParts
from noisymix.mixing import MixDraw

__all__ = ["WARMUP_STEPS", "GraphedStep", "Replayer", "check_cuda_graph", "sgd_update"]

#: eager steps of each graph before its capture (torch's notes: a few on a side stream)
WARMUP_STEPS = 3


def check_cuda_graph(cfg: TrainConfig, method: Method, device: torch.device, world: int) -> None:
    """Refuse ``cuda_graph=true`` where the graphed step does not apply, in one line, before any
    work.  Stacked members are captured too (``graphed_members``, issue 53)."""
    if not cfg.runtime.cuda_graph:
        return
    why = None
    if device.type != "cuda":
        why = f"needs CUDA (a captured step replays on a GPU); this run is on {device.type}"
    elif world > 1:
        why = f"trains one process (this run has {world} under torchrun)"
    elif cfg.runtime.compile:
        why = "and compile=true are two ways of capturing the step: choose one"
    elif method.kind.batch_op is not None:
        why = f"takes methods without a batch op ({cfg.method}'s boxes or masks are drawn on the host each step)"
    if why:
        raise ValueError(f"cuda_graph=true {why}: drop cuda_graph")


@torch.no_grad()
def sgd_update(optimizer: torch.optim.SGD, lrs: Sequence[Tensor]) -> None:
    """One step of ``optimizer`` (torch's SGD: weight decay, momentum with dampening, Nesterov) with
    each group's learning rate read from the tensor ``lrs[i]`` on the device, so that the update can
    be captured.  Its state is ``optimizer.state[p]["momentum_buffer"]``, made at the first step as
    torch makes it (a copy of the first gradient)."""
    for group, lr in zip(optimizer.param_groups, lrs, strict=True):
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            continue
        if group.get("maximize", False):
            raise ValueError("sgd_update: maximize=True is not supported")
        grads = [p.grad for p in params]
        weight_decay, momentum = group["weight_decay"], group["momentum"]
        dampening, nesterov = group["dampening"], group["nesterov"]
        if weight_decay:
            grads = torch._foreach_add(grads, params, alpha=weight_decay)
        if momentum:
            states = [optimizer.state[p] for p in params]
            if any("momentum_buffer" not in s or s["momentum_buffer"] is None for s in states):
                bufs = [torch.clone(g).detach() for g in grads]
                for state, buf in zip(states, bufs, strict=True):
                    state["momentum_buffer"] = buf
            else:
                bufs = [s["momentum_buffer"] for s in states]
                torch._foreach_mul_(bufs, momentum)
                torch._foreach_add_(bufs, grads, alpha=1 - dampening)
            grads = torch._foreach_add(grads, bufs, alpha=momentum) if nesterov else bufs
        torch._foreach_sub_(params, torch._foreach_mul(grads, lr))


@dataclasses.dataclass
class _Slot:
    """One graph: its static inputs, its outputs (the loss parts), its capture."""

    x: Tensor
    perm: Tensor
    lam: Tensor
    y: Tensor
    stage: str | None
    seen: int = 0
    graph: torch.cuda.CUDAGraph | None = None
    parts: LossParts | None = None

    def load(self, draws: StepDraws, labels: Tensor) -> None:
        self.x.copy_(draws.x)
        self.perm.copy_(draws.draw.perm)
        self.lam.copy_(draws.draw.lam)
        self.y.copy_(labels)


class Replayer:
    """What every captured step shares (issue 47; the stacked members' too, issue 53): each step's
    learning rates copied into tensors, then its slot's graph replayed, or warmed up on a side
    stream, or captured (``capture=True``); or its body run eagerly from the same static buffers
    (``capture=False``: the CPU).  A subclass says what a slot's body computes (``_body``)."""

    def __init__(self, optimizer: torch.optim.SGD, generators: Sequence[torch.Generator], device: torch.device, *,
                 amp: bool, capture: bool) -> None:
        if capture and any(g.device.type != "cuda" for g in generators):
            raise ValueError("a captured step draws its noise from a CUDA generator, got one on "
                             f"{next(g.device for g in generators if g.device.type != 'cuda')}")
        self.optimizer, self.generators, self.amp, self.capture = optimizer, list(generators), amp, capture
        self.device_type = device.type
        self.lrs = [torch.zeros((), device=device) for _ in optimizer.param_groups]
        self.slots: dict[tuple, Any] = {}
        self.pool = None  # one memory pool for every graph: they replay one at a time
        self.side = torch.cuda.Stream(device) if capture else None

    @property
    def graphs(self) -> int:
        """How many graphs are captured so far."""
        return sum(slot.graph is not None for slot in self.slots.values())

    def _run(self, slot: Any) -> Any:
        """Replay (or warm up, or capture) ``slot``'s graph, or run its body eagerly; its outputs."""
        for lr, group in zip(self.lrs, self.optimizer.param_groups, strict=True):
            lr.fill_(float(group["lr"]))
        if not self.capture:
            return self._body(slot, zero_grad=True)
        if slot.graph is not None:
            slot.graph.replay()
            return slot.parts
        if slot.seen < WARMUP_STEPS:
            slot.seen += 1
            self.side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.side):
                parts = self._body(slot, zero_grad=True)
            torch.cuda.current_stream().wait_stream(self.side)
            return parts
        graph = torch.cuda.CUDAGraph()
        for generator in self.generators:  # fresh noise every replay, the generator advanced
            graph.register_generator_state(generator)
        self.optimizer.zero_grad(set_to_none=True)  # the gradients become the graph's own memory
        with torch.cuda.graph(graph, pool=self.pool, stream=self.side):
            slot.parts = self._body(slot, zero_grad=False)
        self.pool = graph.pool()
        slot.graph = graph
        slot.graph.replay()  # the capture computed nothing: this step's work
        return slot.parts

    def train_step(self, draws: Sequence[StepDraws], labels: Sequence[Tensor]) -> list[LossParts]:
        """The loop's door (``loop._train_epoch``): one step of every run, each run's loss parts."""
        raise NotImplementedError

    def _body(self, slot: Any, *, zero_grad: bool) -> Any:
        raise NotImplementedError


class GraphedStep(Replayer):
    """Steps 2-4, backward and the SGD update of a run alone, replayed as CUDA graphs
    (``capture=True``) or run eagerly from the same static buffers (``capture=False``: the CPU)."""

    def __init__(self, model: torch.nn.Module, core: torch.nn.Module, optimizer: torch.optim.SGD, method: Method,
                 cfg: TrainConfig, num_classes: int, generator: torch.Generator, *, amp: bool, capture: bool) -> None:
        super().__init__(optimizer, [generator], next(core.parameters()).device, amp=amp, capture=capture)
        self.model, self.core = model, core
        self.method, self.cfg, self.num_classes, self.generator = method, cfg, num_classes, generator
        self.mix_cfg = step_mix_config(method, cfg)

    def train_step(self, draws: Sequence[StepDraws], labels: Sequence[Tensor]) -> list[LossParts]:
        """The loop's door (``loop._train_epoch``): one run's step, its loss parts in a list."""
        return [self.step(draws[0], labels[0])]

    def step(self, draws: StepDraws, labels: Tensor) -> LossParts:
        """Train one step: load its draws, replay (or warm up, or capture) its graph; its loss
        parts (static tensors of the graph: read them before the next step)."""
        if draws.extra is not None:
            raise ValueError("the graphed step takes draws without a batch op's extra")
        key = (draws.stage, tuple(draws.x.shape), tuple(draws.draw.lam.shape), tuple(labels.shape))
        slot = self.slots.get(key)
        if slot is None:
            slot = self.slots[key] = _Slot(draws.x.clone(), draws.draw.perm.clone(), draws.draw.lam.clone(),
                                          labels.clone(), draws.stage)
        else:
            slot.load(draws, labels)
        return self._run(slot)

    def _body(self, slot: _Slot, *, zero_grad: bool) -> LossParts:
        """What a graph holds: the loss of the static inputs, backward, the SGD update (``zero_grad``:
        drop the gradients first, as the eager loop does; not in a capture, whose backward makes them)."""
        draws = StepDraws(slot.x, MixDraw(perm=slot.perm, lam=slot.lam), self.mix_cfg, slot.stage)
        if zero_grad:
            self.optimizer.zero_grad(set_to_none=True)
        # autocast's weight cache would hold casts made during the capture: off (torch's CUDA-graph notes)
        with torch.autocast(self.device_type, dtype=torch.bfloat16, enabled=self.amp, cache_enabled=False):
            parts = drawn_step_loss(self.model, self.core, draws, slot.y, self.method, self.cfg, self.num_classes,
                                    self.generator)
        parts.total.backward()
        sgd_update(self.optimizer, self.lrs)
        return LossParts(parts.total.detach(), parts.cross_entropy.detach(), parts.jsd.detach())
