"""Several seeds of one config trained as one model: the members live side by side in the channels.

A method's seeds are independent models of one shape.  ``stack_models`` turns M of them into one
network whose every layer holds the M members side by side: a convolution becomes a grouped
convolution of M groups, a BatchNorm layer keeps M x C channels (so its statistics stay per member:
a channel's mean is over that member's images alone), the classifier becomes M independent linear
maps.  The input is (N, M * 3, H, W), member m's images in channels 3m..3m+2, so every member sees
its own batch; the output is (N, M, K).

``train_members`` trains such a stack with one SGD optimiser (SGD, momentum and weight decay act per
element, so one optimiser over the stacked parameters is M optimisers) and draws everything per
member from that member's own generators, exactly as ``loop.train`` draws a run of that seed
alone (the same ``draws.RunDraws``): the batch order, crops, flips, AugMix views, partners, lambda,
transform point and noise.
Member k is therefore run ``seed k`` alone up to float rounding (``tests/trainer/test_members.py``
holds the two against each other and catches a shared generator or pooled BatchNorm statistics).
Each member is written as an ordinary run folder (``config.json``, ``metrics.jsonl``, per-epoch
``checkpoint.pt`` and ``final.pt`` in the plain model's layout), so evaluation, figures and sweeps
read it as any run, and a killed group resumes from its members' checkpoints.

Where it pays: on an accelerator, where a small model is bound by kernel launches, M members cost
about one.  On a CPU the work is the arithmetic itself and grouped convolutions are no faster than
M plain ones (benchmarks/RESULTS.md, issue 22: ``noisymix bench members``), so the CPU plans train
one seed at a time.  None of the reference codes can train seeds together.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor, nn

from fullscale.augment import to_float
from fullscale.models import Normalize, create_model
from fullscale.runs import append_metrics, read_metrics
from fullscale.training.checkpoint import check_same_data, checkpoint_state, config_identity, run_record
from fullscale.training.checks import NonFiniteLoss, check_weights, divergence, end_accuracy
from fullscale.training.config import TrainConfig
from fullscale.training.data import STREAMED, InMemoryData, training_data
from fullscale.training.draws import RunDraws
from fullscale.training.generators import Generators
from fullscale.training.hooks import stage_module
from fullscale.training.methods import Method, get_method
from fullscale.training.process import Process, check_model_fits, start_process
from fullscale.training.schedule import make_optimizer, make_scheduler
from fullscale.training.step import (
    StepDraws,
    epoch_entry,
    epoch_sums,
    history_row,
    method_loss,
    mix_features,
)
from noisymix.mixing import mix_targets
from noisymix_infra.folder_kind import claim_folder, require_kind
from noisymix_infra.io import directory_lock, load_state_dict, read_json, save_torch, write_json
from noisymix_infra.progress import progress
from noisymix_infra.provenance import now

__all__ = ["MemberLinear", "groupable", "member_state_dicts", "stack_models", "stack_state_dicts", "train_members"]


class MemberLinear(nn.Module):
    """M independent linear maps: (N, M * C) -> (N, M, K); member m's weight is ``weight[m]``."""

    def __init__(self, members: int, in_features: int, out_features: int) -> None:
        super().__init__()
        self.members = members
        self.weight = nn.Parameter(torch.empty(members, out_features, in_features))
        self.bias = nn.Parameter(torch.empty(members, out_features))

    def forward(self, x: Tensor) -> Tensor:
        x = x.reshape(x.shape[0], self.members, -1)
        return torch.einsum("nmc,mkc->nmk", x, self.weight) + self.bias


# how a stacked state-dict entry holds its members: "chunks" along dim 0 (convolutions, BatchNorm),
# "index" along a new dim 0 (MemberLinear), "shared" (BatchNorm's step count, equal for all)
_Layout = dict[str, str]


def _stack_batchnorm(layer: nn.BatchNorm2d, members: int) -> nn.Module:
    """M x C channels: each channel's statistics are over its own member's images only."""
    return nn.BatchNorm2d(layer.num_features * members, layer.eps, layer.momentum, layer.affine,
                          layer.track_running_stats)


def _convert(module: nn.Module, members: int, layout: _Layout, prefix: str = "") -> None:
    for name, child in module.named_children():
        key = f"{prefix}{name}"
        if isinstance(child, nn.Conv2d):
            setattr(module, name, nn.Conv2d(
                child.in_channels * members, child.out_channels * members, child.kernel_size, child.stride,
                child.padding, child.dilation, child.groups * members, child.bias is not None, child.padding_mode))
            layout[f"{key}.weight"] = "chunks"
            if child.bias is not None:
                layout[f"{key}.bias"] = "chunks"
        elif isinstance(child, nn.BatchNorm2d):
            setattr(module, name, _stack_batchnorm(child, members))
            for entry in ("weight", "bias", "running_mean", "running_var"):
                layout[f"{key}.{entry}"] = "chunks"
            layout[f"{key}.num_batches_tracked"] = "shared"
        elif isinstance(child, nn.Linear):
            setattr(module, name, MemberLinear(members, child.in_features, child.out_features))
            layout[f"{key}.weight"] = layout[f"{key}.bias"] = "index"
        elif isinstance(child, Normalize):  # buffers not saved: repeat them per member
            child.mean, child.std = child.mean.repeat(1, members, 1, 1), child.std.repeat(1, members, 1, 1)
        elif isinstance(child, nn.Dropout) and child.p > 0:
            raise ValueError("members: a model with dropout cannot be stacked (its draws come from the global "
                             "generator, shared by the members)")
        elif any(True for _ in child.parameters(recurse=False)) or any(True for _ in child.buffers(recurse=False)):
            raise ValueError(f"members: cannot stack a {type(child).__name__} layer ({key}); stackable: Conv2d, "
                             "BatchNorm2d, Linear after global pooling, parameter-free layers")
        else:
            _convert(child, members, layout, f"{key}.")


def stack_models(models: Sequence[nn.Module]) -> nn.Module:
    """One network holding ``models`` (same architecture) as members; ``stack._member_layout``
    says how each state-dict entry holds them.  Mixing stages keep their names."""
    if not models:
        raise ValueError("members: nothing to stack")
    stack = copy.deepcopy(models[0])
    layout: _Layout = {}
    _convert(stack, len(models), layout)
    stack._member_layout = layout
    stack._members = len(models)
    stack.load_state_dict(stack_state_dicts([m.state_dict() for m in models], layout))
    return stack


def stack_state_dicts(states: Sequence[dict[str, Tensor]], layout: _Layout) -> dict[str, Tensor]:
    """The stacked state dict of members' plain state dicts."""
    out = {}
    for key, kind in layout.items():
        values = [s[key] for s in states]
        out[key] = values[0].clone() if kind == "shared" else (
            torch.cat(values) if kind == "chunks" else torch.stack(values))
    return out


def member_state_dicts(stack: nn.Module) -> list[dict[str, Tensor]]:
    """Each member's state dict in the plain model's layout (what ``create_model`` loads)."""
    members, layout = stack._members, stack._member_layout
    return _unstack(stack.state_dict(), layout, members)


def _unstack(state: dict[str, Tensor], layout: _Layout, members: int) -> list[dict[str, Tensor]]:
    out: list[dict[str, Tensor]] = [{} for _ in range(members)]
    for key, kind in layout.items():
        value = state[key]
        parts = ([value] * members if kind == "shared"
                 else value.chunk(members) if kind == "chunks" else value.unbind(0))
        for m in range(members):
            out[m][key] = parts[m].detach().clone()
    return out


def _optimizer_states(stack: nn.Module, optimizer: torch.optim.Optimizer) -> list[dict]:
    """Each member's SGD state dict as a plain run's optimiser would hold it (momentum sliced)."""
    members, layout = stack._members, stack._member_layout
    names = [n for n, _ in stack.named_parameters()]
    full = optimizer.state_dict()
    out = []
    for m in range(members):
        state = {}
        for index, per_param in full["state"].items():
            kind = layout[names[index]]
            state[index] = {k: (v.chunk(members)[m] if kind == "chunks" else v[m]).clone()
                            if isinstance(v, Tensor) and v.dim() > 0 else v for k, v in per_param.items()}
        out.append({"state": state, "param_groups": copy.deepcopy(full["param_groups"])})
    return out


def _stack_optimizer_states(stack: nn.Module, states: Sequence[dict]) -> dict:
    layout = stack._member_layout
    names = [n for n, _ in stack.named_parameters()]
    merged = {}
    for index in states[0]["state"]:
        kind = layout[names[index]]
        merged[index] = {k: (torch.cat if kind == "chunks" else torch.stack)([s["state"][index][k] for s in states])
                         if isinstance(v, Tensor) and v.dim() > 0 else v
                         for k, v in states[0]["state"][index].items()}
    return {"state": merged, "param_groups": states[0]["param_groups"]}


# --------------------------------------------------------------------------------- training
# The step is the trainer's (``draws.RunDraws``, ``mix_features``, ``method_loss``), its record too
# (``history_row``, ``epoch_sums``, ``epoch_entry``), as are the optimiser, the schedule and the
# checkpoint's dictionary.  What stays here is what stacking changes: one forward pass for all
# members (each member's transform applied to its slice of the channels), one backward of the
# summed losses, per-member checkpoints (the member's own torch generator state, drawn once when
# its weights were) and a finiteness check that names the member's seed.
@dataclasses.dataclass
class _Member:
    """One seed of the group: its config, folder, generators and record."""

    cfg: TrainConfig
    out: Path
    generators: Generators
    record: dict
    identity: str
    torch_state: Tensor  # the global generator after its weights were drawn (no dropout: unused after)


def groupable(cfg: TrainConfig) -> bool:
    """Whether seeds of ``cfg`` can train as one stacked model: in-memory data, no transfer, no
    CutMix/Puzzle Mix (their per-pair boxes and masks: ``Mixing.per_pair``), epoch-end checkpoints,
    no held-out split."""
    return not (cfg.data.dataset in STREAMED or cfg.is_transfer or get_method(cfg.method).kind.per_pair
                or cfg.runtime.checkpoint_every or cfg.data.heldout)


def _check_group(cfg: TrainConfig, seeds: Sequence[int], outs: Sequence[Path]) -> None:
    if len(seeds) != len(outs) or len(set(seeds)) != len(seeds) or len(seeds) < 1:
        raise ValueError(f"members: need distinct seeds, one folder each (got seeds {list(seeds)}, "
                         f"{len(outs)} folders)")
    if not groupable(cfg):
        raise ValueError(f"members: {cfg.method} on {cfg.data.dataset} trains one seed at a time (members take "
                         "in-memory data without a held-out split, no transfer, no CutMix/Puzzle Mix, epoch-end "
                         "checkpoints)")


def train_members(cfg: TrainConfig, seeds: Sequence[int], outs: Sequence[str | Path], *,
                  resume: bool = True) -> list[Path]:
    """Train ``cfg`` with each of ``seeds`` into ``outs`` (one run folder per seed) as one stacked
    model; return the folders.  Member k equals ``train(replace(cfg, seed=seeds[k]), outs[k])`` up
    to float rounding.  Folders whose members all finished are left as they are; a group whose
    members all hold a checkpoint of the same epoch resumes from it.  As ``train``: the folders are
    checked (a -C set, a sweep, ... is refused), the data read and the model's size checked before
    any folder is made or locked; each folder is claimed as a run."""
    outs = [Path(o) for o in outs]
    _check_group(cfg, seeds, outs)
    for out in outs:
        if out.exists() and not out.is_dir():
            raise ValueError(f"members: {out} exists and is not a folder: give a new or existing folder")
        require_kind(out, "run", "members")
    if all((o / "final.pt").is_file() for o in outs):
        return outs
    process = start_process(cfg)
    if process.world > 1:
        raise ValueError("members: one process trains the group (not under torchrun)")
    data, heldout = training_data(cfg, process)
    assert isinstance(data, InMemoryData) and heldout is None  # groupable()
    if data.steps_per_epoch(cfg.optim.batch_size) < 1:
        raise ValueError(f"the training data ({data.source}) holds {len(data)} image(s): not one step of batch "
                         f"{cfg.optim.batch_size}")
    check_model_fits(cfg, data.num_classes, process.device, copies=len(seeds))
    with contextlib.ExitStack() as locks:
        for out in outs:
            locks.enter_context(directory_lock(out, "training"))
            claim_folder(out, "run")
        _train_group(cfg, list(seeds), outs, process, resume, data)
    return outs


def _train_group(cfg: TrainConfig, seeds: list[int], outs: list[Path], process: Process, resume: bool,
                 data: InMemoryData) -> None:
    device = process.device
    method = get_method(cfg.method)
    steps_per_epoch = data.steps_per_epoch(cfg.optim.batch_size)
    members, models = [], []
    for seed, out in zip(seeds, outs, strict=True):
        member_cfg = dataclasses.replace(cfg, seed=seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)  # the weights a run of this seed alone draws (loop.train)
            models.append(create_model(cfg.model.name, data.num_classes, **cfg.model_kwargs).to(device))
            torch_state = torch.get_rng_state()
        record = run_record(member_cfg, data, process)
        record["run"]["members"] = {"seeds": seeds, "index": len(members)}
        members.append(_Member(member_cfg, out, Generators.create(member_cfg, process), record,
                               config_identity(record), torch_state))
    stack = stack_models(models)
    optimizer = make_optimizer(stack.parameters(), cfg)
    scheduler = make_scheduler(optimizer, cfg, steps_per_epoch)
    start_epoch, metrics = _resume(stack, optimizer, scheduler, members, device, resume)
    for member in members:
        write_json(member.out / "config.json", member.record)
    probe = to_float(data.images[:16])
    plain = create_model(cfg.model.name, data.num_classes, **cfg.model_kwargs).to(device)
    bar = progress(total=cfg.optim.epochs * steps_per_epoch, initial=start_epoch * steps_per_epoch,
                   desc=f"train {cfg.preset} x{len(seeds)}", unit="step")
    for epoch in range(start_epoch, cfg.optim.epochs):
        t0 = time.perf_counter()
        history = _epoch(stack, optimizer, scheduler, members, data, method, cfg, epoch, bar)
        seconds = time.perf_counter() - t0
        states = member_state_dicts(stack)
        for m, member in enumerate(members):
            plain.load_state_dict(states[m])
            check_weights(plain, f"after epoch {epoch + 1} (seed {member.cfg.seed})", member.out / "checkpoint.pt",
                          probe)
        optimizer_states = _optimizer_states(stack, optimizer)
        for m, member in enumerate(members):
            sums = epoch_sums(history[m])
            metrics[m].append({**epoch_entry(epoch, sums, optimizer.param_groups[0]["lr"], float(sums[0]), seconds),
                               "members": len(members)})
            append_metrics(member.out, metrics[m])
            save_torch(member.out / "checkpoint.pt", checkpoint_state(
                member.identity, states[m], optimizer_states[m], scheduler.state_dict(), epoch + 1, 0,
                member.generators.state(), member.torch_state))
    bar.close()
    _finish(members, stack, plain, metrics, data, cfg, probe)


def _finish(members: list[_Member], stack: nn.Module, plain: nn.Module, metrics: list[list[dict]],
            data: InMemoryData, cfg: TrainConfig, probe: Tensor) -> None:
    """Each member's ``final.pt`` and finished record, unless it diverged (as a run alone)."""
    diverged = []
    for m, (member, state) in enumerate(zip(members, member_state_dicts(stack), strict=True)):
        plain.load_state_dict(state)
        check_weights(plain, f"at the end (seed {member.cfg.seed})", member.out / "checkpoint.pt", probe)
        # a finite loss far above its start, or chance accuracy after a blow-up (as a run alone)
        why = divergence(metrics[m], data.num_classes, lambda: end_accuracy(plain, data, None, cfg))
        if why:
            member.record["run"]["diverged"] = why
            diverged.append(f"seed {member.cfg.seed} {why}")
        else:
            save_torch(member.out / "final.pt", state)
            member.record["run"]["finished"] = now()
        write_json(member.out / "config.json", member.record)
    if diverged:
        more = f" (and {len(diverged) - 1} more)" if len(diverged) > 1 else ""
        raise NonFiniteLoss(f"{diverged[0]}{more}; not saved as final.pt, the last checkpoints are the members' "
                            "checkpoint.pt (a smaller lr may train)")


def _resume(stack: nn.Module, optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler,
            members: list[_Member], device: torch.device, resume: bool) -> tuple[int, list[list[dict]]]:
    """The epoch to start from and each member's metrics so far: 0 for a new group; with ``resume``
    and every member holding a checkpoint of its own config at one epoch, that epoch."""
    found = [m.out / "checkpoint.pt" for m in members if (m.out / "checkpoint.pt").is_file()]
    held = [m.out for m in members if (m.out / "final.pt").is_file() or (m.out / "checkpoint.pt").is_file()]
    if not found:
        if held:
            raise ValueError(f"members: {held[0]} already holds a run; use another --out")
        return 0, [[] for _ in members]
    if not resume or len(found) != len(members):
        raise ValueError(f"members: {len(found)} of {len(members)} folders hold a checkpoint ({found[0]}); "
                         "resume needs all of the group's, or train into new folders")
    states = []
    for member in members:
        if (member.out / "config.json").is_file():  # the data it started with (issue 32)
            check_same_data(member.out / "config.json", read_json(member.out / "config.json"), member.record)
        state = load_state_dict(member.out / "checkpoint.pt", map_location=device)
        if not isinstance(state, dict) or state.get("config_identity") != member.identity or state.get("step"):
            raise ValueError(f"cannot resume from {member.out / 'checkpoint.pt'}: not an epoch-end checkpoint of "
                             "this run's config; train anew into another --out")
        states.append(state)
    epochs = {int(s["epoch"]) for s in states}
    if len(epochs) != 1:
        raise ValueError(f"members: the group's checkpoints are of different epochs ({sorted(epochs)}); "
                         "train anew into other folders")
    stack.load_state_dict(stack_state_dicts([s["model"] for s in states], stack._member_layout))
    optimizer.load_state_dict(_stack_optimizer_states(stack, [s["optimizer"] for s in states]))
    scheduler.load_state_dict(states[0]["scheduler"])
    for member, state in zip(members, states, strict=True):
        member.generators.restore(state)
    epoch = epochs.pop()
    return epoch, [[e for e in read_metrics(m.out) if e["epoch"] <= epoch] for m in members]


def _epoch(stack: nn.Module, optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler,
           members: list[_Member], data: InMemoryData, method: Method, cfg: TrainConfig, epoch: int,
           bar: object) -> Tensor:
    """One epoch of the group; the per-member, per-step history (M, steps, 4): images, loss, CE, JSD."""
    steps = data.steps_per_epoch(cfg.optim.batch_size)
    device = data.images.device
    history = torch.zeros(len(members), steps, 4, device=device)
    one_process = Process(device, 0, 1)

    def batches_of(member: _Member):
        return lambda first: data.batches(member.generators.order, cfg.optim.batch_size, one_process,
                                          start_step=first)

    # each member's views, partners, lambda and transform point, as its run alone makes them
    streams = [RunDraws(m.cfg, method, steps, data.images.shape[1:]).epoch(batches_of(m), epoch, 0, stack)
               for m in members]
    stack.train()
    for step, drawn in enumerate(zip(*streams, strict=True)):
        draws, labels = [d for _, d, _ in drawn], [y for _, _, y in drawn]
        with _member_transforms(stack, members, draws, method.views):
            logits = stack(torch.cat([d.x for d in draws], dim=1))
        losses = []
        for m, (d, y) in enumerate(zip(draws, labels, strict=True)):
            parts = method_loss(logits[:, m], mix_targets(y, d.draw, data.num_classes), method, cfg)
            history[m, step] = history_row(parts, len(y))
            losses.append(parts.total)
        # checked every step before the update (``checks.check_finite`` checks one run's history;
        # this names the member's seed, and the members' checkpoints as the ones kept)
        if not bool(torch.isfinite(history[:, step, 1:]).all()):
            m = int((~torch.isfinite(history[:, step, 1:]).all(1)).nonzero()[0, 0])
            raise NonFiniteLoss(f"non-finite loss at epoch {epoch + 1}, step {step + 1} (seed {members[m].cfg.seed}); "
                                f"stopped, the last good checkpoints are the members' checkpoint.pt")
        optimizer.zero_grad(set_to_none=True)
        torch.stack(losses).sum().backward()  # members share no weight: each gets its own gradient
        optimizer.step()
        scheduler.step()
        bar.update(1)
    return history


@contextlib.contextmanager
def _member_transforms(stack: nn.Module, members: list[_Member], draws: list[StepDraws], views: int):
    """During the forward pass, member m's slice of the features at its stage is replaced by
    M_{lambda,xi} with its own draw and noise generator (``step.mix_features``, what
    ``transform_stage`` does for one run)."""
    stages = [d.stage for d in draws]
    if all(stage is None for stage in stages):
        yield
        return
    count = len(members)
    handles = []
    for name in sorted(set(stages)):
        at = [m for m, s in enumerate(stages) if s == name]

        def hook(_module, _inputs, out: Tensor, at=at) -> Tensor:
            parts = list(out.split(out.shape[1] // count, dim=1))
            for m in at:
                parts[m] = mix_features(parts[m], draws[m].draw, draws[m].mix_cfg, members[m].generators.aug, views)
            return torch.cat(parts, dim=1)

        handles.append(stage_module(stack, name).register_forward_hook(hook))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
