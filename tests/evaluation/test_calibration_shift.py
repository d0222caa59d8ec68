"""Issue 46, item 3: calibration under shift as Ovadia et al. (2019) measure it.  The temperature that
scales a corrupted set is the one fitted on the clean test images (cross-fitted: image i's copies by
the T of the clean half without image i), checked against a model whose logits the test computes
itself and temperatures it fits by its own search."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import log_softmax

from fullscale.data import load_dataset
from fullscale.evaluation import Context, EvalOptions, corrupted_npy
from fullscale.evaluation.records import file_record
from fullscale.evaluation.shift_calibration import CleanFit
from fullscale.metrics import fold_temperatures
from noisymix_infra.io import save_npy

COUNT = 60  # test digits per severity block: under 100, so each set's RMS error is one bin, |conf - acc|
NAMES = ("gaussian_noise", "contrast")


class _Linear(torch.nn.Module):
    """logits = A (grey image, flattened): what the test computes again in float64 with numpy."""

    def __init__(self, weights: np.ndarray) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.from_numpy(weights).float(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(1).flatten(1) @ self.weight.T


def _grey(images_u8: torch.Tensor) -> np.ndarray:
    return (images_u8.double() / 255).mean(1).flatten(1).numpy()


@pytest.fixture(scope="module")
def weights() -> np.ndarray:
    """A ridge-regression head on the digits' training images: one-hot targets give logits of about
    [0, 1], far softer than the labels, so the fitted temperature is well below 1."""
    train = load_dataset("digits", "train")
    x, y = _grey(train.images), np.eye(10)[train.labels.numpy()]
    return np.linalg.solve(x.T @ x + 1.0 * np.eye(x.shape[1]), x.T @ y).T


def _nll(z: np.ndarray, y: np.ndarray, t: float) -> float:
    return float(-log_softmax(z / t, axis=1)[np.arange(len(y)), y].mean())


def _own_fit(z: np.ndarray, y: np.ndarray) -> float:
    """The NLL-minimising temperature by a golden-section search over log T (not the library's Brent)."""
    lo, hi = np.log(0.01), np.log(100.0)
    grid = np.linspace(lo, hi, 401)
    best = grid[np.argmin([_nll(z, y, np.exp(g)) for g in grid])]
    lo, hi = best - (hi - lo) / 400, best + (hi - lo) / 400
    ratio = (np.sqrt(5) - 1) / 2
    for _ in range(80):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if _nll(z, y, np.exp(a)) < _nll(z, y, np.exp(b)):
            hi = b
        else:
            lo = a
    return float(np.exp((lo + hi) / 2))


def _one_bin_rms(z: np.ndarray, y: np.ndarray, temps: np.ndarray) -> float:
    """RMS calibration error of fewer than 100 images (one bin): |mean confidence - accuracy|."""
    p = np.exp(log_softmax(z / temps[:, None], axis=1))
    return abs(float(p.max(1).mean() - (p.argmax(1) == y).mean()))


def _severity(images: torch.Tensor, name: str, s: int) -> torch.Tensor:
    """Two synthetic corruptions: additive noise from a fixed generator, and contrast towards grey."""
    x = images.float()
    if name == "contrast":
        x = 128 + (x - 128) * (1 - 0.18 * s)
    else:
        g = torch.Generator().manual_seed(s)
        x = x + 40 * s * torch.randn(x.shape, generator=g)
    return x.clamp(0, 255).round().to(torch.uint8)


def _c_set(root, images, labels) -> None:
    for name in NAMES:
        blocks = torch.cat([_severity(images, name, s) for s in range(1, 6)])
        save_npy(root / f"{name}.npy", blocks.permute(0, 2, 3, 1).numpy())
    save_npy(root / "labels.npy", np.tile(labels, 5))


def _evaluate(root, weights, done=None):
    """The -C suite on the set at ``root``; ``done``: entries a partial result holds, bound to these files."""
    labels = file_record(root / "labels.npy", 5 * COUNT)["sha256"]
    identity = {n: f"{file_record(root / f'{n}.npy', 5 * COUNT)['sha256']}+{labels}" for n in (done or {})}
    ctx = Context(_Linear(weights).eval(), torch.device("cpu"), {"dataset": "digits", "num_classes": 10}, root,
                  EvalOptions(corruptions=NAMES), done=dict(done or {}), done_identity=identity)
    return corrupted_npy(ctx)


def test_a_corrupted_set_is_scaled_by_the_clean_fitted_temperature(tmp_path, weights):
    test = load_dataset("digits", "test")
    images, labels = test.images[:COUNT], test.labels[:COUNT].numpy()
    _c_set(tmp_path, images, labels)
    results, summary, _ = _evaluate(tmp_path, weights)
    shift = summary["calibration_under_shift"]

    # the temperatures, fitted here by another search on logits computed here
    z_clean, y_clean = _grey(test.images) @ weights.T, test.labels.numpy()
    half = np.arange(len(y_clean)) % 2
    own_folds = [_own_fit(z_clean[half != k], y_clean[half != k]) for k in (0, 1)]
    assert shift["temperature"]["fold_temperatures"] == pytest.approx(own_folds, rel=1e-3)
    assert shift["temperature"]["all_clean_images"] == pytest.approx(_own_fit(z_clean, y_clean), rel=1e-3)
    assert shift["temperature"]["all_clean_images"] < 0.5  # the soft ridge logits: a real correction
    assert shift["matched_to_clean_images"] is True

    per_image = np.array(own_folds)[np.arange(COUNT) % 2]  # image i: the T of the half without it
    for name in NAMES:
        for s in range(1, 6):
            z = _grey(_severity(images, name, s)) @ weights.T
            cell = results[name][str(s)]["temperature_scaled"]
            assert cell["rms_calibration_error"] == pytest.approx(_one_bin_rms(z, labels, per_image), abs=1e-4)
            assert cell["temperatures"] == pytest.approx(sorted(own_folds), rel=1e-3)
            # not the temperature a fit on the corrupted set itself would give (what the field does not do)
            own_t = _own_fit(z, labels)
            if abs(np.log(own_t / own_folds[0])) > 0.3:
                assert abs(cell["rms_calibration_error"] - _one_bin_rms(z, labels, np.full(COUNT, own_t))) > 1e-3
            before = _one_bin_rms(z, labels, np.ones(COUNT))
            assert results[name][str(s)]["rms_calibration_error"] == pytest.approx(before, abs=1e-4)
            assert shift["per_corruption"][name][str(s)]["rms_calibration_error_scaled"] == cell[
                "rms_calibration_error"]

    # per severity: the mean over the corruptions, before and after, with the floor beside
    for s in range(1, 6):
        row = shift["per_severity"][str(s)]
        after = np.mean([results[n][str(s)]["temperature_scaled"]["rms_calibration_error"] for n in NAMES])
        assert row["rms_calibration_error_scaled"] == pytest.approx(after)
        assert row["rms_calibration_error"] == pytest.approx(
            np.mean([results[n][str(s)]["rms_calibration_error"] for n in NAMES]))
        assert 0 < row["noise_floor"]["mean"] <= row["noise_floor"]["p95"]
    # severity 0: the clean test images, cross-fitted alike (the calibration suite's convention)
    clean_temps = np.array(own_folds)[half]
    p = np.exp(log_softmax(z_clean / clean_temps[:, None], axis=1))
    assert shift["per_severity"]["0"]["confidence_gap_scaled"] == pytest.approx(
        p.max(1).mean() - (p.argmax(1) == y_clean).mean(), abs=1e-4)

    # the shifted reliability diagram pools the severity-5 sets of every corruption (as evaluated)
    pooled = shift["reliability"]["severity_5"]["as_evaluated"]
    z5 = np.concatenate([_grey(_severity(images, n, 5)) @ weights.T for n in NAMES])
    p5 = np.exp(log_softmax(z5, axis=1))
    bins = np.clip(np.ceil(p5.max(1) * 15).astype(int) - 1, 0, 14)
    assert pooled["count"] == np.bincount(bins, minlength=15).tolist()
    assert len(shift["reliability"]["edges"]) == 16 and shift["reliability"]["bins"] == 15


def test_the_cross_fit_scales_each_image_by_the_other_halfs_temperature():
    """Even images labelled as if at T = 0.5, odd ones at T = 2: the T fitted without the even images
    (on the odd ones, about 2) is the one applied to the even images, and the other way round."""
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, (4000, 10))
    true_t = np.where(np.arange(4000) % 2 == 0, 0.5, 2.0)
    p = np.exp(log_softmax(logits / true_t[:, None], axis=1))
    labels = (p.cumsum(1) > rng.random((4000, 1))).argmax(1)
    folds = fold_temperatures(logits, labels)
    assert folds[0] == pytest.approx(2.0, rel=0.1) and folds[1] == pytest.approx(0.5, rel=0.1)
    fit = CleanFit(1.0, tuple(folds), True, {}, np.empty(0))
    assert fit.temperatures(5).tolist() == [folds[0], folds[1], folds[0], folds[1], folds[0]]
    unmatched = CleanFit(1.3, tuple(folds), False, {}, np.empty(0))
    assert unmatched.temperatures(3).tolist() == [1.3] * 3 and unmatched.applied() == [1.3]


def test_a_set_not_of_the_clean_images_is_scaled_by_the_all_image_temperature(tmp_path, weights):
    test = load_dataset("digits", "test")
    order = np.arange(COUNT)[::-1].copy()  # the first images, reversed: the labels no longer line up
    images, labels = test.images[order], test.labels[order].numpy()
    _c_set(tmp_path, images, labels)
    results, summary, _ = _evaluate(tmp_path, weights)
    shift = summary["calibration_under_shift"]
    assert shift["matched_to_clean_images"] is False and "all clean images" in shift["temperature"]["applied"]
    t_all = shift["temperature"]["all_clean_images"]
    z = _grey(_severity(images, "contrast", 2)) @ weights.T
    cell = results["contrast"]["2"]["temperature_scaled"]
    assert cell["temperatures"] == [t_all]
    assert cell["rms_calibration_error"] == pytest.approx(_one_bin_rms(z, labels, np.full(COUNT, t_all)), abs=1e-4)


def test_a_resume_from_an_older_result_says_the_section_needs_a_rerun(tmp_path, weights):
    test = load_dataset("digits", "test")
    _c_set(tmp_path, test.images[:COUNT], test.labels[:COUNT].numpy())
    old = {"contrast": {str(s): {"accuracy": 0.5, "n": COUNT, "rms_calibration_error": 0.1, "ece": 0.1,
                                 "mean_confidence": 0.6, "confidence_gap": 0.1} for s in range(1, 6)}}
    results, summary, _ = _evaluate(tmp_path, weights, done=old)
    assert results["contrast"] == old["contrast"]  # kept as it was: a resume recomputes nothing
    assert "contrast" in summary["calibration_under_shift"]["not_measured"]
    assert "evaluate the suite anew" in summary["calibration_under_shift"]["not_measured"]
    assert summary["calibration"]["rms_calibration_error"] > 0  # the old keys still there
