"""Filing things by name in a registry (methods, kinds of mixing, models, corruptions, the paper's
labels): one way to refuse a name filed twice, for every registry of the toolkit (issue 42)."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["file_once"]

T = TypeVar("T")


def file_once(registry: dict[str, T], name: str, item: T, what: str) -> T:
    """File ``item`` under ``name`` in ``registry`` and return it; a name filed before is one line
    naming ``what`` it is (two definitions of one name would shadow each other silently)."""
    if name in registry:
        raise ValueError(f"{what} {name!r} registered twice")
    registry[name] = item
    return item
