"""Files that survive a crash: every write goes to a temporary file that is renamed into place.

A reader never sees a half-written checkpoint or result: ``os.replace`` is atomic on POSIX
and Windows when source and target are on the same file system, hence the temporary file
beside the target.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "atomic_write",
    "data_fingerprint",
    "directory_lock",
    "load_state_dict",
    "printable",
    "read_json",
    "read_json_object",
    "read_state_dict",
    "replace_marked",
    "save_npy",
    "save_torch",
    "sha256_file",
    "sweep_orphans",
    "write_bytes",
    "write_files",
    "write_json",
    "write_text",
]


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[Any]:
    """Open a temporary file beside ``path``; on success fsync it and rename it to ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600 files; give results the usual permissions (0666 minus umask).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_write(path, "wb") as handle:
        handle.write(data)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_write(path, "w") as handle:
        handle.write(text)


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """JSON with sorted keys and a trailing newline; NaN/inf are refused (not valid JSON)."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON document at ``path``; a file that is not JSON is a one-line ``ValueError``."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{path}: not a JSON file ({detail})") from None


#: the kinds of value ``read_json_object`` checks a required key for
_JSON_KINDS = ("any", "object", "list", "string", "number")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":  # a bool is no number, nor is a NaN or an infinity (Python's json reads them)
        import math

        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return True


def read_json_object(path: str | os.PathLike[str], what: str,
                     required: Mapping[str, str] | Iterable[str] = ()) -> dict:
    """The JSON object at ``path``, a file a user hands us; a one-line ``ValueError`` naming the file and
    ``what`` it should be (``"an evaluation of noisymix"``) when it is missing, unreadable, not UTF-8 JSON
    (a truncated file), not an object (``[1]``, ``null``), or lacks a ``required`` key.

    ``required``: dotted key paths (``summary.accuracy``), each step an object and the value not null; as
    a mapping, each path's value is also of its kind: ``object``, ``list``, ``string``, ``number`` (finite,
    not a bool) or ``any``.  Issue 60: a reader that indexed into what ``read_json`` gave turned
    ``{"summary": null}`` into a ``TypeError`` traceback, where only a ``ValueError`` is one line."""
    name = printable(os.fspath(path))
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise ValueError(f"{name} not found ({what} was expected there)") from None
    except OSError as error:  # a folder, no permission, ...
        raise ValueError(f"{name} cannot be read ({error.strerror or type(error).__name__}); "
                         f"{what} was expected there") from None
    except ValueError as error:  # read_json's one line names the file and the JSON error
        raise ValueError(f"{printable(str(error))}: it is not {what}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{name}: {what} must be a JSON object, got {_json_kind(data)}")
    kinds = dict(required) if isinstance(required, Mapping) else dict.fromkeys(required, "any")
    for key, kind in kinds.items():
        if kind not in _JSON_KINDS:
            raise ValueError(f"read_json_object: kind {kind!r} of {key!r} is none of {', '.join(_JSON_KINDS)}")
        value: Any = data
        parts = key.split(".")
        for depth, part in enumerate(parts):
            if not isinstance(value, dict):
                raise ValueError(f"{name}: not {what}: {'.'.join(parts[:depth])!r} must be an object, "
                                 f"got {printable(repr(value))[:80]}")
            if part not in value:
                raise ValueError(f"{name}: not {what}: {'.'.join(parts[:depth + 1])!r} is missing")
            value = value[part]
            if value is None:
                raise ValueError(f"{name}: not {what}: {'.'.join(parts[:depth + 1])!r} is null")
        if not _is_kind(value, kind):
            article = "an" if kind[0] in "aeiou" else "a"
            raise ValueError(f"{name}: not {what}: {key!r} must be {article} {kind}, got {printable(repr(value))[:80]}")
    return data


def write_files(files: dict[str | os.PathLike[str], Any]) -> None:
    """Write several files as one report, all or none: every content is rendered first (a dict or list as JSON,
    refusing NaN; bytes and text as they are), and only then is each file replaced atomically, so a failure
    while rendering writes nothing (issue 60, cause 6: a PNG and a Markdown were rewritten, then the JSON failed
    on NaN, leaving two reports mixed)."""
    rendered: list[tuple[Path, bytes]] = []
    for path, content in files.items():
        if isinstance(content, bytes):
            data = content
        elif isinstance(content, str):
            data = content.encode()
        else:
            data = (json.dumps(content, indent=2, sort_keys=True, allow_nan=False) + "\n").encode()
        rendered.append((Path(path), data))
    for path, data in rendered:
        write_bytes(path, data)


def replace_marked(text: str, begin: str, end: str, block: str, where: str = "README.md") -> str:
    """``text`` with ``block`` between the marker lines ``begin`` and ``end`` (the README's generated blocks: every
    writer of one goes through here); ValueError naming ``where`` when the markers are not there."""
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), flags=re.S)
    if not pattern.search(text):
        raise ValueError(f"{where} has no {begin} ... {end} markers")
    return pattern.sub(lambda _: f"{begin}\n{block}{end}", text)


def sweep_orphans(directory: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary files of ``atomic_write`` left in ``directory`` by a killed process.

    Call it only while holding ``directory_lock(directory)``: then no other writer of ours is
    mid-write there.  Returns the paths removed."""
    removed = []
    for path in Path(directory).glob(".*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path)
    return removed


def printable(name: object) -> str:
    """``name`` (a path or a message naming one) as text that any stream can print: bytes that
    are not UTF-8 (a file named ``b'\\xff.JPEG'``, which Python holds as a lone surrogate) and
    other lone surrogates become backslash escapes, so the message about a bad file cannot itself
    raise ``UnicodeEncodeError``; and control characters (a newline, an escape sequence) become
    escapes too, so a file named ``"a\nnoisymix: done"`` or ``"\x1b[2J"`` cannot forge a line of a log
    or clear the terminal."""
    text = os.fsdecode(name) if isinstance(name, (bytes, os.PathLike)) else str(name)
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no file name decodes to
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


#: C0 and C1 control characters and DEL (escape sequences start with ESC, 0x1b)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


# The descriptors of the locks this process holds (``directory_lock``).
_HELD_LOCKS: set[int] = set()


def _drop_locks_in_child() -> None:
    """In a forked child: let go of the parent's locks.  ``flock`` belongs to the open file, which
    a forked child (a DataLoader worker) shares, so a child that outlives a killed parent would
    keep the folder locked.  The descriptors are pointed at /dev/null rather than closed: their
    numbers stay valid for the file objects that still own them."""
    if not _HELD_LOCKS:
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        for fd in _HELD_LOCKS:
            os.dup2(null, fd, inheritable=False)
    finally:
        os.close(null)
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_locks_in_child)


@contextlib.contextmanager
def directory_lock(directory: str | os.PathLike[str], what: str = "writing") -> Iterator[Path]:
    """Hold an exclusive lock on the output folder ``directory`` (created if missing) while
    writing into it: a second process that asks for it fails at once with a one-line
    ``ValueError`` instead of interleaving its files with ours.  Orphan temporary files of an
    earlier, killed writer are swept once the lock is held.

    ``fcntl.flock`` on a lock file: released by the kernel when the process dies (so ``kill -9``
    leaves no stale lock) and honoured across machines on NFS (Linux >= 2.6.12 emulates flock
    with NFS byte-range locks, which the server arbitrates).  The lock is this process's alone: its
    descriptor is closed on exec (Python opens files non-inheritable) and dropped in forked
    children (``_drop_locks_in_child``), so a worker orphaned by ``kill -9`` does not hold it.
    """
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} exists and is not a folder: give a new or existing folder")
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / ".lock", "a+b")  # held open for the lock's lifetime; not inheritable (PEP 446)
    _HELD_LOCKS.add(handle.fileno())
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise ValueError(f"{folder} is in use by another process ({what} into it); "
                                 "wait for it to finish or give another folder") from None
            raise
        sweep_orphans(folder)
        yield folder
    finally:
        _HELD_LOCKS.discard(handle.fileno())
        handle.close()  # closing the descriptor releases the lock


def save_torch(path: str | os.PathLike[str], obj: Any) -> None:
    """``torch.save`` through a temporary file (checkpoints are tensors and plain containers)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    write_bytes(path, buffer.getvalue())


def save_npy(path: str | os.PathLike[str], array: np.ndarray) -> None:
    with atomic_write(path, "wb") as handle:
        np.save(handle, np.asarray(array), allow_pickle=False)


def load_state_dict(path: str | os.PathLike[str], map_location: str | torch.device = "cpu") -> Any:
    """Load a checkpoint safely (``weights_only=True``): tensors and plain containers only."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except FileNotFoundError:
        raise FileNotFoundError(f"checkpoint not found: {path}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"checkpoint {path} is a folder, not a file") from None
    except Exception as error:  # pickle of arbitrary objects, truncated file, random bytes, ...
        # torch's message runs over many lines and advises re-running with weights_only=False, which
        # would run whatever the file holds: keep the line that says what is wrong, never the advice
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        reasons = [line for line in lines if not _TORCH_ADVICE.search(line)]
        detail = (reasons[0] if reasons else type(error).__name__)[:200]
        raise ValueError(f"cannot load checkpoint {printable(str(path))}: not a checkpoint of tensors that "
                         f"loads with weights_only=True ({printable(detail)})") from None


#: lines of torch's load errors that give advice rather than the reason (issue 41)
_TORCH_ADVICE = re.compile(r"weights_only|Re-running|Please file|Check the documentation|WeightsUnpickler error:?$"
                           r"|In PyTorch 2\.6|trusted source", re.IGNORECASE)


def read_state_dict(path: str | os.PathLike[str], what: str = "a state_dict (names -> tensors)", *,
                    nonempty: bool = False) -> dict[str, torch.Tensor]:
    """A plain state dict (names -> tensors) from a weights file, as public checkpoints and our runs
    store them: loaded with ``load_state_dict`` (weights only), the common wrappers taken off
    (``{"state_dict": ...}`` of public files, ``{"model": ...}`` of ``checkpoint.pt``), and
    DataParallel's ``module.`` prefix dropped.  Anything else is one ValueError, "PATH is not WHAT"."""
    state = load_state_dict(path)
    for key in ("state_dict", "model"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict) or (nonempty and not state) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise ValueError(f"{path} is not {what}")
    if state and all(k.startswith("module.") for k in state):
        state = {k[len("module."):]: v for k, v in state.items()}
    return state


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def data_fingerprint(folder: str | os.PathLike[str]) -> str:
    """A cheap identity of a data folder, to tell whether results computed from it still hold: the
    sha256 of its ``manifest.json`` (written by ``noisymix corrupt``, naming its source images by
    content and its parameters), if any, and the name, size and modification time of every file
    in it and one level below (a -C set's ``<corruption>.npy`` files, ImageNet-C's corruption
    folders).  A set generated anew in place changes it; reading gigabytes to hash them does not
    happen (per-file content hashes stay with the per-corruption results)."""
    root = Path(folder)
    digest = hashlib.sha256()
    manifest = root / "manifest.json"
    if manifest.is_file():
        digest.update(sha256_file(manifest).encode())
    for path in sorted([*root.iterdir(), *(p for d in root.iterdir() if d.is_dir() for p in d.iterdir())]):
        try:
            stat = path.stat()
            entry = f"{path.relative_to(root)}|{stat.st_size}|{stat.st_mtime_ns}\n"
        except OSError:  # a broken link: its name still counts
            entry = f"{path.relative_to(root)}|missing\n"
        digest.update(entry.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()
