"""Stacked members' training step as one CUDA graph (issue 53, goal 5: ``cuda_graph=true`` with ``members``).

The ``gpu`` plan trains a method's nine seeds as one stacked network (``members``); ``graphed``
captures a run alone.  This module captures the stack's step: the members' mixing, forward, each
member's loss, backward and the SGD update of all of them, one graph for all M members.

What differs from a run alone, and why:

- **The transform point is data, not a graph key.**  Each member draws its own point every step
  (its own stream, so member k stays seed k alone), so the members' points are a tuple that changes
  every step: one graph per tuple would be 4^9 graphs.  So the graph holds the mixing at *every*
  stage of the model and a (members, stages) mask picks, per member, the one its point names
  (``torch.where``: the other stages pass their features through unchanged, value and gradient).
- **The noise is drawn outside the graph, in the eager order.**  What a member's noise draws depends
  on the shape of the features at its point, so a graph cannot draw it for a point it learns only
  at replay.  Each step draws each member's noise of M_{lambda,xi} from the member's own device
  generator, exactly as the eager step does (``noisymix.mixing.feature_noise``: the same calls, the
  same order, only the shape decides what is drawn), into a static buffer; the graph reads it.
  That is a few small kernels per member per step outside the graph, beside the thousands inside.
- **No generator is registered**: the graph draws nothing (the stacked models have no dropout:
  ``members.stack_models`` refuses it).

``step`` with ``capture=False`` runs the same body eagerly from the same static buffers (the CPU):
``tests/trainer/test_graphed_members.py`` holds it per member against the members path's eager step
(``members.Stacked``) and against each seed's step alone; ``tests/gpu/test_graphed_members.py`` holds
the captured replay against it on a device, and ``noisymix bench graph-equal`` over 200 steps.

What it costs beyond the eager members step is the mixing at the stages a member does not use: on the
``gpu`` plan's shape (nine members, width 16, batch 32, NoisyMix) the body run eagerly on a CPU took
1.01x the eager members step (one thread; the arithmetic, not the launches a graph removes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor, nn

from fullscale.training.config import TrainConfig
from fullscale.training.draws import StepDraws, step_mix_config
from fullscale.training.graphed import Replayer, sgd_update
from fullscale.training.hooks import stage_module
from fullscale.training.methods import Method
from fullscale.training.step import method_loss
from noisymix.loss import LossParts
from noisymix.mixing import MixDraw, feature_noise, mix_targets, noisy_feature_mixup
from noisymix_infra.devices import to_device

__all__ = ["GraphedMembers"]


@dataclasses.dataclass
class _Slot:
    """One graph of the stack (one batch shape): its static inputs, its outputs, its capture."""

    x: Tensor  # (V x B, M x 3, H, W): member m's views in channels 3m..3m+2, as ``Stacked.losses``
    perm: Tensor  # (M, B) partners
    lam: Tensor  # (M,) or (M, B)
    y: Tensor  # (M, B) labels
    select: Tensor  # (M, S) bool: member m mixes at stage s
    noise: list[list[Tensor]]  # per member, per noise term (mult, add): a flat buffer the largest stage fills
    term_shapes: dict[str, list[tuple[int, ...] | None]]  # per stage: the (mult, add) terms' shapes (None: off)
    seen: int = 0
    graph: torch.cuda.CUDAGraph | None = None
    parts: list[LossParts] | None = None


class GraphedMembers(Replayer):
    """Steps 2-4, backward and the SGD update of M stacked members (``members.stack_models``),
    replayed as CUDA graphs (``capture=True``) or run eagerly from the same static buffers
    (``capture=False``: the CPU).  ``generators[m]``: member m's device stream (its noise)."""

    def __init__(self, stack: nn.Module, optimizer: torch.optim.SGD, method: Method, cfg: TrainConfig,
                 num_classes: int, generators: Sequence[torch.Generator], *, amp: bool, capture: bool) -> None:
        super().__init__(optimizer, [], next(stack.parameters()).device, amp=amp, capture=capture)
        if capture and any(g.device.type != "cuda" for g in generators):
            raise ValueError("captured members draw their noise from CUDA generators, got one on "
                             f"{next(g.device for g in generators if g.device.type != 'cuda')}")
        if len(generators) != stack._members:
            raise ValueError(f"{stack._members} members need as many generators, got {len(generators)}")
        self.stack, self.method, self.cfg, self.num_classes = stack, method, cfg, num_classes
        self.member_generators = list(generators)
        self.members = len(generators)
        self.mix_cfg = step_mix_config(method, cfg)
        self.stages = tuple(stack.stages) if method.feature_transform else ()
        self.noisy = bool(self.stages) and self.mix_cfg.noise.active
        self.shapes: dict[tuple, dict[str, tuple[int, ...]]] = {}  # per input shape: a member's features per stage

    def train_step(self, draws: Sequence[StepDraws], labels: Sequence[Tensor]) -> list[LossParts]:
        """The loop's door (``loop._train_epoch``): load each member's draws and noise, replay (or
        warm up, or capture) the graph of this batch shape; each member's loss parts (static tensors
        of the graph: read them before the next step)."""
        if len(draws) != self.members or any(d.extra is not None for d in draws):
            raise ValueError(f"the graphed members step takes {self.members} draws without a batch op's extra")
        key = (tuple(draws[0].x.shape), tuple(draws[0].draw.lam.shape), tuple(labels[0].shape))
        slot = self.slots.get(key)
        if slot is None:
            slot = self.slots[key] = self._new_slot(draws, labels)
        self._load(slot, draws, labels)
        return self._run(slot)

    # ------------------------------------------------------------------ the static inputs
    def _stage_shapes(self, x: Tensor) -> dict[str, tuple[int, ...]]:
        """One member's feature shape (V x B, C, H, W) at each stage, from a one-image forward pass
        in eval mode (no BatchNorm statistics move, nothing drawn)."""
        found: dict[str, tuple[int, ...]] = {}
        handles = [stage_module(self.stack, name).register_forward_hook(
            lambda _m, _i, out, name=name: found.__setitem__(name, tuple(out.shape[1:])))
            for name in self.stages]
        training = self.stack.training
        try:
            self.stack.eval()
            with torch.no_grad():
                self.stack(x[:1])
        finally:
            self.stack.train(training)
            for handle in handles:
                handle.remove()
        return {name: (x.shape[0], shape[0] // self.members, *shape[1:]) for name, shape in found.items()}

    def _new_slot(self, draws: Sequence[StepDraws], labels: Sequence[Tensor]) -> _Slot:
        x = torch.cat([d.x for d in draws], dim=1)
        shapes = self.shapes.setdefault(tuple(x.shape), self._stage_shapes(x) if self.stages else {})
        noise: list[list[Tensor]] = []
        term_shapes: dict[str, list[tuple[int, ...] | None]] = {}
        if self.noisy:
            for name, shape in shapes.items():  # what the noise terms of each stage are: drawn once, thrown away
                probe = torch.Generator(x.device).manual_seed(0)
                term_shapes[name] = [None if t is None else tuple(t.shape) for t in
                                     feature_noise(shape, self.mix_cfg, generator=probe, views=self.method.views)]
            largest = [max(math.prod(s[i] or (0,)) for s in term_shapes.values()) for i in range(2)]
            # zeros, not empty: a stage not selected reads them, and 0 x NaN in its zero gradient is NaN
            noise = [[torch.zeros(n, device=x.device) for n in largest] for _ in range(self.members)]
        return _Slot(x, torch.stack([d.draw.perm for d in draws]), torch.stack([d.draw.lam for d in draws]),
                     torch.stack(list(labels)), torch.zeros(self.members, len(self.stages), dtype=torch.bool,
                                                            device=x.device), noise, term_shapes)

    def _load(self, slot: _Slot, draws: Sequence[StepDraws], labels: Sequence[Tensor]) -> None:
        """Copy this step's draws into the slot; draw each member's noise at its own stage from its
        own generator, in the eager step's calls (``feature_noise``), into its buffers."""
        # copy_, never out=: a copy keeps the static buffer's address and strides, which a graph reads
        slot.x.copy_(torch.cat([d.x for d in draws], dim=1))
        slot.perm.copy_(torch.stack([d.draw.perm for d in draws]))
        slot.lam.copy_(torch.stack([d.draw.lam for d in draws]))
        slot.y.copy_(torch.stack(list(labels)))
        if not self.stages:
            return
        select = torch.zeros(self.members, len(self.stages), dtype=torch.bool)
        for m, d in enumerate(draws):
            select[m, self.stages.index(d.stage)] = True
        slot.select.copy_(to_device(select, slot.select.device))
        if self.noisy:
            shapes = self.shapes[tuple(slot.x.shape)]
            for m, d in enumerate(draws):
                terms = feature_noise(shapes[d.stage], self.mix_cfg, generator=self.member_generators[m],
                                      views=self.method.views)
                for buffer, term in zip(slot.noise[m], terms, strict=True):
                    if term is not None:
                        buffer[:term.numel()].copy_(term.reshape(-1))

    # ------------------------------------------------------------------ the body
    @contextlib.contextmanager
    def _transforms(self, slot: _Slot) -> Iterator[None]:
        """During the forward pass, at every stage, member m's slice of the features is replaced by
        M_{lambda,xi} (``noisy_feature_mixup`` with its draw and its noise) where ``slot.select[m, s]``."""
        if not self.stages:
            yield
            return
        count, views = self.members, self.method.views
        # member m's noise at each stage: views of its buffers in that stage's shapes (a capture records them)
        per_stage = {name: [tuple(None if shape is None else slot.noise[m][i][:math.prod(shape)].view(shape)
                                  for i, shape in enumerate(slot.term_shapes[name])) for m in range(count)]
                     for name in slot.term_shapes}

        def hook(_module, _inputs, out: Tensor, s: int, name: str) -> Tensor:
            parts = list(out.split(out.shape[1] // count, dim=1))
            for m in range(count):
                draw = MixDraw(perm=slot.perm[m], lam=slot.lam[m])
                mixed = noisy_feature_mixup(parts[m].float(), draw, self.mix_cfg, generator=None, views=views,
                                            terms=per_stage[name][m] if self.noisy else None).to(parts[m].dtype)
                parts[m] = torch.where(slot.select[m, s], mixed, parts[m])
            return torch.cat(parts, dim=1)

        handles = [stage_module(self.stack, name).register_forward_hook(
            lambda module, inputs, out, s=s, name=name: hook(module, inputs, out, s, name))
            for s, name in enumerate(self.stages)]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def _body(self, slot: _Slot, *, zero_grad: bool) -> list[LossParts]:
        """What a graph holds: each member's loss of the static inputs, backward of their sum (the
        members share no weight: each gets its own gradient), the SGD update (``zero_grad``: drop the
        gradients first, as the eager loop does; not in a capture, whose backward makes them)."""
        if zero_grad:
            self.optimizer.zero_grad(set_to_none=True)
        # autocast's weight cache would hold casts made during the capture: off (torch's CUDA-graph notes)
        with self._transforms(slot), torch.autocast(self.device_type, dtype=torch.bfloat16, enabled=self.amp,
                                                    cache_enabled=False):
            logits = self.stack(slot.x)
            parts = [method_loss(logits[:, m], mix_targets(slot.y[m], MixDraw(perm=slot.perm[m], lam=slot.lam[m]),
                                                           self.num_classes), self.method, self.cfg)
                     for m in range(self.members)]
        (parts[0].total if len(parts) == 1 else torch.stack([p.total for p in parts]).sum()).backward()
        sgd_update(self.optimizer, self.lrs)
        return [LossParts(p.total.detach(), p.cross_entropy.detach(), p.jsd.detach()) for p in parts]
