"""One progress-bar style for every long command (tqdm on stderr).

Set ``NOISYMIX_PROGRESS=0`` to silence the bars (tests and logs); results are unaffected.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")

__all__ = ["progress", "progress_enabled"]


def progress_enabled() -> bool:
    return os.environ.get("NOISYMIX_PROGRESS", "1") not in ("0", "false", "no")


def progress(iterable: Iterable[T] | None = None, *, desc: str = "", total: int | None = None,
             unit: str = "it", **kwargs: Any) -> Iterator[T] | Any:
    """A tqdm bar on stderr, disabled by ``NOISYMIX_PROGRESS=0``.

    Usable as an iterator wrapper or, with ``iterable=None``, as a manual bar (``update``).
    """
    return tqdm(iterable, desc=desc, total=total, unit=unit, file=sys.stderr,
                disable=not progress_enabled(), dynamic_ncols=True, leave=False, **kwargs)
