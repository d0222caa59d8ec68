"""Kinds of mixing register themselves, each with its own config group (``fullscale.mixings``, issue 42).

The training config names no kind's options: a kind with options (``Mixing.config``) gets a group of
its name in ``TrainConfig``, and its batch op and loss receive that group alone.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from fullscale.mixings import MIXINGS, Mixing, config_groups, register_mixing
from fullscale.puzzlemix import PuzzleMixConfig
from fullscale.run_record import later_keys
from fullscale.training.config import TrainConfig, _with_mixing_groups
from fullscale.training.draws import StepDraws
from fullscale.training.methods import Method
from fullscale.training.step import apply_batch_op, method_loss
from noisymix.loss import LossParts
from noisymix.mixing import MixConfig, MixDraw
from noisymix_infra.config import apply_overrides, config_to_dict


def test_every_kind_with_options_is_a_group_of_the_training_config():
    groups = dict(config_groups())
    assert groups == {"puzzlemix": PuzzleMixConfig}  # the one kind with options today
    cfg = TrainConfig()
    for name, group in groups.items():
        assert getattr(cfg, name) == group()
        first = dataclasses.fields(group)[1].name  # n_labels for Puzzle Mix
        changed = apply_overrides(cfg, [f"{name}.{first}=2"])
        assert getattr(getattr(changed, name), first) == 2
        # a group added after runs were made: old records read with its defaults
        assert later_keys()[name] == config_to_dict(group())


@dataclasses.dataclass(frozen=True)
class _ScaleOptions:
    scale: float = 2.0


@pytest.fixture()
def scale_kind():
    """A kind of mixing registered by a test, with options: its batch op multiplies the views by
    ``scale`` and records what it was handed; its loss records that too."""
    seen = []

    def op(core, x, y, draw, options, *, generator):
        seen.append(options)
        return x * options.scale, draw, "extra"

    def loss(logits, targets, extra, options):
        seen.append((extra, options))
        total = logits.sum() * 0
        return LossParts(total=total, cross_entropy=total, jsd=total)

    kind = register_mixing(Mixing("test_scale", batch_op=op, loss=loss, per_pair=True, combines=False,
                                  config=_ScaleOptions))
    try:
        yield kind, seen
    finally:
        MIXINGS.pop("test_scale")


def test_a_kind_registered_with_options_gets_its_group_and_its_ops_see_it_alone(scale_kind):
    kind, seen = scale_kind
    config_class = _with_mixing_groups(TrainConfig)  # what TrainConfig is made with, the new kind registered
    cfg = apply_overrides(config_class(), ["test_scale.scale=3"])
    assert cfg.test_scale == _ScaleOptions(3.0) and cfg.puzzlemix == PuzzleMixConfig()
    method = Method("test_scale_method", "Test", mixing=kind.name)
    x = torch.ones(4, 3, 8, 8)
    draw = MixDraw(perm=torch.arange(4), lam=torch.tensor(1.0))
    mixed = apply_batch_op(StepDraws(x, draw, MixConfig(alpha=0.0), None), torch.zeros(4, dtype=torch.long), method,
                           cfg, torch.nn.Identity(), torch.Generator())
    assert torch.equal(mixed.x, 3 * x) and mixed.extra == "extra"
    method_loss(torch.zeros(4, 10), torch.zeros(4, 10), method, cfg, mixed.extra)
    assert seen == [_ScaleOptions(3.0), ("extra", _ScaleOptions(3.0))]  # the group, not the training config


def test_a_kind_filed_twice_is_refused_in_one_line():
    with pytest.raises(ValueError, match="mixing 'cutmix' registered twice"):
        register_mixing(Mixing("cutmix"))
