"""Where a run trains: its device, its place among the torchrun processes, and its model there.

DDP under ``torchrun`` (rank 0 alone writes); ``sync_bn=true`` for batch statistics over all
ranks (torch's SyncBatchNorm: CUDA only); bf16 autocast (in the loop) and channels_last on CUDA;
``compile=true`` compiles the model behind one fixed set of stage hooks (``hooks``).  The model's
size is checked against the memory available before anything is allocated or written (issue 23).
Transfer runs (``model=resnet50_transfer``) load the source weights and freeze layers before DDP
sees the model (``transfer``).
"""

from __future__ import annotations

import dataclasses
import os

import torch
import torch.distributed as dist
from torch import nn

from fullscale.models import create_model
from fullscale.training.config import TrainConfig
from fullscale.training.hooks import install_stage_hooks
from fullscale.training.transfer import apply_freeze, load_source_backbone

__all__ = ["Process", "available_bytes", "build_models", "check_model_fits", "resolve_device", "start_process",
           "sync_batchnorm"]


@dataclasses.dataclass(frozen=True)
class Process:
    """Where this process trains: its device and its place among the torchrun processes."""

    device: torch.device
    rank: int
    world: int

    @property
    def writer(self) -> bool:
        return self.rank == 0


def resolve_device(cfg: TrainConfig) -> torch.device:
    """``cfg.runtime.device`` as a device this torch can use (``auto``: CUDA if there is one)."""
    if cfg.runtime.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(cfg.runtime.device)
        torch.empty(0, device=device)  # a known name of a device this torch cannot use fails here
    except (RuntimeError, AssertionError) as error:
        raise ValueError(f"device={cfg.runtime.device!r} is not usable here "
                         f"({str(error).strip().splitlines()[0] if str(error).strip() else 'unknown'}); "
                         "use auto, cpu or cuda[:N]") from None
    return device


def start_process(cfg: TrainConfig) -> Process:
    """The device, rank and world size; joins the process group under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = resolve_device(cfg)
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    if world > 1 and device.type == "cuda" and per_node > torch.cuda.device_count():
        # every rank of the node refuses alike, before any of them waits in the rendezvous
        raise ValueError(f"torchrun started {per_node} processes on this node, which has "
                         f"{torch.cuda.device_count()} CUDA device(s): one process per GPU "
                         f"(--nproc_per_node {torch.cuda.device_count()}), or device=cpu")
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if world > 1 and device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    sync_batchnorm(nn.Identity(), cfg, world, device)  # refuse sync_bn on the CPU before any file is written
    return Process(device, rank, world)


def sync_batchnorm(core: nn.Module, cfg: TrainConfig, world: int, device: torch.device) -> nn.Module:
    """``sync_bn=true`` under torchrun: SyncBatchNorm layers (same parameters and buffers, so
    checkpoints load into the plain model). torch's SyncBatchNorm runs on CUDA only."""
    if not cfg.runtime.sync_bn or world == 1:
        return core
    if device.type != "cuda":
        raise ValueError(f"sync_bn=true needs CUDA (torch's SyncBatchNorm runs on CUDA only); this run is on "
                         f"{device.type} with {world} processes: drop sync_bn or train on GPUs")
    return nn.SyncBatchNorm.convert_sync_batchnorm(core)


def available_bytes(device: torch.device) -> int | None:
    """Free memory of ``device`` (the CPU: ``MemAvailable``); ``None`` where it cannot be read."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo") as info:
            fields = dict(line.split(":", 1) for line in info)
        return int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):  # not Linux: no check
        return None


def check_model_fits(cfg: TrainConfig, num_classes: int, device: torch.device, copies: int = 1) -> None:
    """Count the model's parameters on the meta device (no memory) and refuse, in one line, a model
    whose weights, gradients and momentum alone exceed the memory available (``--set
    width=100000`` was an allocation traceback, or an out-of-memory kill; issue 23).  ``copies``:
    the members of a stacked group (``members``), which hold that many models' weights."""
    with torch.device("meta"):
        model = create_model(cfg.model.name, num_classes, **cfg.model_kwargs)
        count = copies * sum(p.numel() for p in model.parameters())
    need, available = 3 * 4 * count, available_bytes(device)
    if available is not None and need > available:
        group = f" x {copies} members" if copies > 1 else ""
        raise ValueError(f"the model does not fit: {cfg.model.name} at width {cfg.model.width or 'default'}{group} has "
                         f"{count:,} parameters, {need / 2**30:.1f} GiB for weights, gradients and momentum "
                         f"alone; {device.type} has {available / 2**30:.1f} GiB available")


def build_models(cfg: TrainConfig, num_classes: int, process: Process) -> tuple[nn.Module, nn.Module]:
    """``(core, model)``: the network, and what the step calls (DDP and/or compiled around it)."""
    device = process.device
    check_model_fits(cfg, num_classes, device)
    core = create_model(cfg.model.name, num_classes, **cfg.model_kwargs).to(device)
    if cfg.is_transfer:  # the source's weights, a fresh classifier, frozen layers (before DDP sees them)
        load_source_backbone(core, cfg.transfer.source_weights)
        apply_freeze(core, cfg.transfer.freeze_level)
    core = sync_batchnorm(core, cfg, process.world, device)
    if device.type == "cuda":
        core = core.to(memory_format=torch.channels_last)
    model: nn.Module = core
    if process.world > 1:
        ids = [device] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(core, device_ids=ids)
    if cfg.runtime.compile and device.type == "cuda":
        install_stage_hooks(core)  # one fixed set of graphs, not a recompile per step (hooks.py)
        model = torch.compile(model)
    return core, model
