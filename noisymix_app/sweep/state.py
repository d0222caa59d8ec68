"""One run's bookkeeping in ``DIR/sweep/``: its state file, the config it was trained with, which
evaluations are done, and whether a finished run is stale.

``DIR/sweep/state/<run>.json`` holds a run's state, attempts and error; ``DIR/sweep/locks/<run>/.lock``
is the lock of the process working on it (``noisymix_infra.io.directory_lock``, an ``fcntl.flock``, which
Linux's NFS client (>= 2.6.12) turns into an NFS byte-range lock that the server arbitrates (NLM on
NFSv3, built into NFSv4), so it holds across the nodes of a cluster, and the kernel drops it when its
process dies: no stale lock after ``kill -9`` or a node's preemption).  It does NOT hold across nodes
on mounts with ``nolock`` / ``local_lock=all``; the state file records the holder's host and pid so
``sweep status`` shows who works on a run.  A finished transfer run whose source weights changed
since (by the sha256 its ``config.json`` recorded) is *stale*: reported, neither retrained nor
counted done.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
import time
from pathlib import Path

from noisymix_app.sweep.plan import RunSpec, config_identity
from noisymix_infra.io import directory_lock, read_json, read_json_object, write_json

__all__ = ["check_config", "eval_done", "read_state", "run_record", "run_state", "stale_reason", "stored_config",
           "sweep_dir", "write_state"]


def sweep_dir(out: Path) -> Path:
    return out / "sweep"


def _state_path(out: Path, name: str) -> Path:
    return sweep_dir(out) / "state" / f"{name}.json"


def read_state(out: Path, name: str) -> dict:
    path = _state_path(out, name)
    try:  # a file that is no object (``[1]``) is as none, as a truncated one (issue 60: a traceback)
        return read_json_object(path, "a run's sweep state") if path.is_file() else {}
    except ValueError:
        return {}


def run_record(out: str | Path, name: str) -> dict:
    """The bookkeeping of a run (``DIR/sweep/state/<run>.json``): state, attempts, error, the
    step that failed, and the seconds of each step the last call ran (``timings``: [step, s] in order)."""
    return read_state(Path(out), name)


def write_state(out: Path, name: str, **fields) -> dict:
    state = {**read_state(out, name), **fields, "host": socket.gethostname(), "pid": os.getpid(),
             "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    write_json(_state_path(out, name), state)
    return state


def stored_config(run_dir: Path) -> dict | None:
    """The config part of ``RUN/config.json`` (either layout, ``fullscale.runs.split_run_record``)."""
    from fullscale.runs import split_run_record

    path = run_dir / "config.json"
    if not path.is_file():
        return None
    return split_run_record(read_json(path), path)[0]


def check_config(spec: RunSpec, run_dir: Path):
    """The ``TrainConfig`` to train ``spec`` into ``run_dir``; a ``ValueError`` naming the
    differences when the folder holds a run of another configuration.  A run made under another
    preset name with the same configuration (a shared table row) keeps its stored preset name,
    so the trainer's own check on resume accepts it."""
    from noisymix_infra.config import config_to_dict

    cfg = spec.config()
    stored = stored_config(run_dir)
    if stored is None:
        return cfg
    planned = config_identity(config_to_dict(cfg))
    have = config_identity(stored)
    changed = sorted(k for k in planned if k not in have or have[k] != planned[k])
    if changed:
        detail = ", ".join(f"{k}: {have.get(k)!r} on disk, {planned[k]!r} planned" for k in changed[:3])
        raise ValueError(f"{run_dir} holds a run of another config ({detail}); give another --out "
                         "or remove that run")
    if stored.get("preset") and stored["preset"] != cfg.preset:
        cfg = dataclasses.replace(cfg, preset=stored["preset"])
    return cfg


def eval_done(run_dir: Path, ev) -> bool:
    """``ev`` (an EvalSpec) is done: a complete evaluation of the run's final weights on the data
    ``ev`` names (another ``--suite-root`` is another evaluation, not a finished one, and so is the
    same folder generated anew: its ``data_fingerprint`` changed; issue 23)."""
    from noisymix_infra.io import data_fingerprint, sha256_file

    path = run_dir / "eval" / f"{ev.suite}.json"
    if not path.is_file() or not (run_dir / "final.pt").is_file():
        return False
    try:  # issue 60: ``[1]`` or ``"checkpoint": null`` was a traceback; what cannot be read is not done
        record = read_json_object(path, "an evaluation of noisymix", {"checkpoint.sha256": "string"})
    except ValueError:
        return False
    if ev.data_root is not None:
        data = record.get("data")
        used = record.get("data_root") or (data.get("root") if isinstance(data, dict) else None)
        if not isinstance(used, str) or Path(used).resolve() != Path(ev.data_root).resolve():
            return False
        if not Path(ev.data_root).is_dir() or record.get("data_fingerprint") != data_fingerprint(ev.data_root):
            return False
    summary = record.get("summary")
    if ev.suite == "calibration" and not (isinstance(summary, dict) and "temperature_scaled" in summary):
        return False  # written before temperature scaling was recorded (issue 40): evaluated again
    return record.get("complete") is True and record["checkpoint"]["sha256"] == sha256_file(run_dir / "final.pt")



@functools.lru_cache(maxsize=64)
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    """The sha256 of a file, once per (path, size, mtime): a status looks at every run's source."""
    from noisymix_infra.io import sha256_file

    return sha256_file(path)


def stale_reason(run_dir: Path) -> str | None:
    """Why the finished run in ``run_dir`` no longer is what its inputs make: a transfer run's
    ``source_weights`` replaced (or removed) after it trained, by the sha256 recorded in its
    ``config.json`` (a sweep kept saying "done" with the old checksum; issue 32).  None: not stale."""
    from fullscale.runs import split_run_record
    from noisymix_infra.io import printable

    path = run_dir / "config.json"
    if not path.is_file():
        return None
    try:
        config, facts = split_run_record(read_json(path), path)
    except ValueError:
        return None
    source, recorded = config.get("source_weights"), facts.get("source_weights_sha256")
    if not source or not recorded:
        return None
    try:
        info = Path(source).stat()
        digest = _sha256_of(str(source), info.st_size, info.st_mtime_ns)
    except OSError:
        return f"its source_weights {printable(str(source))} is gone"
    if digest != recorded:
        return (f"its source_weights {printable(str(source))} changed since it trained (sha256 {str(recorded)[:12]} "
                f"-> {digest[:12]}); restore that file, or remove the run to train it anew")
    return None


def run_state(out: str | Path, spec: RunSpec) -> str:
    """``done`` | ``stale`` | ``running`` | ``failed`` | ``interrupted`` | ``pending``, read from the
    files; ``stale``: finished, but from inputs that changed since (``stale_reason``)."""
    out = Path(out)
    run_dir = out / "runs" / spec.name
    state = read_state(out, spec.name)
    if (run_dir / "final.pt").is_file() and stale_reason(run_dir) is not None:
        return "stale"
    if (run_dir / "final.pt").is_file() and all(eval_done(run_dir, e) for e in spec.evals):
        return "done"
    if state.get("state") == "running":  # running, or its process died: the lock tells
        lock_dir = sweep_dir(out) / "locks" / spec.name
        try:
            with directory_lock(lock_dir, "checking"):
                return "interrupted"
        except ValueError:
            return "running"
    return state.get("state") if state.get("state") in ("failed", "interrupted") else "pending"
