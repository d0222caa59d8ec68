"""Corrupted test sets made here, batched: the -C corruptions (and -P perturbation sequences)."""

from fullscale.corruptions.common import CATEGORIES, CORRUPTIONS, EXTRA_CORRUPTIONS, corrupt
from fullscale.corruptions.perturbations import PERTURBATIONS, perturbation_sequence

__all__ = ["CATEGORIES", "CORRUPTIONS", "EXTRA_CORRUPTIONS", "PERTURBATIONS", "corrupt",
           "perturbation_sequence"]
