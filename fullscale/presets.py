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

Strengths are the methods' own defaults (``Method.defaults`` in ``fullscale.methods``, the one
home of them: a bare ``--set method=X`` gets the same ones). AugMix width 3, depth 1-3, severity 3,
JSD weight 12 and the clamped JSD estimate (``jsd_variant=augmix``) of the public code. Manifold
Mixup mixes at a point drawn from all of ``model.stages`` as the public code (its paper draws from
the input and the first two stages). CutMix is applied to every batch (its paper's CIFAR runs
apply it with probability 0.5; the config has no field for that yet).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fullscale.methods import METHODS, NOT_IMPLEMENTED

__all__ = ["PRESETS", "preset_overrides"]

_TABLE_MODELS = ("preactresnet18", "wrn28_2", "wrn28_4")
_TABLE_METHODS = ("baseline", "mixup", "manifold_mixup", "cutmix", "puzzlemix", "nfm", "augmix_jsd", "noisymix")
# tab:ablation rows as (augmentations, feature mixing, noise, JSD) -> method
_ABLATION = {
    "----": "baseline", "--N-": "noise", "-F--": "manifold_mixup", "-FN-": "nfm", "A---": "augmix",
    "A-NJ": "augmix_noise_jsd", "A--J": "augmix_jsd", "AFN-": "augmix_nfm", "AF-J": "augmix_manifold_jsd",
    "AFNJ": "noisymix",
}


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
    return presets


PRESETS: dict[str, Preset] = _all_presets()


def preset_overrides(name: str, method: str | None = None) -> list[str]:
    """The ``key=value`` overrides of a preset, for ``infra.config.apply_overrides``.

    ``method``: the method the run will train, where ``--set method=...`` changes the preset's;
    then the preset's method defaults are left out (the new method brings its own)."""
    if name in NOT_IMPLEMENTED:
        raise ValueError(f"preset {name!r} is not implemented: {NOT_IMPLEMENTED[name]}")
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; list them with `noisymix train --list-presets` "
                         f"(e.g. {', '.join(list(PRESETS)[:5])}, ...)")
    overrides = PRESETS[name].overrides
    own = METHODS[overrides["method"]].defaults
    drop = set(own) if method is not None and method != overrides["method"] else set()
    return [f"{k}={v}" for k, v in overrides.items() if k not in drop]
