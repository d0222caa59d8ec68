"""The difficulty-matched sets, one entry per kind (issue 60): what makes each one's identity.

A matched set (``--params digits-matched``) is made at strengths frozen in a package file (Digits-C:
``matched.MATCHED_FILE``; Digits-P: ``matched_p.MATCHED_P_FILE``), which the command line names only by
the table.  Issue 54 made the strengths part of the -C step's identity in ``noisymix reproduce``;
the -P step had none, so a Digits-P refit kept the old -P set ("corrupt-p: done (kept)") and every
evaluation on it, and a -P set half made before the refit blocked each rerun.  Here each kind says
once how its strengths are read (from the package, checked whole; from a set's ``manifest.json``, which
``noisymix corrupt`` writes with the strengths it used) and which names were fitted; the step identity,
the kept/stale decision, the half-made-set restart, the plan check and the writer all read it, so a
later kind is one entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MATCHED_PARAMS", "MATCHED_SETS", "MatchedSet", "matched_set", "strengths_identity"]

#: the ``--params`` table of every difficulty-matched set
MATCHED_PARAMS = "digits-matched"


def strengths_identity(strengths: object) -> tuple[str, ...] | None:
    """The identity items of ``strengths`` (``{name: strength}``): ``("strengths_sha256=<sha256 of its
    canonical JSON>",)`` (``matched.strengths_sha256``), the ``inputs`` item a step of ``noisymix reproduce``
    records; None for what is no table of finite numbers."""
    from fullscale.corruptions.matched import strengths_sha256

    if not isinstance(strengths, dict) or not strengths:
        return None
    try:
        return (f"strengths_sha256={strengths_sha256(strengths)}",)
    except (TypeError, ValueError):
        return None


def _fit_c() -> dict:
    from fullscale.corruptions import matched

    return matched.matched_fit()


def _fit_p() -> dict:
    from fullscale.corruptions import matched_p

    return matched_p.matched_p_fit()


@dataclass(frozen=True)
class MatchedSet:
    """One kind of difficulty-matched set.

    Attributes:
        kind: ``noisymix corrupt --kind`` (c or p).
        title: how a message names it (Digits-C).
        units: what its names are, in a message (corruptions).
        fit: the package's frozen fit, read and checked whole (a one-line ``ValueError`` naming the file).
    """

    kind: str
    title: str
    units: str
    fit: Callable[[], dict]

    def strengths(self) -> dict[str, float]:
        """The package's fitted strengths, ``{name: strength}``."""
        return {name: float(k) for name, k in self.fit()["strengths"].items()}

    def identity(self) -> tuple[str, ...]:
        """The identity of the package's strengths (checked whole first)."""
        found = strengths_identity(self.strengths())
        assert found is not None  # the fit check refuses an empty or non-finite table
        return found

    def manifest_identity(self, manifest: object) -> tuple[str, ...] | None:
        """The identity of the strengths a set was made with, from its parsed ``manifest.json``; None where
        it does not say (another kind, another table, no strengths)."""
        if not isinstance(manifest, dict) or manifest.get("kind") != self.kind \
                or manifest.get("params") != MATCHED_PARAMS:
            return None
        return strengths_identity(manifest.get("strengths"))

    def set_identity(self, folder: str | Path) -> tuple[str, ...] | None:
        """``manifest_identity`` of the set in ``folder``; None where there is none or it cannot be read."""
        from noisymix_infra.io import read_json

        try:
            manifest = read_json(Path(folder) / "manifest.json")
        except (OSError, ValueError):
            return None
        return self.manifest_identity(manifest)

    def check_names(self, names: Sequence[str] | None) -> None:
        """Refuse (one line) a name the fit gave no strength (``None``: the set's default names)."""
        fitted = self.strengths()
        other = [n for n in names or () if n not in fitted]
        if other:
            raise ValueError(f"the difficulty-matched {self.title} has strengths for the {len(fitted)} {self.units} "
                             f"only, not {', '.join(map(repr, other))} (fitted: {', '.join(fitted)})")


#: every kind of difficulty-matched set, by ``--kind``
MATCHED_SETS: dict[str, MatchedSet] = {
    "c": MatchedSet("c", "Digits-C", "corruptions", _fit_c),
    "p": MatchedSet("p", "Digits-P", "perturbations", _fit_p),
}


def matched_set(kind: str, params: str | None) -> MatchedSet | None:
    """The matched set ``--kind kind --params params`` makes, or None (a published table)."""
    return MATCHED_SETS.get(kind) if params == MATCHED_PARAMS else None
