"""The trainer: every method of the CIFAR tables, data on the device, one loop.

The training set lives on the device as uint8 (N, 3, H, W); batches are slices of a
``randperm`` drawn from the run's generator (no DataLoader), augmented on the device
(``fullscale.augment``).  One step (``_loss``):

1. crop + flip the batch; build the views: the image (Baseline, mixing methods), one AugMix
   view (AugMix without JSD), or clean + two AugMix views (JSD methods);
2. draw the partners and lambda once (``noisymix.draw_mix``; one lambda per batch, as the public
   code; lambda = 1 without mixing), then CutMix's box (CutMix only) or Puzzle Mix's masks
   (Puzzle Mix only: a saliency forward/backward of the clean loss on the unwrapped model, the
   block count, the graph cuts, transport; ``fullscale.puzzlemix.puzzlemix_step``; the label
   weight of each pair is its mask's mean), then the transform point
   k uniformly from ``model.stages`` (``input`` only for Mixup) on a CPU generator, so that
   choosing it never waits for the GPU;
3. forward with M_{lambda,xi} applied at stage k (``noisymix.noisy_feature_mixup``, same
   partners and lambda for the three views, additive level x view index as the public code);
4. L = CE(clean logits, mixed labels) + gamma JS(clean, aug1, aug2) (``noisymix.noisymix_loss``).

Steps 1-3 draw from the run's device generator in exactly this order (tests replay it).

Per-step cosine learning rate down to ``lr_min`` (the public ``get_lr``; ``lr_schedule=step``:
robustness' StepLR at ``lr_milestones``), SGD Nesterov; transfer runs (``model=resnet50_transfer``,
``fullscale.transfer``) start from ``source_weights``, freeze ``freeze_level`` and make their views
with RandomResizedCrop + flip upsampled on the device; bf16
autocast and channels_last on CUDA; DDP under ``torchrun`` (rank 0 alone writes; by default,
``ddp_draws=shared``, every rank uses the same lambda and transform point in a step, as one
process on the whole batch would, while crops, AugMix views, partners and noise stay per rank;
``sync_bn=true`` for batch statistics over all ranks, CUDA only).  Every epoch
ends with an atomic ``checkpoint.pt`` (model, optimiser, scheduler, generator states), so
``resume`` continues to the same result; a non-finite loss stops the run naming the step and
the loss parts before the next checkpoint is written, so the last good one stays; a run whose
losses stayed finite but ended far above their start, or at chance accuracy after a blow-up, is
reported as diverged in the same way (``_divergence``; issue 32).  On CUDA the
finiteness check reads the loss history every ``_CUDA_CHECK_EVERY`` steps (not every step,
which would stall the GPU queue); on the CPU it runs before every update.

``dataset=imagenet`` streams ``data_root/train/<wnid>/*.JPEG`` (``fullscale.data.imagenet``):
DataLoader workers decode and crop (RandomResizedCrop ``image_size`` + flip, drawn per (seed,
epoch, image)) and hand uint8 batches over in pinned memory; the views, AugMix, mixing and the
normalisation happen on the device as for the in-memory sets (no second crop/flip there).  With
``checkpoint_every=N`` a checkpoint is also written every N steps, mid-epoch, and ``resume``
continues from that step exactly (the epoch's order comes from (seed, epoch), the in-memory
sets' from the order generator saved as it was when the epoch began).  The metrics of an epoch
add the data-wait fraction (time the step waited for its batch) and, streamed, the files that
could not be decoded (``bad_files``); the progress bar shows images/s and the wait fraction.

Everything a run reads (config, device, data, model size) is read and checked before the run
folder is made or locked, so a command refused for its input leaves nothing behind (a CIFAR
``train`` without ``--data-root`` left ``RUN/.lock``; issue 32).  The folder is claimed as a
training run (``infra.folder_kind``): a -C/-P set, sweep or report folder given as
``--out`` is refused in one line before anything is written into it.  The run records the
identity of its training data (``data_sha256``: the images and labels as trained on; streamed
ImageNet: its listing), and ``resume`` refuses data that changed in place since.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

import noisymix
from fullscale.augment import augmix, random_crop_flip, to_float
from fullscale.config import TrainConfig
from fullscale.data import ImageSet, load_dataset
from fullscale.data.imagenet import StreamingImageNet, TrainCrop
from fullscale.hooks import install_stage_hooks, transform_stage
from fullscale.methods import Method, get_method
from fullscale.models import create_model
from fullscale.puzzlemix import PuzzleMixConfig, puzzlemix_loss, puzzlemix_step
from fullscale.runs import append_metrics, read_metrics, split_run_record
from fullscale.transfer import (
    apply_freeze,
    check_config,
    load_source_backbone,
    random_resized_crop_flip,
    set_train_mode,
    step_lr_factor,
)
from infra.config import config_to_dict
from infra.folder_kind import MARKER, claim_folder, require_kind
from infra.io import (
    directory_lock,
    load_state_dict,
    printable,
    read_json,
    save_torch,
    sha256_file,
    write_json,
)
from infra.progress import progress
from infra.provenance import now, provenance
from noisymix.loss import noisymix_loss
from noisymix.mixing import cutmix, draw_mix, mix_targets, noisy_feature_mixup

__all__ = ["DIVERGED_RATIO", "LATER_KEYS", "RESUMABLE_CHANGES", "NonFiniteLoss", "stream_seed", "train"]

_CUDA_CHECK_EVERY = 25
# Config fields a resumed run may change: where and how fast it runs, not what it computes.
RESUMABLE_CHANGES = frozenset({"device", "compile", "data_root", "workers", "decoder", "checkpoint_every",
                                "max_bad_fraction"})
# config keys added after runs were made, with the value that computes what those runs did
LATER_KEYS = {"stem_stride": 1, "ddp_draws": "shared", "sync_bn": False, "image_size": 224, "workers": 8,
               "decoder": "auto", "max_bad_fraction": 0.001, "checkpoint_every": 0, "lr_schedule": "cosine",
               "lr_milestones": [],
               "lr_gamma": 0.1, "source_weights": "", "source_row": "", "freeze_level": -1, "freeze_bn_stats": False,
               "puzzlemix": config_to_dict(PuzzleMixConfig())}
# data sets streamed from disk, cropped and flipped by the loader (fullscale.data.imagenet)
_STREAMED = ("imagenet",)
# facts of the run part that a resumed run must share (the data it trains on)
_RUN_FACTS = ("num_classes", "model_kwargs", "train_images", "data_source")


# A finished run is reported as diverged (``_divergence``) when its last epoch's training
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
# seeds of torch's generators: 0 .. 2**64 - 1
_GENERATOR_SEEDS = 2**64


class NonFiniteLoss(RuntimeError):
    """The run diverged: the loss or the weights became NaN or infinite (the message names the
    epoch, step and loss parts), or a finite loss ended far above its start (``_divergence``).
    The name stays for the callers that tell it from a crash (``app.sweep`` never retries it)."""


def _device(cfg: TrainConfig) -> torch.device:
    if cfg.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(cfg.device)
        torch.empty(0, device=device)  # a known name of a device this torch cannot use fails here
    except (RuntimeError, AssertionError) as error:
        raise ValueError(f"device={cfg.device!r} is not usable here "
                         f"({str(error).strip().splitlines()[0] if str(error).strip() else 'unknown'}); "
                         "use auto, cpu or cuda[:N]") from None
    return device


def _cosine(step: int, total: int, cfg: TrainConfig) -> float:
    """Learning-rate factor of the public code's LambdaLR: cosine from 1 to lr_min / lr."""
    return (cfg.lr_min + (cfg.lr - cfg.lr_min) * 0.5 * (1 + math.cos(step / total * math.pi))) / cfg.lr


def _lr_factor(step: int, total: int, steps_per_epoch: int, cfg: TrainConfig) -> float:
    if cfg.lr_schedule == "step":
        return step_lr_factor(step, steps_per_epoch, cfg.lr_milestones, cfg.lr_gamma)
    return _cosine(step, total, cfg)


def _views(x_u8: Tensor, method: Method, cfg: TrainConfig, g: torch.Generator) -> Tensor:
    if cfg.transfer:  # the public transfer code's training view, upsampled to image_size on the device
        return random_resized_crop_flip(x_u8, cfg.image_size, generator=g)
    if cfg.dataset not in _STREAMED:  # streamed batches come cropped and flipped by the loader
        x_u8 = random_crop_flip(x_u8, generator=g, padding=cfg.crop_padding)
    if not method.augmentations:
        return to_float(x_u8)
    if not method.jsd:
        return augmix(x_u8, cfg.augmix, generator=g)
    return torch.cat([to_float(x_u8), augmix(x_u8, cfg.augmix, generator=g),
                      augmix(x_u8, cfg.augmix, generator=g)])


def _step_mix_config(method: Method, cfg: TrainConfig) -> noisymix.MixConfig:
    """The MixConfig a step of ``method`` uses: lambda only if it mixes, noise only if it injects."""
    alpha = cfg.mix.alpha if method.mixing != "none" else 0.0
    noise = cfg.mix.noise if method.noise else noisymix.NoiseConfig()
    return dataclasses.replace(cfg.mix, alpha=alpha, noise=noise)


def _share_lambda(draw: noisymix.MixDraw, mix_cfg: noisymix.MixConfig, cfg: TrainConfig) -> None:
    """Under torchrun with ``ddp_draws=shared``: rank 0's lambda on every rank (in place), so a
    step mixes the whole batch with one lambda as the single-process recipe (one lambda per
    batch, the public code). Per-sample lambdas stay per rank, as the samples they belong to."""
    if (cfg.ddp_draws == "shared" and mix_cfg.mixes and not mix_cfg.lam_per_sample and dist.is_available()
            and dist.is_initialized() and dist.get_world_size() > 1):
        dist.broadcast(draw.lam, src=0)


def _sync_batchnorm(core: nn.Module, cfg: TrainConfig, world: int, device: torch.device) -> nn.Module:
    """``sync_bn=true`` under torchrun: SyncBatchNorm layers (same parameters and buffers, so
    checkpoints load into the plain model). torch's SyncBatchNorm runs on CUDA only."""
    if not cfg.sync_bn or world == 1:
        return core
    if device.type != "cuda":
        raise ValueError(f"sync_bn=true needs CUDA (torch's SyncBatchNorm runs on CUDA only); this run is on "
                         f"{device.type} with {world} processes: drop sync_bn or train on GPUs")
    return nn.SyncBatchNorm.convert_sync_batchnorm(core)


def _loss(model: nn.Module, core: nn.Module, x_u8: Tensor, y: Tensor, method: Method, cfg: TrainConfig,
          num_classes: int, g: torch.Generator, stage_g: torch.Generator) -> noisymix.LossParts:
    """One step's loss (see the module docstring); ``core`` is the unwrapped model (hooks),
    ``g`` the device generator, ``stage_g`` the CPU generator of the transform point."""
    x = _views(x_u8, method, cfg, g)
    mix_cfg = _step_mix_config(method, cfg)
    draw = draw_mix(y.shape[0], mix_cfg, generator=g)
    _share_lambda(draw, mix_cfg, cfg)
    if method.mixing == "cutmix":
        x, draw = cutmix(x, draw, generator=g)
    clean = None
    if method.mixing == "puzzlemix":
        x, draw, clean = puzzlemix_step(core, x, y, draw, cfg.puzzlemix, generator=g)
    if x.is_cuda:  # the layout of the model's weights, set once after every input transform
        x = x.contiguous(memory_format=torch.channels_last)
    if method.feature_transform:
        stages = core.stages if method.any_stage else ("input",)
        k = int(torch.randint(len(stages), (1,), generator=stage_g))
        # in float32 under bf16 autocast: the same random numbers and precision as on the CPU
        with transform_stage(core, stages[k], lambda h: noisy_feature_mixup(
                h.float(), draw, mix_cfg, generator=g, views=method.views).to(h.dtype)):
            logits = model(x)
    else:
        logits = model(x)
    targets = mix_targets(y, draw, num_classes)
    if method.mixing == "puzzlemix":
        return puzzlemix_loss(logits, targets, clean, cfg.puzzlemix)
    return noisymix_loss(logits.float(), targets, views=method.views, gamma=cfg.jsd_weight,
                         jsd_variant=cfg.jsd_variant)


def train(cfg: TrainConfig, out: str | Path, *, resume: bool = False) -> Path:
    """Train ``cfg`` into the run directory ``out``; return it.  See the module docstring.

    The weight initialisation and dropout draw from torch's global generator, so training runs
    inside ``fork_rng`` seeded with ``cfg.seed`` (the caller's global state is untouched) and the
    checkpoint carries that state for an exact resume.
    """
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    out = Path(out)
    # Rank 0 writes, so it alone checks, locks and claims the folder.
    rank0 = int(os.environ.get("RANK", "0")) == 0
    if rank0:
        check_out(out, resume)
    # the process group this call joins (under torchrun) is left by this call: a gloo group that is
    # never destroyed can abort a rank at interpreter exit ("terminate called without an active
    # exception"), so torchrun reported a finished run as failed (about 1 run in 24 on a loaded CPU)
    joins_group = int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized()
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(cfg.seed)
        try:
            setup = _prepare(cfg)  # every input read and checked: nothing is written before this
            if not rank0:
                return _train(setup, out, resume)
            found = {p.name for p in out.iterdir()} if out.is_dir() else None  # None: this call makes it
            # One writer per run directory: a second `train` on the same --out fails at once instead
            # of leaving one run's config.json beside the other's final.pt.
            with directory_lock(out, "training"):
                had_config = (out / "config.json").exists()
                try:
                    claim_folder(out, "run")  # a -C set, sweep, ... given as --out: refused, nothing written
                    return _train(setup, out, resume)
                except BaseException as error:
                    _undo_start(out, error, had_config=had_config, found=found)
                    raise
        finally:
            if joins_group and dist.is_initialized():
                dist.destroy_process_group()


def check_out(out: Path, resume: bool) -> None:
    """What can be said of ``--out`` before anything is read or written: a file, a folder of
    another kind than a run (a -C set, a sweep, ...: ``infra.folder_kind``), a finished
    or started run without ``resume``."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"{printable(str(out))} exists and is not a folder: give a new or existing folder")
    require_kind(out, "run", "--out")
    if not resume and any((out / name).exists() for name in ("final.pt", "checkpoint.pt")):
        raise ValueError(f"{printable(str(out))} already holds a run; use --resume to continue it, or another --out")


def _undo_start(out: Path, error: BaseException, *, had_config: bool, found: set[str] | None) -> None:
    """A run that fails before its first checkpoint leaves the folder as it found it (``found``:
    the names it held; ``None``: this call made it): a config error found only once training
    runs leaves no ``config.json`` (the folder stays usable for the corrected command), and the
    lock and marker this call added to a folder that holds nothing else new are removed, the
    folder too if this call made it (issue 32: a failed ``train`` left ``RUN/.lock``)."""
    if any((out / name).exists() for name in ("checkpoint.pt", "final.pt")):
        return
    if isinstance(error, (ValueError, TypeError, KeyError)) and not had_config:
        with contextlib.suppress(FileNotFoundError):
            (out / "config.json").unlink()
    before = found or set()
    added = {".lock", MARKER} - before
    if not out.is_dir() or not {p.name for p in out.iterdir()} <= before | added:
        return  # the run wrote something else (a KeyboardInterrupt in its first epoch): keep it
    with contextlib.suppress(OSError):  # the lock is still held: no other writer is inside
        for name in added:
            (out / name).unlink(missing_ok=True)
        if found is None:
            out.rmdir()


@dataclasses.dataclass(frozen=True)
class _Process:
    """Where this process trains: its device and its place among the torchrun processes."""

    device: torch.device
    rank: int
    world: int

    @property
    def writer(self) -> bool:
        return self.rank == 0


def _process(cfg: TrainConfig) -> _Process:
    """The device, rank and world size; joins the process group under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = _device(cfg)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if world > 1 and device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    _sync_batchnorm(nn.Identity(), cfg, world, device)  # refuse sync_bn on the CPU before any file is written
    return _Process(device, rank, world)


@dataclasses.dataclass(frozen=True)
class InMemoryData:
    """A training set held on the device as uint8 (N, 3, H, W) with its labels; an epoch's
    batches are slices of one ``randperm`` from the order generator, the same on every rank,
    each rank taking every ``world``-th image of a batch.

    The loop asks a training set for ``num_classes``, ``len``, ``steps_per_epoch(batch_size)``
    and ``batches(order_g, batch_size, process, epoch=, start_step=)`` (uint8 images and labels on
    the device) only: the streaming ``StreamingImageNet`` gives the same four answers."""

    images: Tensor
    labels: Tensor
    num_classes: int
    source: str
    sha256: str = ""  # the images and labels as read (``_content_sha256``), recorded as ``data_sha256``

    def __len__(self) -> int:
        return self.labels.shape[0]

    def steps_per_epoch(self, batch_size: int) -> int:
        return math.ceil(len(self) / batch_size)

    def batches(self, order_g: torch.Generator, batch_size: int, process: _Process, *, epoch: int = 0,
                start_step: int = 0) -> Iterator[tuple[Tensor, Tensor]]:
        """The epoch's batches from ``start_step`` (the permutation is drawn whole either way)."""
        del epoch  # the order comes from order_g
        perm = torch.randperm(len(self), generator=order_g, device=self.images.device)
        for step in range(start_step, self.steps_per_epoch(batch_size)):
            index = perm[step * batch_size:(step + 1) * batch_size][process.rank::process.world]
            yield self.images[index], self.labels[index]


def _training_data(cfg: TrainConfig, process: _Process) -> tuple[InMemoryData | StreamingImageNet, ImageSet | None]:
    """The training set on the device and the held-out part (``heldout`` last images), if any."""
    device = process.device
    if cfg.dataset in _STREAMED:
        if not cfg.data_root:
            raise ValueError("dataset=imagenet needs data_root=DIR, the ImageNet root with train/<wnid>/*.JPEG")
        if cfg.train_subset or cfg.heldout:
            raise ValueError("train_subset and heldout are for in-memory data sets, not dataset=imagenet")
        crop = TrainCrop(size=cfg.image_size, decoder=cfg.decoder)
        return StreamingImageNet(cfg.data_root, seed=cfg.seed, crop=crop, workers=cfg.workers, device=device,
                                 world=process.world, max_bad_fraction=cfg.max_bad_fraction), None
    data = load_dataset(cfg.dataset, "train", cfg.data_root or None)
    if cfg.train_subset:
        data = data.subset(torch.arange(min(cfg.train_subset, len(data))))
    digest = _content_sha256(data.images, data.labels)  # before the held-out split: all the run reads
    heldout = None
    if cfg.heldout:
        if cfg.heldout >= len(data):
            raise ValueError(f"heldout={cfg.heldout} leaves no training images out of {len(data)}")
        heldout = data.subset(torch.arange(len(data) - cfg.heldout, len(data))).to(device)
        data = data.subset(torch.arange(len(data) - cfg.heldout))
    return (InMemoryData(data.images.to(device), data.labels.to(device), data.num_classes, data.source, digest),
            heldout)


def _content_sha256(images: Tensor, labels: Tensor) -> str:
    """sha256 of the images and labels (shapes, then bytes; on the CPU, before they move): the
    data's identity, not its path, so a CIFAR batch replaced in place is told from the original
    (about 0.3 s for CIFAR's 150 MB)."""
    digest = hashlib.sha256(f"{tuple(images.shape)}|{images.dtype}|{tuple(labels.shape)}|{labels.dtype}|".encode())
    for tensor in (images, labels):
        digest.update(tensor.detach().cpu().contiguous().numpy().data)
    return digest.hexdigest()


def _data_sha256(data: InMemoryData | StreamingImageNet) -> str:
    """The training data's identity: in memory, its content; streamed from an ImageNet tree, its
    listing (relative path and label of every file: reading 140 GB to hash it is out of question)."""
    if isinstance(data, InMemoryData):
        return data.sha256
    return data.files.listing_sha256()


def _available_bytes(device: torch.device) -> int | None:
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo") as info:
            fields = dict(line.split(":", 1) for line in info)
        return int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):  # not Linux: no check
        return None


def _check_model_fits(cfg: TrainConfig, num_classes: int, device: torch.device, copies: int = 1) -> None:
    """Count the model's parameters on the meta device (no memory) and refuse, in one line, a model
    whose weights, gradients and momentum alone exceed the memory available (``--set
    width=100000`` was an allocation traceback, or an out-of-memory kill; issue 23).  ``copies``:
    the members of a stacked group (fullscale.members), which hold that many models' weights."""
    with torch.device("meta"):
        count = copies * sum(p.numel() for p in create_model(cfg.model, num_classes, **cfg.model_kwargs).parameters())
    need, available = 3 * 4 * count, _available_bytes(device)
    if available is not None and need > available:
        group = f" x {copies} members" if copies > 1 else ""
        raise ValueError(f"the model does not fit: {cfg.model} at width {cfg.width or 'default'}{group} has "
                         f"{count:,} parameters, {need / 2**30:.1f} GiB for weights, gradients and momentum "
                         f"alone; {device.type} has {available / 2**30:.1f} GiB available")


def _models(cfg: TrainConfig, num_classes: int, process: _Process) -> tuple[nn.Module, nn.Module]:
    """``(core, model)``: the network, and what the step calls (DDP and/or compiled around it)."""
    device = process.device
    _check_model_fits(cfg, num_classes, device)
    core = create_model(cfg.model, num_classes, **cfg.model_kwargs).to(device)
    if cfg.transfer:  # the source's weights, a fresh classifier, frozen layers (before DDP sees them)
        load_source_backbone(core, cfg.source_weights)
        apply_freeze(core, cfg.freeze_level)
    core = _sync_batchnorm(core, cfg, process.world, device)
    if device.type == "cuda":
        core = core.to(memory_format=torch.channels_last)
    model: nn.Module = core
    if process.world > 1:
        ids = [device] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(core, device_ids=ids)
    if cfg.compile and device.type == "cuda":
        install_stage_hooks(core)  # one fixed set of graphs, not a recompile per step (hooks.py)
        model = torch.compile(model)
    return core, model


@dataclasses.dataclass
class _Generators:
    """The run's random streams (all in the checkpoint): batch order (the same on every rank),
    views/draws/noise (per rank), and the transform point (on the CPU; the same on every rank
    unless ``ddp_draws=per_rank``)."""

    order: torch.Generator
    aug: torch.Generator
    stage: torch.Generator

    @classmethod
    def create(cls, cfg: TrainConfig, process: _Process) -> _Generators:
        stage_rank = process.rank if cfg.ddp_draws == "per_rank" else 0
        return cls(noisymix.generator_for(cfg.seed, process.device),
                   noisymix.generator_for(stream_seed(cfg.seed, 1 + process.rank), process.device),
                   noisymix.generator_for(stream_seed(cfg.seed, 501 + stage_rank)))

    def state(self) -> dict[str, Tensor]:
        return {"order_generator": self.order.get_state(), "aug_generator": self.aug.get_state(),
                "stage_generator": self.stage.get_state()}

    def restore(self, state: dict) -> None:
        self.order.set_state(state["order_generator"].cpu())
        self.aug.set_state(state["aug_generator"].cpu())
        self.stage.set_state(state["stage_generator"].cpu())


def stream_seed(seed: int, stream: int) -> int:
    """The generator seed of one of a run's streams (``stream``: 1 + rank for the views and draws,
    501 + rank for the transform point): ``seed * 1000 + stream``, the streams of every run made so
    far, while that is a seed torch takes (< 2**64, i.e. run seeds up to about 1.8e16); above, a
    64-bit hash of (seed, stream), so that every documented run seed (0 .. 2**63 - 1) trains and
    distinct seeds keep distinct streams (the product overflowed torch's generator; issue 32)."""
    value = seed * 1000 + stream
    if 0 <= value < _GENERATOR_SEEDS:
        return value
    digest = hashlib.blake2b(f"noisymix-stream/{int(seed)}/{int(stream)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _run_record(cfg: TrainConfig, data: InMemoryData | StreamingImageNet, process: _Process) -> dict:
    """``config.json``: ``{"config": the TrainConfig, "run": the facts of this run}``; the config
    part reads back with ``config_from_dict(TrainConfig, record["config"])``."""
    device = process.device
    run = {"num_classes": data.num_classes, "model_kwargs": cfg.model_kwargs, "train_images": len(data),
           "data_source": data.source, "data_sha256": _data_sha256(data), "world_size": process.world,
           "device": str(device) if device.type == "cpu" else torch.cuda.get_device_name(device),
           "started": now(), "provenance": provenance()}
    if cfg.transfer:  # the source by its content, not only its path (checked on resume: _check_same_config)
        run["source_weights_sha256"] = sha256_file(cfg.source_weights)
    return {"config": config_to_dict(cfg), "run": run}


def _restore(checkpoint: Path, core: nn.Module, optimizer: torch.optim.Optimizer,
             scheduler: torch.optim.lr_scheduler.LRScheduler, generators: _Generators,
             device: torch.device, *, identity: str) -> tuple[int, int, Tensor | None]:
    """Load a resumable checkpoint into the run's objects; return the epochs it finished, the
    steps done of the next one and their loss history (mid-epoch checkpoints; else 0, None).
    The checkpoint must carry this run's ``config_identity``: another run's checkpoint copied
    into the folder would resume with its own optimizer state (lr, weight decay) and draws while
    config.json names this run's (issue 23)."""
    state = load_state_dict(checkpoint, map_location=device)
    theirs = state.get("config_identity") if isinstance(state, dict) else None
    if theirs != identity:
        why = ("it carries no config identity (written by an older version or not by `noisymix train`)"
               if theirs is None else f"it was written by a run of another config ({theirs[:12]} != {identity[:12]})")
        raise ValueError(f"cannot resume from {checkpoint}: {why}; train anew into another --out")
    try:
        core.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        generators.restore(state)
        torch.set_rng_state(state["torch_generator"].cpu())
        if device.type == "cuda" and "cuda_generator" in state:  # dropout on the GPU
            torch.cuda.set_rng_state(state["cuda_generator"].cpu(), device)
        return int(state["epoch"]), int(state.get("step", 0)), state.get("history")
    except (KeyError, TypeError, RuntimeError, ValueError, AttributeError, IndexError) as error:
        # a plain state dict (KeyError), another width (RuntimeError), a foreign file ...
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{checkpoint} is not a resumable checkpoint of this run "
                         f"({type(error).__name__}: {detail[:200]})") from None


def _save_checkpoint(checkpoint: Path, core: nn.Module, optimizer: torch.optim.Optimizer,
                     scheduler: torch.optim.lr_scheduler.LRScheduler, generators: _Generators, epoch: int,
                     device: torch.device, *, step: int = 0, order_state: Tensor | None = None,
                     history: Tensor | None = None, identity: str) -> None:
    """``epoch`` epochs done and ``step`` steps of the next; mid-epoch (``step > 0``) the order
    generator as it was when the epoch began (``order_state``) and the epoch's loss history;
    ``identity``: the run's ``config_identity``, checked on resume."""
    mid = {"order_generator": order_state, "history": history.cpu()} if step else {}
    save_torch(checkpoint, {"config_identity": identity, "model": core.state_dict(),
                            "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                            **generators.state(), **mid,
                            "torch_generator": torch.get_rng_state(),
                            **({"cuda_generator": torch.cuda.get_rng_state(device)}
                               if device.type == "cuda" else {})})


@dataclasses.dataclass
class _Loop:
    """What one epoch of training touches."""

    cfg: TrainConfig
    method: Method
    process: _Process
    data: InMemoryData | StreamingImageNet
    core: nn.Module
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    generators: _Generators
    checkpoint: Path
    identity: str  # the run's config_identity, stored in its checkpoints
    probe: Tensor | None  # a few training images whose logits must stay finite (_check_weights)


def _train_epoch(loop: _Loop, epoch: int, bar: Any, start_step: int = 0, done: Tensor | None = None) -> dict:
    """One epoch of steps from ``start_step`` (``done``: the loss history of the steps before it);
    the metrics entry of the epoch (loss parts summed over all ranks)."""
    cfg, device = loop.cfg, loop.process.device
    amp = cfg.amp and device.type == "cuda"
    check_every = 1 if device.type == "cpu" else _CUDA_CHECK_EVERY
    steps_per_epoch = loop.data.steps_per_epoch(cfg.batch_size)
    set_train_mode(loop.model, freeze_bn_stats=cfg.freeze_bn_stats)
    t0 = time.perf_counter()
    # per step: images, then loss, CE and JSD summed over them (kept on the device: no sync)
    history = torch.zeros(steps_per_epoch, 4, device=device)
    if done is not None:
        history[:start_step] = done.to(device)
    checked = start_step
    order_state = loop.generators.order.get_state()  # before the epoch draws its permutation
    batches = loop.data.batches(loop.generators.order, cfg.batch_size, loop.process, epoch=epoch,
                                start_step=start_step)
    waited = getattr(loop.data, "wait_seconds", None) is not None
    for step, (x_u8, y) in enumerate(batches, start=start_step):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            parts = _loss(loop.model, loop.core, x_u8, y, loop.method, cfg, loop.data.num_classes,
                          loop.generators.aug, loop.generators.stage)
        history[step] = torch.stack([parts.total.new_tensor(float(len(y))), parts.total.detach(),
                                     parts.cross_entropy.detach(), parts.jsd.detach()])
        if (step + 1) % check_every == 0:  # on the CPU: before this step's update
            checked = _check_finite(history, checked, step + 1, epoch, loop.checkpoint)
        loop.optimizer.zero_grad(set_to_none=True)
        parts.total.backward()
        loop.optimizer.step()
        loop.scheduler.step()
        bar.update(1)
        if waited and (step + 1) % 20 == 0:
            seconds = time.perf_counter() - t0
            bar.set_postfix(img_s=f"{(step + 1 - start_step) * cfg.batch_size / seconds:.0f}",
                            wait=f"{loop.data.wait_seconds / seconds:.0%}", refresh=False)
        global_step = epoch * steps_per_epoch + step + 1
        if cfg.checkpoint_every and global_step % cfg.checkpoint_every == 0 and step + 1 < steps_per_epoch:
            checked = _check_finite(history, checked, step + 1, epoch, loop.checkpoint)
            if loop.process.writer:
                _check_weights(loop.core, f"at epoch {epoch + 1}, step {step + 1}", loop.checkpoint, loop.probe)
                _save_checkpoint(loop.checkpoint, loop.core, loop.optimizer, loop.scheduler, loop.generators,
                                 epoch, device, step=step + 1, order_state=order_state, history=history[:step + 1],
                                 identity=loop.identity)
    _check_finite(history, checked, steps_per_epoch, epoch, loop.checkpoint)
    sums = torch.cat([history[:, :1].sum(0), (history[:, :1] * history[:, 1:]).sum(0)])
    if loop.process.world > 1:
        dist.all_reduce(sums)
    n = float(sums[0])  # the images of the epoch (all of an in-memory set; streamed, less bad files)
    seconds = time.perf_counter() - t0
    entry = {"epoch": epoch + 1, "loss": float(sums[1] / n), "cross_entropy": float(sums[2] / n),
             "jsd": float(sums[3] / n), "lr": loop.optimizer.param_groups[0]["lr"],
             "images_per_s": n * (steps_per_epoch - start_step) / steps_per_epoch / seconds, "seconds": seconds}
    if waited:
        bad = torch.tensor([loop.data.bad.count], device=device)
        if loop.process.world > 1:
            dist.all_reduce(bad)  # each file is read by one rank
        entry["data_wait_fraction"] = loop.data.wait_seconds / seconds
        entry["bad_files"] = int(bad)
    return entry


@dataclasses.dataclass
class _Setup:
    """A run ready to train: everything read and checked, nothing written (``_prepare``)."""

    cfg: TrainConfig
    method: Method
    process: _Process
    data: InMemoryData | StreamingImageNet
    heldout: ImageSet | None
    core: nn.Module
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    generators: _Generators
    record: dict
    steps_per_epoch: int


def _prepare(cfg: TrainConfig) -> _Setup:
    """Read and check every input of the run (config, device, data, model size), build the model
    and the optimiser; write nothing, so that a refused run leaves no folder behind."""
    method = get_method(cfg.method)
    check_config(cfg)
    if cfg.transfer and method.augmentations:
        raise ValueError(f"transfer runs take methods without AugMix views (the public recipe: baseline); "
                         f"got method={cfg.method}")
    process = _process(cfg)
    data, heldout = _training_data(cfg, process)
    core, model = _models(cfg, data.num_classes, process)
    optimizer = torch.optim.SGD(core.parameters(), lr=cfg.lr, momentum=cfg.momentum, nesterov=cfg.nesterov,
                                weight_decay=cfg.weight_decay)
    steps_per_epoch = data.steps_per_epoch(cfg.batch_size)
    if steps_per_epoch < 1:  # an empty CIFAR batch file, an ImageNet tree smaller than one batch (issue 23)
        where = getattr(data, "source", None) or cfg.data_root or cfg.dataset
        raise ValueError(f"the training data ({where}) holds {len(data)} image(s): not one step of batch "
                         f"{cfg.batch_size}{' per process' if process.world > 1 else ''}")
    total = cfg.epochs * steps_per_epoch
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_factor(s, total, steps_per_epoch, cfg))
    return _Setup(cfg, method, process, data, heldout, core, model, optimizer, scheduler,
                  _Generators.create(cfg, process), _run_record(cfg, data, process), steps_per_epoch)


def _train(setup: _Setup, out: Path, resume: bool) -> Path:
    cfg, method, process, data, heldout = setup.cfg, setup.method, setup.process, setup.data, setup.heldout
    core, model, optimizer, scheduler = setup.core, setup.model, setup.optimizer, setup.scheduler
    generators, record, steps_per_epoch = setup.generators, setup.record, setup.steps_per_epoch
    device = process.device
    total = cfg.epochs * steps_per_epoch
    start_epoch, start_step, done, metrics = 0, 0, None, []
    checkpoint = out / "checkpoint.pt"
    if resume and checkpoint.exists():
        _check_same_config(out / "config.json", record)
        start_epoch, start_step, done = _restore(checkpoint, core, optimizer, scheduler, generators, device,
                                                 identity=config_identity(record))
        metrics = [m for m in read_metrics(out) if m["epoch"] <= start_epoch]
    elif (out / "final.pt").exists() or checkpoint.exists():
        raise ValueError(f"{out} already holds a run; use --resume to continue it, or another --out")
    if process.writer:
        write_json(out / "config.json", record)

    probe = (to_float(data.images[:16]) if isinstance(data, InMemoryData) and not cfg.transfer
             and data.images.dim() == 4 else None)  # streamed and upsampled inputs are made per step
    loop = _Loop(cfg, method, process, data, core, model, optimizer, scheduler, generators, checkpoint,
                 config_identity(record), probe)
    bar = (progress(total=total, initial=start_epoch * steps_per_epoch + start_step, desc=f"train {cfg.preset}",
                    unit="step") if process.writer else _SilentBar())
    for epoch in range(start_epoch, cfg.epochs):
        first = epoch == start_epoch
        entry = _train_epoch(loop, epoch, bar, start_step if first else 0, done if first else None)
        if heldout is not None:
            entry["heldout_accuracy"] = _accuracy(core, heldout.images, heldout.labels)
        metrics.append(entry)
        if process.writer:
            _check_weights(core, f"after epoch {epoch + 1}", checkpoint, loop.probe)
            append_metrics(out, metrics)
            _save_checkpoint(checkpoint, core, optimizer, scheduler, generators, epoch + 1, device,
                             identity=loop.identity)
    bar.close()
    if process.writer:
        _check_weights(core, "at the end", checkpoint, loop.probe)
        why = _divergence(metrics, data.num_classes, lambda: _end_accuracy(core, data, heldout, cfg))
        if why:  # the checkpoint stays (a resume says the same); no final.pt, not finished
            record["run"]["diverged"] = why
            write_json(out / "config.json", record)
            raise NonFiniteLoss(f"{why}; not saved as final.pt, the last checkpoint is {checkpoint} "
                                "(a smaller lr may train)")
        save_torch(out / "final.pt", core.state_dict())
        record["run"]["finished"] = now()
        write_json(out / "config.json", record)
    if process.world > 1:
        dist.barrier()
    return out


class _SilentBar:
    """The progress bar of ranks other than 0."""

    def update(self, _n: int) -> None:
        pass

    def set_postfix(self, **_kwargs: Any) -> None:
        pass

    def close(self) -> None:
        pass


def _check_finite(history: Tensor, start: int, stop: int, epoch: int, checkpoint: Path) -> int:
    """Raise ``NonFiniteLoss`` naming the first step in ``[start, stop)`` whose loss is not
    finite; return ``stop`` (the steps checked so far)."""
    bad = ~torch.isfinite(history[start:stop, 1:]).all(1)
    if bool(bad.any()):
        step = start + int(bad.nonzero()[0, 0])
        total, ce, jsd = (float(v) for v in history[step, 1:])
        kept = checkpoint if checkpoint.exists() else "none (first epoch)"
        raise NonFiniteLoss(f"non-finite loss at epoch {epoch + 1}, step {step + 1}: total={total}, "
                            f"cross_entropy={ce}, jsd={jsd}; stopped, the last good checkpoint is {kept}")
    return stop


def _divergence(metrics: list[dict], num_classes: int,
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


def _end_accuracy(core: nn.Module, data: InMemoryData | StreamingImageNet, heldout: ImageSet | None,
                  cfg: TrainConfig) -> tuple[float, int] | None:
    """The final model's accuracy and the images it was scored on, for ``_divergence``: the
    held-out images if any, else the first ``_CHANCE_IMAGES`` training images; ``None`` where the
    model's inputs are made per step (streamed ImageNet, upsampled transfer runs)."""
    if heldout is not None:
        return _accuracy(core, heldout.images, heldout.labels), len(heldout)
    if not isinstance(data, InMemoryData) or cfg.transfer:
        return None
    n = min(len(data), _CHANCE_IMAGES)
    return _accuracy(core, data.images[:n], data.labels[:n]), n


def _check_weights(core: nn.Module, when: str, checkpoint: Path, probe: Tensor | None = None) -> None:
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


def _check_same_config(path: Path, record: dict) -> None:
    """A resumed run must compute what it started computing (``RESUMABLE_CHANGES`` aside): the
    config part of ``config.json`` and the data facts of its run part must be equal."""
    if not path.exists():
        return
    stored = read_json(path)
    old, new = _computed(stored), _computed(record)
    changed = sorted(k for k in set(old) | set(new) if k not in RESUMABLE_CHANGES and old.get(k) != new.get(k))
    if changed:
        detail = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed[:3])
        raise ValueError(f"cannot resume {path.parent}: the config differs from the checkpoint's ({detail})")
    # a transfer run's source by content (runs started before it was recorded carry no digest)
    was = (stored.get("run") or {}).get("source_weights_sha256") if isinstance(stored, dict) else None
    config, run = split_run_record(record)  # either layout of config.json (a run of an older version)
    now_digest = run.get("source_weights_sha256")
    if was and now_digest and was != now_digest:
        raise ValueError(f"cannot resume {path.parent}: source_weights {config.get('source_weights')} "
                         f"changed since the run started (sha256 {was[:12]} -> {now_digest[:12]}); "
                         "restore that file or start a new run")
    check_same_data(path, stored, record)


def check_same_data(path: Path, stored: Any, record: dict) -> None:
    """A resumed run must train on the data it started with: the same path (``data_source``,
    compared with the config) is not enough, CIFAR batches replaced in place kept training on the
    new images (issue 32).  ``stored``: the run's ``config.json`` as read from ``path``; runs
    started before ``data_sha256`` was recorded carry none and resume as before."""
    was = (stored.get("run") or {}).get("data_sha256") if isinstance(stored, dict) else None
    now_digest = (record.get("run") or {}).get("data_sha256")
    if was and now_digest and was != now_digest:
        source = (record.get("run") or {}).get("data_source") or "the training data"
        raise ValueError(f"cannot resume {printable(str(path.parent))}: its training data ({printable(str(source))}) "
                         f"changed since the run started (sha256 {str(was)[:12]} -> {now_digest[:12]}); restore the "
                         "data it started with, or train anew into another --out")


def config_identity(record: dict) -> str:
    """The sha256 of what a run computes (its config and data facts, ``RESUMABLE_CHANGES`` aside):
    stored in every checkpoint, compared on resume."""
    computed = {k: v for k, v in _computed(record).items() if k not in RESUMABLE_CHANGES}
    return hashlib.sha256(json.dumps(computed, sort_keys=True, default=str).encode()).hexdigest()


def _computed(record: dict) -> dict:
    """What a run computes, from either layout of ``config.json`` (``{config, run}`` or the flat
    one of runs made before it), with the defaults of keys added since."""
    config, run = split_run_record(record)
    return {**LATER_KEYS, **config, **{k: run.get(k) for k in _RUN_FACTS}}


@torch.inference_mode()
def _accuracy(model: nn.Module, images_u8: Tensor, labels: Tensor, batch: int = 1000) -> float:
    was_training = model.training
    model.eval()
    correct = sum(int((model(to_float(images_u8[i:i + batch])).argmax(1) == labels[i:i + batch]).sum())
                  for i in range(0, len(labels), batch))
    model.train(was_training)
    return correct / len(labels)
