"""The one way to set torch's CPU threads: ``torch_threads(n)`` around a command's work.

Every ``noisymix`` command accepts ``--threads N`` (added by ``noisymix_app.cli``): N >= 1 threads, or
0 for the default, which is the environment variable ``NOISYMIX_THREADS`` when set and torch's
own choice otherwise.  A command module may name its default in ``THREADS`` (the toy, verify
and corrupt use 1: their work is many small tensor ops, and on a shared CPU spinning OpenMP
threads slow them down many times).  The previous count is restored afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator

__all__ = ["ENV", "add_threads_argument", "resolve_threads", "torch_threads"]

ENV = "NOISYMIX_THREADS"


def _nonnegative(n: int, where: str) -> int:
    if n < 0:
        raise ValueError(f"{where} must be >= 1 (or 0: {ENV} or torch's default), got {n}")
    return n


def _count(text: str, where: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{where} must be a whole number of threads, got {text!r}") from None
    return _nonnegative(n, where)


def resolve_threads(n: int | None) -> int | None:
    """The thread count ``n`` stands for: ``n`` itself (>= 1), or for ``None`` / 0 the value of
    ``NOISYMIX_THREADS`` when set, else ``None`` (leave torch's count as it is)."""
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int):
            raise ValueError(f"threads must be a whole number, got {n!r}")
        if _nonnegative(n, "--threads") > 0:
            return n
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    value = _count(text, ENV)
    return value or None


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[int]:
    """Run the block with ``n`` torch intra-op threads (``None`` or 0: ``NOISYMIX_THREADS`` or
    torch's default), restoring the previous count afterwards; yields the count in effect."""
    import torch  # here, not at the top: ``noisymix --help`` does not import torch

    wanted = resolve_threads(n)
    before = torch.get_num_threads()
    if wanted is not None:
        torch.set_num_threads(wanted)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def add_threads_argument(parser: argparse.ArgumentParser, default: int | None) -> None:
    """``--threads N`` with the command's default (``None``: ``NOISYMIX_THREADS`` or torch's)."""
    shown = "NOISYMIX_THREADS or torch's default" if not default else str(default)
    parser.add_argument("--threads", type=int, default=default, metavar="N",
                        help=f"torch CPU threads while the command runs (0: {ENV} or torch's default; "
                             f"default here: {shown})")
