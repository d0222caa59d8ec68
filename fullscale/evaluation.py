"""Evaluation suites: one function per suite, results as docs/results-schema.md says.

Every suite runs the model batched under ``torch.inference_mode`` (bf16 autocast and
channels_last on CUDA), reads corrupted sets one severity block at a time (memory-mapped),
and reports through ``on_result(name, entry)`` after each corruption so the caller can write
a resumable partial JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fullscale.augment import to_float
from fullscale.corruptions.common import CORRUPTIONS
from fullscale.corruptions.perturbations import NOISE_PERTURBATIONS, PERTURBATIONS
from fullscale.metrics import (
    accuracy,
    aurra,
    corruption_summary,
    expected_calibration_error,
    flip_probability,
    rms_calibration_error,
)
from fullscale.readers import read_c_set, read_p_set
from noisymix.io import sha256_file
from noisymix.progress import progress

__all__ = ["FGSM_EPSILONS", "SUITES", "logits_of", "run_suite"]

FGSM_EPSILONS = (1 / 255, 2 / 255, 4 / 255, 8 / 255)
OnResult = Callable[[str, dict], None]


def logits_of(model: nn.Module, images_u8: Tensor, device: torch.device, batch: int = 1000) -> Tensor:
    """Float logits (N, K) of uint8 images (N, 3, H, W), batched, on CPU."""
    out = []
    amp = device.type == "cuda"
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
        for start in range(0, images_u8.shape[0], batch):
            x = to_float(images_u8[start:start + batch].to(device, non_blocking=True))
            if amp:
                x = x.contiguous(memory_format=torch.channels_last)
            out.append(model(x).float().cpu())
    return torch.cat(out)


def _file_record(path: Path, count: int) -> dict:
    return {"path": str(path), "count": int(count), "sha256": sha256_file(path)}


def clean(model, device, test_set, data_root, done, on_result) -> tuple[dict, dict, list]:
    logits = logits_of(model, test_set.images, device)
    acc = accuracy(logits.argmax(1).numpy(), test_set.labels.numpy())
    return {"clean": {"accuracy": acc, "n": len(test_set)}}, {"accuracy": acc}, []


def calibration(model, device, test_set, data_root, done, on_result, estimator: str = "exact"):
    logits = logits_of(model, test_set.images, device)
    probs = logits.softmax(1)
    conf, pred = probs.max(1)
    correct = (pred == test_set.labels).numpy().astype(float)
    summary = {"accuracy": float(correct.mean()),
               "rms_calibration_error": rms_calibration_error(conf.numpy(), correct, estimator=estimator),
               "ece": expected_calibration_error(conf.numpy(), correct), "aurra": aurra(conf.numpy(), correct),
               "rms_estimator": estimator}
    return {"calibration": {"n": len(test_set)}}, summary, []


def fgsm(model, device, test_set, data_root, done, on_result, epsilons: Iterable[float] = FGSM_EPSILONS):
    """Accuracy under FGSM: x' = clip(x + eps sign(grad_x CE), 0, 1), with x the [0, 1] image before
    the model's own normalisation (so eps is in pixel units / 255)."""
    results = {}
    for eps in epsilons:
        correct = 0
        for start in range(0, len(test_set), 500):
            x = to_float(test_set.images[start:start + 500].to(device)).requires_grad_(True)
            y = test_set.labels[start:start + 500].to(device)
            loss = F.cross_entropy(model(x), y)
            (grad,) = torch.autograd.grad(loss, x)
            with torch.inference_mode():
                adv = (x + eps * grad.sign()).clamp(0, 1)
                correct += int((model(adv).argmax(1) == y).sum())
        results[f"eps={eps:.6g}"] = {"accuracy": correct / len(test_set), "n": len(test_set)}
    eps_list = list(epsilons)
    summary = {"epsilons": eps_list, "accuracy": [results[f"eps={e:.6g}"]["accuracy"] for e in eps_list]}
    return results, summary, []


def corrupted(model, device, test_set, data_root, done, on_result, names: tuple[str, ...] = tuple(CORRUPTIONS)):
    if data_root is None:
        raise ValueError("a -C suite needs --data-root DIR with <corruption>.npy and labels.npy")
    present = tuple(n for n in names if (Path(data_root) / f"{n}.npy").is_file())
    missing = [n for n in names if n not in present]
    data = read_c_set(data_root, present or names)  # none present: the reader names what is missing
    names = present
    results, files = dict(done), [_file_record(Path(data_root) / "labels.npy", len(data.labels))]
    for name in progress(names, desc="corruptions", unit="corruption"):
        files.append(_file_record(data.path(name), 5 * data.count))
        if name in results:
            continue
        entry = {}
        for severity in range(1, 6):
            logits = logits_of(model, data.images(name, severity), device)
            entry[str(severity)] = {"accuracy": accuracy(logits.argmax(1).numpy(), data.labels), "n": data.count}
        results[name] = entry
        on_result(name, entry)
    per = {c: float(np.mean([results[c][str(s)]["accuracy"] for s in range(1, 6)])) for c in names}
    # mCE is normalised by AlexNet's ImageNet-C errors: it is defined for ImageNet-C only
    # (``fullscale.metrics.mean_corruption_error``), not for the CIFAR/digits sets read here.
    summary = corruption_summary(per)
    if missing:  # a partial set: the means are over the corruptions present, and we say so
        summary["missing_corruptions"] = missing
    return results, summary, files


def perturbed(model, device, test_set, data_root, done, on_result, names: tuple[str, ...] = tuple(PERTURBATIONS)):
    if data_root is None:
        raise ValueError("a -P suite needs --data-root DIR with <perturbation>.npy files")
    names = tuple(n for n in names if (Path(data_root) / f"{n}.npy").is_file()) or names
    data = read_p_set(data_root, names)
    results, files = dict(done), []
    for name in progress(names, desc="perturbations", unit="sequence set"):
        files.append(_file_record(data.path(name), len(data.labels)))
        if name in results:
            continue
        preds = []
        for start in range(0, len(data.labels), 200):
            seq = data.sequences(name, start, start + 200)
            n, f = seq.shape[:2]
            preds.append(logits_of(model, seq.reshape(n * f, *seq.shape[2:]), device).argmax(1).view(n, f))
        p = torch.cat(preds).numpy()
        entry = {"flip_probability": flip_probability(p, noise=name in NOISE_PERTURBATIONS),
                 "n_sequences": int(p.shape[0]), "frames": int(p.shape[1])}
        results[name] = entry
        on_result(name, entry)
    fps = {n: results[n]["flip_probability"] for n in names}
    no_noise = [v for n, v in fps.items() if n not in NOISE_PERTURBATIONS]
    summary = {"mean_flip_probability": float(np.mean(list(fps.values())))}
    if no_noise:
        summary["mean_flip_probability_no_noise"] = float(np.mean(no_noise))
    return results, summary, files


SUITES: dict[str, Callable] = {
    "clean": clean, "calibration": calibration, "fgsm": fgsm,
    **{f"{d}-c": corrupted for d in ("cifar10", "cifar100", "digits")},
    **{f"{d}-p": perturbed for d in ("cifar10", "cifar100", "digits")},
}


def run_suite(suite: str, model: nn.Module, device: torch.device, test_set, data_root: str | None,
              done: dict, on_result: OnResult) -> tuple[dict, dict, list]:
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; available: {', '.join(SUITES)} "
                         "(ImageNet-C/-R/-P readers are not implemented in this version)")
    return SUITES[suite](model, device, test_set, data_root, done, on_result)
