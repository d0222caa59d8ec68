"""Methods as our tables and figures show them: their order, their names and their colours, all
read from the methods registry (``fullscale.training.methods``: each ``Method`` record carries its
``title``, ``paper_row``, ``order`` and ``color``), so that a registered method shows up in both.
"""

from __future__ import annotations

__all__ = ["OTHER_ROW_COLORS", "method_colors", "method_label", "method_order"]

#: colours of the paper's rows that are no method of ours (drawn beside ours from the paper's values)
OTHER_ROW_COLORS = {"AugMax*": "tab:blue", "Adversarial Trained": "black", "Stylized ImageNet": "teal",
                    "AutoAugment": "navy"}


def method_order(method: str) -> tuple[int, str]:
    """The sort key of a method in our tables and figures: its ``order`` in the registry, then the
    methods without one (Puzzle Mix, the ablation rows, unregistered names) by name."""
    from fullscale.training.methods import table_order

    placed = table_order()
    return (placed.index(method) if method in placed else len(placed), method)


def method_label(name: str) -> str:
    """A method id (``augmix_jsd``) or a paper row ("NoisyMix (ours)") as the paper names it."""
    from fullscale.training.methods import METHODS

    return METHODS[name].title if name in METHODS else name.replace(" (ours)", "")


def method_colors() -> dict[str, str]:
    """One colour per method in every panel, keyed by its name as the paper writes it (the registry's
    ``title``; the paper's "NoisyMix (ours)" row is NoisyMix), then the paper's other rows."""
    from fullscale.training.methods import METHODS

    return {**{m.title: m.color for m in METHODS.values() if m.color is not None}, **OTHER_ROW_COLORS}

