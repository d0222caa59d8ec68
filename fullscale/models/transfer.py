"""The transfer model (tab:results_transfer): torchvision's ResNet-50 fine-tuned on 32x32 CIFAR.

As the public NoisyMix ``transfer_learning/`` code (built on MadryLab ``robustness``):

- ``constants.DEFAULT_TEST_TRANSFORMS`` replace the robustness library's CIFAR transforms: test
  images are ``Resize(256)`` + ``CenterCrop(224)`` (``EvalResize``, inside the model, so clean and
  -C test images are upsampled alike, batched on the device); training views are made by the
  trainer (``fullscale.augment.resized_crop.random_resized_crop_flip``) and pass unchanged.
- ``robustness.attacker.AttackerModel`` normalises with the data set's statistics
  (``TRANSFER_MEAN_STD``: the library's CIFAR-10 values; the transfer code's CIFAR-100 values),
  not ImageNet's, although the sources were trained with ImageNet's.

The fine-tuning itself (source weights, freezing, the recipe) is ``fullscale.training.transfer``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from fullscale.augment.resized_crop import interpolation_matrices
from fullscale.models.registry import IMAGENET_MEAN_STD, Normalize, register_model
from fullscale.models.resnet import ResNet

__all__ = ["SOURCE_SIZE", "TRANSFER_MEAN_STD", "EvalResize", "TransferResNet", "eval_resize_size",
           "resnet50_transfer"]

#: the CIFAR images' side; the transfer model upsamples inputs of this size with the test transform
SOURCE_SIZE = 32
#: the normalisation of the public transfer code: robustness ``datasets.CIFAR`` for CIFAR-10,
#: ``make_loaders_CIFAR100``'s values for CIFAR-100; "imagenet" (the sources' own) as an option
TRANSFER_MEAN_STD: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)),
    "cifar100": ((0.5071, 0.4867, 0.4408), (0.2675, 0.2565, 0.2761)),
    "imagenet": IMAGENET_MEAN_STD,
}


def eval_resize_size(image_size: int) -> int:
    """The public test transform's resize side for ``image_size`` (256 for 224: Resize(256) +
    CenterCrop(224)); other sizes keep the 256 / 224 proportion."""
    return round(image_size * 256 / 224)


class EvalResize(nn.Module):
    """``Resize(eval_resize_size(s))`` + ``CenterCrop(s)`` of (N, 3, 32, 32) float images, batched
    (bilinear, half-pixel centres, clamped to the image: ``F.interpolate`` then the centre crop).
    Inputs already (s, s) pass unchanged: the trainer's views are made by
    ``random_resized_crop_flip``.  Any other size is refused (a -C set at another resolution)."""

    def __init__(self, image_size: int, source_size: int = SOURCE_SIZE) -> None:
        super().__init__()
        self.image_size, self.source_size = image_size, source_size
        resize = eval_resize_size(image_size)
        offset = round((resize - image_size) / 2.0)  # torchvision CenterCrop's offset
        o = torch.arange(offset, offset + image_size, dtype=torch.float64) + 0.5
        src = (o * (source_size / resize) - 0.5).float()[None]
        zero, last = torch.zeros(1), torch.full((1,), float(source_size - 1))
        self.register_buffer("weights", interpolation_matrices(src, zero, last, source_size)[0], persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        size = tuple(x.shape[-2:])
        if size == (self.image_size, self.image_size):
            return x
        if size != (self.source_size, self.source_size):
            raise ValueError(f"the transfer model takes {self.source_size}x{self.source_size} CIFAR images (or "
                             f"{self.image_size}x{self.image_size} training views), got {size[0]}x{size[1]}")
        r = self.weights.to(x.dtype)
        return torch.einsum("yh,nchw,xw->ncyx", r, x, r).contiguous()


class TransferResNet(ResNet):
    """torchvision's ResNet-50 (same state-dict keys) behind ``EvalResize`` and the transfer
    code's normalisation."""

    def __init__(self, num_classes: int, width: int, image_size: int, normalization: str) -> None:
        if normalization not in TRANSFER_MEAN_STD:
            raise ValueError(f"normalization must be one of {', '.join(TRANSFER_MEAN_STD)}, got {normalization!r}")
        if image_size < SOURCE_SIZE:
            raise ValueError(f"image_size must be >= {SOURCE_SIZE} (the transfer code upsamples), got {image_size}")
        super().__init__((3, 4, 6, 3), num_classes, width)
        self.resize = EvalResize(image_size)
        self.normalize = Normalize(TRANSFER_MEAN_STD[normalization])

    def forward(self, x: Tensor) -> Tensor:
        return super().forward(self.resize(x))


@register_model("resnet50_transfer")
def resnet50_transfer(num_classes: int = 10, width: int = 64, image_size: int = 224,
                      normalization: str = "cifar10") -> TransferResNet:
    """ResNet-50 for fine-tuning on 32x32 CIFAR at ``image_size`` (see the module docstring)."""
    return TransferResNet(num_classes, width, image_size, normalization)
