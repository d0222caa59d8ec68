"""The run record's schema, in one home: the training config's keys in their two layouts, which keys
were added after runs were made, and which changes a resumed run may make (issue 42).

``TrainConfig`` (``fullscale.training.config``) groups its fields (``model``, ``data``, ``optim``,
``runtime``, ``transfer``); runs made before the groups wrote one flat object (``"lr": 0.1``,
``"model": "preactresnet18"``).  ``FLAT_KEYS`` maps each old flat key to its dotted key, and is the
one place the two layouts meet: ``--set lr=0.05`` (``TrainConfig.KEY_ALIASES``), reading an old
``config.json`` (``grouped_config``), and what a run computes (``flat_config``: a run's identity,
its resume checks and the sweep's comparisons are computed in the flat layout, so the hashes of
old and new records of one computation are equal).

``RESUMABLE_CHANGES``: the flat keys that say where and how fast a run ran, not what it computes
(a resumed run may change them; they are left out of a run's identity and of ``config_sha256``).
``later_keys()``: keys added after runs were made, with the value that computes what those runs did
(an old ``config.json`` read today computes what it did then).

No torch here: the report (``noisymix_figures``) reads run configs through ``flat_config``, and
``later_keys`` imports the kinds of mixing's config groups only when called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FLAT_KEYS", "GROUPS", "RESUMABLE_CHANGES", "config_sha256", "flat_config", "grouped_config",
           "later_keys"]

#: old flat key -> its dotted key in the grouped ``TrainConfig`` (the top-level ones keep their name)
FLAT_KEYS: dict[str, str] = {
    "preset": "preset", "method": "method", "seed": "seed", "jsd_weight": "jsd_weight", "jsd_variant": "jsd_variant",
    "model": "model.name", "width": "model.width", "stem_stride": "model.stem_stride",
    "dataset": "data.dataset", "data_root": "data.data_root", "crop_padding": "data.crop_padding",
    "train_subset": "data.train_subset", "heldout": "data.heldout", "image_size": "data.image_size",
    "workers": "data.workers", "decoder": "data.decoder", "max_bad_fraction": "data.max_bad_fraction",
    "epochs": "optim.epochs", "batch_size": "optim.batch_size", "lr": "optim.lr", "lr_min": "optim.lr_min",
    "momentum": "optim.momentum", "nesterov": "optim.nesterov", "weight_decay": "optim.weight_decay",
    "lr_schedule": "optim.lr_schedule", "lr_milestones": "optim.lr_milestones", "lr_gamma": "optim.lr_gamma",
    "device": "runtime.device", "amp": "runtime.amp", "compile": "runtime.compile", "ddp_draws": "runtime.ddp_draws",
    "sync_bn": "runtime.sync_bn", "checkpoint_every": "runtime.checkpoint_every",
    "source_weights": "transfer.source_weights", "source_row": "transfer.source_row",
    "freeze_level": "transfer.freeze_level", "freeze_bn_stats": "transfer.freeze_bn_stats",
}
#: the groups (``mix``, ``augmix`` and ``puzzlemix`` were nested before the groups and stay as they were)
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(d.split(".")[0] for d in FLAT_KEYS.values() if "." in d))
_FLAT_OF = {dotted: flat for flat, dotted in FLAT_KEYS.items()}
#: flat keys that say where and how fast a run ran, not what it computes: a resumed run may change them
#: (``runtime.cuda_graph`` has no flat name: it came after the groups)
RESUMABLE_CHANGES = frozenset({"device", "compile", "runtime.cuda_graph", "data_root", "workers", "decoder",
                               "checkpoint_every", "max_bad_fraction"})


def later_keys() -> dict[str, Any]:
    """Config keys (flat layout) added after runs were made, with the value that computes what those
    runs did: a run's identity is computed over them, so an old record and its re-read agree."""
    from fullscale.mixings import config_groups
    from noisymix_infra.config import config_to_dict

    return {"stem_stride": 1, "ddp_draws": "shared", "sync_bn": False, "image_size": 224, "workers": 8,
            "decoder": "auto", "max_bad_fraction": 0.001, "checkpoint_every": 0, "lr_schedule": "cosine",
            "lr_milestones": [], "lr_gamma": 0.1, "source_weights": "", "source_row": "", "freeze_level": -1,
            "freeze_bn_stats": False,
            # the kinds of mixing's groups (``puzzlemix``), each added after the runs before it
            **{name: config_to_dict(group()) for name, group in config_groups()}}


def config_sha256(config: Mapping[str, Any]) -> str:
    """The sha256 of a run's config part (either layout, read in the flat one; ``RESUMABLE_CHANGES`` aside):
    every evaluation records it (``config_sha256``) and the report compares it with the run's
    ``config.json`` of today, so a result whose config was edited since (another method, another seed)
    is not reported under the edited labels (issue 41)."""
    import hashlib
    import json

    flat = {k: v for k, v in flat_config(config).items() if k not in RESUMABLE_CHANGES}
    return hashlib.sha256(json.dumps(flat, sort_keys=True, default=str).encode()).hexdigest()


def flat_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The flat layout of a config dict, grouped (``config_to_dict(TrainConfig)``) or already flat
    (an old run's): each group's fields under their old flat names.  A group field without a flat
    name (none today) keeps its dotted one."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if key in GROUPS and isinstance(value, Mapping):
            for name, inner in value.items():
                flat[_FLAT_OF.get(f"{key}.{name}", f"{key}.{name}")] = inner
        else:
            flat[key] = value
    return flat


def grouped_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The grouped layout of a config dict, flat (an old run's ``config.json``) or already grouped,
    for ``noisymix_infra.config.config_from_dict(TrainConfig, ...)``; keys of neither layout are kept (and
    refused there by name)."""
    grouped: dict[str, Any] = {}
    for key, value in flat_config(config).items():
        group, _, name = FLAT_KEYS.get(key, key).rpartition(".")
        if group in GROUPS:
            grouped.setdefault(group, {})[name] = value
        else:
            grouped[key] = value
    return grouped
