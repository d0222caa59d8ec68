"""A training method's record, ``Method``: what a step does, as the four switches of tab:ablation
(AugMix views, JSD, noise) plus the kind of mixing, its default strengths, and how the results show it.
The built-in methods are filed in ``fullscale.training.methods`` (the registry); a user's own
feature-space method is a ``Method`` too (``fullscale.training.user_method``, issue 59), so both import
the record from here and neither imports the other's module back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fullscale.mixings import MIXINGS, Mixing, load_kinds
from fullscale.vocabulary import METHOD_ROWS

__all__ = ["Method"]

load_kinds()  # the kinds of mixing, Puzzle Mix's included: a method names one


@dataclass(frozen=True)
class Method:
    name: str
    title: str
    augmentations: bool = False
    mixing: str = "none"  # a name of MIXINGS
    noise: bool = False
    jsd: bool = False
    #: the config fields this method sets by default, as (dotted key, value); ``--set`` wins
    strengths: tuple[tuple[str, Any], ...] = ()
    #: its place in our own tables and figures (None: after the placed methods, by name)
    order: int | None = None
    #: its colour in every figure, a matplotlib colour (None: the figure's default)
    color: str | None = None

    @property
    def defaults(self) -> dict[str, Any]:
        """Config ``key -> value`` a run of this method starts from: its strengths and, with JSD,
        the public code's clamped JSD estimate (mixture clamped to [1e-7, 1] before its log)."""
        return {**dict(self.strengths), **({"jsd_variant": "augmix"} if self.jsd else {})}

    def __post_init__(self) -> None:
        if self.mixing not in MIXINGS:
            raise ValueError(f"{self.name}: unknown mixing {self.mixing!r}; registered: {', '.join(MIXINGS)}")
        if self.jsd and not self.augmentations:
            raise ValueError(f"{self.name}: the JSD loss needs the AugMix views (augmentations)")
        if not self.kind.combines and (self.noise or self.jsd or self.augmentations):
            raise ValueError(f"{self.name}: {self.mixing} is combined with neither AugMix, noise nor JSD")

    @property
    def paper_row(self) -> str | None:
        """Its row in the paper's method tables (tab:results_cifar10 and after,
        ``fullscale.vocabulary.METHOD_ROWS``); None: it has none there."""
        return next((row for row, method in METHOD_ROWS.items() if method == self.name), None)

    @property
    def kind(self) -> Mixing:
        """The registered record of this method's mixing."""
        return MIXINGS[self.mixing]

    @property
    def views(self) -> int:
        """Concatenated views per sample the model sees: 3 with JSD, else 1."""
        return 3 if self.jsd else 1

    @property
    def feature_mixing(self) -> bool:
        return self.kind.in_network

    @property
    def feature_transform(self) -> bool:
        """Whether a step applies M_{lambda,xi} (or M_{1,xi}) inside the network."""
        return self.feature_mixing or self.noise

    @property
    def any_stage(self) -> bool:
        """Whether the transform point is drawn from all of ``model.stages`` (else the input):
        every feature transform except Mixup's."""
        return self.kind.stages == "all"
