"""Puzzle Mix (Kim, Choo & Song, ICML 2020), one kind of mixing of the trainer (``fullscale.mixings``).

The public names are handed on from the modules that hold them, each loaded on first use: the graph
cut's helper processes start as ``python -m fullscale.puzzlemix.cuts``, which imports this package
first, and must not import torch.
"""

from __future__ import annotations

import importlib

#: each public name -> the module of this package that defines it
_HOMES: dict[str, str] = {
    name: "mixing" for name in (
        "PuzzleMixConfig", "PuzzleMixResult", "adversarial_noise", "adversarial_start", "block_costs",
        "block_saliency", "draw_block_num", "mask_transport", "puzzle_mix", "puzzlemix_batch", "puzzlemix_loss",
        "puzzlemix_step", "saliency", "solve_masks", "transport_blocks")
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    """A public name, imported from its module on first use (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
