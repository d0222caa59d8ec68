"""Freezing a fit into a file of the package, guarded (issue 54, root cause 3).

``noisymix fit-analogue --freeze`` writes its strengths into ``fullscale/corruptions/digits_matched.json``,
the file every later matched set is made from.  Issue 54 found that write guarded by nothing: a fit
that missed its targets by 50 points was frozen (exit 0); two ``--freeze`` runs at once both said
"written" and one update was lost; a read-only package folder was refused only after the whole fit
(minutes), naming the temporary file; ``kill -9`` inside the write left ``.digits_matched.json.*.tmp``
in the package folder for good.  The pieces here are the guard, for any fit that freezes a record into
a package file (the difficulty-matched Digits-C now, a Digits-P fit next):

* ``check_package_writable(path)`` - before the fit runs: the package folder exists and a file can be
  created in it (a probe, not ``os.access``, which a root user or an ACL fools), and the file is no
  folder or link;
* ``freeze_guarded(path, result, tolerance_ok=..., force=...)`` - refuses a fit outside its tolerance
  unless forced (one line, nothing written), then under ``package_lock`` sweeps the temporary files a
  killed writer left (``sweep_stale_temps``: only ours, named after the file, and only while the lock
  says no writer of ours is mid-write), reads the frozen record, merges and writes it atomically;
* ``package_lock(path)`` - ``flock`` on the package folder itself (a directory descriptor: no lock
  file left in the package, released by the kernel when the process dies), waited for a bounded time,
  so two freezes are serialised and the second merges into the first's record.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from noisymix_infra.io import printable, write_json

__all__ = ["LOCK_WAIT", "check_package_writable", "freeze_guarded", "package_lock", "sweep_stale_temps"]

#: seconds a freeze waits for another freeze of the same package file (the write itself takes milliseconds)
LOCK_WAIT = 60.0


def check_package_writable(path: str | os.PathLike[str]) -> None:
    """One-line ``ValueError`` unless ``path`` can be written by ``freeze_guarded``: called before the fit
    runs, so that a read-only package is refused before minutes of work (issue 54), naming the package
    file, not a temporary one."""
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        raise ValueError(f"cannot freeze into {printable(str(target))}: its folder does not exist")
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise ValueError(f"cannot freeze into {printable(str(target))}: it is not a plain file")
    try:  # a real probe: os.access says yes to root on a read-only mount and no to some ACLs that allow
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".probe", dir=folder)
    except OSError as error:
        raise ValueError(f"cannot freeze into {printable(str(target))}: its folder is not writable "
                         f"({error.strerror or error}); make it writable or leave out --freeze") from None
    os.close(fd)
    os.unlink(probe)


def sweep_stale_temps(path: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary files of ``noisymix_infra.io.atomic_write`` for ``path`` (``.NAME.*.tmp``) and
    the probes of ``check_package_writable``, left by a process killed mid-write.  Only under
    ``package_lock(path)``: every writer of the file holds it, so none of ours is mid-write."""
    target = Path(path)
    removed = []
    for pattern in (f".{target.name}.*.tmp", f".{target.name}.*.probe"):
        for stale in target.parent.glob(pattern):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
                removed.append(stale)
    return removed


@contextlib.contextmanager
def package_lock(path: str | os.PathLike[str], wait: float = LOCK_WAIT) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the folder of ``path`` (its directory descriptor) for a
    read-merge-write of ``path``; another holder is waited for up to ``wait`` seconds, then refused
    in one line.  Nothing is written into the package folder for the lock."""
    folder = Path(path).parent
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as error:
                if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise ValueError(f"{printable(str(path))} is being frozen by another process for over "
                                     f"{wait:g} s; wait for it and rerun") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def freeze_guarded(package_file: str | os.PathLike[str], result: dict, *, tolerance_ok: bool, force: bool,
                   merge: Callable[[dict, Path], dict] | None = None, missed: str = "",
                   wait: float = LOCK_WAIT) -> dict:
    """Write ``result`` (or ``merge(result, package_file)``: the record to freeze, read and merged under the
    lock) to ``package_file``; return what was written.

    Args:
        package_file: the package's record (e.g. ``fullscale/corruptions/digits_matched.json``).
        result: the fit's record.
        tolerance_ok: whether the fit met its own tolerance (the caller's rule: the matched Digits-C's is
            the report's, every residual within 40 % or 5 points of its target).
        force: freeze even so (``fit-analogue --force-freeze``).
        merge: reads the frozen record itself (so a broken one is refused under the lock) and returns the
            record to write; ``None``: ``result`` replaces the file whole.
        missed: what missed the tolerance, for the refusal line.

    A fit outside its tolerance is refused in one line naming ``--force-freeze`` and nothing is written.
    """
    target = Path(package_file)
    if not tolerance_ok and not force:
        raise ValueError(f"not frozen into {printable(str(target))}: the fit misses its tolerance"
                         + (f" ({missed})" if missed else "")
                         + "; give --force-freeze to freeze it anyway")
    check_package_writable(target)
    with package_lock(target, wait):
        sweep_stale_temps(target)
        record = merge(result, target) if merge is not None else result
        write_json(target, record)
    return record
