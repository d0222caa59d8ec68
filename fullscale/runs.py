"""The run directory (docs/results-schema.md) and rebuilding a trained model from it."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from fullscale.models import create_model
from fullscale.models.external import build_model, load_weights
from fullscale.run_record import flat_config
from noisymix_infra.io import load_state_dict, printable, read_json, read_state_dict

__all__ = ["append_metrics", "check_run_config", "load_bare_model", "load_run_model", "read_metrics",
           "split_run_record"]

#: keys of the run part, in the flat ``config.json`` of runs made before ``{config, run}``
_FLAT_RUN_KEYS = ("num_classes", "model_kwargs", "versions", "device", "train_images", "data_source", "world_size")


def split_run_record(record: object, where: str | Path = "config.json") -> tuple[dict, dict]:
    """``(config, run)`` of a run's ``config.json``: ``{"config": ..., "run": ...}``, or the flat
    layout of runs made before it (config keys and run facts side by side), split the same way.
    The config comes in the flat layout (``fullscale.run_record.flat_config``: ``"lr"``, not
    ``{"optim": {"lr": ...}}``) whether the run wrote its config grouped or flat, so readers,
    a run's identity and the sweep's comparisons see one layout for old and new runs."""
    if not isinstance(record, dict):
        raise ValueError(f"{where} is not a run config (a JSON object)")
    if isinstance(record.get("config"), dict) and isinstance(record.get("run"), dict):
        return flat_config(record["config"]), record["run"]
    if "config" in record or "run" in record:
        raise ValueError(f"{where}: 'config' and 'run' must both be JSON objects")
    return (flat_config({k: v for k, v in record.items() if k not in _FLAT_RUN_KEYS}),
            {k: record[k] for k in _FLAT_RUN_KEYS if k in record})


def check_run_config(config: dict, where: str | Path) -> None:
    """Refuse (one line naming the file) a run's config part that is not a training config: a group
    given as a number (``"optim": 3``), a value of the wrong type, an unknown key (issue 41: such a
    ``config.json`` was read, and the tables showed epochs ``None``)."""
    from fullscale.run_record import grouped_config
    from fullscale.training.config import train_config_from_dict

    try:
        train_config_from_dict(grouped_config(config))
    except (TypeError, ValueError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{printable(str(where))}: not a training config noisymix reads ({detail[:200]})") from None


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


def read_metrics(run_dir: str | Path) -> list[dict]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return []
    try:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError (a file that is not UTF-8): named, one line
        raise ValueError(f"{printable(str(path))}: not JSON lines in UTF-8 "
                         f"({str(error).splitlines()[0] if str(error) else error!r})") from None
    if not all(isinstance(r, dict) and isinstance(r.get("epoch"), int) for r in records):
        raise ValueError(f"{printable(str(path))}: every line must be a JSON object with an integer 'epoch'")
    return records


def append_metrics(run_dir: str | Path, records: list[dict]) -> None:
    from noisymix_infra.io import write_text
    write_text(Path(run_dir) / "metrics.jsonl",
               "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
