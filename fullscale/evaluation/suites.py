"""The registry of evaluation suites, by name (``noisymix evaluate --suite``), and ``run_suite``."""

from __future__ import annotations

from collections.abc import Callable

from fullscale.data.registry import IMAGE_SIDE
from fullscale.evaluation.context import Context, Results
from fullscale.evaluation.corrupted import corrupted_npy, imagenet_c, imagenet_r
from fullscale.evaluation.own_split import calibration, clean, fgsm
from fullscale.evaluation.perturbed import imagenet_p, perturbed_npy

__all__ = ["RESUMABLE", "SUITES", "run_suite"]

SUITES: dict[str, Callable[[Context], Results]] = {
    "clean": clean, "calibration": calibration, "fgsm": fgsm,
    **{f"{d}-c": corrupted_npy for d in IMAGE_SIDE},
    **{f"{d}-p": perturbed_npy for d in IMAGE_SIDE},
    "imagenet-c": imagenet_c, "imagenet-r": imagenet_r, "imagenet-p": imagenet_p,
}
#: suites whose partial results resume per corruption / perturbation
RESUMABLE = frozenset(s for s in SUITES if s.endswith(("-c", "-p")))


def run_suite(suite: str, ctx: Context) -> Results:
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; available: {', '.join(SUITES)}")
    return SUITES[suite](ctx)

