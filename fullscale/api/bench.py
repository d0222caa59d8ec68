"""The benchmarks from Python: ``load_model`` (any model, any of the usual state-dict layouts) and
``benchmark(model, suite, data_root, out=DIR)`` -> ``DIR/eval/SUITE.json``, the JSON a run's
evaluation writes (``fullscale.evaluation.evaluate_model``, the code behind ``noisymix evaluate``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch
from torch import nn

from fullscale.evaluation.context import EvalOptions
from fullscale.evaluation.evaluate_run import bare_dataset, evaluate_model, removed_if_refused, usable_device
from fullscale.evaluation.suites import SUITES
from fullscale.models.external import build_model, load_weights
from noisymix_infra.folder_kind import require_kind
from noisymix_infra.io import read_state_dict
from noisymix_infra.validate import check_device_name

__all__ = ["benchmark", "load_model", "state_sha256"]


def load_model(spec: str, weights: str | Path | None = None, num_classes: int = 1000) -> nn.Module:
    """The model ``spec`` names (ours, ``torchvision:NAME``, ``timm:NAME``, ``package.module:factory``:
    ``fullscale.models.external``), taking images in [0, 1], with the state dict at ``weights`` (its
    own keys or RobustBench's layout) if given; eval mode."""
    net = build_model(spec, num_classes)
    if weights is not None:
        net = load_weights(net, read_state_dict(weights), str(weights), spec)
    return net.eval()


def state_sha256(model: nn.Module) -> str:
    """A digest of ``model``'s state dict (names, dtypes, shapes, bytes): what a result of a model in
    memory is bound to, as a file's sha256 binds a checkpoint's."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{name}\t{t.dtype}\t{tuple(t.shape)}\n".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def benchmark(model: nn.Module | str, suite: str, data_root: str | Path | None = None, *, out: str | Path,
              weights: str | Path | None = None, device: str = "cpu", options: EvalOptions | None = None,
              dataset: str | None = None, num_classes: int | None = None) -> dict:
    """Evaluate ``model`` (an ``nn.Module`` taking images in [0, 1], or a spec for ``load_model``
    with ``weights``) on ``suite`` and write ``out/eval/SUITE.json``; returns the record (``path``:
    where).  ``dataset``/``num_classes``: those of the suite by default (ImageNet, 1000, for
    clean/calibration/fgsm); ``options``: ``EvalOptions`` (``protocol="robustbench"``, ...)."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; available: {', '.join(SUITES)}")
    check_device_name(str(device), key="device")
    dev = usable_device(device, "device")
    default_dataset, default_classes = bare_dataset(suite)
    dataset = dataset or default_dataset
    num_classes = num_classes or default_classes
    if isinstance(model, str):
        name, where = model, str(weights) if weights is not None else f"<fresh {model}>"
        net = load_model(model, weights, num_classes)
    elif isinstance(model, nn.Module):
        name, where = type(model).__name__, f"<in memory: {type(model).__name__}>"
        net = model
    else:
        raise TypeError(f"model must be an nn.Module or a model name, got {type(model).__name__}")
    require_kind(out, "run", "out")
    # the caller's model goes back to the mode it came in (issue 48: it was left in eval mode)
    modes = {module: module.training for module in net.modules()}
    try:
        net = net.eval().to(dev)
        digest = state_sha256(net)
        config = {"model": name, "num_classes": int(num_classes), "dataset": dataset, "data_root": None}
        with removed_if_refused(out):
            return evaluate_model(net, config, suite, Path(out), weights=where, digest=digest, own_run=True,
                                  data_root=None if data_root is None else str(data_root), device=device,
                                  options=options)
    finally:
        for module, training in modes.items():
            module.training = training
