"""Seeds trained as one stacked model (``fullscale.training.members``) against the same seeds trained alone.

Member k of a group must be run ``seed k`` alone: the same initial weights, batch order, crops,
AugMix views, partners, lambda, transform point and noise, and BatchNorm statistics of its own
images.  What may differ is float rounding: a grouped convolution sums in another order than a
plain one.  The tolerances below are that rounding's: one step (the loss of the first batch and the
weights after one update) agrees to a few float32 ulps of the values involved; over several steps
the difference grows the way any rounding difference does in this chaotic small-batch training (a
run at 2 torch threads instead of 1 moves the same losses by up to 3e-3 after 4 steps, measured),
so later steps get that bound.  A planted shared generator or pooled BatchNorm changes the very
first loss by far more than one step's bound.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from torch import nn

import fullscale.training.loop as trainer
import fullscale.training.members as members_module
from fullscale.models import create_model
from fullscale.training.config import TrainConfig
from fullscale.training.generators import Generators
from fullscale.training.members import member_state_dicts, stack_models, train_members
from fullscale.training.methods import get_method
from noisymix_infra.config import apply_overrides
from noisymix_infra.io import load_state_dict

FIRST_STEP_RTOL = 1e-5  # one forward pass: rounding of a few hundred float32 sums
LATER_STEP_RTOL = 1e-2  # several chaotic steps (see the module docstring)


def _config(method: str, *, epochs: int) -> TrainConfig:
    # 16 images in batches of 16: one step per epoch, so metrics.jsonl holds each step's loss
    return apply_overrides(TrainConfig(), [
        f"method={method}", "dataset=digits", "width=4", f"epochs={epochs}", "batch_size=16", "train_subset=16",
        "device=cpu", "lr=0.01", *[f"{k}={v}" for k, v in get_method(method).defaults.items()]])


def _losses(run) -> list[float]:
    return [json.loads(line)["loss"] for line in (run / "metrics.jsonl").read_text().splitlines()]


def _group_and_singles(cfg: TrainConfig, tmp_path, seeds=(0, 1)):
    batched = [tmp_path / f"member{s}" for s in seeds]
    train_members(cfg, seeds, batched)
    singles = [tmp_path / f"alone{s}" for s in seeds]
    for seed, out in zip(seeds, singles, strict=True):
        trainer.train(dataclasses.replace(cfg, seed=seed), out)
    return batched, singles


def _mismatches(batched, singles) -> list[str]:
    """What differs beyond rounding between each member and its seed alone (empty: faithful)."""
    found = []
    for member, alone in zip(batched, singles, strict=True):
        ours, theirs = _losses(member), _losses(alone)
        for step, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            rtol = FIRST_STEP_RTOL if step == 0 else LATER_STEP_RTOL
            if abs(a - b) > rtol * abs(b):
                found.append(f"{member.name} step {step + 1}: loss {a} vs {b}")
    return found


@pytest.mark.parametrize("method", ["noisymix", "augmix_jsd", "nfm", "baseline"])
def test_each_member_is_its_seed_trained_alone(method, tmp_path, one_torch_thread):
    batched, singles = _group_and_singles(_config(method, epochs=4), tmp_path)
    assert _mismatches(batched, singles) == []
    # the members are different runs: other draws, other weights
    assert _losses(batched[0])[0] != _losses(batched[1])[0]
    a, b = (load_state_dict(run / "final.pt") for run in batched)
    assert not torch.allclose(a["conv1.weight"], b["conv1.weight"])


def test_one_update_gives_each_member_its_weights_and_batchnorm_statistics(tmp_path, one_torch_thread):
    """After one step every weight and every BatchNorm buffer of member k is seed k's alone (the
    running statistics of its own images, not pooled over the group)."""
    batched, singles = _group_and_singles(_config("noisymix", epochs=1), tmp_path)
    for member, alone in zip(batched, singles, strict=True):
        ours, theirs = load_state_dict(member / "final.pt"), load_state_dict(alone / "final.pt")
        assert ours.keys() == theirs.keys()
        for key, value in theirs.items():
            if value.is_floating_point():  # an update of lr 0.01 on gradients that agree to rounding
                torch.testing.assert_close(ours[key], value, rtol=1e-4, atol=1e-6, msg=key)
            else:
                assert torch.equal(ours[key], value), key
    a, b = (load_state_dict(run / "final.pt") for run in batched)
    assert not torch.allclose(a["layer1.0.bn1.running_mean"], b["layer1.0.bn1.running_mean"])


def test_a_planted_shared_generator_is_caught(tmp_path, one_torch_thread, monkeypatch):
    """Two members drawing from one generator (a bug) no longer equal their seeds alone."""
    create = Generators.create
    shared = {}

    def one_for_all(cfg, process):
        return shared.setdefault("g", create(cfg, process))

    cfg = _config("noisymix", epochs=2)
    singles = [tmp_path / f"alone{s}" for s in (0, 1)]
    for seed, out in zip((0, 1), singles, strict=True):
        trainer.train(dataclasses.replace(cfg, seed=seed), out)
    monkeypatch.setattr(Generators, "create", one_for_all)
    batched = [tmp_path / f"member{s}" for s in (0, 1)]
    train_members(cfg, (0, 1), batched)
    assert _mismatches(batched, singles)


class _PooledBatchNorm(nn.BatchNorm2d):
    """A planted bug: the statistics of all members' channels pooled (one mean and variance per
    channel index over every member's images)."""

    members = 2

    def forward(self, x):
        n, mc, h, w = x.shape
        c = mc // self.members
        pooled = x.reshape(n, self.members, c, h, w).transpose(0, 1).reshape(self.members * n, c, h, w)
        out = nn.functional.batch_norm(pooled, None, None, training=True, eps=self.eps)
        out = out.reshape(self.members, n, c, h, w).transpose(0, 1).reshape(n, mc, h, w)
        return out * self.weight.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)


def test_planted_pooled_batchnorm_statistics_are_caught(tmp_path, one_torch_thread, monkeypatch):
    cfg = _config("baseline", epochs=2)
    singles = [tmp_path / f"alone{s}" for s in (0, 1)]
    for seed, out in zip((0, 1), singles, strict=True):
        trainer.train(dataclasses.replace(cfg, seed=seed), out)
    monkeypatch.setattr(members_module, "_stack_batchnorm",
                        lambda layer, members: _PooledBatchNorm(layer.num_features * members))
    batched = [tmp_path / f"member{s}" for s in (0, 1)]
    train_members(cfg, (0, 1), batched)
    assert _mismatches(batched, singles)


@pytest.mark.parametrize("stem_stride", [1, 2])  # 2: the laptop plan's model
def test_stacking_round_trips_each_members_state_and_output(stem_stride):
    models = []
    for seed in (3, 4, 5):
        torch.manual_seed(seed)
        models.append(create_model("preactresnet18", 10, width=4, stem_stride=stem_stride).eval())
    stack = stack_models(models).eval()
    for original, restored in zip(models, member_state_dicts(stack), strict=True):
        for key, value in original.state_dict().items():
            assert torch.equal(restored[key], value), key  # stacking and slicing copy values exactly
    images = [torch.rand(5, 3, 32, 32, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    with torch.no_grad():
        logits = stack(torch.cat(images, dim=1))
        for m, (model, x) in enumerate(zip(models, images, strict=True)):
            torch.testing.assert_close(logits[:, m], model(x), rtol=1e-5, atol=1e-5)


def test_a_killed_group_resumes_to_the_same_members(tmp_path, one_torch_thread, crash_after_checkpoints):
    cfg = _config("nfm", epochs=3)
    straight = [tmp_path / f"straight{s}" for s in (0, 1)]
    train_members(cfg, (0, 1), straight)
    resumed = [tmp_path / f"resumed{s}" for s in (0, 1)]
    crash_after_checkpoints(lambda: train_members(cfg, (0, 1), resumed), 2)  # both members' first checkpoints
    train_members(cfg, (0, 1), resumed)
    for a, b in zip(straight, resumed, strict=True):
        assert _losses(a) == _losses(b)
        x, y = load_state_dict(a / "final.pt"), load_state_dict(b / "final.pt")
        assert all(torch.equal(x[k], y[k]) for k in x)  # one process, one thread: the same sums


def test_groups_refuse_what_they_cannot_train_in_one_line(tmp_path):
    cfg = _config("baseline", epochs=1)
    with pytest.raises(ValueError, match="distinct seeds"):
        train_members(cfg, (0, 0), [tmp_path / "a", tmp_path / "b"])
    with pytest.raises(ValueError, match="one seed at a time"):
        train_members(dataclasses.replace(cfg, method="cutmix"), (0, 1), [tmp_path / "a", tmp_path / "b"])
    train_members(cfg, (0,), [tmp_path / "done"])
    with pytest.raises(ValueError, match="1 of 2 folders hold a checkpoint"):
        train_members(cfg, (0, 1), [tmp_path / "done", tmp_path / "new"])


def test_a_group_that_does_not_fit_is_refused_though_one_member_would(tmp_path, monkeypatch):
    """The memory check counts every member's weights, gradients and momentum (it counted one)."""
    import fullscale.training.process as process_module

    cfg = _config("baseline", epochs=1)
    one = 3 * 4 * sum(p.numel() for p in create_model(cfg.model.name, 10, **cfg.model_kwargs).parameters())
    monkeypatch.setattr(process_module, "available_bytes", lambda device: int(1.5 * one))
    process_module.check_model_fits(cfg, 10, torch.device("cpu"))  # one model fits
    with pytest.raises(ValueError, match=r"does not fit: .* x 2 members"):
        train_members(cfg, (0, 1), [tmp_path / "a", tmp_path / "b"])
    assert not (tmp_path / "a" / "config.json").exists()
