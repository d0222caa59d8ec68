"""AlexNet's ImageNet-P flip probabilities, with their source, and the flip rates they normalise.

The paper's tab:results_imagenet_p prints, per perturbation p, the flip rate FR_p = FP_p /
FP^AlexNet_p (in %) and mFR = mean_p FR_p over its ten columns; tab:results_imagenet prints the mFR
and, in parentheses, the same mean without the two noise columns.  Hendrycks & Dietterich (2019)
define these ratios (Sec. 4) and print AlexNet's flip probabilities in their Appendix E only: no
public code holds them (ImageNet-P/test.py prints one model's flip probability and normalises
nothing).  ``alexnet_flip.json`` ships them with that citation; tests/figures/test_alexnet_flip.py
checks them against the printed text.  ImageNet-C's AlexNet errors (mCE) are
``fullscale.vocabulary.ALEXNET_ERR``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

from fullscale.metrics import is_noise_sequence
from fullscale.vocabulary import P_COLUMNS

__all__ = ["alexnet_flip_probabilities", "alexnet_flip_source", "flip_rates", "mean_flip_rate"]


@functools.cache
def _record() -> dict:
    return json.loads(Path(__file__).with_name("alexnet_flip.json").read_text())


def alexnet_flip_probabilities() -> dict[str, float]:
    """FP^AlexNet_p per ImageNet-P perturbation, as fractions (the 14 sets Appendix E lists)."""
    return dict(_record()["flip_probability"])


def alexnet_flip_source() -> dict[str, str]:
    """Where the numbers of ``alexnet_flip_probabilities`` were read (paper, appendix, copy)."""
    return dict(_record()["source"])


def flip_rates(results: dict, weather: str = "snow") -> dict[str, float]:
    """FR_p = FP_p / FP^AlexNet_p for each of the paper's ten columns (``P_COLUMNS``) found in
    ``results`` (an ImageNet-P evaluation's ``{perturbation: {"flip_probability": ...}}``); the
    weather column reads ``weather`` (the suite's ``weather_perturbation``: snow as the paper, or
    spatter as the public script), normalised by AlexNet's flip probability on that same set.
    Columns without a result are absent."""
    alexnet = alexnet_flip_probabilities()
    rates = {}
    for column in P_COLUMNS:
        name = weather if column == "snow" else column
        entry = results.get(name)
        if isinstance(entry, dict) and isinstance(entry.get("flip_probability"), int | float):
            rates[column] = float(entry["flip_probability"]) / alexnet[name]
    return rates


def mean_flip_rate(rates: dict[str, float], *, no_noise: bool = False) -> float | None:
    """mFR over the paper's ten columns (``no_noise``: the eight without gaussian and shot noise,
    tab:results_imagenet's parentheses); None unless every one of them is in ``rates``."""
    columns = [c for c in P_COLUMNS if not (no_noise and is_noise_sequence(c))]
    if any(c not in rates for c in columns):
        return None
    return float(np.mean([rates[c] for c in columns]))
