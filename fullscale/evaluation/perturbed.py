"""The -P suites (CIFAR-10-P and Digits-P as ``.npy`` files, ImageNet-P as videos): flip
probability per perturbation, its mean and, with AlexNet's flip probabilities, mFR."""

from __future__ import annotations

from collections.abc import Callable

import torch

from fullscale.corruptions.perturbations import PERTURBATIONS
from fullscale.data import (
    imagenet_wnids,
    read_p_set,
    read_video_folders,
)
from fullscale.evaluation.context import Context, Results
from fullscale.evaluation.corrupted import check_resolution
from fullscale.evaluation.inference import batch_logits, cpu_inference_model, logits_of
from fullscale.evaluation.records import (
    file_record,
    folder_identity,
    folder_record,
    need_imagenet,
    need_root,
    nonempty_count,
)
from fullscale.metrics import (
    flip_probability,
    flip_summary,
    is_noise_sequence,
    read_alexnet_flip_table,
)
from fullscale.vocabulary import (
    P_COLUMNS,
)
from noisymix_infra.progress import progress

__all__ = ["imagenet_p", "perturbed_npy"]


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
    root = need_root(ctx, "a -P set of <perturbation>.npy files")
    names, missing = _p_names(ctx, lambda n: (root / f"{n}.npy").is_file(), tuple(PERTURBATIONS))
    data = read_p_set(root, names)
    nonempty_count(data.count, root)
    check_resolution(ctx, tuple(data.sequences(names[0], 0, 1).shape[-2:]), root)
    if ctx.options.alexnet_flip:
        read_alexnet_flip_table(ctx.options.alexnet_flip)  # a bad table fails before the work
    results, files = {n: e for n, e in ctx.done.items() if n in names}, []
    chunk = max(1, ctx.batch_size // max(data.frames.values()))  # sequences per model batch
    model = ctx.model
    if ctx.device.type == "cpu" and any(n not in results for n in names):
        # the traced, frozen model, as the -C suites use it: a Digits-P evaluation is 55,000 images a run
        # (issue 58: the eager model at two sequences a call ran a third of its images/s)
        first = data.sequences(names[0], 0, 1)
        model = cpu_inference_model(ctx.model, first.reshape(-1, *first.shape[2:]))
    for name in progress(names, desc="perturbations", unit="perturbation"):
        record = file_record(data.path(name), data.count)
        files.append(record)
        # a result is kept only for the same file (content hash): a set replaced in place is redone
        if name in results and ctx.done_identity.get(name) == record["sha256"]:
            continue
        preds = []
        for start in range(0, data.count, chunk):
            seq = data.sequences(name, start, start + chunk)
            n, f = seq.shape[:2]
            preds.append(batch_logits(model, seq.reshape(n * f, *seq.shape[2:]), ctx.device).argmax(1).view(n, f))
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
    need_imagenet(ctx)
    root = need_root(ctx, "ImageNet-P: <perturbation>/<wnid>/*.mp4")
    names, missing = _p_names(ctx, lambda n: (root / n).is_dir())
    if ctx.options.alexnet_flip:
        read_alexnet_flip_table(ctx.options.alexnet_flip)
    results, files = {n: e for n, e in ctx.done.items() if n in names}, []
    for name in progress(names, desc="perturbations", unit="perturbation"):
        data = read_video_folders(root / name, imagenet_wnids())
        files.append(folder_record(data))
        identity = folder_identity(data.root, data.samples)
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
