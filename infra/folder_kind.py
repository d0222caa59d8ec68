"""What a folder made by a ``noisymix`` command is, so that no other command writes into it by mistake.

Every folder a command makes says what it is in a small marker, ``noisymix-folder.json``
(``{"kind": "run"}``): a training run, a -C or -P set, a sweep, a reproduce report, a figures
report.  A command that writes into a folder *claims* it for its kind (``claim_folder``): a
folder of another kind is refused in one line, before anything is written, instead of a model
landing in a -C set (``train --out data/digits-c``) or ``.npy`` files in a run
(``corrupt --out RUN``).  A command that reads a folder can *require* a kind (``require_kind``).

Folders made before the marker existed are recognised by what they hold (``config.json`` beside
``metrics.jsonl`` or ``final.pt``: a run; ``manifest.json`` of ``noisymix corrupt``: a -C or -P
set; ``sweep/plan.json``: a sweep; ``reproduce.json``: a reproduce report), so old folders keep
working and are refused in the same way.  A folder that holds nothing of ours is left alone: it
may be the user's own (``--out .``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["KINDS", "MARKER", "claim_folder", "folder_kind", "mark_folder", "require_kind"]

MARKER = "noisymix-folder.json"

#: every kind of folder a command makes, and how to name it in a message
KINDS: dict[str, str] = {
    "run": "a training run (noisymix train)",
    "c-set": "a corrupted -C set (noisymix corrupt --kind c)",
    "p-set": "a perturbation -P set (noisymix corrupt --kind p)",
    "sweep": "a sweep (noisymix sweep)",
    "reproduce": "a reproduce report (noisymix reproduce)",
    "figures": "a figures report (noisymix figures)",
}


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown folder kind {kind!r}; one of {', '.join(KINDS)}")
    return kind


def _recognise(folder: Path) -> str | None:
    """The kind of a folder made before the marker, from what it holds; ``None``: nothing of ours."""
    if (folder / "config.json").is_file() and any(
            (folder / name).exists() for name in ("metrics.jsonl", "final.pt", "last.pt", "eval")):
        return "run"
    manifest = folder / "manifest.json"
    if manifest.is_file():
        try:
            record = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            record = None
        if isinstance(record, dict) and record.get("kind") in ("c", "p") and "names" in record:
            return f"{record['kind']}-set"
    if (folder / "reproduce.json").is_file():  # before the sweep's: a reproduce folder holds a sweep plan too
        return "reproduce"
    if (folder / "sweep" / "plan.json").is_file():
        return "sweep"
    return None


def folder_kind(folder: str | os.PathLike[str]) -> str | None:
    """The kind ``folder`` says it is (its marker), or recognised from its content; ``None`` for a
    folder that does not exist or holds nothing of ours."""
    root = Path(folder)
    if not root.is_dir():
        return None
    marker = root / MARKER
    if marker.is_file():
        try:
            record = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            raise ValueError(f"{marker} is not a folder marker of noisymix (unreadable JSON)") from None
        kind = record.get("kind") if isinstance(record, dict) else None
        if kind not in KINDS:
            raise ValueError(f"{marker} names an unknown folder kind {kind!r}")
        return kind
    return _recognise(root)


def mark_folder(folder: str | os.PathLike[str], kind: str) -> None:
    """Write the marker saying ``folder`` is a ``kind`` folder (atomically; creates the folder)."""
    from infra.io import write_json  # io imports torch; this module stays light

    root = Path(folder)
    if (root / MARKER).is_file() and folder_kind(root) == _check_kind(kind):
        return
    write_json(root / MARKER, {"kind": _check_kind(kind), "what": KINDS[kind]})


def _describe(folder: Path, kind: str) -> str:
    from infra.io import printable

    return f"{printable(str(folder))} is {KINDS[kind]}"


def claim_folder(folder: str | os.PathLike[str], kind: str) -> Path:
    """Make sure ``folder`` may hold a ``kind`` folder's files and mark it so: a folder of another
    kind is refused with a one-line ``ValueError`` before anything is written."""
    root = Path(folder)
    found = folder_kind(root)
    if found is not None and found != _check_kind(kind):
        raise ValueError(f"{_describe(root, found)}, not {KINDS[kind]}; give another --out")
    if found is None or not (root / MARKER).is_file():  # a marker of this kind is there already
        mark_folder(root, kind)
    return root


def require_kind(folder: str | os.PathLike[str], kind: str | tuple[str, ...], what: str) -> str | None:
    """Refuse ``folder`` (one line) when it is a folder of ours of another kind than ``kind``;
    ``what`` names the argument (``--data-root``).  Returns the kind found (``None``: not ours)."""
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    for k in kinds:
        _check_kind(k)
    root = Path(folder)
    found = folder_kind(root)
    if found is not None and found not in kinds:
        wanted = " or ".join(KINDS[k] for k in kinds)
        raise ValueError(f"{what}: {_describe(root, found)}, not {wanted}")
    return found
