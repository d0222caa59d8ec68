"""Corrupted test sets made here, batched (CPU or GPU): the 15 -C corruptions and 4 extras with the
CIFAR-10-C and ImageNet-C parameter tables (``corrupt``), the -P perturbation sequences with the
CIFAR-10-P parameters (``perturbation_sequence``), and writers for the standard layouts.  Each -C
corruption is registered with its parameter rows where it is defined (``register_corruption``, in
its group file ``noise``, ``blur``, ``weather`` or ``digital``); ``registry`` collects them."""

from fullscale.corruptions.frost import find_frost_dir
from fullscale.corruptions.perturbations import (
    FRAMES,
    PERTURBATIONS,
    perturbation_sequence,
)
from fullscale.corruptions.registry import (
    CATEGORIES,
    CORRUPTIONS,
    EXTRA_CORRUPTIONS,
    PARAMS,
    SPECS,
    CorruptionSpec,
    corrupt,
)
from fullscale.corruptions.specs import register_corruption

__all__ = ["CATEGORIES", "CORRUPTIONS", "EXTRA_CORRUPTIONS", "FRAMES",
           "PARAMS", "PERTURBATIONS", "SPECS", "CorruptionSpec", "corrupt", "find_frost_dir", "perturbation_sequence",
           "register_corruption"]
