"""What a folder made by a ``noisymix`` command is, so that no other command writes into it by mistake.

Every folder a command makes says what it is in a small marker, ``noisymix-folder.json``
(``{"kind": "run"}``): a training run, a -C or -P set, a sweep, a reproduce report, a figures
report.  A command that writes into a folder *claims* it for its kind (``claim_folder``): a
folder of another kind is refused in one line, before anything is written, instead of a model
landing in a -C set (``train --out data/digits-c``) or ``.npy`` files in a run
(``corrupt --out RUN``).  A command that reads a folder can *require* a kind (``require_kind``).

Folders made before the marker existed are recognised by what they hold (``config.json`` beside
``metrics.jsonl`` or ``final.pt``: a run; ``manifest.json`` of ``noisymix corrupt``: a -C or -P
set; ``sweep/plan.json``: a sweep; ``reproduce.json``: a reproduce report; ``REPORT.md`` beside
``tables/``: a figures report), so old folders keep
working and are refused in the same way.  A folder that holds nothing of ours is left alone: it
may be the user's own (``--out .``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["KINDS", "LEAF_KINDS", "MARKER", "check_claim", "check_out_path", "check_plain_out", "claim_folder",
           "folder_kind", "mark_folder", "require_kind"]

MARKER = "noisymix-folder.json"

#: every kind of folder a command makes, and how to name it in a message
KINDS: dict[str, str] = {
    "run": "a training run (noisymix train)",
    "c-set": "a corrupted -C set (noisymix corrupt --kind c)",
    "p-set": "a perturbation -P set (noisymix corrupt --kind p)",
    "sweep": "a sweep (noisymix sweep)",
    "reproduce": "a reproduce report (noisymix reproduce)",
    "figures": "a figures report (noisymix figures)",
    "fit": "an analogue fit (noisymix fit-analogue)",
    "screen": "a screen of an augmentation (noisymix screen)",
}

#: kinds that hold no folder of another command: nothing is written inside them but their own files
#: (a reproduce report and a sweep hold runs, sets and a figures report)
LEAF_KINDS = frozenset({"run", "c-set", "p-set", "figures"})

#: the files of a kind that a folder without our marker may hold as the user's own: a command does
#: not write over them (issue 41: ``train --out U`` replaced the user's config.json)
_OWN_FILES: dict[str, tuple[str, ...]] = {
    "run": ("config.json", "metrics.jsonl", "checkpoint.pt", "final.pt"),
    "c-set": ("manifest.json", "labels.npy"),
    "p-set": ("manifest.json", "labels.npy"),
    "sweep": ("sweep",),
    "reproduce": ("reproduce.json", "REPORT.md", "SUMMARY.md"),
    "figures": ("REPORT.md", "tables"),
    "fit": ("digits_matched.json", "models"),
    "screen": ("screen.json", "SCREEN.md"),
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
    if (folder / "REPORT.md").is_file() and (folder / "tables").is_dir():  # what `figures` writes
        return "figures"
    if (folder / "digits_matched.json").is_file() and (folder / "models").is_dir():  # what `fit-analogue` writes
        return "fit"
    return None


def folder_kind(folder: str | os.PathLike[str]) -> str | None:
    """The kind ``folder`` says it is (its marker), or recognised from its content; ``None`` for a
    folder that does not exist or holds nothing of ours."""
    root = Path(folder)
    if not root.is_dir():
        return None
    marker = root / MARKER
    if marker.is_symlink():  # a link can point at any folder's marker: the content would not be checked
        from noisymix_infra.io import printable

        raise ValueError(f"{printable(str(marker))} is a symbolic link, not a marker noisymix wrote: "
                         "remove it (noisymix trusts no linked marker)")
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
    from noisymix_infra.io import write_json  # io imports torch; this module stays light

    root = Path(folder)
    if (root / MARKER).is_file() and folder_kind(root) == _check_kind(kind):
        return
    write_json(root / MARKER, {"kind": _check_kind(kind), "what": KINDS[kind]})


def _describe(folder: Path, kind: str) -> str:
    from noisymix_infra.io import printable

    return f"{printable(str(folder))} is {KINDS[kind]}"


def check_out_path(folder: str | os.PathLike[str], what: str = "--out") -> Path:
    """Refuse (one line) an output path no command may write into: an empty name (the current
    folder by accident), a file system's root, an existing file, and a folder inside a run, a -C/-P
    set or a figures report (``RUN/eval``, ``CSET/sub``: ``LEAF_KINDS``), which hold only their
    own files.  Writes nothing."""
    from noisymix_infra.io import printable

    if not str(folder).strip():
        raise ValueError(f"{what} is empty: give a folder")
    root = Path(folder)
    resolved = root.resolve()
    if resolved == Path(resolved.anchor):
        raise ValueError(f"{what} {printable(str(folder))} is the root of the file system: give a folder of its own")
    if root.exists() and not root.is_dir():
        raise ValueError(f"{what} {printable(str(folder))} exists and is not a folder: give a new or existing folder")
    for parent in resolved.parents:
        try:
            found = folder_kind(parent)
        except ValueError:  # an unreadable marker above: that folder's own commands say so
            continue
        if found in LEAF_KINDS:
            raise ValueError(f"{what} {printable(str(folder))} is inside {printable(str(parent))}, which is "
                             f"{KINDS[found]} and holds only its own files; give another {what}")
    return root


def check_plain_out(folder: str | os.PathLike[str], record: str, files: tuple[str, ...],
                    what: str = "--out") -> Path:
    """The ``--out`` of a command that makes no folder kind of its own (``verify``, ``toy``): refused in
    one line when ``check_out_path`` refuses it, when it is a folder of ours of any kind (a run, a set,
    a sweep, a report), or when it holds one of ``files`` (the names it writes) beside a ``record``
    (its JSON) that is not one this toolkit wrote (a JSON object with ``"provenance"``).  Writes nothing."""
    from noisymix_infra.io import printable, read_json

    root = check_out_path(folder, what)
    found = folder_kind(root)
    if found is not None:
        raise ValueError(f"{what}: {_describe(root, found)}; give a folder of its own")
    present = [name for name in (record, *files) if (root / name).exists() or (root / name).is_symlink()]
    if present:
        try:
            data = read_json(root / record)
        except (OSError, ValueError):
            data = None
        # a JSON object with its provenance, or the checks or schemes of older versions; or a list, as
        # theory.json was before it carried its provenance
        ours = (isinstance(data, dict) and bool({"provenance", "checks", "schemes"} & set(data))) \
            or isinstance(data, list)
        if not ours or (root / record).is_symlink():
            raise ValueError(f"{printable(str(root))} holds {printable(present[0])}, which noisymix did not write "
                             f"there; give another {what}")
    return root


def check_claim(folder: str | os.PathLike[str], kind: str, what: str = "--out") -> str | None:
    """What ``claim_folder`` checks, writing nothing: ``check_out_path``, a folder of another kind,
    and a folder without our marker that holds files of the kind's names it did not write (the
    user's own ``config.json``, ``REPORT.md``).  Returns the kind found."""
    root = check_out_path(folder, what)
    found = folder_kind(root)
    if found is not None and found != _check_kind(kind):
        raise ValueError(f"{_describe(root, found)}, not {KINDS[kind]}; give another {what}")
    if found is None and root.is_dir():
        from noisymix_infra.io import printable

        theirs = [name for name in _OWN_FILES[kind] if (root / name).exists() or (root / name).is_symlink()]
        if theirs:
            raise ValueError(f"{printable(str(root))} holds {printable(theirs[0])}, which noisymix did not write "
                             f"there (the folder is not {KINDS[kind]}); give another {what}")
    return found


def claim_folder(folder: str | os.PathLike[str], kind: str) -> Path:
    """Make sure ``folder`` may hold a ``kind`` folder's files and mark it so: a folder of another
    kind, or one that is no folder of ours but holds files of this kind's names, is refused with a
    one-line ``ValueError`` before anything is written (``check_claim``)."""
    root = Path(folder)
    found = check_claim(root, kind)
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
