"""Models that are not ours, by name, and the state-dict layouts they come in.

``build_model(spec, num_classes)``:

* a name of our registry (``resnet50``, ``preactresnet18``, ...): ``create_model``;
* ``torchvision:NAME``: ``torchvision.models.get_model(NAME, weights=None, num_classes=...)``;
* ``timm:NAME``: ``timm.create_model(NAME, pretrained=False, num_classes=...)``;
* ``package.module:factory``: the user's own code, imported and called (``factory(num_classes=...)``
  if it takes ``num_classes``, else ``factory()``); it must return an ``nn.Module``.

Every model given to the evaluation takes float images in [0, 1] (N, 3, H, W).  torchvision's and
timm's models expect normalised images, so they come wrapped as RobustBench wraps them,
``Sequential(normalize=Normalize(mean, std), model=net)`` (torchvision: the ImageNet mean/std; timm:
the model's ``pretrained_cfg``); a factory's model is taken as it is (it normalises itself).
torchvision and timm are imported only when named; missing or broken, they are one line.

``load_weights(net, state, spec)``: a state dict of the model itself (torchvision / timm / ours), or
RobustBench's layout (``normalize.mean``, ``normalize.std``, ``model.<key>``: its
``normalize_model``), whose mean and std then replace ours.  Keys that do not fit are one line
listing the missing and unexpected ones.
"""

from __future__ import annotations

import importlib
import inspect
from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn

from fullscale.models.registry import IMAGENET_MEAN_STD, Normalize, create_model, list_models
from noisymix_infra.io import printable

__all__ = ["build_model", "external_spec", "load_weights"]

_LIBRARIES = ("torchvision", "timm")


def external_spec(spec: str) -> bool:
    """Whether ``spec`` names a model that is not in our registry (``lib:NAME`` or ``module:factory``)."""
    return ":" in spec


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[-1].strip()[:200]}" if text else type(error).__name__


def _whole_message(error: BaseException, limit: int = 240) -> str:
    """``Type: message`` with every line of the message kept, joined on one line and cut to ``limit``
    characters (issue 48: a factory's two-line error kept only its second line)."""
    text = " ".join(line.strip() for line in str(error).strip().splitlines() if line.strip())
    if len(text) > limit:
        text = text[:limit] + "..."
    return f"{type(error).__name__}: {printable(text)}" if text else type(error).__name__


def _exit_refusal(spec: str, where: str, done: SystemExit) -> ValueError:
    """A factory (or its module) that calls ``sys.exit``: one line, never the process's exit (issue 48:
    ``sys.exit(0)`` ended ``evaluate`` with status 0 and no output)."""
    return ValueError(f"--model {printable(spec)}: {where} called sys.exit({printable(repr(done.code))[:80]}) "
                      "instead of returning a model")


def _not_found_hint(error: Exception, module_name: str) -> str:
    """For a module that is not found: where Python looked.  The current folder is not on the
    import path of the ``noisymix`` command (as it is for ``python -m``); we say so rather than add
    it, so that a file lying in the current folder is never imported unasked."""
    if not isinstance(error, ModuleNotFoundError) or error.name != module_name.split(".")[0]:
        return ""
    top = module_name.split(".")[0]
    if Path(f"{top}.py").is_file() or Path(top).is_dir():
        return (f"; {printable(top)} is in the current folder, which is not on the import path: "
                "run with PYTHONPATH=.")
    return f"; is the folder holding {printable(top)} on PYTHONPATH?"


def _import(library: str, spec: str) -> object:
    try:
        return importlib.import_module(library)
    except Exception as error:  # missing, or broken (torchvision's compiled ops against another torch)
        raise ValueError(f"--model {printable(spec)}: {library} is not usable here ({_one_line(error)}); "
                         f"install a {library} that matches this torch, or use one of ours or package.module:factory"
                         ) from None


def _wrapped(net: nn.Module, mean_std: tuple) -> nn.Sequential:
    """RobustBench's ``normalize_model`` layout: ``normalize`` then ``model``."""
    return nn.Sequential(OrderedDict(normalize=Normalize(mean_std), model=net))


def _torchvision(name: str, num_classes: int, spec: str) -> nn.Module:
    models = _import("torchvision", spec).models
    available = models.list_models()
    if name not in available:
        close = [n for n in available if n.startswith(name[:3])] or available
        raise ValueError(f"--model {printable(spec)}: torchvision has no model {printable(name)!r}; "
                         f"e.g. {', '.join(close[:8])}")
    return _wrapped(models.get_model(name, weights=None, num_classes=num_classes), IMAGENET_MEAN_STD)


def _timm(name: str, num_classes: int, spec: str) -> nn.Module:
    timm = _import("timm", spec)
    if not timm.is_model(name):
        close = timm.list_models(f"*{name}*")[:6]
        raise ValueError(f"--model {printable(spec)}: timm has no model {printable(name)!r}"
                         + (f"; close: {', '.join(close)}" if close else ""))
    net = timm.create_model(name, pretrained=False, num_classes=num_classes)
    cfg = getattr(net, "pretrained_cfg", None) or {}
    mean_std = (tuple(cfg.get("mean", IMAGENET_MEAN_STD[0])), tuple(cfg.get("std", IMAGENET_MEAN_STD[1])))
    return _wrapped(net, mean_std)


def _factory(spec: str, num_classes: int) -> nn.Module:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except SystemExit as done:
        raise _exit_refusal(spec, f"importing {printable(module_name)}", done) from None
    except Exception as error:
        raise ValueError(f"--model {printable(spec)}: cannot import {printable(module_name)} "
                         f"({_whole_message(error)}){_not_found_hint(error, module_name)}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"--model {printable(spec)}: {printable(module_name)} has no factory {printable(attr)!r}")
    try:
        takes_classes = "num_classes" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        takes_classes = False
    try:
        net = factory(num_classes=num_classes) if takes_classes else factory()
    except SystemExit as done:
        raise _exit_refusal(spec, "the factory", done) from None
    except Exception as error:
        raise ValueError(f"--model {printable(spec)}: the factory raised {_whole_message(error)}") from None
    if not isinstance(net, nn.Module):
        raise ValueError(f"--model {printable(spec)}: the factory returned {type(net).__name__}, not an nn.Module")
    return net


def build_model(spec: str, num_classes: int) -> nn.Module:
    """The model ``spec`` names (see the module docstring), with fresh weights, taking images in [0, 1]."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"--model: expected a model name, got {spec!r}")
    if not external_spec(spec):
        if spec not in list_models():
            raise ValueError(f"--model {printable(spec)}: not one of ours ({', '.join(list_models())}); other "
                             "models: torchvision:NAME, timm:NAME or package.module:factory")
        return create_model(spec, num_classes)
    prefix, _, name = spec.partition(":")
    if not name or not prefix:
        raise ValueError(f"--model {printable(spec)}: expected torchvision:NAME, timm:NAME or package.module:factory")
    if prefix == "torchvision":
        return _torchvision(name, num_classes, spec)
    if prefix == "timm":
        return _timm(name, num_classes, spec)
    return _factory(spec, num_classes)


def _robustbench_layout(state: dict[str, torch.Tensor]) -> bool:
    return ("normalize.mean" in state and "normalize.std" in state
            and any(k.startswith("model.") for k in state))


def load_weights(net: nn.Module, state: dict[str, torch.Tensor], where: str, spec: str) -> nn.Module:
    """``net`` with the weights of ``state`` (its own keys, or RobustBench's layout, whose mean and
    std are then the model's normalisation); one ``ValueError`` line when they do not fit."""
    state = dict(state)
    mean_std = None
    if _robustbench_layout(state):
        mean_std = (state.pop("normalize.mean"), state.pop("normalize.std"))
        state = {k[len("model."):] if k.startswith("model.") else k: v for k, v in state.items()}
    wrapped = isinstance(net, nn.Sequential) and set(dict(net.named_children())) == {"normalize", "model"}
    target = net.model if wrapped else net
    expected = target.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise ValueError(f"{printable(where)} does not fit {printable(spec)}: missing keys {missing[:10]}"
                         f"{' ...' if len(missing) > 10 else ''} ({len(missing)}); unexpected keys "
                         f"{unexpected[:10]}{' ...' if len(unexpected) > 10 else ''} ({len(unexpected)})")
    try:
        target.load_state_dict(state)
    except RuntimeError as error:  # shapes
        raise ValueError(f"{printable(where)} does not fit {printable(spec)}: "
                         f"{str(error).strip().splitlines()[-1].strip()}") from None
    if mean_std is None:
        return net
    mean, std = (t.detach().float().reshape(-1) for t in mean_std)
    if mean.numel() != 3 or std.numel() != 3 or not bool((std > 0).all()):
        raise ValueError(f"{printable(where)}: normalize.mean/std must be 3 values each (std > 0), "
                         f"got {mean.tolist()}, {std.tolist()}")
    normalize = getattr(net, "normalize", None)
    if isinstance(normalize, Normalize):  # ours, or a wrapped torchvision/timm model: the checkpoint's constants
        normalize.mean.copy_(mean.view(1, 3, 1, 1))
        normalize.std.copy_(std.view(1, 3, 1, 1))
        return net
    return _wrapped(net, (mean.tolist(), std.tolist()))  # a factory's model: normalised in front of it
