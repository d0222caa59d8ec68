"""The layout of ``theory.json``, written by ``noisymix verify`` and read by ``figures`` and
``reproduce``: ``{"checks": [row, ...], "provenance": {...}}`` (``theory.checks.Check.to_json``
rows; ``noisymix_infra.provenance.provenance()``).  Files written before the provenance was added are a
bare list of rows; ``checks_of`` reads both.  No torch here: readers stay light."""

from __future__ import annotations

from typing import Any

__all__ = ["checks_of", "tally", "tally_sentence", "theory_record"]


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


def tally(checks: list[Any]) -> dict[str, dict[str, Any]]:
    """The one count of verdicts that theory.md and the reproduce summary both print (issue 21):
    the numerical checks as printed and corrected, and the sympy witnesses apart (``kind`` symbolic:
    they check our formulas, not a printed statement).  ``checks``: rows of theory.json (dicts) or
    ``Check`` objects."""

    def get(c: Any, key: str) -> Any:
        return c.get(key) if isinstance(c, dict) else getattr(c, key)

    groups = {"as_printed": [c for c in checks if get(c, "form") == "as_printed" and get(c, "kind") != "symbolic"],
              "corrected": [c for c in checks if get(c, "form") == "corrected" and get(c, "kind") != "symbolic"],
              "symbolic": [c for c in checks if get(c, "kind") == "symbolic"]}
    return {name: {"checks": len(chosen), "hold": sum(get(c, "verdict") == "holds" for c in chosen),
                   "failing": sorted({get(c, "id") for c in chosen if get(c, "verdict") == "fails"})}
            for name, chosen in groups.items()}


def tally_sentence(counts: dict[str, dict[str, Any]]) -> str:
    """``tally``'s counts in words: the one sentence theory.md and the reproduce summary print."""
    p, c, s = counts["as_printed"], counts["corrected"], counts["symbolic"]
    failing = ", ".join(p["failing"]) or "none"
    return (f"As printed, {p['hold']} of {p['checks']} numerical checks hold (failing: {failing}); corrected "
            f"forms, {c['hold']} of {c['checks']} hold; sympy agrees with our formulas in {s['hold']} of "
            f"{s['checks']} symbolic witnesses.")
