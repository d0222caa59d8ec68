"""The trainer: ``train(cfg, out)`` runs every method of the CIFAR tables, data on the device, one loop.

Read top to bottom: ``train`` claims the run folder; ``_prepare`` reads and checks every input
(config, device, data, model size) and builds the model, the optimiser and the generators, writing
nothing; ``train_runs`` resumes or starts, then runs the epochs; ``_train_epoch`` runs the steps.

The loop trains a model's ``Run`` records: one run folder for a run alone, or several seeds of one
config stacked into one network (``members``: stacking is a model transformation, ``members.Stacked``).
What differs between the two is the ``Trainee`` (``trainee``): how one step's draws become each
run's loss, and each run's weights and optimiser state in the plain model's layout.  The epochs,
resume, checkpoints, checks and the finish are this module's, once.
Each concept lives in its own module of this package:

- ``trainee``: what the loop trains (its runs, the trainee, the setup);
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

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from fullscale.runs import append_metrics, read_metrics
from fullscale.training.checkpoint import (
    check_out,
    check_same_config,
    read_checkpoint,
    restoring,
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
from fullscale.training.data import training_data
from fullscale.training.generators import Generators
from fullscale.training.graphed import GraphedStep, check_cuda_graph
from fullscale.training.methods import get_method
from fullscale.training.process import build_models, start_process
from fullscale.training.schedule import make_optimizer, make_scheduler
from fullscale.training.step import epoch_entry, epoch_sums, history_row
from fullscale.training.trainee import Alone, Run, Setup, run_draws
from fullscale.training.transfer import check_config, set_train_mode
from noisymix_infra.folder_kind import claim_folder
from noisymix_infra.io import directory_lock, save_torch, write_json
from noisymix_infra.progress import progress
from noisymix_infra.provenance import now

__all__ = ["train", "train_runs"]


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
            setup = _prepare(cfg, out)  # every input read and checked: nothing is written before this
            if not rank0:
                train_runs(setup, resume)
                return out
            found = {p.name for p in out.iterdir()} if out.is_dir() else None  # None: this call makes it
            # One writer per run directory: a second `train` on the same --out fails at once instead
            # of leaving one run's config.json beside the other's final.pt.
            with directory_lock(out, "training"):
                had_config = (out / "config.json").exists()
                try:
                    claim_folder(out, "run")  # a -C set, sweep, ... given as --out: refused, nothing written
                    train_runs(setup, resume)
                    return out
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


def _prepare(cfg: TrainConfig, out: Path) -> Setup:
    """Read and check every input of the run (config, device, data, model size), build the model
    and the optimiser; write nothing, so that a refused run leaves no folder behind."""
    method = get_method(cfg.method)
    check_config(cfg)
    if cfg.is_transfer and method.augmentations:
        raise ValueError(f"transfer runs take methods without AugMix views (the public recipe: baseline); "
                         f"got method={cfg.method}")
    process = start_process(cfg)
    check_cuda_graph(cfg, method, process.device, process.world)
    data, heldout = training_data(cfg, process)
    core, model = build_models(cfg, data.num_classes, process)
    optimizer = make_optimizer(core.parameters(), cfg)
    steps_per_epoch = data.steps_per_epoch(cfg.optim.batch_size)
    if steps_per_epoch < 1:  # an empty CIFAR batch file, an ImageNet tree smaller than one batch (issue 23)
        where = getattr(data, "source", None) or cfg.data.data_root or cfg.data.dataset
        raise ValueError(f"the training data ({where}) holds {len(data)} image(s): not one step of batch "
                         f"{cfg.optim.batch_size}{' per process' if process.world > 1 else ''}")
    scheduler = make_scheduler(optimizer, cfg, steps_per_epoch)
    run = Run(cfg, out, Generators.create(cfg, process), run_record(cfg, data, process),
              run_draws(cfg, method, data, process, steps_per_epoch))
    graphed = (GraphedStep(model, core, optimizer, method, cfg, data.num_classes, run.generators.aug,
                           amp=cfg.runtime.amp, capture=True) if cfg.runtime.cuda_graph else None)
    return Setup(cfg, method, process, data, heldout, Alone(core, model, method, cfg, data.num_classes), optimizer,
                 scheduler, [run], steps_per_epoch, graphed)


# ----------------------------------------------------------------------------------- the loop


def train_runs(setup: Setup, resume: bool) -> None:
    """Resume or start ``setup``'s runs, train their epochs, finish them (``final.pt``)."""
    cfg, process, runs = setup.cfg, setup.process, setup.runs
    start_epoch, start_step, done = _resume(setup, resume)
    if process.writer:
        for run in runs:
            write_json(run.out / "config.json", run.record)
    total = cfg.optim.epochs * setup.steps_per_epoch
    desc = f"train {cfg.preset}" + (f" x{len(runs)}" if len(runs) > 1 else "")
    bar = (progress(total=total, initial=start_epoch * setup.steps_per_epoch + start_step, desc=desc, unit="step")
           if process.writer else _SilentBar())
    for epoch in range(start_epoch, cfg.optim.epochs):
        first = epoch == start_epoch
        entries = _train_epoch(setup, epoch, bar, start_step if first else 0, done if first else None)
        if setup.heldout is not None:
            for entry, network in zip(entries, setup.trainee.networks(), strict=True):
                entry["heldout_accuracy"] = accuracy(network, setup.heldout.images, setup.heldout.labels)
        for run, entry in zip(runs, entries, strict=True):
            run.metrics.append(entry)
        if process.writer:
            _check_weights(setup, f"after epoch {epoch + 1}")
            for run in runs:  # before the checkpoints: a resume drops the entries after its checkpoint's epoch
                append_metrics(run.out, run.metrics)
            _save(setup, epoch + 1)
    bar.close()
    if process.writer:
        _finish(setup)
    if process.world > 1:
        dist.barrier()


def _who(setup: Setup, run: Run) -> str:
    """How messages name a run: nothing for a run alone, its seed in a group."""
    return f" (seed {run.cfg.seed})" if len(setup.runs) > 1 else ""


def _check_weights(setup: Setup, when: str) -> None:
    for run, network in zip(setup.runs, setup.trainee.networks(), strict=True):
        check_weights(network, f"{when}{_who(setup, run)}", run.checkpoint, setup.probe)


def _save(setup: Setup, epoch: int, step: int = 0, order_states: Sequence[Tensor] = (),
          history: Tensor | None = None) -> None:
    """Each run's ``checkpoint.pt``: ``epoch`` epochs done and ``step`` steps of the next (then the
    runs' order generators as the epoch began and their (runs, steps, 4) loss history)."""
    states, optimizer_states = setup.trainee.states(), setup.trainee.optimizer_states(setup.optimizer)
    for m, run in enumerate(setup.runs):
        mid = {"step": step, "order_state": order_states[m], "history": history[m]} if step else {}
        save_checkpoint(run.checkpoint, identity=run.identity, model=states[m], optimizer=optimizer_states[m],
                        scheduler=setup.scheduler, generators=run.generators, epoch=epoch,
                        device=setup.process.device,
                        torch_generator=torch.get_rng_state() if run.torch_state is None else run.torch_state, **mid)


def _resume(setup: Setup, resume: bool) -> tuple[int, int, Tensor | None]:
    """Where training starts: epoch 0 for new runs; with ``resume`` and every run holding a
    checkpoint of its own config at the same step, that step (epochs done, steps of the next, and
    the (runs, steps, 4) loss history of those steps).  The runs' metrics so far are read back."""
    runs, device = setup.runs, setup.process.device
    found = [run.checkpoint for run in runs if run.checkpoint.exists()]
    held = [run.out for run in runs if (run.out / "final.pt").exists() or run.checkpoint.exists()]
    if not (resume and found and len(found) == len(runs)):
        if len(runs) == 1 and held:
            raise ValueError(f"{held[0]} already holds a run; use --resume to continue it, or another --out")
        if found:
            raise ValueError(f"members: {len(found)} of {len(runs)} folders hold a checkpoint ({found[0]}); "
                             "resume needs all of the group's, or train into new folders")
        if held:
            raise ValueError(f"members: {held[0]} already holds a run; use another --out")
        return 0, 0, None
    states = []
    for run in runs:
        check_same_config(run.out / "config.json", run.record)
        states.append(read_checkpoint(run.checkpoint, device, identity=run.identity))
    with restoring(runs[0].checkpoint):
        points = {(int(s["epoch"]), int(s.get("step", 0))) for s in states}
    if len(points) != 1:
        raise ValueError(f"members: the group's checkpoints are of different steps ({sorted(points)}); "
                         "train anew into other folders")
    (epoch, step), = points
    with restoring(runs[0].checkpoint):
        setup.trainee.load([s["model"] for s in states], setup.optimizer, [s["optimizer"] for s in states])
        setup.scheduler.load_state_dict(states[0]["scheduler"])
        for run, state in zip(runs, states, strict=True):
            run.generators.restore(state)
            if run.torch_state is not None:
                run.torch_state = state["torch_generator"].cpu()
            else:
                torch.set_rng_state(state["torch_generator"].cpu())
                if device.type == "cuda" and "cuda_generator" in state:  # dropout on the GPU
                    torch.cuda.set_rng_state(state["cuda_generator"].cpu(), device)
        done = torch.stack([s["history"] for s in states]) if step else None
    for run in runs:
        run.metrics = [m for m in read_metrics(run.out) if m["epoch"] <= epoch]
    return epoch, step, done


def _finish(setup: Setup) -> None:
    """Each run's ``final.pt`` and finished record, unless it diverged (then its checkpoint stays:
    a resume says the same; no final.pt, not finished)."""
    _check_weights(setup, "at the end")
    diverged = []
    for run, state, network in zip(setup.runs, setup.trainee.states(), setup.trainee.networks(), strict=True):
        why = divergence(run.metrics, setup.data.num_classes,
                         lambda network=network: end_accuracy(network, setup.data, setup.heldout, setup.cfg))
        if why:
            run.record["run"]["diverged"] = why
            diverged.append(f"seed {run.cfg.seed} {why}" if len(setup.runs) > 1 else why)
        else:
            save_torch(run.out / "final.pt", state)
            run.record["run"]["finished"] = now()
        write_json(run.out / "config.json", run.record)
    if len(setup.runs) == 1 and diverged:
        raise NonFiniteLoss(f"{diverged[0]}; not saved as final.pt, the last checkpoint is {setup.runs[0].checkpoint} "
                            "(a smaller lr may train)")
    if diverged:
        more = f" (and {len(diverged) - 1} more)" if len(diverged) > 1 else ""
        raise NonFiniteLoss(f"{diverged[0]}{more}; not saved as final.pt, the last checkpoints are the members' "
                            "checkpoint.pt (a smaller lr may train)")


def _train_epoch(setup: Setup, epoch: int, bar: Any, start_step: int = 0, done: Tensor | None = None) -> list[dict]:
    """One epoch of steps from ``start_step`` (``done``: the loss history of the steps before it);
    each run's metrics entry of the epoch (loss parts summed over all ranks)."""
    s, runs = setup, setup.runs
    cfg, device, data = s.cfg, s.process.device, s.data
    amp = cfg.runtime.amp and device.type == "cuda"
    check_every = check_interval(device)
    set_train_mode(s.trainee.model, freeze_bn_stats=cfg.transfer.freeze_bn_stats)
    t0 = time.perf_counter()
    # per run and step: images, then loss, CE and JSD summed over them (kept on the device: no sync)
    history = torch.zeros(len(runs), s.steps_per_epoch, 4, device=device)
    if done is not None:
        history[:, :start_step] = done.to(device)
    checked = start_step
    order_states = [run.generators.order.get_state() for run in runs]  # before the epoch draws its permutation

    def batches_of(run: Run, order_state: Tensor):  # the epoch's batches from step ``first`` (a chunk's first step)
        def batches_from(first: int):
            run.generators.order.set_state(order_state)
            return data.batches(run.generators.order, cfg.optim.batch_size, s.process, epoch=epoch, start_step=first)
        return batches_from

    def check(upto: int) -> int:
        for m, run in enumerate(runs):
            check_finite(history[m], checked, upto, epoch, run.checkpoint, _who(s, run))
        return upto

    streams = [run.draws.epoch(batches_of(run, state), epoch, start_step, s.trainee.core)
               for run, state in zip(runs, order_states, strict=True)]
    waited = getattr(data, "wait_seconds", None) is not None
    for drawn in zip(*streams, strict=True):
        step, draws, labels = drawn[0][0], [d for _, d, _ in drawn], [y for _, _, y in drawn]
        if s.graphed is not None:  # cuda_graph=true: loss, backward and update replayed as one graph
            for m, (p, y) in enumerate(zip(s.graphed.train_step(draws, labels), labels, strict=True)):
                history[m, step] = history_row(p, len(y))
            if (step + 1) % check_every == 0:
                checked = check(step + 1)
        else:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                parts = s.trainee.losses(draws, labels, runs)
            for m, (p, y) in enumerate(zip(parts, labels, strict=True)):
                history[m, step] = history_row(p, len(y))
            if (step + 1) % check_every == 0:  # on the CPU: before this step's update
                checked = check(step + 1)
            s.optimizer.zero_grad(set_to_none=True)
            # the runs share no weight: each gets its own gradient of the sum
            (parts[0].total if len(parts) == 1 else torch.stack([p.total for p in parts]).sum()).backward()
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
            checked = check(step + 1)
            if s.process.writer:
                _check_weights(s, f"at epoch {epoch + 1}, step {step + 1}")
                _save(s, epoch, step + 1, order_states, history[:, :step + 1])
    check(s.steps_per_epoch)
    seconds = time.perf_counter() - t0
    entries = []
    for m in range(len(runs)):
        sums = epoch_sums(history[m])
        if s.process.world > 1:
            dist.all_reduce(sums)
        n = float(sums[0])  # the images of the epoch (all of an in-memory set; streamed, less bad files)
        entry = epoch_entry(epoch, sums, s.optimizer.param_groups[0]["lr"],
                            n * (s.steps_per_epoch - start_step) / s.steps_per_epoch, seconds)
        if len(runs) > 1:
            entry["members"] = len(runs)
        entries.append(entry)
    if waited:
        bad = torch.tensor([data.bad.count], device=device)
        if s.process.world > 1:
            dist.all_reduce(bad)  # each file is read by one rank
        entries[0]["data_wait_fraction"] = data.wait_seconds / seconds
        entries[0]["bad_files"] = int(bad)
    return entries


class _SilentBar:
    """The progress bar of ranks other than 0."""

    def update(self, _n: int) -> None:
        pass

    def set_postfix(self, **_kwargs: Any) -> None:
        pass

    def close(self) -> None:
        pass
