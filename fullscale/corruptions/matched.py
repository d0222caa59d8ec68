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
fit-analogue --freeze`` (``noisymix_app.fit_analogue``: Baseline models of seeds the main job
never evaluates, corruption draws of another seed than the set's, a bisection per corruption on
the Baseline's mean drop over the five severities); the file holds the fit's every evaluation, its
targets and residuals, and the command that made it.  ``params="digits-matched"`` in
``fullscale.corruptions.corrupt`` and ``noisymix corrupt --params digits-matched`` make the set; the
published rows stay ``params="cifar"`` (the old Digits-C).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from fullscale.vocabulary import CORRUPTIONS

__all__ = ["MATCHED_FILE", "matched_fit", "matched_strength"]

MATCHED_FILE = Path(__file__).with_name("digits_matched.json")


@functools.lru_cache(maxsize=1)
def matched_fit() -> dict:
    """The frozen fit (``digits_matched.json``): ``strengths`` per corruption, ``fit`` (per corruption
    its target, every (strength, drop) evaluated, the chosen one's drop and residual), the command."""
    data = json.loads(MATCHED_FILE.read_text())
    strengths = data.get("strengths", {})
    if set(strengths) != set(CORRUPTIONS) or not all(isinstance(v, float | int) and v > 0
                                                     for v in strengths.values()):
        raise ValueError(f"{MATCHED_FILE} must give a positive strength for each of the 15 corruptions")
    return data


def matched_strength(name: str) -> float:
    """The fitted strength of corruption ``name`` (one of the 15)."""
    strengths = matched_fit()["strengths"]
    if name not in strengths:
        raise ValueError(f"the difficulty-matched Digits-C has strengths for the 15 corruptions only, not {name!r}")
    return float(strengths[name])
