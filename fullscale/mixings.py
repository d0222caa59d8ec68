"""The kinds of mixing a training step knows, filed by name (a registry, as timm's models).

A kind is a ``Mixing`` record: where in the network M_{lambda,xi} applies, the batch op run after
the draw (CutMix's box, Puzzle Mix's masks), the loss it needs, and its options.  The step
(``fullscale.training.step``) dispatches on these records alone, and a method of the tables
(``fullscale.training.methods``) names its kind.

**A kind's options are its own config group.**  A kind with options carries their frozen dataclass
(``Mixing.config``); the training config gets one field of the kind's name holding it
(``TrainConfig.puzzlemix``, ``--set puzzlemix.beta=1.2``: ``fullscale.training.config`` adds the
fields of the registered groups), and the kind's batch op and loss receive that group alone
(``kind_config``), not the whole training config.

**A kind registers itself**, in its own module: the built-in kinds below (no mixing, Mixup's input
mixing, Manifold Mixup / NFM's feature mixing, CutMix, whose op is ``noisymix.mixing.cutmix``), and
the modules of ``KIND_MODULES`` (Puzzle Mix: ``fullscale.puzzlemix.mixing``), imported by ``load_kinds``
before the training config is made.  A new kind is its module, one ``register_mixing`` call there
and one line in ``KIND_MODULES``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from torch import Tensor, nn

from noisymix.loss import LossParts
from noisymix.mixing import MixDraw, cutmix
from noisymix_infra.registry import file_once

__all__ = ["KIND_MODULES", "MIXINGS", "BatchOp", "Mixing", "MixingLoss", "config_groups", "kind_config", "load_kinds",
           "register_mixing"]

#: ``op(core, x, y, draw, options, generator=g) -> (x, draw, extra)``: the batch after the draw (a
#: CutMix box, Puzzle Mix's masks); ``options`` is the kind's config group (None without one),
#: ``extra`` is handed to the kind's loss
BatchOp = Callable[..., tuple[Tensor, MixDraw, Any]]
#: ``loss(logits, targets, extra, options) -> LossParts``, for a kind that needs its own
MixingLoss = Callable[[Tensor, Tensor, Any, Any], LossParts]

#: the modules holding kinds beyond the built-in ones (each registers its kinds on import)
KIND_MODULES: tuple[str, ...] = ("fullscale.puzzlemix.mixing",)


@dataclass(frozen=True)
class Mixing:
    """A kind of mixing, as the step carries it out.

    ``in_network``: M_{lambda,xi} mixes features inside the network (``noisy_feature_mixup``);
    ``stages``: where the transform point is drawn, ``"input"`` (the normalised image only) or
    ``"all"`` (uniformly from ``model.stages``; also where noise alone is injected);
    ``batch_op``: applied to the views after the draw (``None``: nothing); ``loss``: replaces
    ``noisymix_loss`` (``None``: CE + gamma JSD); ``per_pair``: its draws are per pair (boxes,
    masks), so seeds of it are not stacked (``members.groupable``); ``combines``: may be joined
    with AugMix views, noise and JSD; ``config``: the frozen dataclass of its options, the training
    config's group of the kind's name (``None``: it has none)."""

    name: str
    in_network: bool = False
    stages: Literal["input", "all"] = "all"
    batch_op: BatchOp | None = None
    loss: MixingLoss | None = None
    per_pair: bool = False
    combines: bool = True
    config: type | None = None


MIXINGS: dict[str, Mixing] = {}


def register_mixing(kind: Mixing) -> Mixing:
    return file_once(MIXINGS, kind.name, kind, "mixing")


def load_kinds() -> dict[str, Mixing]:
    """Every kind: the built-in ones and those of ``KIND_MODULES`` (imported once)."""
    for module in KIND_MODULES:
        importlib.import_module(module)
    return MIXINGS


def config_groups() -> list[tuple[str, type]]:
    """(name, dataclass) of every kind's config group, in registration order."""
    return [(kind.name, kind.config) for kind in load_kinds().values() if kind.config is not None]


def kind_config(cfg: Any, kind: Mixing) -> Any:
    """The options of ``kind`` in the training config ``cfg`` (its group), or None."""
    return getattr(cfg, kind.name) if kind.config is not None else None


def _cutmix(core: nn.Module, x: Tensor, y: Tensor, draw: MixDraw, options: None, *,
            generator: Any) -> tuple[Tensor, MixDraw, None]:
    x, draw = cutmix(x, draw, generator=generator)
    return x, draw, None


register_mixing(Mixing("none"))
register_mixing(Mixing("input", in_network=True, stages="input"))  # Mixup
register_mixing(Mixing("manifold", in_network=True))  # Manifold Mixup, NFM
register_mixing(Mixing("cutmix", batch_op=_cutmix, per_pair=True, combines=False))
