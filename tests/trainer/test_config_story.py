"""config.json is ``{"config": ..., "run": {...}}``: the config part reads back to the equal
TrainConfig for every preset, and run directories written before that layout still load."""

from __future__ import annotations

import json

import pytest
import torch

from fullscale.models import create_model
from fullscale.run_model import load_run_model
from fullscale.runs import split_run_record
from fullscale.training.checkpoint import check_same_config
from fullscale.training.config import (
    DataConfig,
    ModelConfig,
    OptimConfig,
    TrainConfig,
    flat_config,
    train_config_from_dict,
)
from fullscale.training.presets import PRESETS, resolve_config
from noisymix_infra.config import config_from_dict, config_to_dict
from noisymix_infra.io import save_torch, write_json


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_config_reads_back_equal_through_json(preset):
    cfg = resolve_config(preset, [])
    text = json.dumps({"config": config_to_dict(cfg), "run": {}})  # what train writes, as text
    assert config_from_dict(TrainConfig, json.loads(text)["config"]) == cfg


def _flat_run(tmp_path, width=4):
    """A run directory in the layout written before {config, run}: one flat object."""
    cfg = TrainConfig(model=ModelConfig("preactresnet18", width=width), data=DataConfig(dataset="digits"))
    model = create_model("preactresnet18", 10, width=width)
    write_json(tmp_path / "config.json", {**flat_config(config_to_dict(cfg)), "num_classes": 10,
                                          "model_kwargs": {"width": width},
                                          "versions": {"torch": "2.3"}, "train_images": 1347,
                                          "data_source": "built-in", "world_size": 1})
    save_torch(tmp_path / "final.pt", model.state_dict())
    return cfg, model


def test_a_run_directory_of_the_flat_layout_still_loads(tmp_path):
    cfg, model = _flat_run(tmp_path)
    loaded, facts = load_run_model(tmp_path)
    x = torch.rand(2, 3, 32, 32)
    # exact: the same weights through the same ops in one process (a round trip, not two code paths)
    torch.testing.assert_close(loaded(x), model.eval()(x), rtol=0, atol=0)
    assert facts["num_classes"] == 10 and facts["model"] == "preactresnet18"
    config, run = split_run_record(json.loads((tmp_path / "config.json").read_text()))
    assert train_config_from_dict(config) == cfg and run["train_images"] == 1347


def test_resume_compares_the_config_across_both_layouts(tmp_path):
    cfg, _ = _flat_run(tmp_path)
    facts = {"num_classes": 10, "model_kwargs": {"width": 4}, "train_images": 1347, "data_source": "built-in"}
    check_same_config(tmp_path / "config.json", {"config": config_to_dict(cfg), "run": facts})  # equal: no error
    with pytest.raises(ValueError, match="lr"):
        check_same_config(tmp_path / "config.json",
                           {"config": config_to_dict(TrainConfig(model=ModelConfig("preactresnet18", width=4),
                                                                 data=DataConfig(dataset="digits"),
                                                                 optim=OptimConfig(lr=0.2))), "run": facts})
    with pytest.raises(ValueError, match="train_images"):
        check_same_config(tmp_path / "config.json", {"config": config_to_dict(cfg),
                                                      "run": {**facts, "train_images": 100}})


def test_a_half_new_layout_is_refused_with_one_line(tmp_path):
    with pytest.raises(ValueError, match="'config' and 'run' must both be JSON objects"):
        split_run_record({"config": {"model": "x"}, "run": 3})
