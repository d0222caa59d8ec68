"""The difficulty-matched Digits-P (issue 51): the paper's ten CIFAR-10-P perturbations at one
strength each, fitted so that the digits' Baseline flips, perturbation by perturbation, as often as
the paper's Baseline flips on CIFAR-10-P (``tab:results_cifar_p``).

Why: at the published sequences the digits' Baseline hardly flips under noise (white noise 0.06 %
against the paper's 44.6 %, shot 0.22 against 27.6) and flips most under brightness, translate and
scale, where the paper's methods all sit near 0.5-3 %; the perturbations that carry the paper's
stability result did not move a digit, so the stability claims were untested.  A strength ``k``
moves each perturbation's damage field ``k`` times as far per frame
(``fullscale.corruptions.perturbations.STRENGTHENED``).

The strengths are data (``digits_p_matched.json`` beside this file), written by ``noisymix
fit-analogue --kind p --freeze`` (``noisymix_app.analogue.fit_p``: Baseline models of seeds the
main job never evaluates, perturbation draws of another seed than the set's, test images the set
does not perturb, a bisection per perturbation on the Baseline's flip probability); the file holds
every evaluation of the fit, its targets and residuals, and the command that made it.
``params="digits-matched"`` in ``perturbation_sequence`` and ``noisymix corrupt --kind p --params
digits-matched`` make the set; ``params="cifar"`` keeps the published sequences.
"""

from __future__ import annotations

import functools
from pathlib import Path

from fullscale.corruptions.matched import check_fit_record, read_fit_file
from fullscale.vocabulary import P_COLUMNS

__all__ = ["MATCHED_P_FILE", "check_matched_p", "matched_p_fit", "matched_p_strength"]

MATCHED_P_FILE = Path(__file__).with_name("digits_p_matched.json")


#: what distinguishes a Digits-P fit record from a Digits-C one (``check_fit_record``'s shape)
_SHAPE = {"names": P_COLUMNS, "units": "the ten perturbations", "measured": "flip"}


def check_matched_p(data: object, where: str | Path = MATCHED_P_FILE) -> dict:
    """``data`` if it is a usable Digits-P fit record, else a one-line ``ValueError`` naming ``where``
    and the offending key: the Digits-C record's check (``fullscale.corruptions.matched.check_fit_record``)
    over the ten perturbations, with the flip probability as the measured value, and each strength
    below 1000 (the strength rules' bound, ``perturbations.check_strength``)."""
    check_fit_record(data, str(where), **_SHAPE)
    for name, value in data["strengths"].items():
        if not value < 1e3:
            raise ValueError(f"{where}: strengths.{name} must be a number in (0, 1000), got {value!r}")
    return data


def read_matched_p(path: Path) -> dict:
    """Read and check a Digits-P fit record (``read_fit_file``: not UTF-8 JSON, or ``NaN`` / ``Infinity``,
    is one line naming the file and the key; then ``check_matched_p``)."""
    return check_matched_p(read_fit_file(path, **_SHAPE), path)


@functools.lru_cache(maxsize=1)
def matched_p_fit() -> dict:
    """The frozen fit (``digits_p_matched.json``): ``strengths`` per perturbation, ``fit`` (per
    perturbation its target, every (strength, flip) evaluated, the chosen one's flip and residual)."""
    if not MATCHED_P_FILE.is_file():
        raise ValueError(f"{MATCHED_P_FILE} is missing: make it with `noisymix fit-analogue --kind p --freeze`")
    return read_matched_p(MATCHED_P_FILE)


def matched_p_strength(name: str) -> float:
    """The fitted strength of perturbation ``name`` (one of the paper's ten)."""
    strengths = matched_p_fit()["strengths"]
    if name not in strengths:
        raise ValueError(f"the difficulty-matched Digits-P has strengths for the ten perturbations of "
                         f"tab:results_cifar_p only ({', '.join(P_COLUMNS)}), not {name!r}")
    return float(strengths[name])
