"""The benchmark's names, in one place: corruptions and their groups, -P columns, AlexNet's
reference errors, and the paper's table rows.

Pure data (no torch, no corruption code): evaluation, metrics, the corruption registry, the
figures and the transfer table all read their names here, so a name is spelled once.  Orders
are those of the public code and the paper: ``CORRUPTIONS`` is the ``CORRUPTIONS`` list of
google-research/augmix (``cifar.py`` / ``imagenet.py``) and hendrycks/robustness, grouped as
ImageNet-C groups them (Hendrycks & Dietterich, 2019, Fig. 1).  The paper's method rows
(``METHOD_ROWS``) are kept here, with the ablation and transfer rows; the methods registry
(``fullscale.training.methods``) reads each method's row from them and checks that every method they
name is registered.
"""

from __future__ import annotations

__all__ = [
    "ABLATION_ROWS",
    "ALEXNET_CLEAN_ERR",
    "ALEXNET_ERR",
    "CATEGORIES",
    "CORRUPTIONS",
    "EXTRA_CATEGORIES",
    "EXTRA_CORRUPTIONS",
    "METHOD_ROWS",
    "NOISE_CORRUPTIONS",
    "P_COLUMNS",
    "P_WEATHER_CHOICES",
    "TRANSFER_MODEL",
    "TRANSFER_ROWS",
    "category_of",
]

#: the four groups of the 15 common corruptions, in the benchmark's order
CATEGORIES: dict[str, tuple[str, ...]] = {
    "noise": ("gaussian_noise", "shot_noise", "impulse_noise"),
    "blur": ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur"),
    "weather": ("snow", "frost", "fog", "brightness"),
    "digital": ("contrast", "elastic_transform", "pixelate", "jpeg_compression"),
}
#: the 15 corruptions of CIFAR-10-C / ImageNet-C, in the public code's order
CORRUPTIONS: tuple[str, ...] = tuple(name for group in CATEGORIES.values() for name in group)
#: the four held-out extras of the -C releases, each in the group ImageNet-C assigns it
EXTRA_CATEGORIES: dict[str, str] = {"speckle_noise": "noise", "gaussian_blur": "blur", "spatter": "weather",
                                    "saturate": "digital"}
EXTRA_CORRUPTIONS: tuple[str, ...] = tuple(EXTRA_CATEGORIES)
#: the corruptions the paper's "without noise" numbers leave out (its parentheses)
NOISE_CORRUPTIONS: tuple[str, ...] = CATEGORIES["noise"]

#: the ten -P columns of the paper's tables (tab:results_imagenet_p, tab:results_cifar_p), in its
#: order; the weather column is "snow" in the paper and "spatter" in the public cifar-p-eval.py
P_COLUMNS: tuple[str, ...] = ("gaussian_noise", "shot_noise", "motion_blur", "zoom_blur", "snow", "brightness",
                              "translate", "rotate", "tilt", "scale")
P_WEATHER_CHOICES: tuple[str, ...] = ("snow", "spatter")

#: AlexNet's ImageNet-C top-1 errors per corruption (mean over the 5 severities), the AugMix
#: code's ``ALEXNET_ERR`` (checked value by value against google-research/augmix imagenet.py,
#: whose ``CORRUPTIONS`` list has the order of ``CORRUPTIONS`` above).
ALEXNET_ERR: dict[str, float] = dict(zip(CORRUPTIONS, (
    0.886428, 0.894468, 0.922640, 0.819880, 0.826268, 0.785948, 0.798360,
    0.866816, 0.826572, 0.819324, 0.564592, 0.853204, 0.646056, 0.717840, 0.606500), strict=True))
#: AlexNet's clean ImageNet top-1 error for the relative mCE: 1 - 0.56522, torchvision's
#: published AlexNet accuracy (43.5% in Hendrycks & Dietterich's table).  Not in the public code.
ALEXNET_CLEAN_ERR = 0.43478

#: the paper's method rows (tab:results_cifar10 and after, in its order) -> our method (None: not
#: implemented, said rather than silently missing); a method's ``paper_row`` in the registry
METHOD_ROWS: dict[str, str | None] = {
    "Baseline": "baseline", "Mixup": "mixup", "Manifold Mixup": "manifold_mixup", "CutMix": "cutmix",
    "Puzzle Mix": "puzzlemix", "NFM": "nfm", "AugMix": "augmix_jsd", "AugMax*": None, "NoisyMix (ours)": "noisymix",
}

#: tab:ablation's rows (A = AugMix, F = feature mixup, N = noise, J = JSD) -> our method
ABLATION_ROWS: dict[str, str] = {
    "----": "baseline", "--N-": "noise", "-F--": "manifold_mixup", "-FN-": "nfm", "A---": "augmix",
    "A-NJ": "augmix_noise_jsd", "A--J": "augmix_jsd", "AFN-": "augmix_nfm", "AF-J": "augmix_manifold_jsd",
    "AFNJ": "noisymix",
}

#: tab:results_transfer's rows (the ImageNet ResNet-50 each target model was fine-tuned from) ->
#: our name of the source (a run config's ``source_row``, the presets' ``transfer-<data>-<row>``)
TRANSFER_ROWS: dict[str, str] = {
    "Baseline": "baseline", "PuzzleMix": "puzzlemix", "Mixup": "mixup", "AutoAugment": "autoaugment",
    "AugMix": "augmix", "NoisyMix (ours)": "noisymix",
}
#: the model name of fine-tuned transfer runs (fullscale.training.transfer)
TRANSFER_MODEL = "resnet50_transfer"


def category_of(name: str) -> str:
    """The group (noise / blur / weather / digital) of a corruption, the 15 and the extras."""
    for category, members in CATEGORIES.items():
        if name in members:
            return category
    if name in EXTRA_CATEGORIES:
        return EXTRA_CATEGORIES[name]
    raise ValueError(f"unknown corruption {name!r}; known: {', '.join((*CORRUPTIONS, *EXTRA_CORRUPTIONS))}")
