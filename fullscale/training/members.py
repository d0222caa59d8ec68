"""Several seeds of one config trained as one model: the members live side by side in the channels.

A method's seeds are independent models of one shape.  ``stack_models`` turns M of them into one
network whose every layer holds the M members side by side: a convolution becomes a grouped
convolution of M groups, a BatchNorm layer keeps M x C channels (so its statistics stay per member:
a channel's mean is over that member's images alone), the classifier becomes M independent linear
maps.  The input is (N, M * 3, H, W), member m's images in channels 3m..3m+2, so every member sees
its own batch; the output is (N, M, K).

``train_members`` trains such a stack in the trainer's own loop (``loop.train_runs``, with the
stack as its ``Trainee``: ``Stacked``), with one SGD optimiser (SGD, momentum and weight decay act
per element, so one optimiser over the stacked parameters is M optimisers), and draws everything per
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
one seed at a time.  With ``runtime.cuda_graph=true`` (the ``gpu`` plan) the stack's whole step is one
captured CUDA graph (``graphed_members``, issue 53).  None of the reference codes can train seeds together.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
from torch import Tensor, nn

from fullscale.models import Normalize, create_model
from fullscale.training.checkpoint import run_record
from fullscale.training.config import TrainConfig
from fullscale.training.data import STREAMED, InMemoryData, training_data
from fullscale.training.draws import StepDraws
from fullscale.training.generators import Generators
from fullscale.training.graphed import check_cuda_graph
from fullscale.training.graphed_members import GraphedMembers
from fullscale.training.hooks import stage_module
from fullscale.training.loop import train_runs
from fullscale.training.methods import Method, get_method
from fullscale.training.process import check_model_fits, start_process
from fullscale.training.schedule import make_optimizer, make_scheduler
from fullscale.training.step import method_loss, mix_features
from fullscale.training.trainee import Run, Setup, run_draws
from noisymix.loss import LossParts
from noisymix.mixing import mix_targets
from noisymix_infra.folder_kind import claim_folder, require_kind
from noisymix_infra.io import directory_lock

__all__ = ["MemberLinear", "Stacked", "groupable", "member_state_dicts", "stack_models", "stack_state_dicts",
           "train_members"]


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
# The loop is the trainer's (``loop.train_runs``: epochs, resume, checkpoints, checks, finish), as
# are the draws (``draws.RunDraws``, per member from its own generators) and the step's parts
# (``step.mix_features``, ``step.method_loss``).  What stacking changes is the ``Trainee``: one
# forward pass for all members (each member's transform applied to its slice of the channels), each
# member's loss, and each member's weights and optimiser state in the plain model's layout.


@dataclasses.dataclass
class Stacked:
    """Seeds stacked as one network (``stack_models``), as the loop's ``Trainee``."""

    core: nn.Module  # the stack
    plain: nn.Module  # one plain network, loaded with each member's weights in turn (checks, accuracy)
    method: Method
    cfg: TrainConfig
    num_classes: int

    @property
    def model(self) -> nn.Module:
        return self.core

    def losses(self, draws: Sequence[StepDraws], labels: Sequence[Tensor], runs: Sequence[Run]) -> list[LossParts]:
        with _member_transforms(self.core, [run.generators.aug for run in runs], draws, self.method.views):
            logits = self.core(torch.cat([d.x for d in draws], dim=1))
        return [method_loss(logits[:, m], mix_targets(y, d.draw, self.num_classes), self.method, self.cfg)
                for m, (d, y) in enumerate(zip(draws, labels, strict=True))]

    def states(self) -> list[dict[str, Tensor]]:
        return member_state_dicts(self.core)

    def optimizer_states(self, optimizer: torch.optim.Optimizer) -> list[dict]:
        return _optimizer_states(self.core, optimizer)

    def load(self, states: Sequence[dict], optimizer: torch.optim.Optimizer, optimizer_states: Sequence[dict]) -> None:
        self.core.load_state_dict(stack_state_dicts(states, self.core._member_layout))
        optimizer.load_state_dict(_stack_optimizer_states(self.core, optimizer_states))

    def networks(self) -> Iterator[nn.Module]:
        for state in self.states():
            self.plain.load_state_dict(state)
            yield self.plain


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
    check_cuda_graph(cfg, get_method(cfg.method), process.device, process.world)
    data, heldout = training_data(cfg, process)
    assert isinstance(data, InMemoryData) and heldout is None  # groupable()
    steps_per_epoch = data.steps_per_epoch(cfg.optim.batch_size)
    if steps_per_epoch < 1:
        raise ValueError(f"the training data ({data.source}) holds {len(data)} image(s): not one step of batch "
                         f"{cfg.optim.batch_size}")
    check_model_fits(cfg, data.num_classes, process.device, copies=len(seeds))
    method = get_method(cfg.method)
    runs, models = [], []
    for seed, out in zip(seeds, outs, strict=True):
        member_cfg = dataclasses.replace(cfg, seed=seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)  # the weights a run of this seed alone draws (loop.train)
            models.append(create_model(cfg.model.name, data.num_classes, **cfg.model_kwargs).to(process.device))
            torch_state = torch.get_rng_state()
        record = run_record(member_cfg, data, process)
        record["run"]["members"] = {"seeds": list(seeds), "index": len(runs)}
        runs.append(Run(member_cfg, out, Generators.create(member_cfg, process), record,
                        run_draws(member_cfg, method, data, process, steps_per_epoch), torch_state))
    stack = stack_models(models)
    plain = create_model(cfg.model.name, data.num_classes, **cfg.model_kwargs).to(process.device)
    optimizer = make_optimizer(stack.parameters(), cfg)
    # cuda_graph=true: the members' step captured as one graph (issue 53)
    graphed = (GraphedMembers(stack, optimizer, method, cfg, data.num_classes, [run.generators.aug for run in runs],
                              amp=cfg.runtime.amp, capture=True) if cfg.runtime.cuda_graph else None)
    setup = Setup(cfg, method, process, data, None, Stacked(stack, plain, method, cfg, data.num_classes), optimizer,
                  make_scheduler(optimizer, cfg, steps_per_epoch), runs, steps_per_epoch, graphed)
    with contextlib.ExitStack() as locks:
        for out in outs:
            locks.enter_context(directory_lock(out, "training"))
            claim_folder(out, "run")
        train_runs(setup, resume)
    return outs


@contextlib.contextmanager
def _member_transforms(stack: nn.Module, generators: Sequence[torch.Generator], draws: Sequence[StepDraws],
                       views: int):
    """During the forward pass, member m's slice of the features at its stage is replaced by
    M_{lambda,xi} with its own draw and noise generator (``step.mix_features``, what
    ``transform_stage`` does for one run)."""
    stages = [d.stage for d in draws]
    if all(stage is None for stage in stages):
        yield
        return
    count = len(draws)
    handles = []
    for name in sorted(set(stages)):
        at = [m for m, s in enumerate(stages) if s == name]

        def hook(_module, _inputs, out: Tensor, at=at) -> Tensor:
            parts = list(out.split(out.shape[1] // count, dim=1))
            for m in at:
                parts[m] = mix_features(parts[m], draws[m].draw, draws[m].mix_cfg, generators[m], views)
            return torch.cat(parts, dim=1)

        handles.append(stage_module(stack, name).register_forward_hook(hook))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
