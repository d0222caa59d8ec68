"""A run's folder, its identity and its checkpoints: what ``resume`` needs to continue to the same
result, and what makes the folders of older runs still resume.

Every epoch ends with an atomic ``checkpoint.pt`` (model, optimiser, scheduler, generator states);
with ``checkpoint_every=N`` one is also written every N steps, mid-epoch, and ``resume`` continues
from that step exactly (the epoch's order comes from (seed, epoch) for streamed ImageNet, from
the order generator saved as it was when the epoch began for the in-memory sets).  Each
checkpoint carries the run's ``config_identity`` (the sha256 of what it computes), so another
run's checkpoint copied into the folder is refused (issue 23).

``config.json`` is ``{"config": the TrainConfig, "run": the facts of this run}`` (``run_record``);
a resumed run must compute what it started computing: its config (``RESUMABLE_CHANGES`` aside;
``later_keys()`` fill in keys added since older runs were made: both in ``fullscale.run_record``, the
run record's schema), its data (``data_sha256``), and a
transfer run's source weights (by content).  All of it is compared in the flat layout of the config
(``split_run_record``): the grouped ``config.json`` of a new run and the flat one of an older run of
the same computation have the same ``config_identity``.

Everything a run reads is checked before the run folder is made or locked, so a command refused
for its input leaves nothing behind (a CIFAR ``train`` without ``--data-root`` left ``RUN/.lock``;
issue 32); the folder is claimed as a training run (``noisymix_infra.folder_kind``): a -C/-P set, sweep or
report folder given as ``--out`` is refused in one line before anything is written into it
(``check_out``), and a run that fails before its first checkpoint leaves the folder as it found it
(``undo_start``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from fullscale.data.imagenet import StreamingImageNet
from fullscale.run_record import RESUMABLE_CHANGES, later_keys
from fullscale.runs import split_run_record
from fullscale.training.config import TrainConfig
from fullscale.training.data import InMemoryData, data_sha256
from fullscale.training.generators import Generators
from fullscale.training.process import Process
from noisymix_infra.config import config_to_dict
from noisymix_infra.folder_kind import MARKER, check_claim
from noisymix_infra.io import load_state_dict, printable, read_json, save_torch, sha256_file
from noisymix_infra.provenance import now, provenance

__all__ = ["check_out", "check_same_config", "check_same_data", "checkpoint_state", "config_identity",
           "read_checkpoint", "restoring", "run_record", "save_checkpoint", "undo_start"]

# facts of the run part that a resumed run must share (the data it trains on)
_RUN_FACTS = ("num_classes", "model_kwargs", "train_images", "data_source")


def check_out(out: Path, resume: bool) -> None:
    """What can be said of ``--out`` before anything is read or written: a file, a folder of
    another kind than a run (a -C set, a sweep, ...: ``noisymix_infra.folder_kind``), a finished
    or started run without ``resume``."""
    # a file, the root, a folder inside a run or a set, one of another kind, or the user's own config.json
    check_claim(out, "run", "--out")
    if not resume and any((out / name).exists() for name in ("final.pt", "checkpoint.pt")):
        raise ValueError(f"{printable(str(out))} already holds a run; use --resume to continue it, or another --out")


def undo_start(out: Path, error: BaseException, *, had_config: bool, found: set[str] | None) -> None:
    """A run that fails before its first checkpoint leaves the folder as it found it (``found``:
    the names it held; ``None``: this call made it): a config error found only once training
    runs leaves no ``config.json`` (the folder stays usable for the corrected command), and the
    lock and marker this call added to a folder that holds nothing else new are removed, the
    folder too if this call made it (issue 32: a failed ``train`` left ``RUN/.lock``)."""
    if any((out / name).exists() for name in ("checkpoint.pt", "final.pt")):
        return
    if isinstance(error, (ValueError, TypeError, KeyError)) and not had_config:
        with contextlib.suppress(FileNotFoundError):
            (out / "config.json").unlink()
    before = found or set()
    added = {".lock", MARKER} - before
    if not out.is_dir() or not {p.name for p in out.iterdir()} <= before | added:
        return  # the run wrote something else (a KeyboardInterrupt in its first epoch): keep it
    with contextlib.suppress(OSError):  # the lock is still held: no other writer is inside
        for name in added:
            (out / name).unlink(missing_ok=True)
        if found is None:
            out.rmdir()


def run_record(cfg: TrainConfig, data: InMemoryData | StreamingImageNet, process: Process) -> dict:
    """``config.json``: ``{"config": the TrainConfig, "run": the facts of this run}``; the config
    part reads back with ``train_config_from_dict(record["config"])``."""
    device = process.device
    run = {"num_classes": data.num_classes, "model_kwargs": cfg.model_kwargs, "train_images": len(data),
           "data_source": data.source, "data_sha256": data_sha256(data), "world_size": process.world,
           "device": str(device) if device.type == "cpu" else torch.cuda.get_device_name(device),
           "started": now(), "provenance": provenance()}
    if cfg.is_transfer:  # the source by its content, not only its path (checked on resume: check_same_config)
        run["source_weights_sha256"] = sha256_file(cfg.transfer.source_weights)
    return {"config": config_to_dict(cfg), "run": run}


def read_checkpoint(checkpoint: Path, device: torch.device, *, identity: str) -> dict:
    """A resumable checkpoint's dictionary, refused in one line unless it carries this run's
    ``config_identity``: another run's checkpoint copied into the folder would resume with its own
    optimizer state (lr, weight decay) and draws while config.json names this run's (issue 23)."""
    state = load_state_dict(checkpoint, map_location=device)
    theirs = state.get("config_identity") if isinstance(state, dict) else None
    if theirs != identity:
        why = ("it carries no config identity (written by an older version or not by `noisymix train`)"
               if theirs is None else f"it was written by a run of another config ({theirs[:12]} != {identity[:12]})")
        raise ValueError(f"cannot resume from {checkpoint}: {why}; train anew into another --out")
    return state


@contextlib.contextmanager
def restoring(checkpoint: Path):
    """Around loading a checkpoint's parts into the run's objects: a plain state dict (KeyError),
    another width (RuntimeError), a foreign file ... is one line naming the checkpoint."""
    try:
        yield
    except (KeyError, TypeError, RuntimeError, ValueError, AttributeError, IndexError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{checkpoint} is not a resumable checkpoint of this run "
                         f"({type(error).__name__}: {detail[:200]})") from None


def save_checkpoint(checkpoint: Path, *, identity: str, model: dict, optimizer: dict,
                    scheduler: torch.optim.lr_scheduler.LRScheduler, generators: Generators, epoch: int,
                    device: torch.device, torch_generator: Tensor, step: int = 0,
                    order_state: Tensor | None = None, history: Tensor | None = None) -> None:
    """``epoch`` epochs done and ``step`` steps of the next; mid-epoch (``step > 0``) the order
    generator as it was when the epoch began (``order_state``) and the epoch's loss history;
    ``identity``: the run's ``config_identity``, checked on resume; ``model``/``optimizer``: the
    run's state dicts in the plain model's layout; ``torch_generator``: torch's global generator
    (weight initialisation, dropout)."""
    mid = {"order_generator": order_state, "history": history.cpu()} if step else {}
    cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    save_torch(checkpoint, checkpoint_state(identity, model, optimizer, scheduler.state_dict(), epoch, step,
                                            generators.state(), torch_generator, mid=mid, cuda_generator=cuda))


def checkpoint_state(identity: str, model: dict, optimizer: dict, scheduler: dict, epoch: int, step: int,
                     generators: dict[str, Tensor], torch_generator: Tensor, *, mid: dict | None = None,
                     cuda_generator: Tensor | None = None) -> dict:
    """The dictionary of ``checkpoint.pt`` (its keys and their order are what runs of every version
    wrote and ``restore_checkpoint`` reads): ``identity`` the run's ``config_identity``; ``mid``
    the mid-epoch order state and loss history; ``cuda_generator`` on CUDA (dropout)."""
    return {"config_identity": identity, "model": model, "optimizer": optimizer, "scheduler": scheduler,
            "epoch": epoch, "step": step, **generators, **(mid or {}), "torch_generator": torch_generator,
            **({"cuda_generator": cuda_generator} if cuda_generator is not None else {})}


def check_same_config(path: Path, record: dict) -> None:
    """A resumed run must compute what it started computing (``RESUMABLE_CHANGES`` aside): the
    config part of ``config.json`` and the data facts of its run part must be equal."""
    if not path.exists():
        return
    stored = read_json(path)
    old, new = _computed(stored), _computed(record)
    changed = sorted(k for k in set(old) | set(new) if k not in RESUMABLE_CHANGES and old.get(k) != new.get(k))
    if changed:
        detail = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed[:3])
        raise ValueError(f"cannot resume {path.parent}: the config differs from the checkpoint's ({detail})")
    # a transfer run's source by content (runs started before it was recorded carry no digest)
    was = (stored.get("run") or {}).get("source_weights_sha256") if isinstance(stored, dict) else None
    config, run = split_run_record(record)  # either layout of config.json (a run of an older version)
    now_digest = run.get("source_weights_sha256")
    if was and now_digest and was != now_digest:
        raise ValueError(f"cannot resume {path.parent}: source_weights {config.get('source_weights')} "
                         f"changed since the run started (sha256 {was[:12]} -> {now_digest[:12]}); "
                         "restore that file or start a new run")
    check_same_data(path, stored, record)


def check_same_data(path: Path, stored: Any, record: dict) -> None:
    """A resumed run must train on the data it started with: the same path (``data_source``,
    compared with the config) is not enough, CIFAR batches replaced in place kept training on the
    new images (issue 32).  ``stored``: the run's ``config.json`` as read from ``path``; runs
    started before ``data_sha256`` was recorded carry none and resume as before."""
    was = (stored.get("run") or {}).get("data_sha256") if isinstance(stored, dict) else None
    now_digest = (record.get("run") or {}).get("data_sha256")
    if was and now_digest and was != now_digest:
        source = (record.get("run") or {}).get("data_source") or "the training data"
        raise ValueError(f"cannot resume {printable(str(path.parent))}: its training data ({printable(str(source))}) "
                         f"changed since the run started (sha256 {str(was)[:12]} -> {now_digest[:12]}); restore the "
                         "data it started with, or train anew into another --out")


def config_identity(record: dict) -> str:
    """The sha256 of what a run computes (its config and data facts, ``RESUMABLE_CHANGES`` aside):
    stored in every checkpoint, compared on resume."""
    computed = {k: v for k, v in _computed(record).items() if k not in RESUMABLE_CHANGES}
    return hashlib.sha256(json.dumps(computed, sort_keys=True, default=str).encode()).hexdigest()


def _computed(record: dict) -> dict:
    """What a run computes, from either layout of ``config.json`` (``{config, run}`` or the flat
    one of runs made before it), with the defaults of keys added since."""
    config, run = split_run_record(record)
    return {**later_keys(), **config, **{k: run.get(k) for k in _RUN_FACTS}}
