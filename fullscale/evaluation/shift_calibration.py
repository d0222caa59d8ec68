"""Calibration under shift as the field measures it (Ovadia et al., 2019, "Can you trust your model's
uncertainty?"; issue 46): a temperature fitted on held-out *clean* images (Guo et al., 2017) and applied
unchanged to every corrupted set, the RMS calibration error of each set before and after, reliability
diagrams clean and at severity 5, and the estimator's noise floor beside the after-scaling numbers.

The cross-fit: the clean test images are split into two interleaved halves (image i in half i mod 2)
and half k's temperature is fitted on the *other* half (``fullscale.metrics.fold_temperatures``).  A
-C set's rows are the clean test images in order (row r of a severity block is clean image r), so
image i's corrupted copies are scaled by the T of the half that does not contain image i: no image,
clean or corrupted, is scaled by a temperature fitted on itself.  The T fitted on all clean images is
recorded for display only (what the model's confidence is off by); it scales nothing.

Used by the -C ``.npy`` suites (``fullscale.evaluation.corrupted.corrupted_npy``): each corrupted set's
cell gains ``temperature_scaled`` (and, at severity 5, ``reliability``), the suite's summary
``calibration_under_shift``.  The clean logits are computed there, from the run's own test split, so
the order of the suites does not matter.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from fullscale.evaluation.context import Context
from fullscale.evaluation.inference import batch_logits
from fullscale.evaluation.own_split import _test_data
from fullscale.metrics import (
    fit_temperature,
    fold_temperatures,
    noise_floor_draws,
    pool_reliability,
    reliability_bins,
    reliability_edges,
    rms_calibration_error,
    scaled_confidence,
)

__all__ = ["BINS", "FLOOR_DRAWS", "CleanFit", "clean_fit", "scaled_cell", "shift_summary"]

#: equal-width confidence bins of the reliability diagrams (the ECE's 15)
BINS = 15
#: perfectly calibrated draws per set behind the noise floor
FLOOR_DRAWS = 200
#: the severity whose corrupted sets are pooled into the shifted reliability diagram
SHIFTED = 5

_METHOD = ("Temperature scaling (Guo et al., 2017) fitted by negative log-likelihood on the clean test images and "
           "applied unchanged to every corrupted set (Ovadia et al., 2019). Cross-fitted: the clean images are split "
           "into two interleaved halves (image i in half i mod 2), each half's T fitted on the other half, and image "
           "i's corrupted copies scaled by the T of the half that does not contain image i, so no image is scaled by "
           "a T fitted on itself. RMS calibration error of each corrupted set before and after, averaged over the "
           "corruptions per severity (severity 0: the clean test images, cross-fitted alike).")
_FLOOR = ("the RMS error the same estimator reads on a perfectly calibrated model with the same after-scaling "
          "confidences (each image correct with probability its confidence; same bins): {draws} draws per set, "
          "torch.Generator seeded crc32('noise-floor:<corruption>:<severity>'), averaged over the corruptions draw by "
          "draw; mean and 95th percentile")


def _floor_generator(where: str) -> torch.Generator:
    """The floor's generator of one set, seeded by its name: the draws do not depend on the order the
    sets are evaluated in or on a resume."""
    return torch.Generator().manual_seed(zlib.crc32(f"noise-floor:{where}".encode()))


@dataclass(frozen=True)
class CleanFit:
    """The temperatures fitted on the clean test images, and the clean images' own calibration."""

    temperature: float  # fitted on all clean images: for display, scales nothing
    folds: tuple[float, ...]  # [k]: fitted on the clean images i with i mod 2 != k, applied to those with == k
    matched: bool  # the -C set's rows are the clean test images in order (so the cross-fit applies)
    clean: dict  # the clean images' cell, as a corrupted set's (``scaled_cell`` plus the raw numbers)
    clean_draws: np.ndarray

    def temperatures(self, count: int) -> np.ndarray:
        """The temperature of each of the ``count`` rows of a severity block: row i is scaled by the T
        of the clean half without image i; a set not matched to the clean images by the T of all of them
        (none of its images is a clean test image this T was fitted on, as far as can be told)."""
        if not self.matched:
            return np.full(count, self.temperature)
        return np.asarray(self.folds)[np.arange(count) % len(self.folds)]

    def applied(self) -> list[float]:
        """The temperatures that scale a corrupted set (recorded in each set's cell: a resumed cell
        scaled by others is not mixed with this run's)."""
        return sorted(set(self.folds) if self.matched else {self.temperature})

    def record(self) -> dict:
        applied = ("image i's corrupted copies scaled by fold_temperatures[i mod 2], the T fitted on the clean images "
                   "j with j mod 2 != i mod 2" if self.matched else
                   "the -C set's labels are not the clean test split's in order, so its images cannot be matched to "
                   "the clean halves: every corrupted image scaled by the T fitted on all clean images")
        return {"all_clean_images": self.temperature, "fold_temperatures": list(self.folds),
                "all_clean_images_is": "fitted on all clean test images: shown, never applied",
                "applied": applied}


def _clean_logits(ctx: Context, model: nn.Module) -> tuple[np.ndarray, np.ndarray]:
    """The logits of the run's own test split (where the -C set's images come from): its data root is
    the run's (``--data-root`` names the -C set here)."""
    data = _test_data(replace(ctx, data_root=None))
    logits, labels = [], []
    for x, y in data.batches():
        logits.append(batch_logits(model, x, ctx.device))
        labels.append(y)
    return torch.cat(logits).double().numpy(), torch.cat(labels).numpy()


def clean_fit(ctx: Context, model: nn.Module, corrupted_labels: np.ndarray, estimator: str) -> CleanFit | str:
    """The clean-fitted temperatures for a -C set of labels ``corrupted_labels`` (one severity block),
    or why they cannot be had (the run's test split not readable here: a sentence)."""
    try:
        logits, labels = _clean_logits(ctx, model)
    except (OSError, ValueError) as error:
        return f"the run's clean test split could not be read ({str(error).splitlines()[0][:200]})"
    if len(labels) < 2:
        return f"the clean test split has {len(labels)} image(s): no held-out temperature to fit"
    count = len(corrupted_labels)
    matched = count <= len(labels) and bool((np.asarray(corrupted_labels) == labels[:count]).all())
    folds = tuple(fold_temperatures(logits, labels))
    fit = CleanFit(fit_temperature(logits, labels), folds, True, {}, np.empty(0))
    cell = scaled_cell(logits, labels, fit, estimator, "clean", reliability=True)
    draws = np.asarray(cell.pop("noise_floor_draws"))
    conf, pred = scaled_confidence(logits, 1.0)
    correct = (pred == labels).astype(float)
    cell.update(accuracy=float(correct.mean()), rms_calibration_error_as_evaluated=_rms(conf, correct, estimator),
                confidence_gap_as_evaluated=float(conf.mean() - correct.mean()),
                reliability_as_evaluated=reliability_bins(conf, correct, BINS))
    return CleanFit(fit.temperature, folds, matched, cell, draws)


def _rms(confidence: np.ndarray, correct: np.ndarray, estimator: str) -> float:
    """The suites' RMS estimator (bins of 100; the public one needs 100 images, a smaller set the exact)."""
    if estimator == "public" and len(confidence) < 100:
        estimator = "exact"
    return rms_calibration_error(confidence, correct, estimator=estimator)


def scaled_cell(logits: np.ndarray, labels: np.ndarray, fit: CleanFit, estimator: str, where: str, *,
                reliability: bool = False) -> dict:
    """One set (a corruption at a severity, or the clean images) after the clean-fitted temperature:
    its RMS calibration error and signed gap, the temperatures applied, the noise floor's draws and,
    with ``reliability``, its reliability diagram's bins."""
    logits = np.asarray(logits, float)
    temps = fit.temperatures(len(logits))
    confidence, predicted = scaled_confidence(logits / temps[:, None], 1.0)
    correct = (predicted == np.asarray(labels)).astype(float)
    if estimator == "public" and len(confidence) < 100:
        estimator = "exact"
    draws = noise_floor_draws(confidence, _floor_generator(where), draws=FLOOR_DRAWS, estimator=estimator)
    cell = {"rms_calibration_error": rms_calibration_error(confidence, correct, estimator=estimator),
            "confidence_gap": float(confidence.mean() - correct.mean()),
            "temperatures": fit.applied(),
            # kept per set, so that the per-severity floor's percentile is exact after a resume
            "noise_floor_draws": [round(float(d), 6) for d in draws]}
    if reliability:
        cell["reliability"] = reliability_bins(confidence, correct, BINS)
    return cell


def _floor(draws: np.ndarray) -> dict:
    return {"mean": float(np.mean(draws)), "p95": float(np.percentile(draws, 95))}


def shift_summary(results: dict, names: list[str], fit: CleanFit | str | None) -> dict:
    """The -C suite's ``calibration_under_shift``: per severity (0: clean) the mean over ``names`` of
    the RMS error and signed gap before and after scaling, with the noise floor; per corruption and
    severity the two errors; the temperatures (which is which); the reliability diagrams clean and at
    severity 5 (all corruptions pooled).  ``{"not_measured": why}`` where it cannot be had."""
    if isinstance(fit, str) or fit is None:
        return {"not_measured": fit or "no clean-fitted temperature"}
    cells = {(c, s): results[c][str(s)] for c in names for s in range(1, 6)}
    applied = fit.applied()
    stale = sorted({c for (c, _), cell in cells.items()
                    if "noise_floor_draws" not in (cell.get("temperature_scaled") or {})
                    or cell["temperature_scaled"].get("temperatures") != applied})
    if stale:
        listed = ", ".join(stale[:3]) + (", ..." if len(stale) > 3 else "")
        return {"not_measured": f"{len(stale)} corruption(s) ({listed}) were resumed from a result made before "
                                "calibration under shift, or with other clean temperatures: evaluate the suite anew"}
    per_severity = {"0": {"rms_calibration_error": fit.clean["rms_calibration_error_as_evaluated"],
                          "rms_calibration_error_scaled": fit.clean["rms_calibration_error"],
                          "confidence_gap": fit.clean["confidence_gap_as_evaluated"],
                          "confidence_gap_scaled": fit.clean["confidence_gap"],
                          "accuracy": fit.clean["accuracy"], "noise_floor": _floor(fit.clean_draws)}}
    for s in range(1, 6):
        row = [cells[c, s] for c in names]
        draws = np.mean([np.asarray(e["temperature_scaled"]["noise_floor_draws"]) for e in row], axis=0)
        per_severity[str(s)] = {
            "rms_calibration_error": float(np.mean([e["rms_calibration_error"] for e in row])),
            "rms_calibration_error_scaled": float(np.mean([e["temperature_scaled"]["rms_calibration_error"]
                                                           for e in row])),
            "confidence_gap": float(np.mean([e["confidence_gap"] for e in row])),
            "confidence_gap_scaled": float(np.mean([e["temperature_scaled"]["confidence_gap"] for e in row])),
            "accuracy": float(np.mean([e["accuracy"] for e in row])), "noise_floor": _floor(draws)}
    shifted = [cells[c, SHIFTED] for c in names]
    return {"method": _METHOD, "matched_to_clean_images": fit.matched, "temperature": fit.record(),
            "per_severity": per_severity,
            "per_corruption": {c: {str(s): {"rms_calibration_error": cells[c, s]["rms_calibration_error"],
                                            "rms_calibration_error_scaled":
                                                cells[c, s]["temperature_scaled"]["rms_calibration_error"]}
                                   for s in range(1, 6)} for c in names},
            "noise_floor": {"draws": FLOOR_DRAWS, "what": _FLOOR.format(draws=FLOOR_DRAWS)},
            "reliability": {"bins": BINS, "edges": reliability_edges(BINS),
                            "clean": {"as_evaluated": fit.clean["reliability_as_evaluated"],
                                      "temperature_scaled": fit.clean["reliability"]},
                            f"severity_{SHIFTED}": {
                                "as_evaluated": pool_reliability([e["reliability"] for e in shifted]),
                                "temperature_scaled": pool_reliability([e["temperature_scaled"]["reliability"]
                                                                        for e in shifted]),
                                "pooled": f"all {len(names)} corruptions at severity {SHIFTED}"}}}
