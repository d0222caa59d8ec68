"""A run's draws, made a chunk of steps at a time: the views, the partners, lambda and the transform
point of many steps in one call (issue 38).

Steps 1-2 of a training step (``fullscale.training.step``) are the views the network sees (crop and
flip, AugMix: ``make_views``) and the mixing draws (partners, lambda, the transform point).  Made
one batch at a time on a GPU they cost about 1,800 small kernels a step whatever the batch size,
bound by launches, and the AugMix op grouping read counts back from the device (a host
synchronisation drains the queue the step's own kernels need).  So a run makes them for a whole
chunk of consecutive steps at once (``draw_chunk``): one crop/flip and two AugMix calls over all
the chunk's images, the partners and lambdas of all its steps, its transform points, every random
choice drawn on the host (a CPU generator) and moved to the device without waiting for it; the
pixel work runs on the device as one batch.  A step then takes its slice.

**What is trained does not change.**  Every draw has the law it had (crop offsets, flips, AugMix
chains and weights per image; a uniform permutation and one Beta(alpha, alpha) lambda per batch, or
one per sample; the transform point uniform over ``model.stages``).  The noise of M_{lambda,xi} and a
mixing's batch op (CutMix's box, Puzzle Mix's masks) still draw from the run's device generator,
step by step.

**Exactness.**  A chunk's draws come from generators keyed by (run seed, epoch, chunk, rank)
(``chunk_generators``), not from a stream carried from step to step, so:
- same-seed runs are identical;
- a run resumed in the middle of a chunk remakes that chunk from its key and its batches (the data
  is asked for the batches from the chunk's first step) and skips the steps already trained: equal
  to the uninterrupted run;
- under torchrun the views and partners are per rank (each rank's own images), and with
  ``ddp_draws=shared`` (the default) lambda and the transform point come from a key without the rank,
  so every rank mixes with one lambda at one point, as one process on the whole batch would (no
  broadcast); ``ddp_draws=per_rank`` keys them by rank too (rank 0 draws what ``shared`` draws).
The chunk length (``chunk_steps``) is fixed by the batch, the view size and the number of views
(``VIEW_CHUNK_BYTES`` of float32 views, at most an epoch), so it is the same on every resume.

``draw_step`` is the one-batch door (benchmarks, tests, ``fullscale.api``): a chunk of one batch
whose views, partners and lambda come from one generator, in the order of a single step.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import torch
from torch import Tensor, nn

import noisymix
from fullscale.augment import augmix, to_float
from fullscale.training.config import TrainConfig
from fullscale.training.data import DeviceTransform, device_transform
from fullscale.training.methods import Method
from noisymix.mixing import MixDraw
from noisymix.random import sample_beta
from noisymix_infra.devices import to_device

__all__ = ["VIEW_CHUNK_BYTES", "ChunkGenerators", "RunDraws", "StepDraws", "chunk_generators", "chunk_steps",
           "draw_chunk", "draw_step", "make_views", "stage_choices", "step_mix_config"]

#: float32 view bytes one chunk holds at most (PreActResNet-18 on CIFAR, batch 128, three views:
#: 113 steps, 14,464 images a chunk; ResNet-50 at 224, batch 64, three views: 4 steps).  On an H100
#: the views of a chunk cost a fixed ~40 ms of kernel launches plus their arithmetic, so longer
#: chunks amortize better (issue 38: 256 MiB gave 0.8 ms a CIFAR step)
VIEW_CHUNK_BYTES = 512 * 2**20


def make_views(x_u8: Tensor, method: Method, cfg: TrainConfig, g: torch.Generator,
               transform: DeviceTransform | None = None) -> Tensor:
    """Step 1: the views the network sees, (views x N, 3, H, W) float, views concatenated (clean,
    AugMix, AugMix for JSD methods), made from the data source's own device ``transform`` of the
    batch (default: ``data.device_transform(cfg)``; a float result is the view itself).  Draws from
    ``g`` (on any device), pixels on ``x_u8``'s device."""
    x_u8 = (transform or device_transform(cfg))(x_u8, g)
    if x_u8.is_floating_point():  # already the network's input (a transfer run's upsampled crop)
        return x_u8
    if not method.augmentations:
        return to_float(x_u8)
    if not method.jsd:
        return augmix(x_u8, cfg.augmix, generator=g)
    return torch.cat([to_float(x_u8), augmix(x_u8, cfg.augmix, generator=g),
                      augmix(x_u8, cfg.augmix, generator=g)])


def step_mix_config(method: Method, cfg: TrainConfig) -> noisymix.MixConfig:
    """The MixConfig a step of ``method`` uses: lambda only if it mixes, noise only if it injects."""
    alpha = cfg.mix.alpha if method.mixing != "none" else 0.0
    noise = cfg.mix.noise if method.noise else noisymix.NoiseConfig()
    return dataclasses.replace(cfg.mix, alpha=alpha, noise=noise)


def stage_choices(method: Method, stages: Sequence[str]) -> tuple[str, ...]:
    """Where the transform point is drawn: uniformly from the model's ``stages`` (the input only for Mixup)."""
    return tuple(stages) if method.any_stage else ("input",)


@dataclasses.dataclass
class StepDraws:
    """What steps 1-2 drew for one batch."""

    x: Tensor  # the views (V x B, 3, H, W); after the mixing's batch op, once the step applied it
    draw: noisymix.MixDraw  # partners and lambda
    mix_cfg: noisymix.MixConfig
    stage: str | None  # the transform point; None: no transform inside the network
    extra: Any = None  # what the mixing's batch op hands its loss (Puzzle Mix: the clean logits)


@dataclasses.dataclass(frozen=True)
class ChunkGenerators:
    """Where a chunk's draws come from: ``views`` (per rank: crops, flips, AugMix, partners, per-sample
    lambdas), ``lam`` (one lambda per batch) and ``stage`` (the transform points)."""

    views: torch.Generator
    lam: torch.Generator
    stage: torch.Generator


def _keyed_generator(*key: object) -> torch.Generator:
    digest = hashlib.blake2b("/".join(map(str, ("noisymix-chunk", *key))).encode(), digest_size=8).digest()
    return noisymix.generator_for(int.from_bytes(digest, "little"))


def chunk_generators(seed: int, epoch: int, chunk: int, *, rank: int = 0, ddp_draws: str = "shared") -> ChunkGenerators:
    """The CPU generators of chunk ``chunk`` of epoch ``epoch`` of a run of ``seed`` on ``rank``."""
    shared_rank = rank if ddp_draws == "per_rank" else 0
    return ChunkGenerators(_keyed_generator("views", seed, rank, epoch, chunk),
                           _keyed_generator("lambda", seed, shared_rank, epoch, chunk),
                           _keyed_generator("stage", seed, shared_rank, epoch, chunk))


def chunk_steps(views: int, batch: int, view_shape: Sequence[int], steps_per_epoch: int) -> int:
    """Steps per chunk: as many as ``VIEW_CHUNK_BYTES`` of float32 views hold, 1 to an epoch."""
    per_step = 4 * views * batch * math.prod(view_shape)
    return max(1, min(steps_per_epoch, VIEW_CHUNK_BYTES // max(per_step, 1)))


def draw_chunk(batches: Sequence[tuple[Tensor, Tensor]], method: Method, cfg: TrainConfig, stages: Sequence[str],
               gens: ChunkGenerators, transform: DeviceTransform | None = None) -> list[StepDraws]:
    """Steps 1-2, but the mixing's batch op, for consecutive ``batches`` (uint8 images and labels on
    the device): the views of all their images in one call, then each batch's partners, the
    lambdas and the transform points (over ``stages``, the model's mixing points).  Draw order:
    crops and flips, AugMix views (``views``
    generator), each batch's partner keys (``views``), the lambdas (``lam``, or ``views`` per
    sample), the transform points (``stage``)."""
    sizes = [int(y.shape[0]) for _, y in batches]
    x_u8 = batches[0][0] if len(batches) == 1 else torch.cat([x for x, _ in batches])
    device = x_u8.device
    n = x_u8.shape[0]
    views = make_views(x_u8, method, cfg, gens.views, transform)
    views = views.view(views.shape[0] // n, n, *views.shape[1:])  # (V, N, C, H, W)
    b0 = sizes[0]
    if all(b == b0 for b in sizes):
        # step-major in one copy, so a step's views are a view of the chunk (no copy a step): (K, V, b, ...);
        # on CUDA channels-last, the layout of the model's weights
        steps = views.view(views.shape[0], len(sizes), b0, *views.shape[2:]).transpose(0, 1)
        if device.type == "cuda":
            steps = steps.permute(0, 1, 2, 4, 5, 3).contiguous().permute(0, 1, 2, 5, 3, 4)
        else:
            steps = steps.contiguous()
        step_views = [steps[k].flatten(0, 1) for k in range(len(sizes))]
    else:  # a short last batch: each step's slice copied
        starts = [sum(sizes[:k]) for k in range(len(sizes))]
        step_views = [views[:, a:a + b].reshape(-1, *views.shape[2:]) for a, b in zip(starts, sizes, strict=True)]
    mix_cfg = step_mix_config(method, cfg)
    # a uniform permutation per batch: argsort of uniform keys (as draw_mix)
    perms = [torch.rand(b, generator=gens.views, device=gens.views.device).argsort() for b in sizes]
    if mix_cfg.mixes:
        beta = mix_cfg.alpha if mix_cfg.beta is None else mix_cfg.beta
        lams = (sample_beta(mix_cfg.alpha, beta, (n,), generator=gens.views) if mix_cfg.lam_per_sample
                else sample_beta(mix_cfg.alpha, beta, (len(sizes),), generator=gens.lam))
    else:
        lams = torch.ones(n if mix_cfg.lam_per_sample else len(sizes), device=gens.views.device)
    points: list[str | None] = [None] * len(sizes)
    if method.feature_transform:
        choices = stage_choices(method, stages)
        points = [choices[k] for k in torch.randint(len(choices), (len(sizes),), generator=gens.stage).tolist()]
    perm_all = to_device(torch.cat(perms) if len(perms) > 1 else perms[0], device)
    lams = to_device(lams, device)
    out, start = [], 0
    for k, b in enumerate(sizes):
        lam = lams[start:start + b] if mix_cfg.lam_per_sample else lams[k]
        out.append(StepDraws(step_views[k], MixDraw(perm=perm_all[start:start + b], lam=lam), mix_cfg, points[k]))
        start += b
    return out


def draw_step(x_u8: Tensor, y: Tensor, method: Method, cfg: TrainConfig, stages: Sequence[str], g: torch.Generator,
              stage_g: torch.Generator) -> StepDraws:
    """Steps 1-2 for one batch (the mixing's batch op not yet applied): views, partners and lambda
    from ``g`` in that order, the transform point from ``stage_g`` over ``stages``."""
    return draw_chunk([(x_u8, y)], method, cfg, stages, ChunkGenerators(g, g, stage_g))[0]


class RunDraws:
    """The per-step draws of one run (one rank), made a chunk at a time (see the module docstring).

    ``epoch(batches_from, epoch, start_step, core)`` yields ``(step, draws, labels)`` from
    ``start_step``; ``batches_from(step)`` gives the epoch's batches from ``step`` on (the run's data:
    ``InMemoryData.batches`` or the streaming loader)."""

    def __init__(self, cfg: TrainConfig, method: Method, steps_per_epoch: int, view_shape: Sequence[int], *,
                 rank: int = 0, world: int = 1, transform: DeviceTransform | None = None) -> None:
        self.cfg, self.method, self.rank = cfg, method, rank
        self.transform = transform or device_transform(cfg)  # the data source's own (``data.device_transform``)
        self.steps_per_epoch = steps_per_epoch
        self.steps = chunk_steps(method.views, -(-cfg.optim.batch_size // world), view_shape, steps_per_epoch)

    def epoch(self, batches_from: Callable[[int], Iterable[tuple[Tensor, Tensor]]], epoch: int, start_step: int,
              core: nn.Module) -> Iterator[tuple[int, StepDraws, Tensor]]:
        first = start_step // self.steps
        batches = iter(batches_from(first * self.steps))
        for chunk in range(first, -(-self.steps_per_epoch // self.steps)):
            part = list(itertools.islice(batches, self.steps))
            if not part:
                return
            gens = chunk_generators(self.cfg.seed, epoch, chunk, rank=self.rank, ddp_draws=self.cfg.runtime.ddp_draws)
            drawn = draw_chunk(part, self.method, self.cfg, core.stages, gens, self.transform)
            for j, (draws, (_, y)) in enumerate(zip(drawn, part, strict=True)):
                step = chunk * self.steps + j
                if step >= start_step:
                    yield step, draws, y
