"""The layout of ``theory.json``, written by ``noisymix verify`` and read by ``figures`` and
``reproduce``: ``{"checks": [row, ...], "provenance": {...}}`` (``theory.checks.Check.to_json``
rows; ``noisymix_infra.provenance.provenance()``).  Files written before the provenance was added are a
bare list of rows; ``checks_of`` reads both.  No torch here: readers stay light."""

from __future__ import annotations

from typing import Any

__all__ = ["ERRATUM_KINDS", "checks_of", "erratum_tally", "tally", "tally_sentence", "theory_record"]

#: the kinds of erratum, most serious first: each printed statement that fails is one of these (its
#: ``erratum_kind``, recorded beside its ``erratum`` in theory.json), so that a reader can tell a real error of
#: the paper (a wrong term, a wrong order of the remainder) from a condition the statement leaves out and
#: from a wording or notation slip whose mathematics is right (issue 48)
ERRATUM_KINDS = ("wrong term", "wrong order", "unstated assumption", "typo or notation")


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


def _get(c: Any, key: str) -> Any:
    """A field of a check: a theory.json row (a dict, ``extra`` flattened in) or a ``Check``."""
    if isinstance(c, dict):
        return c.get(key)
    return getattr(c, key) if hasattr(c, key) and key not in ("extra",) else getattr(c, "extra", {}).get(key)


def erratum_tally(checks: list[Any]) -> dict[str, Any]:
    """The failing as-printed numerical checks by kind of erratum (``ERRATUM_KINDS``): per kind the
    errata (one per statement and wording of the erratum: Theorem 1's R1 fails in two checks, the
    expansion and R1 alone, but is one erratum), the checks they fail and the statements; apart, the
    failing checks that are no erratum (another loss, e.g. the public code's independent noise per view)."""
    failing = [c for c in checks if _get(c, "form") == "as_printed" and _get(c, "kind") != "symbolic"
               and _get(c, "verdict") == "fails"]
    kinds: dict[str, dict[str, Any]] = {}
    for kind in ERRATUM_KINDS:
        chosen = [c for c in failing if _get(c, "erratum") and _get(c, "erratum_kind") == kind]
        kinds[kind] = {"errata": len({(_get(c, "id"), _get(c, "erratum")) for c in chosen}), "checks": len(chosen),
                       "ids": sorted({_get(c, "id") for c in chosen})}
    unclassed = [c for c in failing if _get(c, "erratum") and _get(c, "erratum_kind") not in ERRATUM_KINDS]
    others = [c for c in failing if not _get(c, "erratum")]
    return {"kinds": kinds,
            "unclassed": {"checks": len(unclassed), "ids": sorted({_get(c, "id") for c in unclassed})},
            "not_errata": {"checks": len(others), "ids": sorted({_get(c, "id") for c in others})}}


def tally(checks: list[Any]) -> dict[str, dict[str, Any]]:
    """The one count of verdicts that theory.md and the reproduce summary both print (issue 21):
    the numerical checks as printed and corrected, and the sympy witnesses apart (``kind`` symbolic:
    they check our formulas, not a printed statement); ``errata``: the failing as-printed checks by
    kind of erratum (``erratum_tally``, issue 48).  ``checks``: rows of theory.json (dicts) or
    ``Check`` objects."""
    groups = {"as_printed": [c for c in checks if _get(c, "form") == "as_printed" and _get(c, "kind") != "symbolic"],
              "corrected": [c for c in checks if _get(c, "form") == "corrected" and _get(c, "kind") != "symbolic"],
              "symbolic": [c for c in checks if _get(c, "kind") == "symbolic"]}
    counts: dict[str, dict[str, Any]] = {
        name: {"checks": len(chosen), "hold": sum(_get(c, "verdict") == "holds" for c in chosen),
               "failing": sorted({_get(c, "id") for c in chosen if _get(c, "verdict") == "fails"})}
        for name, chosen in groups.items()}
    counts["errata"] = erratum_tally(checks)
    return counts


def _errata_phrase(errata: dict[str, Any], failing: int) -> str:
    """The failing as-printed checks by kind of erratum, in words."""
    kinds = errata["kinds"]
    total = sum(k["errata"] for k in kinds.values())
    order = [k for k in ERRATUM_KINDS if k in kinds] + sorted(k for k in kinds if k not in ERRATUM_KINDS)
    # in ERRATUM_KINDS' order, not the dict's: a summary.json read back has its keys sorted
    parts = [f"{kind} {kinds[kind]['errata']} ({', '.join(kinds[kind]['ids'])})" for kind in order
             if kinds[kind]["errata"]]
    if errata["unclassed"]["checks"]:
        parts.append(f"{errata['unclassed']['checks']} check(s) of an unclassed erratum "
                     f"({', '.join(errata['unclassed']['ids'])})")
    phrase = (f"the {failing} failing trace to {total} errata of the paper, by kind: " + ", ".join(parts)
              if parts else f"the {failing} failing trace to no erratum")
    others = errata["not_errata"]
    if others["checks"]:
        what = "check tests" if others["checks"] == 1 else "checks test"
        phrase += f"; {others['checks']} more failing {what} another loss, not an erratum ({', '.join(others['ids'])})"
    return phrase


def tally_sentence(counts: dict[str, dict[str, Any]]) -> str:
    """``tally``'s counts in words: the one sentence theory.md and the reproduce summary print.  Counts
    from before the errata were classed (a summary.json without ``errata``) read as they did then."""
    p, c, s = counts["as_printed"], counts["corrected"], counts["symbolic"]
    tail = (f"corrected forms, {c['hold']} of {c['checks']} hold; sympy agrees with our formulas in {s['hold']} of "
            f"{s['checks']} symbolic witnesses.")
    if "errata" not in counts:
        failing = ", ".join(p["failing"]) or "none"
        return f"As printed, {p['hold']} of {p['checks']} numerical checks hold (failing: {failing}); {tail}"
    phrase = _errata_phrase(counts["errata"], p["checks"] - p["hold"])
    return f"As printed, {p['hold']} of {p['checks']} numerical checks hold; {phrase}. {tail[0].upper()}{tail[1:]}"
