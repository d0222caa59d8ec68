"""Robustness metrics as small pure functions (numpy in, floats out); formulas in the docstrings.

Accuracies, errors and rates are fractions in [0, 1].  References: Hendrycks & Dietterich (2019)
for mCE, flip probability and mFR (the paper's "Datasets" paragraph); the AugMix code
(``imagenet.py``: ``ALEXNET_ERR``, ``compute_mce``); the ImageNet-R authors' ``utils.py``
(``calib_err``, ``aurra``) for the RMS calibration error and AURRA; the NoisyMix code's
``_ECELoss`` (15 bins) for the ECE; Guo et al. (2017) for temperature scaling.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from fullscale.vocabulary import ALEXNET_CLEAN_ERR, ALEXNET_ERR, CATEGORIES, CORRUPTIONS, NOISE_CORRUPTIONS

__all__ = ["ALEXNET_CLEAN_ERR", "ALEXNET_ERR", "accuracy", "aurra", "corruption_summary",
           "expected_calibration_error", "fit_temperature", "flip_probability", "flip_summary",
           "fold_temperatures", "is_noise_sequence", "mean_corruption_error", "noise_floor_draws", "pool_reliability",
           "read_alexnet_flip_table", "reliability_bins", "reliability_edges", "rms_calibration_error",
           "scaled_confidence", "temperature_scaled", "transfer_summary"]


def accuracy(predictions: np.ndarray, labels: np.ndarray) -> float:
    """Top-1 accuracy: mean_i [pred_i == y_i]."""
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    if predictions.shape != labels.shape or predictions.size == 0:
        raise ValueError(f"predictions {predictions.shape} and labels {labels.shape} must match and be non-empty")
    return float((predictions == labels).mean())


def corruption_summary(per_corruption: Mapping[str, float]) -> dict:
    """The paper's robust accuracy: mean_c acc_c over the corruptions given (each acc_c already
    the mean over severities); the same without the noise corruptions (the paper's numbers in
    parentheses); and the mean per category (noise / blur / weather / digital)."""
    if not per_corruption:
        raise ValueError("no corruption results to summarise")
    no_noise = [a for c, a in per_corruption.items() if c not in NOISE_CORRUPTIONS]
    summary = {"mean_accuracy": float(np.mean(list(per_corruption.values()))),
               "per_corruption": dict(per_corruption), "per_category": {}}
    if no_noise:
        summary["mean_accuracy_no_noise"] = float(np.mean(no_noise))
    for category, members in CATEGORIES.items():
        present = [per_corruption[m] for m in members if m in per_corruption]
        if present:
            summary["per_category"][category] = float(np.mean(present))
    return summary


def transfer_summary(per_corruption: Mapping[str, float]) -> dict[str, float]:
    """tab:results_transfer's three -C numbers, as the paper computes them (all from the group
    means of ``CATEGORIES``, each the mean of its corruptions' accuracies):

    - ``all`` = mean of the four group means (noise, blur, weather, digital), not the mean of the 15
      corruptions: its Baseline row, 77.1 = (48.8 + 3 x 86.5) / 4, where the 15-corruption mean would
      be (3 x 48.8 + 12 x 86.5) / 15 = 79.0;
    - ``noise`` = the noise group's mean;
    - ``other`` = mean of the blur, weather and digital group means;
    - ``mean_15`` = the plain mean of the 15 corruptions, reported beside them.

    All 15 corruptions are required."""
    missing = [c for c in CORRUPTIONS if c not in per_corruption]
    if missing:
        raise ValueError(f"the transfer table's -C numbers need all 15 corruptions; missing {missing}")
    groups = {cat: float(np.mean([per_corruption[m] for m in members])) for cat, members in CATEGORIES.items()}
    others = [groups[cat] for cat in CATEGORIES if cat != "noise"]
    return {"all": float(np.mean(list(groups.values()))), "noise": groups["noise"], "other": float(np.mean(others)),
            "mean_15": float(np.mean([per_corruption[c] for c in CORRUPTIONS]))}


def mean_corruption_error(accuracies: Mapping[str, Sequence[float]], clean_accuracy: float | None = None,
                          *, alexnet_clean_err: float = ALEXNET_CLEAN_ERR) -> dict[str, float]:
    """mCE = mean_c CE_c with CE_c = sum_s E_{s,c} / sum_s E^AlexNet_{s,c} (Hendrycks & Dietterich);
    since ``ALEXNET_ERR`` holds AlexNet's means over severities, CE_c = mean_s E_{s,c} / ALEXNET_ERR[c],
    exactly the AugMix code's ``compute_mce`` (there in percent).
    Relative mCE = mean_c [sum_s (E_{s,c} - E_clean)] / [sum_s (E^AlexNet_{s,c} - E^AlexNet_clean)]
    (needs ``clean_accuracy``).  ``accuracies[c]`` holds the 5 per-severity accuracies; all 15
    corruptions are required."""
    missing = [c for c in CORRUPTIONS if c not in accuracies]
    if missing:
        raise ValueError(f"mCE needs all 15 corruptions; missing {missing}")
    errors = {c: 1 - float(np.mean(accuracies[c])) for c in CORRUPTIONS}
    out = {"mce": float(np.mean([errors[c] / ALEXNET_ERR[c] for c in CORRUPTIONS]))}
    if clean_accuracy is not None:
        clean_err = 1 - clean_accuracy
        out["relative_mce"] = float(np.mean([(errors[c] - clean_err) / (ALEXNET_ERR[c] - alexnet_clean_err)
                                             for c in CORRUPTIONS]))
    return out


def is_noise_sequence(name: str) -> bool:
    """The public -P evaluation's rule (``'noise' in p``): noise sequences are not temporally
    related, so their frames are compared with the first frame."""
    return "noise" in name


def flip_probability(predictions: np.ndarray | Sequence[np.ndarray], *, noise: bool, difficulty: int = 1) -> float:
    """Flip probability of -P sequences (the paper's "Datasets" paragraph, ImageNet-P/test.py):
    FP = 1/m sum_i 1/|pairs_i| sum_{(a, b) in pairs_i} [f(x_b^(i)) != f(x_a^(i))], where pairs_i are
    (t - d, t) for t >= d (consecutive frames at step d = ``difficulty``) or, for noise sequences,
    (0, t) for t >= 1 (against the first frame; the step is then 1).  ``predictions`` is (m, n) or
    a list of m per-sequence vectors (videos may differ in length: each sequence's own mean, then
    the mean over sequences, as the public code; for equal lengths this is the plain mean)."""
    if difficulty < 1:
        raise ValueError(f"difficulty must be >= 1, got {difficulty}")
    step = 1 if noise else difficulty
    sequences = [np.asarray(p) for p in predictions]
    if not sequences:
        raise ValueError("no sequences")
    rates = []
    for p in sequences:
        if p.ndim != 1 or p.shape[0] <= step:
            raise ValueError(f"every sequence needs more than {step} frames of 1-D predictions, got {p.shape}")
        reference = p[:1] if noise else p[:-step]
        rates.append((p[step:] != reference).mean())
    return float(np.mean(rates))


def flip_summary(flip_probabilities: Mapping[str, float], alexnet: Mapping[str, float] | None = None) -> dict:
    """Mean flip probability over the perturbations (the unnormalised figure of the CIFAR-10-P
    tables' "mFR" column) and without the noise ones; with AlexNet's flip probabilities, the flip
    rates FR_p = FP_p / FP_p^AlexNet and mFR = mean_p FR_p (ImageNet-P's), also without noise."""
    if not flip_probabilities:
        raise ValueError("no flip probabilities to summarise")
    no_noise = {p: v for p, v in flip_probabilities.items() if not is_noise_sequence(p)}
    summary = {"mean_flip_probability": float(np.mean(list(flip_probabilities.values())))}
    if no_noise:
        summary["mean_flip_probability_no_noise"] = float(np.mean(list(no_noise.values())))
    if alexnet is not None:
        missing = [p for p in flip_probabilities if p not in alexnet]
        if missing:
            raise ValueError(f"the AlexNet flip-probability table lacks {missing}")
        rates = {p: v / alexnet[p] for p, v in flip_probabilities.items()}
        summary["flip_rate"] = rates
        summary["mfr"] = float(np.mean(list(rates.values())))
        if no_noise:
            summary["mfr_no_noise"] = float(np.mean([rates[p] for p in no_noise]))
    return summary


def read_alexnet_flip_table(path: str | Path) -> dict[str, float]:
    """AlexNet's flip probabilities, user-supplied (they are not in any public code): a JSON object
    ``{"<perturbation>": <flip probability as a fraction in (0, 1]>, ...}`` keyed by the -P
    directory names, e.g. ``{"gaussian_noise": 0.0123, "rotate": 0.0456}``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (the AlexNet flip-probability table)")
    try:
        table = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error})") from None
    if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, int | float) and 0 < v <= 1
                                              for k, v in table.items()):
        raise ValueError(f"{path}: expected a JSON object {{perturbation: flip probability in (0, 1]}}")
    return {k: float(v) for k, v in table.items()}


def rms_calibration_error(confidence: np.ndarray, correct: np.ndarray, *, bin_size: int = 100,
                          estimator: str = "exact") -> float:
    """RMS calibration error (the paper's Table tab:results_imagenet_r_calibration):
    sqrt(sum_b |b| / n (conf_b - acc_b)^2) over bins of ``bin_size`` consecutive samples sorted by
    confidence (stable sort), the last bin also taking the n mod bin_size remainder; n < bin_size
    gives one bin.  ``estimator="public"`` reproduces the public ``calib_err``: its loop stops before
    the last bin (whose samples still count in n), and it fails for n < bin_size (here a ValueError)."""
    if estimator not in ("exact", "public"):
        raise ValueError(f"estimator must be 'exact' or 'public', got {estimator!r}")
    conf, corr = _sorted(confidence, correct)
    n = len(conf)
    if estimator == "public" and n < bin_size:
        raise ValueError(f"the public estimator needs at least bin_size={bin_size} samples, got {n}")
    starts = range(0, max(n // bin_size, 1) * bin_size, bin_size)
    bins = [(s, s + bin_size) for s in starts]
    bins[-1] = (bins[-1][0], n)
    if estimator == "public":
        bins = bins[:-1]
    total = sum((b - a) / n * (conf[a:b].mean() - corr[a:b].mean()) ** 2 for a, b in bins)
    return float(np.sqrt(total))


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, bins: int = 15) -> float:
    """ECE = sum_b |b| / n |conf_b - acc_b| over ``bins`` equal-width bins (lower, upper] of [0, 1]
    (Naeini et al.; the NoisyMix code's ``_ECELoss(n_bins=15)``)."""
    conf, corr = _sorted(confidence, correct)
    edges = np.linspace(0, 1, bins + 1)
    index = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, bins - 1)
    gap = np.abs(np.bincount(index, conf, bins) - np.bincount(index, corr, bins))  # |b| |conf_b - acc_b|
    return float(gap.sum() / len(conf))


def aurra(confidence: np.ndarray, correct: np.ndarray) -> float:
    """Area under the response-rate accuracy curve (ImageNet-R ``utils.aurra``):
    1/n sum_{k=1..n} acc(k most confident predictions); ties in confidence keep the public code's
    order (``argsort(confidence)[::-1]``)."""
    conf, corr = np.asarray(confidence, float), np.asarray(correct, float)
    if conf.shape != corr.shape or conf.ndim != 1 or conf.size == 0:
        raise ValueError(f"confidence {conf.shape} and correct {corr.shape} must be equal non-empty vectors")
    order = np.argsort(conf)[::-1]
    curve = np.cumsum(corr[order]) / np.arange(1, len(corr) + 1)
    return float(curve.mean())


def _sorted(confidence: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    conf, corr = np.asarray(confidence, float), np.asarray(correct, float)
    if conf.shape != corr.shape or conf.ndim != 1 or conf.size == 0:
        raise ValueError(f"confidence {conf.shape} and correct {corr.shape} must be equal non-empty vectors")
    order = np.argsort(conf, kind="stable")
    return conf[order], corr[order]


#: the temperatures ``fit_temperature`` searches (log-uniform bounds of the 1-D search)
TEMPERATURE_BOUNDS = (0.01, 100.0)


def _nll(logits: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    z = logits / temperature
    z = z - z.max(1, keepdims=True)
    log_norm = np.log(np.exp(z).sum(1))
    return float((log_norm - z[np.arange(len(labels)), labels]).mean())


def fit_temperature(logits: np.ndarray, labels: np.ndarray, bounds: tuple[float, float] = TEMPERATURE_BOUNDS) -> float:
    """Temperature scaling (Guo et al., 2017): the T > 0 minimising the mean negative log-likelihood
    of ``softmax(logits / T)`` on ``labels`` -- a 1-D bounded search over log T (Brent's method,
    ``scipy.optimize.minimize_scalar``; the NLL is convex in 1/T).  T > 1 softens the predictions
    (an over-confident model), T < 1 sharpens them (an under-confident one).

    Where every image's label has the largest logit the NLL falls all the way to T -> 0: its
    infimum is the lower bound.  The bounded search stops early there, where the NLL is flat to
    the last bit (issue 54: an all-correct model got an interior T = 0.088), so that case returns
    ``bounds[0]``: "at the search's bound", as a constant model's T is."""
    from scipy.optimize import minimize_scalar

    z, y = np.asarray(logits, float), np.asarray(labels)
    if z.ndim != 2 or y.shape != (len(z),) or len(z) == 0:
        raise ValueError(f"logits {z.shape} must be (N, K) and labels {y.shape} (N,), N > 0")
    if not np.isfinite(z).all():
        raise ValueError("logits must be finite")
    # d NLL / d(1/T) = mean(E_softmax[z] - z_label) < 0 at every T when each label's logit is a
    # maximum and some row is not constant: the NLL decreases monotonically as T falls
    if (z[np.arange(len(y)), y] >= z.max(1)).all() and (z.max(1) > z.min(1)).any():
        return float(bounds[0])
    lo, hi = np.log(bounds[0]), np.log(bounds[1])
    found = minimize_scalar(lambda t: _nll(z, y, float(np.exp(t))), bounds=(lo, hi), method="bounded",
                            options={"xatol": 1e-6})
    return float(np.exp(found.x))


def scaled_confidence(logits: np.ndarray, temperature: float) -> tuple[np.ndarray, np.ndarray]:
    """(max softmax probability, predicted class) of ``logits / temperature`` (the prediction is T's
    argmax too: scaling never changes the accuracy)."""
    z = np.asarray(logits, float) / temperature
    z = z - z.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    return p.max(1), p.argmax(1)


def fold_temperatures(logits: np.ndarray, labels: np.ndarray, folds: int = 2) -> list[float]:
    """The cross-fitted temperatures: image i is in fold ``i mod folds``, and ``[k]`` is the T fitted
    (``fit_temperature``) on the images *not* in fold k, the one to apply to the images of fold k (and,
    under shift, to their corrupted copies), so that no image is scaled by a T fitted on itself."""
    z, y = np.asarray(logits, float), np.asarray(labels)
    n = len(z)
    if folds < 2 or n < folds:
        raise ValueError(f"need at least {max(folds, 2)} images and 2 folds, got {n} images and {folds} folds")
    fold = np.arange(n) % folds
    return [fit_temperature(z[fold != k], y[fold != k]) for k in range(folds)]


def temperature_scaled(logits: np.ndarray, labels: np.ndarray, *, folds: int = 2, bin_size: int = 100,
                       estimator: str = "exact") -> dict:
    """RMS calibration error after temperature scaling, each image's temperature fitted on held-out
    images: the images are split into ``folds`` interleaved folds (image i in fold i mod folds), the
    temperature of each fold fitted on the others and applied to it, and the RMS error taken over
    every image so scaled (cross-fitting: no image is scored by a T fitted on itself).  Returns the
    temperature fitted on all images (``temperature``: what the model's confidence is off by), the
    folds' temperatures, the scaled RMS error and the scaled confidence gap (mean confidence minus
    accuracy, > 0: over-confident)."""
    z, y = np.asarray(logits, float), np.asarray(labels)
    n = len(z)
    temps = fold_temperatures(z, y, folds)
    fold = np.arange(n) % folds
    confidence, predicted = np.empty(n), np.empty(n, dtype=int)
    for k, t in enumerate(temps):
        confidence[fold == k], predicted[fold == k] = scaled_confidence(z[fold == k], t)
    correct = (predicted == y).astype(float)
    return {"temperature": fit_temperature(z, y), "fold_temperatures": temps,
            "rms_calibration_error": rms_calibration_error(confidence, correct, bin_size=bin_size,
                                                           estimator=estimator if n >= bin_size else "exact"),
            "confidence_gap": float(confidence.mean() - correct.mean())}


def reliability_edges(bins: int = 15) -> list[float]:
    """The ``bins + 1`` edges of equal-width confidence bins over [0, 1]."""
    return [float(e) for e in np.linspace(0, 1, bins + 1)]


def reliability_bins(confidence: np.ndarray, correct: np.ndarray, bins: int = 15) -> dict[str, list]:
    """The data of a reliability diagram (Guo et al., 2017, Fig. 1; Ovadia et al., 2019): per
    equal-width confidence bin (lower, upper] of [0, 1] (the first bin also takes 0, as
    ``expected_calibration_error`` bins them), its image ``count``, ``mean_confidence`` and
    ``accuracy`` (``None`` for an empty bin).  ECE = sum_b count_b / n |mean_confidence_b - accuracy_b|."""
    conf, corr = _sorted(confidence, correct)
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    edges = np.linspace(0, 1, bins + 1)
    index = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, bins - 1)
    count = np.bincount(index, minlength=bins)
    conf_sum, corr_sum = np.bincount(index, conf, bins), np.bincount(index, corr, bins)
    return {"count": [int(c) for c in count],
            "mean_confidence": [float(s / c) if c else None for s, c in zip(conf_sum, count, strict=True)],
            "accuracy": [float(s / c) if c else None for s, c in zip(corr_sum, count, strict=True)]}


def pool_reliability(diagrams: Sequence[Mapping[str, list]]) -> dict[str, list]:
    """Several ``reliability_bins`` of the same bins pooled as if their images were one set: counts
    added, each bin's mean confidence and accuracy weighted by its counts."""
    if not diagrams:
        raise ValueError("no reliability diagrams to pool")
    bins = len(diagrams[0]["count"])
    if any(len(d["count"]) != bins for d in diagrams):
        raise ValueError("reliability diagrams of different bins cannot be pooled")
    count = [sum(d["count"][b] for d in diagrams) for b in range(bins)]

    def pooled(key: str) -> list:
        return [sum(d[key][b] * d["count"][b] for d in diagrams if d["count"][b]) / count[b] if count[b] else None
                for b in range(bins)]

    return {"count": count, "mean_confidence": pooled("mean_confidence"), "accuracy": pooled("accuracy")}


def noise_floor_draws(confidence: np.ndarray, generator, *, draws: int = 200, bin_size: int = 100,
                      estimator: str = "exact") -> np.ndarray:
    """The RMS calibration error (``rms_calibration_error``, same bins and estimator) of ``draws``
    perfectly calibrated models with these confidences: each image correct with probability its
    confidence, correct_i ~ Bernoulli(confidence_i), drawn with ``generator`` (a ``torch.Generator``).
    Their spread is the estimator's noise floor: what a measured error cannot be told apart from.
    For the exact estimator E[RMS^2] = sum_b 1 / (n |b|) sum_{i in b} p_i (1 - p_i), so with bins of a
    fixed share of the images the floor shrinks like 1 / sqrt(n)."""
    import torch

    if estimator not in ("exact", "public"):
        raise ValueError(f"estimator must be 'exact' or 'public', got {estimator!r}")
    conf = np.sort(np.asarray(confidence, float), kind="stable")
    n = len(conf)
    if conf.ndim != 1 or n == 0 or not np.isfinite(conf).all() or conf.min() < 0 or conf.max() > 1:
        raise ValueError(f"confidence must be a non-empty vector of probabilities in [0, 1], got shape {conf.shape}")
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    if estimator == "public" and n < bin_size:
        raise ValueError(f"the public estimator needs at least bin_size={bin_size} samples, got {n}")
    uniform = torch.rand((draws, n), generator=generator, dtype=torch.float64).numpy()
    correct = (uniform < conf).astype(float)  # (draws, n), sorted by confidence as the estimator bins them
    starts = list(range(0, max(n // bin_size, 1) * bin_size, bin_size))
    bins = [(s, s + bin_size) for s in starts]
    bins[-1] = (bins[-1][0], n)
    if estimator == "public":
        bins = bins[:-1]
    total = np.zeros(draws)
    for a, b in bins:
        total += (b - a) / n * (conf[a:b].mean() - correct[:, a:b].mean(1)) ** 2
    return np.sqrt(total)
