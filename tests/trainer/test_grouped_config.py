"""The grouped ``TrainConfig`` (issue 33) and the flat one before it: the old flat keys still set
every field (``--set lr=0.05``), an old flat ``config.json`` reads back into the grouped config, and
runs and sweeps made by the code before the groups keep their identity, so they resume.

``old_runs/`` holds files written by the code before the groups (commit 2f974f7, the capture of
``noisymix train --preset noisymix --set dataset=digits --set epochs=2 --set width=8 --set
train_subset=200 --set batch_size=50`` and of ``noisymix sweep digits_analogue --seeds 1 --set
epochs=1 --set width=4 --set train_subset=100``): the runs' ``config.json``, the sweep's
``plan.json`` and, in ``checkpoint_identities.json``, the ``config_identity`` each run's
``checkpoint.pt`` carried (the checkpoints themselves are 2 MB each and not kept).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fullscale.training.checkpoint import check_same_config, config_identity
from fullscale.training.config import FLAT_KEYS, TrainConfig, flat_config, grouped_config, train_config_from_dict
from fullscale.training.presets import resolve_config
from noisymix_infra.config import apply_overrides, config_keys, config_to_dict

OLD = Path(__file__).parent / "old_runs"

#: the 37 fields of the flat TrainConfig before the groups (beside the nested mix, augmix, puzzlemix),
#: written out here, not read from the code
OLD_FLAT_FIELDS = (
    "preset", "method", "model", "width", "stem_stride", "dataset", "data_root", "epochs", "batch_size", "lr",
    "lr_min", "momentum", "nesterov", "weight_decay", "seed", "jsd_weight", "jsd_variant", "crop_padding",
    "train_subset", "heldout", "device", "amp", "compile", "ddp_draws", "sync_bn", "image_size", "workers",
    "decoder", "max_bad_fraction", "checkpoint_every", "lr_schedule", "lr_milestones", "lr_gamma",
    "source_weights", "source_row", "freeze_level", "freeze_bn_stats",
)
_NESTED = ("mix", "augmix", "puzzlemix")
#: grouped fields added after the groups: no flat name (written out here)
_AFTER_GROUPS = ("runtime.cuda_graph",)
_CAPTURE = ["dataset=digits", "epochs=2", "width=8", "train_subset=200", "batch_size=50"]


def _read(name: str) -> dict:
    return json.loads((OLD / name).read_text())


def _get(cfg: object, dotted: str) -> object:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def test_flat_keys_cover_exactly_the_old_flat_fields_and_reach_every_grouped_field():
    assert len(OLD_FLAT_FIELDS) == len(set(OLD_FLAT_FIELDS)) == 37
    assert set(FLAT_KEYS) == set(OLD_FLAT_FIELDS)
    # an old run's config.json holds those fields and the three nested configs, nothing else
    assert set(_read("run_noisymix_config.json")["config"]) == {*OLD_FLAT_FIELDS, *_NESTED}
    # each grouped field outside the nested configs, but those added after the groups, has exactly one old name
    grouped = [k for k in config_keys(TrainConfig()) if k.split(".")[0] not in _NESTED and k not in _AFTER_GROUPS]
    assert sorted(FLAT_KEYS.values()) == sorted(grouped)


@pytest.mark.parametrize("old", sorted(FLAT_KEYS))
def test_set_with_an_old_flat_key_sets_its_dotted_key(old):
    dotted = FLAT_KEYS[old]
    assert dotted.rsplit(".", 1)[-1] == ("name" if old == "model" else old)  # a field keeps its name in its group
    default = _get(TrainConfig(), dotted)
    special = {"freeze_level": "4", "device": "cpu", "ddp_draws": "per_rank", "lr_schedule": "step",
               "jsd_variant": "augmix", "lr_milestones": "3,5", "stem_stride": "2"}
    if old in special:
        text = special[old]
    elif isinstance(default, bool):
        text = str(not default)
    elif isinstance(default, int):
        text = str(default + 1)
    elif isinstance(default, float):
        text = str(default / 2)
    else:
        text = f"{default}x"
    by_old = apply_overrides(TrainConfig(), [f"{old}={text}"])
    by_dotted = apply_overrides(TrainConfig(), [f"{dotted}={text}"])
    assert by_old == by_dotted
    assert _get(by_old, dotted) != default  # the override did set something: that field
    assert flat_config(config_to_dict(by_old))[old] == flat_config(config_to_dict(by_dotted))[old] != (
        flat_config(config_to_dict(TrainConfig()))[old])


def test_an_old_flat_config_json_loads_into_the_grouped_config_and_equals_the_new_one():
    old = _read("run_noisymix_config.json")["config"]
    assert "lr" in old and isinstance(old["model"], str)  # really the flat layout
    new = resolve_config("noisymix", _CAPTURE)
    assert train_config_from_dict(old) == new
    # and the grouped config.json a run writes now is that flat one, key for key, once flattened
    # (but the keys added after the groups, at their defaults)
    assert flat_config(config_to_dict(new)) == {**old, **{k: _get(new, k) for k in _AFTER_GROUPS}}
    without_later = config_to_dict(new)
    for key in _AFTER_GROUPS:
        group, name = key.split(".")
        del without_later[group][name]
    assert grouped_config(old) == without_later
    assert train_config_from_dict(config_to_dict(new)) == new


def test_the_old_runs_keep_their_identity_and_resume(tmp_path):
    """The identity an old checkpoint carries equals the one the new code computes, from the old
    flat record and from the new grouped one; the resume check accepts the old config.json."""
    identities = _read("checkpoint_identities.json")
    record = _read("run_noisymix_config.json")
    assert config_identity(record) == identities["run_noisymix"]
    new = {"config": config_to_dict(resolve_config("noisymix", _CAPTURE)), "run": record["run"]}
    assert isinstance(new["config"]["optim"], dict)
    assert config_identity(new) == identities["run_noisymix"]
    shutil.copy(OLD / "run_noisymix_config.json", tmp_path / "config.json")
    check_same_config(tmp_path / "config.json", new)  # accepted: no error
    other = {"config": config_to_dict(resolve_config("noisymix", [*_CAPTURE, "optim.lr=0.2"])), "run": record["run"]}
    assert config_identity(other) != identities["run_noisymix"]
    with pytest.raises(ValueError, match="lr"):
        check_same_config(tmp_path / "config.json", other)


def test_an_old_sweep_plan_loads_and_finds_its_runs(tmp_path):
    """The sweep's plan.json of the old code loads, resolves to the configs its runs were trained
    with (``check_config`` accepts each run's flat config.json) and to their checkpoints' identities."""
    from noisymix_app.sweep.plan import build_plan
    from noisymix_app.sweep.plan_files import plan_dict, plan_from_dict
    from noisymix_app.sweep.state import check_config

    stored = _read("sweep_plan.json")
    plan = plan_from_dict(stored)
    # the same plan as the new code builds (the plans keep their flat --set keys)
    rebuilt = build_plan("digits_analogue", [0], overrides=["epochs=1", "width=4", "train_subset=100"])
    assert json.loads(json.dumps(plan_dict(rebuilt))) == {k: v for k, v in stored.items() if k != "provenance"}
    identities = _read("checkpoint_identities.json")
    assert len(plan.runs) == 4
    for spec in plan.runs:
        run_dir = tmp_path / spec.name
        run_dir.mkdir()
        shutil.copy(OLD / f"sweep_{spec.name}_config.json", run_dir / "config.json")
        cfg = check_config(spec, run_dir)  # a ValueError if the stored run were another config
        record = {"config": config_to_dict(cfg), "run": _read(f"sweep_{spec.name}_config.json")["run"]}
        assert config_identity(record) == identities[f"sweep_{spec.name}"], spec.name
