"""The difficulty-matched Digits-C (issue 46): the CIFAR-10-C rows at one strength per corruption,
fitted so that the digits' Baseline loses, corruption by corruption, what the paper's Baseline
loses on CIFAR-10-C.

Why: at the published CIFAR rows the digits (8x8 images upscaled to 32x32: smooth strokes on a
black ground) shrug off noise and blur and collapse under brightness, contrast and fog, the
reverse of CIFAR-10-C (rank correlation of the Baseline's per-corruption drops -0.44), so the
noise corruptions, where the paper's NoisyMix gains most, could not show anything.  A strength
``k`` moves each of a corruption's damage fields ``k`` times as far from its identity value
(``CorruptionSpec.strengthen``: noise sd times ``k``, contrast ``1 - k (1 - c)``, zoom ``1 + k (z - 1)``,
...; snow and JPEG, which have no such field, scale their difference from the clean image instead);
the five severities keep their published spacing.

The strengths are data (``digits_matched.json`` beside this file), written by ``noisymix
fit-analogue --freeze`` (``noisymix_app.analogue.fit_c``: Baseline models of seeds the main job
never evaluates, corruption draws of another seed than the set's, a bisection per corruption on
the Baseline's mean drop over the five severities); the file holds the fit's every evaluation, its
targets and residuals, and the command that made it.  ``params="digits-matched"`` in
``fullscale.corruptions.corrupt`` and ``noisymix corrupt --params digits-matched`` make the set; the
published rows stay ``params="cifar"`` (the old Digits-C).
"""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path

from fullscale.vocabulary import CORRUPTIONS

__all__ = ["MATCHED_FILE", "check_fit_record", "matched_fit", "matched_strength", "read_fit_file", "strengths_sha256"]

MATCHED_FILE = Path(__file__).with_name("digits_matched.json")



class _Constant(str):
    """What ``json``'s ``parse_constant`` hook makes of ``Infinity``, ``-Infinity`` and ``NaN``: no number,
    so that the check names the key that holds it (a strength of ``Infinity`` was taken, and failed
    later as "Out of range float values are not JSON compliant", naming neither file nor value;
    issue 54)."""

    def __repr__(self) -> str:
        return str(self)


def _first_constant(value: object, where: str = "") -> tuple[str, str] | None:
    """(key path, text) of the first ``_Constant`` in a parsed document, or None."""
    if isinstance(value, _Constant):
        return where or "the document", str(value)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _first_constant(item, f"{where}.{key}" if isinstance(key, str) and where else
                                f"{where}[{key}]" if where else str(key))
        if found:
            return found
    return None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_fit_record(data: object, where: str = "the fit record", *, names: tuple[str, ...] = CORRUPTIONS,
                     units: str = "the 15 corruptions", measured: str = "drop") -> dict:
    """``data`` if it is a whole fit record, else a one-line ``ValueError`` naming ``where`` and the first
    bad key or value (issue 54: a hand-edited file - a ``fit`` entry of the wrong type, ``residual``
    missing, ``fit: null``, the file a list - gave tracebacks, some after the whole job).

    The record: ``strengths`` (a finite positive number for each of the 15 corruptions) and ``fit`` (for
    each of them an object of finite ``target``, ``strength``, ``drop``, ``residual`` and a ``trace`` of
    [strength, drop] pairs, its ``strength`` equal to ``strengths``'s: the report pairs the residual with
    the set made at that strength).  ``names``, ``units`` and ``measured`` make it the check of another
    fitted set of the same shape (the difficulty-matched Digits-P: its ten perturbations, the flip
    probability measured; ``fullscale.corruptions.matched_p``)."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a JSON object with 'strengths' and 'fit', got a {type(data).__name__}")
    strengths = data.get("strengths")
    if not isinstance(strengths, dict):
        raise ValueError(f"{where}: 'strengths' must be an object of {units}' strengths, "
                         f"got {type(strengths).__name__}")
    missing = [n for n in names if n not in strengths]
    extra = sorted(set(strengths) - set(names))
    if missing or extra:
        raise ValueError(f"{where} must give a positive strength for each of {units} "
                         f"(missing: {', '.join(missing) or '-'}; unknown: {', '.join(extra) or '-'})")
    for name in names:
        value = strengths[name]
        if not _number(value) or value <= 0:
            raise ValueError(f"{where}: strengths.{name} must be a finite positive number, got {value!r}")
    fit = data.get("fit")
    if not isinstance(fit, dict):
        raise ValueError(f"{where}: 'fit' must hold an entry for each of {units}, got "
                         f"{'null' if fit is None else type(fit).__name__}")
    missing = [n for n in names if n not in fit]
    if missing or set(fit) - set(names):
        raise ValueError(f"{where}: 'fit' must hold {units}' entries (missing: {', '.join(missing) or '-'}; "
                         f"unknown: {', '.join(sorted(set(fit) - set(names))) or '-'})")
    for name in names:
        entry = fit[name]
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: fit.{name} must be an object, got {type(entry).__name__}")
        for key in ("target", "strength", measured, "residual"):
            if key not in entry:
                raise ValueError(f"{where}: fit.{name}.{key} is missing")
            if not _number(entry[key]):
                raise ValueError(f"{where}: fit.{name}.{key} must be a finite number, got {entry[key]!r}")
        if entry["strength"] != strengths[name]:
            raise ValueError(f"{where}: fit.{name}.strength {entry['strength']!r} is not strengths.{name} "
                             f"{strengths[name]!r}: edit both, or refit")
        trace = entry.get("trace")
        if not isinstance(trace, list) or not trace or not all(
                isinstance(p, list) and len(p) == 2 and all(_number(v) for v in p) for p in trace):
            raise ValueError(f"{where}: fit.{name}.trace must be a non-empty list of [strength, {measured}] "
                             "number pairs")
    return data


def read_fit_file(path: str | os.PathLike[str], **shape: object) -> dict:
    """The fit record at ``path``, checked whole (``check_fit_record``); a file that is not UTF-8 JSON, or
    holds ``Infinity``/``NaN``, is a one-line ``ValueError`` naming it too.  ``shape``: ``check_fit_record``'s
    ``names``, ``units`` and ``measured`` for another fitted set."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{where} is not UTF-8 text ({error.reason})") from None
    try:
        data = json.loads(text, parse_constant=_Constant)
    except ValueError as error:  # JSONDecodeError
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{where}: not a fit record ({detail})") from None
    except RecursionError:
        raise ValueError(f"{where}: not a fit record (nested too deep)") from None
    constant = _first_constant(data)
    if constant is not None:
        raise ValueError(f"{where}: {constant[0]} is {constant[1]}, which is no number JSON allows (give a finite "
                         "number)")
    return check_fit_record(data, where, **shape)


def strengths_sha256(strengths: dict[str, float]) -> str:
    """The sha256 of ``strengths`` as canonical JSON: the identity a -C step of the matched set carries, so
    a refit or an edit of the package file remakes the set (issue 54, root cause 1)."""
    import hashlib

    text = json.dumps({k: float(v) for k, v in strengths.items()}, sort_keys=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def matched_fit() -> dict:
    """The frozen fit (``digits_matched.json``): ``strengths`` per corruption, ``fit`` (per corruption
    its target, every (strength, drop) evaluated, the chosen one's drop and residual), the command.
    Checked whole on first use (``read_fit_file``), before any work reads a strength from it."""
    return read_fit_file(MATCHED_FILE)


def matched_strength(name: str) -> float:
    """The fitted strength of corruption ``name`` (one of the 15)."""
    strengths = matched_fit()["strengths"]
    if name not in strengths:
        raise ValueError(f"the difficulty-matched Digits-C has strengths for the 15 corruptions only, not {name!r}")
    return float(strengths[name])
