"""Batched data augmentation on uint8 image tensors: AugMix and crop/flip (no PIL in the hot path)."""

from fullscale.augment.augmix import AugMixConfig, augmix
from fullscale.augment.crop_flip import random_crop_flip, to_float
from fullscale.augment.ops import OPS

__all__ = ["OPS", "AugMixConfig", "augmix", "random_crop_flip", "to_float"]
