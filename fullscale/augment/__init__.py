"""Batched data augmentation on uint8 image tensors: AugMix, crop/flip and the upsampled resized crop
(no PIL in the hot path)."""

from fullscale.augment.augmix import AugMixConfig, augmix
from fullscale.augment.crop_flip import random_crop_flip, to_float
from fullscale.augment.ops import OPS
from fullscale.augment.resized_crop import random_resized_crop_flip

__all__ = ["OPS", "AugMixConfig", "augmix", "random_crop_flip", "random_resized_crop_flip", "to_float"]
