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
import json
import math
from pathlib import Path

from fullscale.vocabulary import P_COLUMNS

__all__ = ["MATCHED_P_FILE", "check_matched_p", "matched_p_fit", "matched_p_strength"]

MATCHED_P_FILE = Path(__file__).with_name("digits_p_matched.json")


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def check_matched_p(data: object, where: str | Path = MATCHED_P_FILE) -> dict:
    """``data`` if it is a usable Digits-P fit record, else a one-line ``ValueError`` naming ``where``
    and the offending key: a positive finite strength for each of the ten perturbations, and for each a
    ``fit`` entry with numeric ``target``, ``strength``, ``flip`` and ``residual`` and its trace."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
    strengths, fit = data.get("strengths"), data.get("fit")
    if not isinstance(strengths, dict) or set(strengths) != set(P_COLUMNS):
        raise ValueError(f"{where}: 'strengths' must name the ten perturbations {', '.join(P_COLUMNS)}")
    for name, value in strengths.items():
        if isinstance(value, bool) or not isinstance(value, float | int) or not 0 < value < 1e3:
            raise ValueError(f"{where}: strengths.{name} must be a number in (0, 1000), got {value!r}")
    if not isinstance(fit, dict) or set(fit) != set(P_COLUMNS):
        raise ValueError(f"{where}: 'fit' must hold an entry for each of the ten perturbations")
    for name, entry in fit.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: fit.{name} must be an object, got {type(entry).__name__}")
        for key in ("target", "strength", "flip", "residual"):
            value = entry.get(key)
            if isinstance(value, bool) or not isinstance(value, float | int) or not math.isfinite(value):
                raise ValueError(f"{where}: fit.{name}.{key} must be a finite number, got {value!r}")
        if entry["strength"] != strengths[name]:
            raise ValueError(f"{where}: fit.{name}.strength {entry['strength']} is not strengths.{name} "
                             f"{strengths[name]}")
        trace = entry.get("trace")
        if not isinstance(trace, list) or not trace or not all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(v, float | int) for v in p) for p in trace):
            raise ValueError(f"{where}: fit.{name}.trace must be a non-empty list of [strength, flip] pairs")
    return data


def read_matched_p(path: Path) -> dict:
    """Read and check a Digits-P fit record (``check_matched_p``); JSON's NaN / Infinity are refused."""
    try:
        data = json.loads(Path(path).read_text(), parse_constant=_refuse_constant)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError) as error:
        raise ValueError(f"{path}: not a readable Digits-P fit ({error})") from None
    return check_matched_p(data, path)


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
