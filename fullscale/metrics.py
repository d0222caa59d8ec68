"""Robustness metrics as small pure functions (numpy in, floats out); formulas in the docstrings.

Accuracies and rates are fractions in [0, 1].  References: Hendrycks & Dietterich (2019) for
mCE / flip probability / mFR, the AugMix code for ALEXNET_ERR and ``compute_mce``, Hendrycks
et al.'s calibration tools (ImageNet-R) for the RMS calibration error and AURRA.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fullscale.corruptions.common import CATEGORIES, CORRUPTIONS

__all__ = ["ALEXNET_CLEAN_ERR", "ALEXNET_ERR", "accuracy", "aurra", "corruption_summary",
           "expected_calibration_error", "flip_probability", "mean_corruption_error",
           "rms_calibration_error"]

#: AlexNet's ImageNet-C errors per corruption (mean over severities), the AugMix code's table,
#: in the order of the 15 benchmark corruptions.
ALEXNET_ERR: dict[str, float] = dict(zip(CORRUPTIONS, (
    0.886428, 0.894468, 0.922640, 0.819880, 0.826268, 0.785948, 0.798360,
    0.866816, 0.826572, 0.819324, 0.564592, 0.853204, 0.646056, 0.717840, 0.606500), strict=True))
#: AlexNet's clean ImageNet top-1 error (Hendrycks & Dietterich, 2019), for the relative mCE.
ALEXNET_CLEAN_ERR = 0.4348
NOISE = CATEGORIES["noise"]


def accuracy(predictions: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of ``predictions == labels``."""
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    if predictions.shape != labels.shape or predictions.size == 0:
        raise ValueError(f"predictions {predictions.shape} and labels {labels.shape} must match and be non-empty")
    return float((predictions == labels).mean())


def corruption_summary(per_corruption: Mapping[str, float]) -> dict:
    """Mean accuracy over corruptions, the same without the noise ones, and per category."""
    if not per_corruption:
        raise ValueError("no corruption results to summarise")
    no_noise = [a for c, a in per_corruption.items() if c not in NOISE]
    summary = {"mean_accuracy": float(np.mean(list(per_corruption.values()))),
               "per_corruption": dict(per_corruption), "per_category": {}}
    if no_noise:
        summary["mean_accuracy_no_noise"] = float(np.mean(no_noise))
    for category, members in CATEGORIES.items():
        present = [per_corruption[m] for m in members if m in per_corruption]
        if present:
            summary["per_category"][category] = float(np.mean(present))
    return summary


def mean_corruption_error(accuracies: Mapping[str, Sequence[float]], clean_accuracy: float | None = None,
                          ) -> dict[str, float]:
    """mCE = mean_c [sum_s E_{s,c} / sum_s E^AlexNet_{s,c}] with the AugMix code's per-corruption
    AlexNet errors (means over severities, so the ratio of means); relative mCE =
    mean_c [(E_c - E_clean) / (E^AlexNet_c - E^AlexNet_clean)].  Needs all 15 corruptions."""
    missing = [c for c in CORRUPTIONS if c not in accuracies]
    if missing:
        raise ValueError(f"mCE needs all 15 corruptions; missing {missing}")
    errors = {c: 1 - float(np.mean(accuracies[c])) for c in CORRUPTIONS}
    out = {"mce": float(np.mean([errors[c] / ALEXNET_ERR[c] for c in CORRUPTIONS]))}
    if clean_accuracy is not None:
        clean_err = 1 - clean_accuracy
        out["relative_mce"] = float(np.mean([(errors[c] - clean_err) / (ALEXNET_ERR[c] - ALEXNET_CLEAN_ERR)
                                             for c in CORRUPTIONS]))
    return out


def flip_probability(predictions: np.ndarray, *, noise: bool) -> float:
    """FP of -P sequences, predictions (N, frames): for noise sequences the fraction of frames
    t >= 1 whose prediction differs from frame 0's; otherwise from frame t - 1's."""
    p = np.asarray(predictions)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"predictions must be (sequences, frames >= 2), got {p.shape}")
    reference = p[:, :1] if noise else p[:, :-1]
    return float((p[:, 1:] != reference).mean())


def rms_calibration_error(confidence: np.ndarray, correct: np.ndarray, *, bin_size: int = 100,
                          estimator: str = "exact") -> float:
    """sqrt(sum_b |b| / n (acc_b - conf_b)^2) over bins of ``bin_size`` consecutive samples
    sorted by confidence (the last bin takes the remainder).  ``estimator="public"`` reproduces
    the public ``calib_err``, whose loop stops before the last bin (its samples still count in n)."""
    if estimator not in ("exact", "public"):
        raise ValueError(f"estimator must be 'exact' or 'public', got {estimator!r}")
    conf, corr = _sorted(confidence, correct)
    n = len(conf)
    starts = list(range(0, max(n // bin_size, 1) * bin_size, bin_size))
    bins = [(s, s + bin_size) for s in starts]
    bins[-1] = (bins[-1][0], n)
    if estimator == "public":
        bins = bins[:-1]
    total = sum((b - a) / n * (conf[a:b].mean() - corr[a:b].mean()) ** 2 for a, b in bins)
    return float(np.sqrt(total))


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, bins: int = 15) -> float:
    """ECE = sum_b |b| / n |acc_b - conf_b| over ``bins`` equal-width confidence bins (0, 1]."""
    conf, corr = _sorted(confidence, correct)
    edges = np.linspace(0, 1, bins + 1)
    index = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, bins - 1)
    ece = 0.0
    for b in range(bins):
        mask = index == b
        if mask.any():
            ece += mask.mean() * abs(conf[mask].mean() - corr[mask].mean())
    return float(ece)


def aurra(confidence: np.ndarray, correct: np.ndarray) -> float:
    """Area under the response-rate accuracy curve: mean over k of the accuracy of the k most
    confident predictions (ties broken by the sort, as the public code)."""
    conf, corr = np.asarray(confidence, float), np.asarray(correct, float)
    order = np.argsort(conf, kind="stable")[::-1]
    curve = np.cumsum(corr[order]) / np.arange(1, len(corr) + 1)
    return float(curve.mean())


def _sorted(confidence: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    conf, corr = np.asarray(confidence, float), np.asarray(correct, float)
    if conf.shape != corr.shape or conf.ndim != 1 or conf.size == 0:
        raise ValueError(f"confidence {conf.shape} and correct {corr.shape} must be equal non-empty vectors")
    order = np.argsort(conf, kind="stable")
    return conf[order], corr[order]
