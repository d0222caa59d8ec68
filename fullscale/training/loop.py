"""The trainer: ``train(cfg, out)`` runs every method of the CIFAR tables, data on the device, one loop.

Read top to bottom: ``train`` claims the run folder; ``_prepare`` reads and checks every input
(config, device, data, model size) and builds the model, the optimiser and the generators, writing
nothing; ``_train`` resumes or starts, then runs the epochs; ``_train_epoch`` runs the steps.
Each concept lives in its own module of this package:

- ``step``: one step's views, draws, forward pass and loss (the recipe of the paper);
- ``data``: the training set on the device, or ImageNet streamed from disk;
- ``process``: device, DDP, sync-BN, compile, whether the model fits;
- ``schedule``: SGD and its per-step learning-rate schedule (cosine; step for transfer runs);
- ``generators``: the run's random streams; ``checkpoint``: the folder, its identity, resume;
- ``checks``: non-finite losses and weights, divergence (issue 32);
- ``transfer``: fine-tuning an ImageNet ResNet-50 (tab:results_transfer).

The metrics of an epoch (``metrics.jsonl``) are its mean loss parts, the learning rate, the
throughput, and, streamed, the data-wait fraction (time the step waited for its batch) and the files
that could not be decoded (``bad_files``); the progress bar shows images/s and the wait fraction.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

from fullscale.augment import to_float
from fullscale.data import ImageSet
from fullscale.data.imagenet import StreamingImageNet
from fullscale.runs import append_metrics, read_metrics
from fullscale.training.checkpoint import (
    check_out,
    check_same_config,
    config_identity,
    restore_checkpoint,
    run_record,
    save_checkpoint,
    undo_start,
)
from fullscale.training.checks import (
    NonFiniteLoss,
    accuracy,
    check_finite,
    check_interval,
    check_weights,
    divergence,
    end_accuracy,
)
from fullscale.training.config import TrainConfig
from fullscale.training.data import InMemoryData, device_transform, training_data, view_shape
from fullscale.training.draws import RunDraws
from fullscale.training.generators import Generators
from fullscale.training.methods import Method, get_method
from fullscale.training.process import Process, build_models, start_process
from fullscale.training.schedule import make_optimizer, make_scheduler
from fullscale.training.step import drawn_step_loss, epoch_entry, epoch_sums, history_row
from fullscale.training.transfer import check_config, set_train_mode
from noisymix_infra.folder_kind import claim_folder
from noisymix_infra.io import directory_lock, save_torch, write_json
from noisymix_infra.progress import progress
from noisymix_infra.provenance import now

__all__ = ["train"]


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
        setup = None
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
                    undo_start(out, error, had_config=had_config, found=found)
                    raise
        finally:
            # Drop the model first: DDP's Reducer holds the gloo group, and where the Reducer frees
            # the group's last reference it joins the group's threads while holding the GIL, which
            # a thread still freeing a finished collective's tensors waits for: an intermittent deadlock
            # of the torchrun tests (pytorch/pytorch#56297); destroy_process_group frees it without the GIL.
            setup = None
            if joins_group and dist.is_initialized():
                dist.destroy_process_group()


@dataclasses.dataclass
class _Setup:
    """A run ready to train: everything read and checked, nothing written (``_prepare``)."""

    cfg: TrainConfig
    method: Method
    process: Process
    data: InMemoryData | StreamingImageNet
    heldout: ImageSet | None
    core: nn.Module  # the network (hooks, checkpoints)
    model: nn.Module  # what the step calls: ``core``, DDP and/or compiled around it
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    generators: Generators
    record: dict  # config.json
    steps_per_epoch: int
    draws: RunDraws  # the views and draws of each step, made a chunk of steps at a time


def _prepare(cfg: TrainConfig) -> _Setup:
    """Read and check every input of the run (config, device, data, model size), build the model
    and the optimiser; write nothing, so that a refused run leaves no folder behind."""
    method = get_method(cfg.method)
    check_config(cfg)
    if cfg.is_transfer and method.augmentations:
        raise ValueError(f"transfer runs take methods without AugMix views (the public recipe: baseline); "
                         f"got method={cfg.method}")
    process = start_process(cfg)
    data, heldout = training_data(cfg, process)
    core, model = build_models(cfg, data.num_classes, process)
    optimizer = make_optimizer(core.parameters(), cfg)
    steps_per_epoch = data.steps_per_epoch(cfg.optim.batch_size)
    if steps_per_epoch < 1:  # an empty CIFAR batch file, an ImageNet tree smaller than one batch (issue 23)
        where = getattr(data, "source", None) or cfg.data.data_root or cfg.data.dataset
        raise ValueError(f"the training data ({where}) holds {len(data)} image(s): not one step of batch "
                         f"{cfg.optim.batch_size}{' per process' if process.world > 1 else ''}")
    scheduler = make_scheduler(optimizer, cfg, steps_per_epoch)
    draws = RunDraws(cfg, method, steps_per_epoch, view_shape(cfg, data), rank=process.rank, world=process.world,
                     transform=device_transform(cfg))
    return _Setup(cfg, method, process, data, heldout, core, model, optimizer, scheduler,
                  Generators.create(cfg, process), run_record(cfg, data, process), steps_per_epoch, draws)


@dataclasses.dataclass
class _Loop:
    """What one epoch of training touches."""

    setup: _Setup
    checkpoint: Path
    identity: str  # the run's config_identity, stored in its checkpoints
    probe: Tensor | None  # a few training images whose logits must stay finite (check_weights)

    def save(self, epoch: int, **mid: Any) -> None:
        s = self.setup
        save_checkpoint(self.checkpoint, s.core, s.optimizer, s.scheduler, s.generators, epoch, s.process.device,
                        identity=self.identity, **mid)


def _train(setup: _Setup, out: Path, resume: bool) -> Path:
    cfg, process, data, heldout, core = setup.cfg, setup.process, setup.data, setup.heldout, setup.core
    start_epoch, start_step, done, metrics = 0, 0, None, []
    checkpoint = out / "checkpoint.pt"
    if resume and checkpoint.exists():
        check_same_config(out / "config.json", setup.record)
        start_epoch, start_step, done = restore_checkpoint(checkpoint, core, setup.optimizer, setup.scheduler,
                                                           setup.generators, process.device,
                                                           identity=config_identity(setup.record))
        metrics = [m for m in read_metrics(out) if m["epoch"] <= start_epoch]
    elif (out / "final.pt").exists() or checkpoint.exists():
        raise ValueError(f"{out} already holds a run; use --resume to continue it, or another --out")
    if process.writer:
        write_json(out / "config.json", setup.record)

    probe = (to_float(data.images[:16]) if isinstance(data, InMemoryData) and not cfg.is_transfer
             and data.images.dim() == 4 else None)  # streamed and upsampled inputs are made per step
    loop = _Loop(setup, checkpoint, config_identity(setup.record), probe)
    total = cfg.optim.epochs * setup.steps_per_epoch
    bar = (progress(total=total, initial=start_epoch * setup.steps_per_epoch + start_step,
                    desc=f"train {cfg.preset}", unit="step") if process.writer else _SilentBar())
    for epoch in range(start_epoch, cfg.optim.epochs):
        first = epoch == start_epoch
        entry = _train_epoch(loop, epoch, bar, start_step if first else 0, done if first else None)
        if heldout is not None:
            entry["heldout_accuracy"] = accuracy(core, heldout.images, heldout.labels)
        metrics.append(entry)
        if process.writer:
            check_weights(core, f"after epoch {epoch + 1}", checkpoint, loop.probe)
            append_metrics(out, metrics)
            loop.save(epoch + 1)
    bar.close()
    if process.writer:
        _finish(setup, out, metrics, loop)
    if process.world > 1:
        dist.barrier()
    return out


def _finish(setup: _Setup, out: Path, metrics: list[dict], loop: _Loop) -> None:
    """``final.pt`` and the finished record, unless the run diverged (then the checkpoint stays:
    a resume says the same; no final.pt, not finished)."""
    core, record = setup.core, setup.record
    check_weights(core, "at the end", loop.checkpoint, loop.probe)
    why = divergence(metrics, setup.data.num_classes, lambda: end_accuracy(core, setup.data, setup.heldout, setup.cfg))
    if why:
        record["run"]["diverged"] = why
        write_json(out / "config.json", record)
        raise NonFiniteLoss(f"{why}; not saved as final.pt, the last checkpoint is {loop.checkpoint} "
                            "(a smaller lr may train)")
    save_torch(out / "final.pt", core.state_dict())
    record["run"]["finished"] = now()
    write_json(out / "config.json", record)


def _train_epoch(loop: _Loop, epoch: int, bar: Any, start_step: int = 0, done: Tensor | None = None) -> dict:
    """One epoch of steps from ``start_step`` (``done``: the loss history of the steps before it);
    the metrics entry of the epoch (loss parts summed over all ranks)."""
    s = loop.setup
    cfg, device, data = s.cfg, s.process.device, s.data
    amp = cfg.runtime.amp and device.type == "cuda"
    check_every = check_interval(device)
    set_train_mode(s.model, freeze_bn_stats=cfg.transfer.freeze_bn_stats)
    t0 = time.perf_counter()
    # per step: images, then loss, CE and JSD summed over them (kept on the device: no sync)
    history = torch.zeros(s.steps_per_epoch, 4, device=device)
    if done is not None:
        history[:start_step] = done.to(device)
    checked = start_step
    order_state = s.generators.order.get_state()  # before the epoch draws its permutation

    def batches_from(first: int):  # the epoch's batches from step ``first`` (a chunk's first step)
        s.generators.order.set_state(order_state)
        return data.batches(s.generators.order, cfg.optim.batch_size, s.process, epoch=epoch, start_step=first)

    waited = getattr(data, "wait_seconds", None) is not None
    for step, draws, y in s.draws.epoch(batches_from, epoch, start_step, s.core):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            parts = drawn_step_loss(s.model, s.core, draws, y, s.method, cfg, data.num_classes, s.generators.aug)
        history[step] = history_row(parts, len(y))
        if (step + 1) % check_every == 0:  # on the CPU: before this step's update
            checked = check_finite(history, checked, step + 1, epoch, loop.checkpoint)
        s.optimizer.zero_grad(set_to_none=True)
        parts.total.backward()
        s.optimizer.step()
        s.scheduler.step()
        bar.update(1)
        if waited and (step + 1) % 20 == 0:
            seconds = time.perf_counter() - t0
            bar.set_postfix(img_s=f"{(step + 1 - start_step) * cfg.optim.batch_size / seconds:.0f}",
                            wait=f"{data.wait_seconds / seconds:.0%}", refresh=False)
        global_step = epoch * s.steps_per_epoch + step + 1
        every = cfg.runtime.checkpoint_every
        if every and global_step % every == 0 and step + 1 < s.steps_per_epoch:
            checked = check_finite(history, checked, step + 1, epoch, loop.checkpoint)
            if s.process.writer:
                check_weights(s.core, f"at epoch {epoch + 1}, step {step + 1}", loop.checkpoint, loop.probe)
                loop.save(epoch, step=step + 1, order_state=order_state, history=history[:step + 1])
    check_finite(history, checked, s.steps_per_epoch, epoch, loop.checkpoint)
    sums = epoch_sums(history)
    if s.process.world > 1:
        dist.all_reduce(sums)
    n = float(sums[0])  # the images of the epoch (all of an in-memory set; streamed, less bad files)
    seconds = time.perf_counter() - t0
    entry = epoch_entry(epoch, sums, s.optimizer.param_groups[0]["lr"],
                        n * (s.steps_per_epoch - start_step) / s.steps_per_epoch, seconds)
    if waited:
        bad = torch.tensor([data.bad.count], device=device)
        if s.process.world > 1:
            dist.all_reduce(bad)  # each file is read by one rank
        entry["data_wait_fraction"] = data.wait_seconds / seconds
        entry["bad_files"] = int(bad)
    return entry


class _SilentBar:
    """The progress bar of ranks other than 0."""

    def update(self, _n: int) -> None:
        pass

    def set_postfix(self, **_kwargs: Any) -> None:
        pass

    def close(self) -> None:
        pass
