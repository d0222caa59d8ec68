"""Typed key=value overrides and the config.json round trip."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import pytest

from noisymix_infra.config import apply_overrides, config_from_dict, config_keys, config_to_dict


@dataclass(frozen=True)
class Inner:
    add: float = 0.0
    kind: Literal["beta25", "fixed"] = "beta25"


@dataclass(frozen=True)
class Outer:
    lr: float = 0.1
    epochs: int = 200
    compile: bool = False
    name: str = "run"
    beta: float | None = None
    milestones: tuple[int, ...] = (1, 2)
    inner: Inner = field(default_factory=Inner)


def test_values_are_parsed_by_the_type_of_the_field():
    cfg = apply_overrides(Outer(), ["lr=0.05", "epochs=3", "compile=true", "name=x=y",
                                    "beta=none", "inner.add=0.5", "inner.kind=fixed", "milestones=5,7"])
    assert cfg == Outer(lr=0.05, epochs=3, compile=True, name="x=y", beta=None,
                        milestones=(5, 7), inner=Inner(add=0.5, kind="fixed"))
    assert apply_overrides(Outer(), ["beta=2"]).beta == 2.0


@pytest.mark.parametrize("override, message", [
    ("epochs=1.5", "integer"), ("lr=fast", "number"), ("compile=maybe", "boolean"),
    ("inner.kind=gauss", "one of"), ("no_equals", "key=value"),
    ("lr=nan", "lr must be a finite number"), ("inner.add=-inf", "inner.add must be a finite number"),
    ("lr=Infinity", "lr must be a finite"),
])
def test_bad_values_raise_clear_errors(override, message):
    with pytest.raises(ValueError, match=message):
        apply_overrides(Outer(), [override])


def test_unknown_keys_list_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown config key 'lrr'.*inner\.add"):
        apply_overrides(Outer(), ["lrr=1"])
    with pytest.raises(ValueError, match="unknown config key 'inner'"):
        apply_overrides(Outer(), ["inner=3"])
    assert "inner.kind" in config_keys(Outer())


def test_round_trip_through_a_dict():
    cfg = apply_overrides(Outer(), ["inner.add=0.25", "milestones=3"])
    data = config_to_dict(cfg)
    assert data["milestones"] == [3] and data["inner"] == {"add": 0.25, "kind": "beta25"}
    assert config_from_dict(Outer, data) == cfg
    with pytest.raises(ValueError, match="unknown keys"):
        config_from_dict(Outer, {**data, "momentum": 0.9})


def test_list_keys_gives_each_key_its_own_comment_not_the_ones_before_it():
    """``--list-keys`` once repeated earlier comments under later keys (``puzzlemix.loss`` showed
    ``clean_lam``'s text first; ``ddp_draws`` ... ``freeze_bn_stats`` began with ``stem_stride``'s).
    Consecutive keys either share one group comment exactly or neither's text holds the other's."""
    from fullscale.training.config import TrainConfig
    from noisymix_infra.config import describe_keys

    rows = describe_keys(TrainConfig())
    helps = {key: text for key, _, _, text in rows}
    for (key, _, _, text), (later, _, _, later_text) in itertools.pairwise(rows):
        if text and later_text and text != later_text:
            assert text not in later_text, f"{later} repeats {key}'s comment"
    assert helps["puzzlemix.loss"].startswith("the step's loss")
    assert helps["runtime.ddp_draws"].startswith('Under torchrun: "shared"')
    freeze_help = helps["transfer.freeze_bn_stats"]
    assert "stem_stride" not in freeze_help and "first convolution" not in freeze_help


def test_a_comment_block_after_a_field_starts_a_new_group():
    import dataclasses

    from noisymix_infra.config import describe_keys

    @dataclasses.dataclass
    class Example:
        # the first group
        a: int = 1
        b: int = 2  # b's own
        # the second group
        c: int = 3
        d: int = 4

    helps = {key: text for key, _, _, text in describe_keys(Example())}
    assert helps == {"a": "the first group", "b": "b's own", "c": "the second group", "d": "the second group"}



@dataclass(frozen=True)
class _Group:
    lr: float = 0.1


@dataclass(frozen=True)
class _Grouped:
    KEY_ALIASES: ClassVar[dict[str, str]] = {"lr": "optim.lr"}
    optim: _Group = field(default_factory=_Group)


def test_aliases_reach_their_dotted_keys_and_errors_name_the_key_as_typed():
    """A config class's ``KEY_ALIASES`` (or an explicit ``aliases``) are other names of its keys:
    ``--set lr=...`` of a config whose ``lr`` lives in a group (issue 33)."""
    assert apply_overrides(_Grouped(), ["lr=0.05"]) == apply_overrides(_Grouped(), ["optim.lr=0.05"])
    assert apply_overrides(_Grouped(), ["lr=0.05"]).optim.lr == 0.05
    assert apply_overrides(_Grouped(), ["rate=0.2"], aliases={"rate": "optim.lr"}).optim.lr == 0.2
    with pytest.raises(ValueError, match=r"^lr must be a number"):
        apply_overrides(_Grouped(), ["lr=fast"])
    with pytest.raises(ValueError, match=r"unknown config key 'lrr'.*\(or an alias: lr\)"):
        apply_overrides(_Grouped(), ["lrr=1"])
