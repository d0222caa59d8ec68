"""A trained model rebuilt for evaluation: from a run directory of ``noisymix train`` (its
``config.json`` checked as a training config, ``final.pt`` or a checkpoint), or from a bare state
dict as public checkpoints are distributed.  The run directory's records are ``fullscale.runs``."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from fullscale.models import create_model
from fullscale.models.external import build_model, load_weights
from fullscale.runs import split_run_record
from fullscale.training.config import check_run_config
from noisymix_infra.io import load_state_dict, printable, read_json, read_state_dict

__all__ = ["load_bare_model", "load_run_model"]


def load_run_model(run_dir: str | Path, checkpoint: str | Path | None = None,
                   device: str | torch.device = "cpu") -> tuple[nn.Module, dict]:
    """The model of ``RUN/config.json`` with the weights of ``RUN/final.pt`` (or ``checkpoint``),
    in eval mode on ``device``; and the config and run facts as one flat dict."""
    run_dir = Path(run_dir)
    config_path = run_dir / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{config_path} not found: is {run_dir} a run directory of `noisymix train`?")
    config, run = split_run_record(read_json(config_path), config_path)
    for key, part in (("model", config), ("num_classes", run)):
        if key not in part:
            raise ValueError(f"{config_path} has no {key!r} field")
    check_run_config(config, config_path)
    weights = Path(checkpoint) if checkpoint is not None else run_dir / "final.pt"
    if not weights.is_absolute() and not weights.exists() and (run_dir / weights).exists():
        weights = run_dir / weights  # a file of the run named relative to it: "checkpoint.pt"
    if not weights.is_file():
        raise FileNotFoundError(f"{weights} not found (training unfinished? give --checkpoint)")
    state = load_state_dict(weights)
    if isinstance(state, dict) and "model" in state and isinstance(state["model"], dict):
        state = state["model"]  # a resumable checkpoint.pt
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise ValueError(f"{weights} is not a state_dict (names -> tensors) nor a checkpoint of `noisymix train`")
    model = create_model(config["model"], run["num_classes"], **run.get("model_kwargs", {}))
    try:
        model.load_state_dict(state)
    except RuntimeError as error:
        raise ValueError(f"{weights} does not fit {config['model']} "
                         f"{run.get('model_kwargs', {})}: {str(error).splitlines()[0]}") from None
    return model.to(device).eval(), {**config, **run}


def load_bare_model(weights: str | Path, model: str, num_classes: int = 1000,
                    device: str | torch.device = "cpu", dataset: str = "imagenet") -> tuple[nn.Module, dict]:
    """A model ``model`` with the weights of a bare state dict file, as public checkpoints are
    distributed (a ``module.`` prefix of ``DataParallel`` is dropped; RobustBench's
    ``normalize``/``model`` layout brings its own mean and std); eval mode on ``device``; and the
    config a run of ``dataset`` would have.  ``model``: one of ours (e.g. ``resnet50``, torchvision
    keys), ``torchvision:NAME``, ``timm:NAME`` or ``package.module:factory``
    (``fullscale.models.external``).  Keys that do not match give one error listing the missing
    and the unexpected ones."""
    weights = Path(weights)
    if not weights.is_file():
        raise FileNotFoundError(f"{printable(str(weights))} not found (a state_dict file for --model "
                                f"{printable(model)})")
    state = read_state_dict(weights)
    net = load_weights(build_model(model, num_classes), state, str(weights), model)
    config = {"model": model, "num_classes": num_classes, "dataset": dataset, "data_root": None}
    return net.to(device).eval(), config
