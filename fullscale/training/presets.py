"""Named training configurations: every implemented CIFAR row of the paper's tables, as data.

``<dataset>-<model>-<method>`` for the rows of tab:results_cifar10 / tab:results_cifar100
(PreActResNet-18 and Wide-ResNet-28), ``ablation-<switches>`` for the ten rows of tab:ablation
(Wide-ResNet-28 on CIFAR-100), and the bare method names (CIFAR-10 PreActResNet-18) as short forms.

The paper's "Wide-ResNet-28x2" rows (tab:results_cifar100, both data sets, and tab:ablation) were
trained by the public code's ``wideresnet28``, which is WRN-28-4 with dropout 0.1 (RobustBench
lists the NoisyMix CIFAR model as a WRN-28-4): the ``<dataset>-wrn28_4-<method>`` and
``ablation-<switches>`` presets train that model (``wrn28_4``), and ``figures/tables.py`` fills
those rows from ``wrn28_4`` runs. A WRN-28-2 (widen factor 2, no dropout), what the paper's
label says, is offered under explicit names: ``<dataset>-wrn28_2-<method>`` and
``ablation-wrn28_2-<switches>``.

Strengths are the methods' own defaults (``Method.defaults`` in ``fullscale.training.methods``, the one
home of them: a bare ``--set method=X`` gets the same ones). AugMix width 3, depth 1-3, severity 3,
JSD weight 12 and the clamped JSD estimate (``jsd_variant=augmix``) of the public code. Manifold
Mixup mixes at a point drawn from all of ``model.stages`` as the public code (its paper draws from
the input and the first two stages). CutMix is applied to every batch (its paper's CIFAR runs
apply it with probability 0.5; the config has no field for that yet).

``transfer-<cifar10|cifar100>-<row>[-frozen]`` for tab:results_transfer (rows:
``fullscale.vocabulary.TRANSFER_ROWS``): an ImageNet ResNet-50 given as ``--set source_weights=PATH``
fine-tuned by the public transfer code's recipe (``fullscale.training.transfer``; its ``parameters.csv``):
every layer trained at lr 0.001, or ``-frozen`` (``freeze_level`` 4: only the classifier) at lr
0.01.  The paper's clean accuracies (97-98 % on CIFAR-10) are those of full fine-tuning, so the
plain names are its rows.

``resolve_config`` turns a preset and ``--set`` overrides into the run's ``TrainConfig`` (the CLI,
the sweeps and the benchmarks all resolve a run this way).
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from fullscale.training.config import TrainConfig
from fullscale.training.methods import METHODS, NOT_IMPLEMENTED, get_method
from fullscale.vocabulary import ABLATION_ROWS, METHOD_ROWS, TRANSFER_MODEL, TRANSFER_ROWS
from noisymix_infra.config import apply_overrides

__all__ = ["PRESETS", "PUZZLEMIX_PUBLIC_RECIPE", "preset_overrides", "resolve_config"]

_TABLE_MODELS = ("preactresnet18", "wrn28_2", "wrn28_4")
# the implemented method rows of tab:results_cifar10 / tab:results_cifar100, in the paper's order
_TABLE_METHODS = tuple(method for method in METHOD_ROWS.values() if method is not None)
# tab:ablation rows as (augmentations, feature mixing, noise, JSD) -> method
_ABLATION = ABLATION_ROWS


@dataclasses.dataclass(frozen=True)
class Preset:
    name: str
    description: str
    overrides: dict[str, Any]


def _preset(name: str, method: str, dataset: str, model: str, note: str) -> Preset:
    overrides = {"method": method, "dataset": dataset, "model": model, **METHODS[method].defaults}
    return Preset(name, f"{METHODS[method].title} on {dataset} with {model}{note}", overrides)


def _all_presets() -> dict[str, Preset]:
    presets = {m: _preset(m, m, "cifar10", "preactresnet18", "") for m in METHODS}
    for dataset in ("cifar10", "cifar100"):
        for model in _TABLE_MODELS:
            for method in _TABLE_METHODS:
                name = f"{dataset}-{model}-{method}"
                presets[name] = _preset(name, method, dataset, model, f" (tab:results_{dataset})")
    for switches, method in _ABLATION.items():
        note = " (tab:ablation: augmentations, feature mixing, noise, JSD = " + switches.replace("-", "x") + ")"
        # the paper's ablation model: the public code's wideresnet28 = WRN-28-4, dropout 0.1
        presets[f"ablation-{switches}"] = _preset(f"ablation-{switches}", method, "cifar100", "wrn28_4", note)
        name = f"ablation-wrn28_2-{switches}"
        presets[name] = _preset(name, method, "cifar100", "wrn28_2", note.replace(")", "; WRN-28-2, not the paper's)"))
    for dataset in ("cifar10", "cifar100"):
        for row in TRANSFER_ROWS.values():
            for frozen in (False, True):
                preset = _transfer_preset(dataset, row, frozen)
                presets[preset.name] = preset
    return presets


# tab:results_imagenet: ResNet-50 on ImageNet-1k with the public ImageNet recipe (erichson/NoisyMix
# and google-research/augmix imagenet.py: lr 0.1 for batch 256, weight decay 1e-4, SGD Nesterov
# 0.9, cosine per step down to 1e-6, 200 epochs; AugMix width 3, depth 1-3, severity 3 as the
# NoisyMix script; its default train batch is 166, the issue and AugMix's script use 256).
_IMAGENET_METHODS = ("baseline", "mixup", "manifold_mixup", "cutmix", "augmix", "augmix_jsd", "noisymix", "nfm")
_IMAGENET_RECIPE = {"dataset": "imagenet", "model": "resnet50", "batch_size": 256, "lr": 0.1, "lr_min": 1e-6,
                    "weight_decay": 1e-4, "nesterov": True, "momentum": 0.9, "epochs": 200, "image_size": 224,
                    "checkpoint_every": 1000}
# Mixup's paper trains ImageNet with alpha 0.2; the other strengths keep the methods' defaults.
_IMAGENET_STRENGTHS = {"mixup": {"mix.alpha": 0.2}}
_IMAGENET_ASSUMPTION = ("; ASSUMPTION: neither the paper nor the public code publishes ImageNet mixing alpha or "
                        "noise levels, the CIFAR values are used")


def _imagenet_presets() -> dict[str, Preset]:
    presets = {}
    for method in _IMAGENET_METHODS:
        name = f"imagenet-resnet50-{method}"
        overrides = {"method": method, **_IMAGENET_RECIPE, **METHODS[method].defaults,
                     **_IMAGENET_STRENGTHS.get(method, {})}
        mixes = METHODS[method].mixing != "none" or METHODS[method].noise
        own = "; alpha 0.2 of the Mixup paper's ImageNet runs" if method in _IMAGENET_STRENGTHS else ""
        assumed = _IMAGENET_ASSUMPTION if mixes and not own else ""
        note = f" (tab:results_imagenet; the public imagenet.py recipe{own}{assumed})"
        presets[name] = Preset(name, f"{METHODS[method].title} on imagenet with resnet50{note}", overrides)
    return presets


#: the public transfer code's recipe (transfer_learning/parameters.csv, cifar10 / cifar100 rows, and
#: robustness' defaults): SGD momentum 0.9 without Nesterov, weight decay 5e-4, batch 64, 150 epochs,
#: lr x 0.1 at epochs 50 and 100 (``--step-lr 50``), CIFAR upsampled to 224
TRANSFER_RECIPE: dict[str, Any] = {
    "method": "baseline", "model": TRANSFER_MODEL, "momentum": 0.9, "nesterov": False, "weight_decay": 5e-4,
    "batch_size": 64, "epochs": 150, "lr_schedule": "step", "lr_milestones": "50,100", "lr_gamma": 0.1,
    "image_size": 224,
}


def _transfer_preset(dataset: str, row: str, frozen: bool) -> Preset:
    name = f"transfer-{dataset}-{row}" + ("-frozen" if frozen else "")
    lr, level = (0.01, 4) if frozen else (0.001, -1)
    overrides = {**TRANSFER_RECIPE, "dataset": dataset, "source_row": row, "freeze_level": level, "lr": lr}
    what = "fixed features (freeze_level 4: only the classifier trains; BatchNorm statistics still update, " \
        "as the public code)" if frozen else "every layer trained"
    description = (f"tab:results_transfer, {row} row: the {row} ImageNet ResNet-50 (--set source_weights=PATH) "
                   f"fine-tuned on {dataset}, {what}; lr {lr}, SGD momentum 0.9 (no Nesterov), weight decay 5e-4, "
                   f"batch 64, 150 epochs, lr x 0.1 at epochs 50 and 100; 32x32 images upsampled to 224 on the device "
                   f"(RandomResizedCrop(224) + flip; test: Resize(256) + CenterCrop(224)), normalised with the "
                   f"{dataset} statistics (the public transfer_learning code)")
    return Preset(name, description, overrides)


#: The public Puzzle Mix recipe (snu-mllab/PuzzleMix README, "Puzzle Mix with PreActResNet18 for
#: 1200 epochs", and main.py's defaults): batch 100, lr 0.1, SGD momentum 0.9 with Nesterov, weight
#: decay 1e-4, 1,200 epochs with lr x 0.1 at epochs 400 and 800, BCE on softmax outputs.  The
#: paper's Puzzle Mix rows say "200 epochs, same basic tuning parameters", i.e. the NoisyMix
#: schedule, which ``<dataset>-<model>-puzzlemix`` trains; these presets train the public recipe
#: instead (docs/recipes.md compares the two).
PUZZLEMIX_PUBLIC_RECIPE: dict[str, Any] = {
    "batch_size": 100, "lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-4, "epochs": 1200,
    "lr_schedule": "step", "lr_milestones": "400,800", "lr_gamma": 0.1, "puzzlemix.loss": "bce_softmax",
}


def _puzzlemix_public_presets() -> dict[str, Preset]:
    presets = {}
    for dataset in ("cifar10", "cifar100"):
        name = f"{dataset}-preactresnet18-puzzlemix-public"
        base = _preset(name, "puzzlemix", dataset, "preactresnet18", "")
        description = (f"Puzzle Mix on {dataset} with preactresnet18 by the public Puzzle Mix recipe (batch 100, "
                       "weight decay 1e-4, 1,200 epochs, lr x 0.1 at 400 and 800, BCE on softmax), not the "
                       "paper's 200-epoch NoisyMix schedule (docs/recipes.md)")
        presets[name] = Preset(name, description, {**base.overrides, **PUZZLEMIX_PUBLIC_RECIPE})
    return presets


# A first run on a CPU in about a minute (README, "First run"): scikit-learn's bundled digits
# (no data to download) at the main job's recipe (noisymix_app/reproduce/plans.py, laptop): PreActResNet-18 at width 16
# with a stride-2 stem.
_DIGITS_RECIPE = {"width": 16, "stem_stride": 2, "batch_size": 32, "epochs": 10}


def _digits_presets() -> dict[str, Preset]:
    presets = {}
    for method in METHODS:
        preset = _preset(f"digits-{method}", method, "digits", "preactresnet18",
                         " (CPU: scikit-learn's digits, width 16, stem stride 2, 10 epochs, batch 32)")
        presets[preset.name] = Preset(preset.name, preset.description, {**preset.overrides, **_DIGITS_RECIPE})
    return presets


PRESETS: dict[str, Preset] = {**_all_presets(), **_imagenet_presets(), **_digits_presets(),
                               **_puzzlemix_public_presets()}


def preset_overrides(name: str, method: str | None = None) -> list[str]:
    """The ``key=value`` overrides of a preset, for ``noisymix_infra.config.apply_overrides``.

    ``method``: the method the run will train, where ``--set method=...`` changes the preset's;
    then the preset's method defaults are left out (the new method brings its own)."""
    if name in NOT_IMPLEMENTED:
        raise ValueError(f"preset {name!r} is not implemented: {NOT_IMPLEMENTED[name]}")
    if name not in PRESETS:
        from noisymix_infra.io import printable  # io imports torch; listing presets does not need it

        # the names closest to the one typed (``digit-noisymix``: digits-noisymix), not the list's first
        close = difflib.get_close_matches(str(name), [*PRESETS, *NOT_IMPLEMENTED], n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise ValueError(f"unknown preset {printable(repr(name))}; {hint}list them with "
                         "`noisymix train --list-presets`")
    overrides = PRESETS[name].overrides
    own = METHODS[overrides["method"]].defaults
    drop = set(own) if method is not None and method != overrides["method"] else set()
    return [f"{k}={v}" for k, v in overrides.items() if k not in drop]


def resolve_config(preset: str, overrides: list[str], data_root: str | None = None) -> TrainConfig:
    """The run's config: the chosen method's defaults (``fullscale.training.methods``), then the preset,
    then ``--set``; so a bare ``--set method=noisymix`` trains NoisyMix with its strengths, not
    with the baseline's alpha = 0 and no noise, and an explicit ``--set mix.alpha=...`` still wins."""
    method = apply_overrides(TrainConfig(preset=preset), [*preset_overrides(preset), *overrides]).method
    defaults = [f"{k}={v}" for k, v in get_method(method).defaults.items()]
    cfg = apply_overrides(TrainConfig(preset=preset), [*defaults, *preset_overrides(preset, method), *overrides])
    return apply_overrides(cfg, [f"data_root={data_root}"]) if data_root else cfg
