"""Where a corruption is registered: ``@register_corruption(name, cifar=..., imagenet=...)`` on its
function, in its group file (``noise.py``, ``blur.py``, ``weather.py``, ``digital.py``).

The decorator files a ``CorruptionSpec``: the function, its group (read from
``fullscale.vocabulary``), the five parameter rows of ``make_cifar_c.py`` and of
``make_imagenet_c.py`` (github.com/hendrycks/robustness), the row fields that are lengths in
pixels, and how ``corrupt`` runs it on the CPU.  ``fullscale.corruptions.registry`` imports the
group files, orders the specs as the vocabulary does (``SPECS``) and runs them (``corrupt``).

A new corruption is its function in its group file under ``@register_corruption`` plus its name
in ``fullscale.vocabulary`` (``EXTRA_CATEGORIES``, in its group; the 15 of ``CATEGORIES`` are the
benchmark's own), which every table reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import Tensor

from fullscale.vocabulary import category_of
from noisymix_infra.registry import file_once

__all__ = ["Corruption", "CorruptionSpec", "Strengthened", "away_from", "register_corruption", "registered"]

#: a corruption: float images (N, 3, H, W) in [0, 1], one parameter row, a generator -> images
Corruption = Callable[[Tensor, Any, torch.Generator], Tensor]


@dataclass(frozen=True)
class CorruptionSpec:
    """One corruption: its function, group (noise / blur / weather / digital) and the five parameter
    rows per table.

    ``pixel_fields``: the row's fields that are lengths in pixels (index -> ``"float"`` or
    ``"int"``; ``registry.PIXEL_FIELDS`` says why these), ``mud_field``: one more such field when
    the row's last entry is true (spatter's mud mask blur).  ``cpu_u8``: a uint8 -> uint8 function
    ``(images, row)`` that replaces ``fn`` on the CPU (PIL itself, bit-exact and faster);
    ``cpu_block``: a multiple of the CPU block size (``registry._CPU_BLOCK``); ``whole_batch``: the
    CPU runs the batch in one block; ``frost_dir``: ``fn`` takes the frost photographs' folder.

    ``strengthen``: ``(row, k) -> row``, the same corruption ``k`` times as strong: every field
    that measures the damage moved ``k`` times as far from its identity value (the value at
    which the corruption does nothing: noise 0, contrast 1, zoom 1, pixelate's factor 1, ...);
    ``k = 1`` is the row itself.  ``None``: the corrupted image's difference from the clean one is
    scaled instead, ``x + k (c(x) - x)`` (snow: its seven fields have no single identity).  A rule
    whose fields saturate may return ``Strengthened(row, artefact)``: the row at its limit, the rest
    of the strength on the difference (JPEG: its quality goes to 1, where the digits hardly feel it,
    then its artefact is amplified).  The
    difficulty-matched Digits-C (``fullscale.corruptions.matched``) is the CIFAR rows at fitted
    strengths."""

    fn: Corruption
    category: str
    cifar: tuple[Any, ...]
    imagenet: tuple[Any, ...]
    pixel_fields: Mapping[int, str] = field(default_factory=dict)
    mud_field: int | None = None
    cpu_u8: Callable[[Tensor, Any], Tensor] | None = None
    cpu_block: int = 1
    whole_batch: bool = False
    frost_dir: bool = False
    strengthen: Callable[[Any, float], Any] | None = None

    def row(self, params: str, severity: int) -> Any:
        return getattr(self, params)[severity - 1]


class Strengthened(NamedTuple):
    """A strength rule's answer when its row's fields saturate before the strength asked for: the row
    at its limit and the factor on the corruption's difference from the clean image that makes up the
    rest (``registry.corrupt`` applies it: ``x + artefact (c(x) - x)``)."""

    row: Any
    artefact: float


def away_from(identity: float, value: float, k: float, low: float = float("-inf"), high: float = float("inf")) -> float:
    """``value`` moved ``k`` times as far from ``identity`` (the field's no-corruption value), kept
    in ``[low, high]`` (a strength rule's building block: ``CorruptionSpec.strengthen``)."""
    return float(min(high, max(low, identity + k * (value - identity))))


_REGISTERED: dict[str, CorruptionSpec] = {}


def register_corruption(name: str, *, cifar: tuple[Any, ...], imagenet: tuple[Any, ...],
                        **options: Any) -> Callable[[Corruption], Corruption]:
    """File the decorated function as corruption ``name`` with its five ``cifar`` and ``imagenet``
    rows (severity 1..5) and the other ``CorruptionSpec`` fields as ``options``; its group is the
    vocabulary's (``category_of``: an unknown name raises)."""
    def add(fn: Corruption) -> Corruption:
        if len(cifar) != 5 or len(imagenet) != 5:
            raise ValueError(f"corruption {name!r}: expected five rows per table (severities 1..5)")
        file_once(_REGISTERED, name, CorruptionSpec(fn, category_of(name), tuple(cifar), tuple(imagenet), **options),
                  "corruption")
        return fn
    return add


def registered() -> dict[str, CorruptionSpec]:
    """Every spec filed so far, in the order of registration (a copy)."""
    return dict(_REGISTERED)
