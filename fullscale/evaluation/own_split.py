"""The suites on the run's own test split: clean accuracy, calibration (RMS calibration error, ECE,
AURRA) and FGSM; built-in and CIFAR splits in memory, ImageNet's validation class folders under
``--data-root``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

from fullscale.augment import to_float
from fullscale.data import (
    DATASETS,
    imagenet_wnids,
    load_dataset,
)
from fullscale.data.cifar import LAYOUT
from fullscale.data.imagenet import read_val_folder
from fullscale.evaluation.context import Context, Results
from fullscale.evaluation.inference import batch_logits, finite_logits
from fullscale.evaluation.records import (
    file_record,
    folder_record,
    need_imagenet,
    need_root,
    nonempty_count,
)
from fullscale.evaluation.robustbench import RES256_CROP224, listed_images, read_image_list
from fullscale.metrics import (
    aurra,
    expected_calibration_error,
    rms_calibration_error,
    temperature_scaled,
)
from noisymix_infra.progress import progress

__all__ = ["calibration", "clean", "fgsm"]


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
    if dataset == "imagenet" and ctx.options.protocol == "robustbench":  # its 5,000 listed images
        need_imagenet(ctx)
        listed = read_image_list(ctx.options.image_list)
        data = listed_images(need_root(ctx, "the ImageNet validation class folders"), listed, imagenet_wnids(),
                             RES256_CROP224)
        return _TestData(lambda: data.batches(bs, ctx.options.workers), len(data), str(data.root),
                         [file_record(Path(ctx.options.image_list), len(listed)), folder_record(data)])
    if dataset == "imagenet":
        need_imagenet(ctx)
        data = read_val_folder(need_root(ctx, "the ImageNet validation images (class folders, or flat with "
                                          "LOC_val_solution.csv)"), imagenet_wnids(), ctx.options.preprocess)
        nonempty_count(len(data), data.root)
        return _TestData(lambda: data.batches(bs, ctx.options.workers), len(data), str(data.root),
                         [folder_record(data)])
    if dataset not in DATASETS:
        raise ValueError(f"the run's dataset {dataset!r} has no test split here; "
                         f"known: imagenet, {', '.join(DATASETS)}")
    root = ctx.data_root or ctx.config.get("data_root") or None
    test = load_dataset(dataset, "test", root)
    nonempty_count(len(test), f"the {dataset} test split ({test.source})")
    if test.num_classes != ctx.num_classes:
        raise ValueError(f"{dataset} has {test.num_classes} classes, the run's model {ctx.num_classes}")
    files = []
    if dataset in LAYOUT and Path(test.source).is_dir():
        files = [file_record(Path(test.source) / f, len(test)) for f in LAYOUT[dataset]["test"]]

    def batches() -> Iterator[tuple[Tensor, Tensor]]:
        for s in range(0, len(test), bs):
            yield test.images[s:s + bs], test.labels[s:s + bs]

    return _TestData(batches, len(test), test.source, files)


def clean(ctx: Context) -> Results:
    """Clean top-1 accuracy on the run's test split."""
    data = _test_data(ctx)
    correct = sum(int((batch_logits(ctx.model, x, ctx.device).argmax(1) == y).sum())
                  for x, y in progress(data.batches(), desc="clean", total=-(-data.n // ctx.batch_size)))
    acc = correct / data.n
    return {"clean": {"accuracy": acc, "n": data.n}}, {"accuracy": acc}, data.files


def calibration_summary(logits: Tensor, labels: Tensor, estimator: str, *, scaled: bool = False) -> dict:
    """Accuracy, RMS calibration error, ECE, AURRA and the signed confidence gap of ``logits``; with
    ``scaled``, also after temperature scaling fitted on held-out images of the same set
    (``fullscale.metrics.temperature_scaled``: two interleaved folds, each scaled by the other's T)
    under ``temperature_scaled`` (issue 40)."""
    conf, pred = logits.softmax(1).max(1)
    correct = (pred == labels).numpy().astype(float)
    conf = conf.numpy().astype(float)
    extra = {}
    if scaled and len(labels) >= 2:
        extra["temperature_scaled"] = temperature_scaled(logits.double().numpy(), labels.numpy(), estimator=estimator)
    return {**extra, "accuracy": float(correct.mean()),
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
        logits.append(batch_logits(ctx.model, x, ctx.device))
        labels.append(y)
    summary = calibration_summary(torch.cat(logits), torch.cat(labels), ctx.options.rms_estimator, scaled=True)
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
        (grad,) = torch.autograd.grad(F.cross_entropy(finite_logits(ctx.model(x)), y), x)
        step = grad.sign()
        with torch.inference_mode():
            for eps in ctx.options.epsilons:
                correct[eps] += int((ctx.model((x + eps * step).clamp(0, 1)).argmax(1) == y).sum())
    results = {f"eps={eps:.6g}": {"accuracy": correct[eps] / data.n, "n": data.n} for eps in ctx.options.epsilons}
    summary = {"epsilons": list(ctx.options.epsilons), "accuracy": [correct[e] / data.n for e in ctx.options.epsilons]}
    return results, summary, data.files

