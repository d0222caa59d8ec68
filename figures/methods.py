"""Methods as our tables and figures show them: their order, their names and their colours, all
read from the methods registry (``fullscale.training.methods``: each ``Method`` record carries its
``title``, ``paper_row``, ``order`` and ``color``), so that a registered method shows up in both.
"""

from __future__ import annotations

__all__ = ["ALIASES", "OTHER_ROW_COLORS", "TOY_SCHEME_COLORS", "method_color", "method_colors", "method_label",
           "method_order"]

#: colours of the paper's rows that are no method of ours (drawn beside ours from the paper's values)
OTHER_ROW_COLORS = {"AugMax*": "tab:blue", "Adversarial Trained": "black", "Stylized ImageNet": "teal",
                    "AutoAugment": "navy", "Fast AutoAugment": "springgreen"}
#: the toy's scheme that is no registered method (fig:toy_example: Manifold Mixup with the JSD, no noise)
TOY_SCHEME_COLORS = {"Manifold Mixup + JSD": "darkmagenta"}
#: other names of one method, in the paper's tables and the toy figure, to the name its colour is filed under
ALIASES = {"NoisyMix (ours)": "NoisyMix", "PuzzleMix": "Puzzle Mix", "Baseline ResNet-50": "Baseline",
           "Noise injection": "Noise injections"}


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
    """The one registry of method colours, used by every figure (issue 48: one colour per method across
    all of them): keyed by a method's name as the paper writes it (the registry's ``title``), then the
    paper's other rows and the toy's scheme of its own.  Classes and other non-method marks use none of
    these (tests/figures/test_figures_issue48.py holds them apart)."""
    from fullscale.training.methods import METHODS

    return {**{m.title: m.color for m in METHODS.values() if m.color is not None}, **OTHER_ROW_COLORS,
            **TOY_SCHEME_COLORS}


def method_color(name: str, default: str | None = None) -> str | None:
    """The colour of a method under any of its names (``ALIASES``: the paper's "NoisyMix (ours)", the
    toy's "Noise injection"), ``default`` for a name without one."""
    colors = method_colors()
    return colors.get(name, colors.get(ALIASES.get(name, ""), default))

