"""The layout of ``theory.json``, written by ``noisymix verify`` and read by ``figures`` and
``reproduce``: ``{"checks": [row, ...], "provenance": {...}}`` (``theory.checks.Check.to_json``
rows; ``noisymix_infra.provenance.provenance()``).  Files written before the provenance was added are a
bare list of rows; ``checks_of`` reads both.  No torch here: readers stay light."""

from __future__ import annotations

from typing import Any

__all__ = ["checks_of", "theory_record"]


def theory_record(rows: list[dict[str, Any]], provenance: dict[str, Any]) -> dict[str, Any]:
    """The ``theory.json`` object: the check rows and where they came from."""
    return {"checks": rows, "provenance": provenance}


def checks_of(data: Any, where: str = "theory.json") -> list[dict[str, Any]]:
    """The check rows of a loaded ``theory.json`` (either layout); a one-line error otherwise."""
    if isinstance(data, list):  # written before theory.json carried its provenance
        return data
    if isinstance(data, dict) and isinstance(data.get("checks"), list):
        return data["checks"]
    raise ValueError(f"{where}: expected {{'checks': [...], 'provenance': {{...}}}} (or a list of checks)")
