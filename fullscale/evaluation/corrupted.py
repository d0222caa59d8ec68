"""The -C suites (CIFAR-10-C/100-C and Digits-C as ``.npy`` files, ImageNet-C as image folders):
accuracy and calibration per corruption and severity, the means, categories, transfer rows and
(ImageNet-C) mCE; and ImageNet-R, whose calibration summary is the clean split's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from fullscale.data import (
    FolderSet,
    imagenet_r_indices,
    imagenet_r_wnids,
    imagenet_wnids,
    read_c_set,
    read_class_folders,
)
from fullscale.data.registry import IMAGE_SIDE
from fullscale.evaluation.context import Context, Results
from fullscale.evaluation.inference import batch_logits, cpu_inference_model, logits_of
from fullscale.evaluation.own_split import calibration_summary
from fullscale.evaluation.records import (
    check_labels,
    file_record,
    folder_identity,
    folder_record,
    need_imagenet,
    need_root,
    nonempty_count,
)
from fullscale.evaluation.robustbench import RES224, listed_images, read_image_list, robustbench_summary
from fullscale.evaluation.shift_calibration import BINS, SHIFTED, clean_fit, scaled_cell, shift_summary
from fullscale.metrics import (
    accuracy,
    aurra,
    corruption_summary,
    expected_calibration_error,
    mean_corruption_error,
    reliability_bins,
    rms_calibration_error,
    transfer_summary,
)
from fullscale.vocabulary import (
    CATEGORIES,
    CORRUPTIONS,
    EXTRA_CORRUPTIONS,
    NOISE_CORRUPTIONS,
)
from noisymix_infra.io import printable
from noisymix_infra.progress import progress

__all__ = ["corrupted_npy", "imagenet_c", "imagenet_r"]


def _c_names(ctx: Context, present: Callable[[str], bool]) -> tuple[tuple[str, ...], list[str]]:
    """The corruptions to evaluate: those asked for (``--corruptions``), else the 15 and the 4 extras
    that are present.  A set missing one of the 15 is refused unless ``partial`` is set (the paper's
    means are over all 15): then it is evaluated and its absent standard corruptions listed.
    RobustBench's protocol: the 15, each required."""
    if ctx.options.protocol == "robustbench":
        missing = [n for n in CORRUPTIONS if not present(n)]
        if missing:
            raise FileNotFoundError(f"{ctx.data_root} lacks {len(missing)} of the 15 corruptions "
                                    f"({', '.join(missing)}); RobustBench's number is over all 15")
        return CORRUPTIONS, []
    if ctx.options.corruptions is not None:
        return tuple(ctx.options.corruptions), []
    names = tuple(n for n in (*CORRUPTIONS, *EXTRA_CORRUPTIONS) if present(n))
    if not names:
        raise FileNotFoundError(f"{ctx.data_root} holds none of the corruptions {', '.join(CORRUPTIONS)}")
    missing = [n for n in CORRUPTIONS if n not in names]
    if missing and not ctx.options.partial:
        raise FileNotFoundError(f"{ctx.data_root} lacks {len(missing)} of the 15 corruptions ({', '.join(missing)}); "
                                f"its means would not be the benchmark's: complete it, or pass --partial")
    return names, missing


def _set_calibration(confidence: np.ndarray, correct: np.ndarray, estimator: str) -> dict:
    """Calibration of one corrupted set (one corruption at one severity): RMS calibration error (bins
    of 100; the public estimator needs 100 images, so a smaller set takes the exact one), ECE (15
    bins), mean confidence and the signed gap, mean confidence minus accuracy (> 0: over-confident,
    < 0: under-confident), which RMS and ECE cannot tell apart (issue 31)."""
    if estimator == "public" and len(confidence) < 100:
        estimator = "exact"
    mean_confidence = float(np.mean(confidence))
    return {"rms_calibration_error": rms_calibration_error(confidence, correct, estimator=estimator),
            "ece": expected_calibration_error(confidence, correct), "mean_confidence": mean_confidence,
            "confidence_gap": mean_confidence - float(np.mean(correct)),
            # the paper's second calibration metric (tab:results_imagenet_r_calibration; issue 57, goal 3)
            "aurra": aurra(confidence, correct)}


_CALIBRATION_KEYS = ("rms_calibration_error", "ece", "confidence_gap")
_OPTIONAL_KEYS = ("aurra",)  # averaged where every cell has it (a record made before issue 57 lacks it)


def _c_calibration(ctx: Context, results: dict, names: list[str]) -> dict | None:
    """Calibration under corruption, the AugMix paper's convention for -C sets: each measure per
    corruption and severity, then averaged (per severity over the corruptions, per corruption over
    the severities, and over all); ``data`` names the sets.  ``None`` where an entry predates it."""
    entries = [results[c][str(s)] for c in names for s in range(1, 6)]
    if not entries or not all(all(k in e for k in _CALIBRATION_KEYS) for e in entries):
        return None

    keys = _CALIBRATION_KEYS + tuple(k for k in _OPTIONAL_KEYS if all(k in e for e in entries))

    def mean(cells: list[dict]) -> dict:
        return {k: float(np.mean([e[k] for e in cells])) for k in keys}

    return {"data": f"the corrupted sets at {printable(str(ctx.data_root))} (not the clean test images): "
                    f"{len(names)} corruption(s) x 5 severities, each set's measure averaged",
            **mean(entries),
            "per_severity": {str(s): mean([results[c][str(s)] for c in names]) for s in range(1, 6)},
            "per_corruption": {c: mean([results[c][str(s)] for s in range(1, 6)]) for c in names}}


def _c_summary(ctx: Context, results: dict, names: tuple[str, ...], missing: list[str], imagenet: bool) -> dict:
    per = {c: float(np.mean([results[c][str(s)]["accuracy"] for s in range(1, 6)])) for c in names}
    standard = {c: a for c, a in per.items() if c not in EXTRA_CORRUPTIONS}
    summary = corruption_summary(standard) if standard else {"per_corruption": {}}
    extras = {c: a for c, a in per.items() if c in EXTRA_CORRUPTIONS}
    # every mean says how many corruptions it covers (15 for the benchmark's)
    summary["n_corruptions"] = len(standard)
    if "mean_accuracy_no_noise" in summary:
        summary["n_corruptions_no_noise"] = sum(c not in NOISE_CORRUPTIONS for c in standard)
    summary["per_category_n_corruptions"] = {cat: sum(m in standard for m in members)
                                             for cat, members in CATEGORIES.items() if cat in summary["per_category"]}
    if extras:  # reported apart: the paper's means are over the 15
        summary["extras"] = extras
    calibration = _c_calibration(ctx, results, list(standard) or list(per))
    if calibration is not None:
        summary["calibration"] = calibration
    if missing:
        summary["missing_corruptions"] = missing
    if ctx.clean_accuracy is not None:
        summary["clean_accuracy"] = ctx.clean_accuracy
        if ctx.clean_accuracy_from is not None:
            summary["clean_accuracy_from"] = ctx.clean_accuracy_from
    if all(c in standard for c in CORRUPTIONS):  # tab:results_transfer's all / noise / other
        summary["transfer"] = transfer_summary(standard)
    if imagenet and all(c in results for c in CORRUPTIONS):
        # mCE is normalised by AlexNet's ImageNet-C errors: defined for ImageNet-C only
        summary.update(mean_corruption_error({c: [results[c][str(s)]["accuracy"] for s in range(1, 6)]
                                              for c in CORRUPTIONS}, ctx.clean_accuracy))
    return summary




def check_resolution(ctx: Context, size: tuple[int, int], root: Path) -> None:
    """A -C/-P set at another resolution than the run's data set is refused: its images would not be
    preprocessed as the clean test images are (e.g. a transfer model takes 32 x 32 CIFAR images and
    upsamples them itself; a pre-upsampled -C set would skip its test transform)."""
    expected = IMAGE_SIDE.get(str(ctx.config.get("dataset")))
    if expected is not None and tuple(size) != (expected, expected):
        raise ValueError(f"{printable(str(root))}: the set's images are {size[0]}x{size[1]}, the run's "
                         f"{ctx.config.get('dataset')} images {expected}x{expected}; use the set at the data set's "
                         "own resolution")


def corrupted_npy(ctx: Context) -> Results:
    """CIFAR-10-C/100-C (and Digits-C): accuracy per corruption and severity, means, categories."""
    root = need_root(ctx, "a -C set of <corruption>.npy and labels.npy")
    names, missing = _c_names(ctx, lambda n: (root / f"{n}.npy").is_file())
    data = read_c_set(root, names)
    check_labels(data.labels, ctx.num_classes, root / "labels.npy")
    check_resolution(ctx, data.image_size, root)
    labels = file_record(root / "labels.npy", data.count)
    results, files = {n: e for n, e in ctx.done.items() if n in names}, [labels]
    model = ctx.model
    if ctx.device.type == "cpu" and any(n not in results for n in names):
        model = cpu_inference_model(ctx.model, data.images(names[0], 1)[:ctx.batch_size])
    # calibration under shift (issue 46): the temperature fitted on the clean test images, applied
    # unchanged to every corrupted set; the clean logits are computed here, whatever suite ran before
    estimator = "exact" if ctx.options.rms_estimator == "public" and data.count < 100 else ctx.options.rms_estimator
    fit = clean_fit(ctx, model, data.labels, estimator)
    for name in progress(names, desc="corruptions", unit="corruption"):
        record = file_record(data.path(name), 5 * data.count)
        files.append(record)
        identity = f"{record['sha256']}+{labels['sha256']}"
        if name in results and ctx.done_identity.get(name) == identity:
            continue
        entry = {}
        for severity in range(1, 6):
            logits = logits_of(model, data.images(name, severity), ctx.device, ctx.batch_size)
            confidence, predicted = logits.softmax(1).max(1)
            correct = predicted.numpy() == data.labels
            cell = {"accuracy": accuracy(predicted.numpy(), data.labels), "n": data.count,
                    **_set_calibration(confidence.numpy(), correct, ctx.options.rms_estimator)}
            if severity == SHIFTED:  # the shifted reliability diagram pools these bins over the corruptions
                cell["reliability"] = reliability_bins(confidence.numpy(), correct, BINS)
            if not isinstance(fit, str):
                cell["temperature_scaled"] = scaled_cell(logits.double().numpy(), data.labels, fit, estimator,
                                                         f"{name}:{severity}", reliability=severity == SHIFTED)
            entry[str(severity)] = cell
        results[name] = entry
        ctx.on_result(name, entry, identity)
    summary = _c_summary(ctx, results, names, missing, imagenet=False)
    standard = [n for n in names if n not in EXTRA_CORRUPTIONS] or list(names)  # as the calibration means
    summary["calibration_under_shift"] = shift_summary(results, standard, fit)
    if ctx.options.protocol == "robustbench":
        summary["robustbench"] = robustbench_summary(results, names, data.count, "ToTensor (none)")
    return results, summary, files


def imagenet_c(ctx: Context) -> Results:
    """ImageNet-C (``<corruption>/<severity>/<wnid>/*.JPEG``): as the -C suites, plus mCE and (with a
    clean accuracy from RUN/eval/clean.json) relative mCE, normalised by AlexNet's errors.  The images
    are preprocessed as AugMix's ``test_c`` does (resize 256, centre crop 224); ``--resize 0`` gives
    Hendrycks's ImageNet-C/test.py (centre crop only, the stored images being 224 x 224)."""
    need_imagenet(ctx)
    root = need_root(ctx, "ImageNet-C: <corruption>/<severity>/<wnid>/*.JPEG")
    names, missing = _c_names(ctx, lambda n: (root / n).is_dir())
    for name in names:
        for severity in range(1, 6):
            if not (root / name / str(severity)).is_dir():
                raise FileNotFoundError(f"{root / name / str(severity)} not found (5 severities per corruption)")
    results, files = {n: e for n, e in ctx.done.items() if n in names}, []
    robustbench = ctx.options.protocol == "robustbench"
    if robustbench:  # its 5,000 listed images of each set, resized to 224 x 224
        listed = read_image_list(ctx.options.image_list)
        files.append(file_record(Path(ctx.options.image_list), len(listed)))

    def read(folder: Path) -> FolderSet:
        if robustbench:
            return listed_images(folder, listed, imagenet_wnids(), RES224)
        return read_class_folders(folder, imagenet_wnids(), ctx.options.preprocess)

    for name in progress(names, desc="corruptions", unit="corruption"):
        sets = [read(root / name / str(s)) for s in range(1, 6)]
        for data in sets:
            nonempty_count(len(data), data.root)
        files += [folder_record(d) for d in sets]
        # the five severity folders as they are now: a folder replaced in place is evaluated anew
        identity = folder_identity(root / name, [sample for d in sets for sample in d.samples])
        if name in results and ctx.done_identity.get(name) == identity:
            continue
        entry = {}
        for severity, data in enumerate(sets, 1):
            confidences, corrects = [], []
            for x, y in data.batches(ctx.batch_size, ctx.options.workers):
                confidence, predicted = batch_logits(ctx.model, x, ctx.device).softmax(1).max(1)
                confidences.append(confidence.cpu().numpy())
                corrects.append((predicted.cpu() == y.cpu()).numpy())
            correct = np.concatenate(corrects)
            entry[str(severity)] = {"accuracy": float(correct.mean()), "n": len(data),
                                    **_set_calibration(np.concatenate(confidences), correct,
                                                       ctx.options.rms_estimator)}
        results[name] = entry
        ctx.on_result(name, entry, identity)
    summary = _c_summary(ctx, results, names, missing, imagenet=True)
    if robustbench:
        summary["robustbench"] = robustbench_summary(results, names, len(listed), "Res224")
    return results, summary, files


def imagenet_r(ctx: Context) -> Results:
    """ImageNet-R (``<wnid>/*.jpg``, 200 classes): the 1000-way logits restricted to its 200 classes
    (the public ``imagenet_r_mask``); accuracy, RMS calibration error, ECE and AURRA."""
    need_imagenet(ctx)
    data = read_class_folders(need_root(ctx, "ImageNet-R class folders"), imagenet_r_wnids(), ctx.options.preprocess)
    nonempty_count(len(data), data.root)
    keep = imagenet_r_indices()
    logits, labels = [], []
    for x, y in progress(data.batches(ctx.batch_size, ctx.options.workers), desc="imagenet-r",
                         total=-(-len(data) // ctx.batch_size)):
        logits.append(batch_logits(ctx.model, x, ctx.device)[:, keep])
        labels.append(y)
    summary = calibration_summary(torch.cat(logits), torch.cat(labels), ctx.options.rms_estimator)
    return {"imagenet-r": {"accuracy": summary["accuracy"], "n": len(data)}}, summary, [folder_record(data)]

