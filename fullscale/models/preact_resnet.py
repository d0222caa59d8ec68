"""Pre-activation ResNet-18 (He et al., 2016) for 32x32 images, as the public NoisyMix
``preactresnet18``: no final BN-ReLU before the pooling, and an identity shortcut that carries
the pre-activated ReLU(BN(x)) rather than x (the public block applies its empty ``shortcut``
to the activated tensor) -- both as the public definition, so its state dict and function
match; ``width`` scales the 64-128-256-512 channels (64 is the paper's model).

``stem_stride=2`` (not in the paper or its code; default 1 = the public model) makes the first
convolution stride 2, so every stage runs at half the side and a quarter of the arithmetic.  The
laptop plan uses it: its digits are 8x8 images upscaled to 32x32, whose full-resolution first
stage sees no detail a stride-2 stem misses, while its corruptions stay those of 32x32 images
(benchmarks/RESULTS.md, "Choosing the laptop protocol")."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from fullscale.models.registry import CIFAR_MEAN_STD, Normalize, register_model


class PreActBlock(nn.Module):
    def __init__(self, in_planes: int, planes: int, stride: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.shortcut = nn.Sequential()  # identity on the activated input, as the public code
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False))

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.bn1(x))
        shortcut = self.shortcut(out)
        out = self.conv1(out)
        out = self.conv2(F.relu(self.bn2(out)))
        return out + shortcut


def check_stem_stride(stem_stride: int) -> None:
    """The strides the first convolution takes: 1 (the public model) or 2."""
    if stem_stride not in (1, 2):
        raise ValueError(f"stem_stride must be 1 (the public model) or 2, got {stem_stride}")


class PreActResNet(nn.Module):
    stages = ("input", "layer1", "layer2", "layer3")

    def __init__(self, num_blocks: tuple[int, ...], num_classes: int, width: int = 64,
                 stem_stride: int = 1) -> None:
        super().__init__()
        if width < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        check_stem_stride(stem_stride)
        self.normalize = Normalize(CIFAR_MEAN_STD)
        self.conv1 = nn.Conv2d(3, width, 3, stem_stride, 1, bias=False)
        planes, layers = width, []
        in_planes = width
        for i, n in enumerate(num_blocks):
            blocks = []
            for j in range(n):
                blocks.append(PreActBlock(in_planes, planes, 2 if (i > 0 and j == 0) else 1))
                in_planes = planes
            layers.append(nn.Sequential(*blocks))
            planes *= 2
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.linear = nn.Linear(in_planes, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        out = self.conv1(self.normalize(x))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)


@register_model("preactresnet18")
def preactresnet18(num_classes: int, width: int = 64, stem_stride: int = 1) -> PreActResNet:
    return PreActResNet((2, 2, 2, 2), num_classes, width, stem_stride)
