"""The run directory's records (docs/results-schema.md): its ``config.json`` split into config and run
facts, and its ``metrics.jsonl``.  Rebuilding the trained model from a run directory is
``fullscale.run_model``."""

from __future__ import annotations

import json
from pathlib import Path

from fullscale.run_record import flat_config
from noisymix_infra.io import printable, write_text

__all__ = ["append_metrics", "read_metrics", "split_run_record"]

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
    write_text(Path(run_dir) / "metrics.jsonl",
               "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
