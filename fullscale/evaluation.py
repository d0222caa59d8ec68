"""Evaluation suites (docs/results-schema.md): one function per suite, registered by name.

Each suite takes a ``Context`` and returns ``(results, summary, files)``.  The model runs batched
under ``torch.inference_mode`` (bf16 autocast and channels_last on CUDA); -C/-P ``.npy`` sets are
read one memory-mapped severity block (or slice of sequences) at a time and image folders through
DataLoader workers, so no whole corrupted set is ever in memory.  After each corruption or
perturbation the suite calls ``ctx.on_result(name, entry, identity)`` so the caller can write a
partial, resumable JSON; entries already in ``ctx.done`` are not recomputed when the files they were
computed from are the same (``identity``: the content hash of a ``.npy`` file; the name, size and
modification time of every image or video of a folder), so a set replaced in place is evaluated
anew instead of merged with the old one's results (issues 23, 32).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fullscale.augment import to_float
from fullscale.corruptions.perturbations import PERTURBATIONS
from fullscale.data import (
    DATASETS,
    FolderSet,
    Preprocess,
    imagenet_r_indices,
    imagenet_r_wnids,
    imagenet_wnids,
    load_dataset,
    read_c_set,
    read_class_folders,
    read_p_set,
    read_video_folders,
)
from fullscale.data.imagenet import read_val_folder
from fullscale.data.registry import IMAGE_SIDE
from fullscale.metrics import (
    accuracy,
    aurra,
    corruption_summary,
    expected_calibration_error,
    flip_probability,
    flip_summary,
    is_noise_sequence,
    mean_corruption_error,
    read_alexnet_flip_table,
    rms_calibration_error,
    transfer_summary,
)
from fullscale.vocabulary import (
    CATEGORIES,
    CORRUPTIONS,
    EXTRA_CORRUPTIONS,
    NOISE_CORRUPTIONS,
    P_COLUMNS,
    P_WEATHER_CHOICES,
)
from infra.io import printable, sha256_file
from infra.progress import progress

__all__ = ["FGSM_EPSILONS", "SUITES", "Context", "EvalOptions", "cpu_inference_model", "logits_of", "run_suite"]

#: pixel-space epsilons of the FGSM suite (images in [0, 1]): 1, 2, 4 and 8 grey levels
FGSM_EPSILONS = (1 / 255, 2 / 255, 4 / 255, 8 / 255)
Results = tuple[dict, dict, list]
# Images per model call when none is given.  On the CPU a small call keeps the activations of one
# call small; in repeated runs of `noisymix bench evaluate -- --batch 64` and `--batch 500` (width 8
# and 16, 2 threads) neither size was measurably faster than the other (benchmarks/RESULTS.md,
# issue 22; what pays there is the frozen model, cpu_inference_model).  An accelerator wants
# large calls.
CPU_BATCH = 64
ACCELERATOR_BATCH = 500


@dataclass(frozen=True)
class EvalOptions:
    """Everything that changes a suite's numbers (stored in the JSON; a resume needs equal options)."""

    # images per model call; 0: by device (CPU_BATCH on the CPU, ACCELERATOR_BATCH elsewhere)
    batch_size: int = 0
    workers: int = 2  # DataLoader processes decoding image folders / videos
    rms_estimator: str = "exact"  # "exact" | "public" (fullscale.metrics.rms_calibration_error)
    epsilons: tuple[float, ...] = FGSM_EPSILONS
    corruptions: tuple[str, ...] | None = None  # None: every standard -C / -P name present
    weather: str = "snow"  # the -P weather column: "snow" (paper) or "spatter" (public script)
    alexnet_flip: str | None = None  # JSON of AlexNet's flip probabilities, for mFR
    preprocess: Preprocess = field(default_factory=Preprocess)
    # a -C set missing one of the 15 is an error unless asked for: its means are not the benchmark's
    partial: bool = False

    def __post_init__(self) -> None:
        if self.batch_size < 0 or self.workers < 0:
            raise ValueError(f"need batch_size >= 0 (0: by device) and workers >= 0, "
                             f"got {self.batch_size}, {self.workers}")
        if self.rms_estimator not in ("exact", "public"):
            raise ValueError(f"rms_estimator must be 'exact' or 'public', got {self.rms_estimator!r}")
        if self.weather not in P_WEATHER_CHOICES:
            raise ValueError(f"weather must be one of {P_WEATHER_CHOICES}, got {self.weather!r}")
        if not self.epsilons or any(not 0 <= e <= 1 for e in self.epsilons):
            raise ValueError(f"FGSM epsilons must be in [0, 1] (pixel scale), got {self.epsilons}")

    def as_dict(self) -> dict:
        return {"batch_size": self.batch_size, "rms_estimator": self.rms_estimator,
                "epsilons": list(self.epsilons), "weather": self.weather,
                "corruptions": None if self.corruptions is None else list(self.corruptions),
                "alexnet_flip": self.alexnet_flip,
                "preprocess": {"resize": self.preprocess.resize, "crop": self.preprocess.crop},
                "partial": self.partial}


@dataclass
class Context:
    """What a suite needs: the model, the run's config, the data root, options and resume state."""

    model: nn.Module
    device: torch.device
    config: dict
    data_root: Path | None
    options: EvalOptions = field(default_factory=EvalOptions)
    done: dict = field(default_factory=dict)
    # the data identity each entry of ``done`` was computed from (a -C set's file and labels hashes):
    # an entry of another set under the same name is recomputed, not reused (issue 23)
    done_identity: dict = field(default_factory=dict)
    on_result: Callable[..., None] = lambda name, entry, identity=None: None
    clean_accuracy: float | None = None  # for relative mCE / the -C summary, when known
    # where clean_accuracy was read (RUN/eval/clean.json: its path, data and options), for the summary
    clean_accuracy_from: dict | None = None

    @property
    def num_classes(self) -> int:
        return int(self.config["num_classes"])

    @property
    def batch_size(self) -> int:
        """``options.batch_size``, or by device when it is 0 (``CPU_BATCH``, ``ACCELERATOR_BATCH``)."""
        if self.options.batch_size:
            return self.options.batch_size
        return CPU_BATCH if self.device.type == "cpu" else ACCELERATOR_BATCH


# --------------------------------------------------------------------------- model application


def logits_of(model: nn.Module, images_u8: Tensor, device: torch.device, batch: int = 1000) -> Tensor:
    """Float logits (N, K) on the CPU of uint8 images (N, 3, H, W), in batches of ``batch``."""
    return torch.cat([_logits(model, images_u8[s:s + batch], device) for s in range(0, images_u8.shape[0], batch)])


def _logits(model: nn.Module, images_u8: Tensor, device: torch.device) -> Tensor:
    cuda = device.type == "cuda"
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
        x = to_float(images_u8.to(device, non_blocking=True))
        if cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        return _finite(model(x).float().cpu())


def cpu_inference_model(model: nn.Module, example_u8: Tensor) -> nn.Module:
    """On the CPU, ``model`` traced, frozen and optimised for inference (TorchScript: oneDNN folds
    each BatchNorm into its convolution and fuses the ReLUs), for the -C suites' tens of thousands
    of images: PreActResNet-18 at widths 8 and 16, batch 64, 2 threads ran 2.6x the images/s of
    eager mode (`noisymix bench evaluate`; benchmarks/RESULTS.md, issue 22).  Returned only when
    its logits on ``example_u8`` agree with the eager model's to float32 rounding (summation order
    differs); otherwise, and when tracing fails (a model TorchScript cannot trace), the eager model
    itself."""
    with torch.inference_mode():
        x = to_float(example_u8)
        reference = model(x).float()
    if not bool(torch.isfinite(reference).all()):
        return model  # nothing to compare against: the eager model's logits are refused where used (_finite)
    try:
        # TorchScript is deprecated in favour of torch.compile, which on the CPU compiles C++ for tens
        # of seconds per model (longer than a Digits-C evaluation); should TorchScript go, the
        # except below keeps the eager model
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            fast = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, x, check_trace=False)))
            with torch.inference_mode():
                got = fast(x).float()
    except Exception:  # any tracing failure: the eager model stays correct
        return model
    scale = float(reference.abs().max()) or 1.0
    return fast if torch.allclose(got, reference, rtol=1e-4, atol=1e-5 * scale) else model


def _finite(logits: Tensor) -> Tensor:
    """``logits``, refused when any is NaN/inf: a diverged model's argmax is class 0 everywhere
    and would be reported as a (chance-level) accuracy instead of an error."""
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("the model gives non-finite logits (NaN/inf): its weights are broken "
                         "(a diverged run?); nothing evaluated")
    return logits


def _file_record(path: Path, count: int) -> dict:
    return {"path": str(path), "count": int(count), "sha256": sha256_file(path)}


def _folder_record(data: FolderSet) -> dict:
    return {"path": str(data.root), "count": len(data), "sha256": data.listing_sha256(),
            "sha256_of": "listing (relative path, size, label)"}


def _folder_identity(root: Path, samples: list[tuple[Path, int]]) -> str:
    """A cheap identity of image/video folders for resuming: every file's path under ``root``,
    size, modification time and label.  ``listing_sha256`` (the record of what was read) has no
    times, so a file replaced in place by one of the same size would not change it."""
    digest = hashlib.sha256()
    for path, label in samples:
        stat = path.stat()
        digest.update(os.fsencode(path.relative_to(root)) + f"\t{stat.st_size}\t{stat.st_mtime_ns}\t{label}\n".encode())
    return digest.hexdigest()


def _nonempty(n: int, where: object) -> int:
    """``n``, refused when 0: an accuracy over no images is 0/0, not a number to report."""
    if n <= 0:
        raise ValueError(f"{printable(str(where))} holds no images: nothing to evaluate")
    return n


def _check_labels(labels: np.ndarray, num_classes: int, where: Path) -> None:
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"{where}: labels outside [0, {num_classes}) of the run's model")


def _need_root(ctx: Context, what: str) -> Path:
    if ctx.data_root is None:
        raise ValueError(f"this suite needs --data-root DIR: {what}")
    if not ctx.data_root.is_dir():
        raise FileNotFoundError(f"{ctx.data_root} is not a directory ({what})")
    return ctx.data_root


def _need_imagenet(ctx: Context) -> None:
    if ctx.num_classes != 1000:
        raise ValueError(f"ImageNet suites need a 1000-class model; this run has {ctx.num_classes} classes")


# --------------------------------------------------------------------------- the run's test split


@dataclass(frozen=True)
class _TestData:
    batches: Callable[[], Iterator[tuple[Tensor, Tensor]]]  # uint8 images, long labels
    n: int
    root: str
    files: list


def _test_data(ctx: Context) -> _TestData:
    """The test split of the run's own dataset: built-in/CIFAR in memory (it is small), ImageNet
    (``dataset: imagenet``) as class folders of the validation set under --data-root."""
    dataset, bs = ctx.config.get("dataset"), ctx.batch_size
    if dataset == "imagenet":
        _need_imagenet(ctx)
        data = read_val_folder(_need_root(ctx, "the ImageNet validation images (class folders, or flat with "
                                          "LOC_val_solution.csv)"), imagenet_wnids(), ctx.options.preprocess)
        _nonempty(len(data), data.root)
        return _TestData(lambda: data.batches(bs, ctx.options.workers), len(data), str(data.root),
                         [_folder_record(data)])
    if dataset not in DATASETS:
        raise ValueError(f"the run's dataset {dataset!r} has no test split here; "
                         f"known: imagenet, {', '.join(DATASETS)}")
    root = ctx.data_root or ctx.config.get("data_root") or None
    test = load_dataset(dataset, "test", root)
    _nonempty(len(test), f"the {dataset} test split ({test.source})")
    if test.num_classes != ctx.num_classes:
        raise ValueError(f"{dataset} has {test.num_classes} classes, the run's model {ctx.num_classes}")
    files = []
    from fullscale.data.cifar import LAYOUT

    if dataset in LAYOUT and Path(test.source).is_dir():
        files = [_file_record(Path(test.source) / f, len(test)) for f in LAYOUT[dataset]["test"]]

    def batches() -> Iterator[tuple[Tensor, Tensor]]:
        for s in range(0, len(test), bs):
            yield test.images[s:s + bs], test.labels[s:s + bs]

    return _TestData(batches, len(test), test.source, files)


def clean(ctx: Context) -> Results:
    """Clean top-1 accuracy on the run's test split."""
    data = _test_data(ctx)
    correct = sum(int((_logits(ctx.model, x, ctx.device).argmax(1) == y).sum())
                  for x, y in progress(data.batches(), desc="clean", total=-(-data.n // ctx.batch_size)))
    acc = correct / data.n
    return {"clean": {"accuracy": acc, "n": data.n}}, {"accuracy": acc}, data.files


def _calibration_summary(logits: Tensor, labels: Tensor, estimator: str) -> dict:
    conf, pred = logits.softmax(1).max(1)
    correct = (pred == labels).numpy().astype(float)
    conf = conf.numpy().astype(float)
    return {"accuracy": float(correct.mean()),
            "rms_calibration_error": rms_calibration_error(conf, correct, estimator=estimator),
            "ece": expected_calibration_error(conf, correct), "aurra": aurra(conf, correct),
            "rms_estimator": estimator,
            # the sign RMS and ECE lack (> 0: over-confident), as every -C set records it (issue 31)
            "mean_confidence": float(conf.mean()), "confidence_gap": float(conf.mean() - correct.mean())}


def calibration(ctx: Context) -> Results:
    """RMS calibration error (bins of 100), ECE (15 bins) and AURRA on the run's test split."""
    data = _test_data(ctx)
    logits, labels = [], []
    for x, y in progress(data.batches(), desc="calibration", total=-(-data.n // ctx.batch_size)):
        logits.append(_logits(ctx.model, x, ctx.device))
        labels.append(y)
    summary = _calibration_summary(torch.cat(logits), torch.cat(labels), ctx.options.rms_estimator)
    return {"calibration": {"accuracy": summary["accuracy"], "n": data.n}}, summary, data.files


def fgsm(ctx: Context) -> Results:
    """Accuracy under FGSM (Goodfellow et al.): x' = clip(x + eps sign(grad_x CE(f(x), y)), 0, 1), with
    x the [0, 1] image *before* the model's own normalisation, so eps is in pixel units (8/255 =
    8 grey levels).  Gradients in float32 (no autocast: the sign of small gradients matters)."""
    data = _test_data(ctx)
    correct = dict.fromkeys(ctx.options.epsilons, 0)
    for x_u8, y in progress(data.batches(), desc="fgsm", total=-(-data.n // ctx.batch_size)):
        x = to_float(x_u8.to(ctx.device)).requires_grad_(True)
        y = y.to(ctx.device)
        (grad,) = torch.autograd.grad(F.cross_entropy(_finite(ctx.model(x)), y), x)
        step = grad.sign()
        with torch.inference_mode():
            for eps in ctx.options.epsilons:
                correct[eps] += int((ctx.model((x + eps * step).clamp(0, 1)).argmax(1) == y).sum())
    results = {f"eps={eps:.6g}": {"accuracy": correct[eps] / data.n, "n": data.n} for eps in ctx.options.epsilons}
    summary = {"epsilons": list(ctx.options.epsilons), "accuracy": [correct[e] / data.n for e in ctx.options.epsilons]}
    return results, summary, data.files


# --------------------------------------------------------------------------- -C suites


def _c_names(ctx: Context, present: Callable[[str], bool]) -> tuple[tuple[str, ...], list[str]]:
    """The corruptions to evaluate: those asked for (``--corruptions``), else the 15 and the 4 extras
    that are present.  A set missing one of the 15 is refused unless ``partial`` is set (the paper's
    means are over all 15): then it is evaluated and its absent standard corruptions listed."""
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
            "confidence_gap": mean_confidence - float(np.mean(correct))}


_CALIBRATION_KEYS = ("rms_calibration_error", "ece", "confidence_gap")


def _c_calibration(ctx: Context, results: dict, names: list[str]) -> dict | None:
    """Calibration under corruption, the AugMix paper's convention for -C sets: each measure per
    corruption and severity, then averaged (per severity over the corruptions, per corruption over
    the severities, and over all); ``data`` names the sets.  ``None`` where an entry predates it."""
    entries = [results[c][str(s)] for c in names for s in range(1, 6)]
    if not entries or not all(all(k in e for k in _CALIBRATION_KEYS) for e in entries):
        return None

    def mean(cells: list[dict]) -> dict:
        return {k: float(np.mean([e[k] for e in cells])) for k in _CALIBRATION_KEYS}

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


#: the side of the images of the in-memory data sets (their -C sets must match it): the data registry's
_DATASET_SIZE = IMAGE_SIDE


def _check_resolution(ctx: Context, size: tuple[int, int], root: Path) -> None:
    """A -C/-P set at another resolution than the run's data set is refused: its images would not be
    preprocessed as the clean test images are (e.g. a transfer model takes 32 x 32 CIFAR images and
    upsamples them itself; a pre-upsampled -C set would skip its test transform)."""
    expected = _DATASET_SIZE.get(str(ctx.config.get("dataset")))
    if expected is not None and tuple(size) != (expected, expected):
        raise ValueError(f"{printable(str(root))}: the set's images are {size[0]}x{size[1]}, the run's "
                         f"{ctx.config.get('dataset')} images {expected}x{expected}; use the set at the data set's "
                         "own resolution")


def corrupted_npy(ctx: Context) -> Results:
    """CIFAR-10-C/100-C (and Digits-C): accuracy per corruption and severity, means, categories."""
    root = _need_root(ctx, "a -C set of <corruption>.npy and labels.npy")
    names, missing = _c_names(ctx, lambda n: (root / f"{n}.npy").is_file())
    data = read_c_set(root, names)
    _check_labels(data.labels, ctx.num_classes, root / "labels.npy")
    _check_resolution(ctx, data.image_size, root)
    labels = _file_record(root / "labels.npy", data.count)
    results, files = {n: e for n, e in ctx.done.items() if n in names}, [labels]
    model = ctx.model
    if ctx.device.type == "cpu" and any(n not in results for n in names):
        model = cpu_inference_model(ctx.model, data.images(names[0], 1)[:ctx.batch_size])
    for name in progress(names, desc="corruptions", unit="corruption"):
        record = _file_record(data.path(name), 5 * data.count)
        files.append(record)
        identity = f"{record['sha256']}+{labels['sha256']}"
        if name in results and ctx.done_identity.get(name) == identity:
            continue
        entry = {}
        for severity in range(1, 6):
            logits = logits_of(model, data.images(name, severity), ctx.device, ctx.batch_size)
            confidence, predicted = logits.softmax(1).max(1)
            correct = predicted.numpy() == data.labels
            entry[str(severity)] = {"accuracy": accuracy(predicted.numpy(), data.labels), "n": data.count,
                                    **_set_calibration(confidence.numpy(), correct, ctx.options.rms_estimator)}
        results[name] = entry
        ctx.on_result(name, entry, identity)
    return results, _c_summary(ctx, results, names, missing, imagenet=False), files


def imagenet_c(ctx: Context) -> Results:
    """ImageNet-C (``<corruption>/<severity>/<wnid>/*.JPEG``): as the -C suites, plus mCE and (with a
    clean accuracy from RUN/eval/clean.json) relative mCE, normalised by AlexNet's errors.  The images
    are preprocessed as AugMix's ``test_c`` does (resize 256, centre crop 224); ``--resize 0`` gives
    Hendrycks's ImageNet-C/test.py (centre crop only, the stored images being 224 x 224)."""
    _need_imagenet(ctx)
    root = _need_root(ctx, "ImageNet-C: <corruption>/<severity>/<wnid>/*.JPEG")
    names, missing = _c_names(ctx, lambda n: (root / n).is_dir())
    for name in names:
        for severity in range(1, 6):
            if not (root / name / str(severity)).is_dir():
                raise FileNotFoundError(f"{root / name / str(severity)} not found (5 severities per corruption)")
    results, files = {n: e for n, e in ctx.done.items() if n in names}, []
    for name in progress(names, desc="corruptions", unit="corruption"):
        sets = [read_class_folders(root / name / str(s), imagenet_wnids(), ctx.options.preprocess) for s in range(1, 6)]
        for data in sets:
            _nonempty(len(data), data.root)
        files += [_folder_record(d) for d in sets]
        # the five severity folders as they are now: a folder replaced in place is evaluated anew
        identity = _folder_identity(root / name, [sample for d in sets for sample in d.samples])
        if name in results and ctx.done_identity.get(name) == identity:
            continue
        entry = {}
        for severity, data in enumerate(sets, 1):
            confidences, corrects = [], []
            for x, y in data.batches(ctx.batch_size, ctx.options.workers):
                confidence, predicted = _logits(ctx.model, x, ctx.device).softmax(1).max(1)
                confidences.append(confidence.cpu().numpy())
                corrects.append((predicted.cpu() == y.cpu()).numpy())
            correct = np.concatenate(corrects)
            entry[str(severity)] = {"accuracy": float(correct.mean()), "n": len(data),
                                    **_set_calibration(np.concatenate(confidences), correct,
                                                       ctx.options.rms_estimator)}
        results[name] = entry
        ctx.on_result(name, entry, identity)
    return results, _c_summary(ctx, results, names, missing, imagenet=True), files


def imagenet_r(ctx: Context) -> Results:
    """ImageNet-R (``<wnid>/*.jpg``, 200 classes): the 1000-way logits restricted to its 200 classes
    (the public ``imagenet_r_mask``); accuracy, RMS calibration error, ECE and AURRA."""
    _need_imagenet(ctx)
    data = read_class_folders(_need_root(ctx, "ImageNet-R class folders"), imagenet_r_wnids(), ctx.options.preprocess)
    _nonempty(len(data), data.root)
    keep = imagenet_r_indices()
    logits, labels = [], []
    for x, y in progress(data.batches(ctx.batch_size, ctx.options.workers), desc="imagenet-r",
                         total=-(-len(data) // ctx.batch_size)):
        logits.append(_logits(ctx.model, x, ctx.device)[:, keep])
        labels.append(y)
    summary = _calibration_summary(torch.cat(logits), torch.cat(labels), ctx.options.rms_estimator)
    return {"imagenet-r": {"accuracy": summary["accuracy"], "n": len(data)}}, summary, [_folder_record(data)]


# --------------------------------------------------------------------------- -P suites


def _p_wanted(ctx: Context) -> tuple[str, ...]:
    return tuple(ctx.options.weather if n == "snow" else n for n in P_COLUMNS)


def _p_names(ctx: Context, present: Callable[[str], bool],
             others: tuple[str, ...] = ()) -> tuple[tuple[str, ...], list[str]]:
    """The paper's ten columns that are present, then the ``others`` present (the rest of the
    released CIFAR-10-P's 20 sets: the stronger noises, speckle noise, gaussian blur, ...)."""
    if ctx.options.corruptions is not None:
        return tuple(ctx.options.corruptions), []
    wanted = _p_wanted(ctx)
    names = tuple(n for n in wanted if present(n))
    if not names:
        raise FileNotFoundError(f"{ctx.data_root} holds none of the perturbations {', '.join(wanted)}")
    extra = tuple(n for n in others if n not in wanted and present(n))
    return names + extra, [n for n in wanted if n not in names]


def _p_summary(ctx: Context, results: dict, names: tuple[str, ...], missing: list[str]) -> dict:
    """Mean flip probability / mFR over the paper's columns (or every name asked for); the other
    released sets are listed beside it under ``other_perturbations``, outside the mean."""
    alexnet = read_alexnet_flip_table(ctx.options.alexnet_flip) if ctx.options.alexnet_flip else None
    table = names if ctx.options.corruptions is not None else tuple(n for n in names if n in _p_wanted(ctx))
    summary = flip_summary({n: results[n]["flip_probability"] for n in table}, alexnet)
    others = {n: results[n]["flip_probability"] for n in names if n not in table}
    if others:
        summary["other_perturbations"] = others
    summary["weather_perturbation"] = ctx.options.weather
    if missing:
        summary["missing_perturbations"] = missing
    return summary


def perturbed_npy(ctx: Context) -> Results:
    """CIFAR-10-P (and Digits-P): flip probability per perturbation (consecutive frames; the first
    frame for noise), its mean (the CIFAR-10-P tables' unnormalised "mFR") and, with AlexNet's flip
    probabilities, mFR."""
    root = _need_root(ctx, "a -P set of <perturbation>.npy files")
    names, missing = _p_names(ctx, lambda n: (root / f"{n}.npy").is_file(), tuple(PERTURBATIONS))
    data = read_p_set(root, names)
    _nonempty(data.count, root)
    _check_resolution(ctx, tuple(data.sequences(names[0], 0, 1).shape[-2:]), root)
    if ctx.options.alexnet_flip:
        read_alexnet_flip_table(ctx.options.alexnet_flip)  # a bad table fails before the work
    results, files = {n: e for n, e in ctx.done.items() if n in names}, []
    chunk = max(1, ctx.batch_size // max(data.frames.values()))  # sequences per model batch
    for name in progress(names, desc="perturbations", unit="perturbation"):
        record = _file_record(data.path(name), data.count)
        files.append(record)
        # a result is kept only for the same file (content hash): a set replaced in place is redone
        if name in results and ctx.done_identity.get(name) == record["sha256"]:
            continue
        preds = []
        for start in range(0, data.count, chunk):
            seq = data.sequences(name, start, start + chunk)
            n, f = seq.shape[:2]
            preds.append(_logits(ctx.model, seq.reshape(n * f, *seq.shape[2:]), ctx.device).argmax(1).view(n, f))
        p = torch.cat(preds).numpy()
        entry = {"flip_probability": flip_probability(p, noise=is_noise_sequence(name)),
                 "n_sequences": int(p.shape[0]), "frames": int(p.shape[1])}
        results[name] = entry
        ctx.on_result(name, entry, record["sha256"])
    return results, _p_summary(ctx, results, names, missing), files


def imagenet_p(ctx: Context) -> Results:
    """ImageNet-P (``<perturbation>/<wnid>/*.mp4``, needs the video extra): flip probability per
    perturbation (each video's own rate, then the mean over videos), mean, and mFR with a
    user-supplied table of AlexNet's flip probabilities (--alexnet-flip)."""
    _need_imagenet(ctx)
    root = _need_root(ctx, "ImageNet-P: <perturbation>/<wnid>/*.mp4")
    names, missing = _p_names(ctx, lambda n: (root / n).is_dir())
    if ctx.options.alexnet_flip:
        read_alexnet_flip_table(ctx.options.alexnet_flip)
    results, files = {n: e for n, e in ctx.done.items() if n in names}, []
    for name in progress(names, desc="perturbations", unit="perturbation"):
        data = read_video_folders(root / name, imagenet_wnids())
        files.append(_folder_record(data))
        identity = _folder_identity(data.root, data.samples)
        if name in results and ctx.done_identity.get(name) == identity:
            continue
        preds = []
        for videos in data.videos(max(1, ctx.batch_size // 32), ctx.options.workers):
            lengths = [v.shape[0] for v in videos]
            logits = logits_of(ctx.model, torch.cat(videos), ctx.device, ctx.batch_size)
            preds += [p.numpy() for p in logits.argmax(1).split(lengths)]
        entry = {"flip_probability": flip_probability(preds, noise=is_noise_sequence(name)),
                 "n_sequences": len(preds), "frames": int(max(len(p) for p in preds))}
        results[name] = entry
        ctx.on_result(name, entry, identity)
    return results, _p_summary(ctx, results, names, missing), files


SUITES: dict[str, Callable[[Context], Results]] = {
    "clean": clean, "calibration": calibration, "fgsm": fgsm,
    **{f"{d}-c": corrupted_npy for d in _DATASET_SIZE},
    **{f"{d}-p": perturbed_npy for d in _DATASET_SIZE},
    "imagenet-c": imagenet_c, "imagenet-r": imagenet_r, "imagenet-p": imagenet_p,
}
#: suites whose partial results resume per corruption / perturbation
RESUMABLE = frozenset(s for s in SUITES if s.endswith(("-c", "-p")))


def run_suite(suite: str, ctx: Context) -> Results:
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; available: {', '.join(SUITES)}")
    return SUITES[suite](ctx)

