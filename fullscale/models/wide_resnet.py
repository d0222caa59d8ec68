"""Wide-ResNet-28-k (Zagoruyko & Komodakis, 2016) as the public NoisyMix ``wideresnet28``:
biased convolutions, dropout between the convolutions, final BN with momentum 0.9.
``wrn28_2``: widen factor 2, no dropout; ``wrn28_4``: widen 4, dropout 0.1 (the public model
behind the paper's "WRN-28" rows)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from fullscale.models.registry import CIFAR_MEAN_STD, Normalize, register_model


class WideBasic(nn.Module):
    def __init__(self, in_planes: int, planes: int, dropout: float, stride: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, 1, 1, bias=True)
        self.dropout = nn.Dropout(dropout)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=True)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=True))

    def forward(self, x: Tensor) -> Tensor:
        out = self.dropout(self.conv1(F.relu(self.bn1(x))))
        out = self.conv2(F.relu(self.bn2(out)))
        return out + self.shortcut(x)


class WideResNet(nn.Module):
    stages = ("input", "layer1", "layer2", "layer3")

    def __init__(self, depth: int, widen: int, num_classes: int, dropout: float = 0.0) -> None:
        super().__init__()
        if (depth - 4) % 6:
            raise ValueError(f"Wide-ResNet depth must be 6n + 4, got {depth}")
        n = (depth - 4) // 6
        widths = [16, 16 * widen, 32 * widen, 64 * widen]
        self.normalize = Normalize(CIFAR_MEAN_STD)
        self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=True)
        in_planes, layers = widths[0], []
        for i, planes in enumerate(widths[1:]):
            blocks = []
            for j in range(n):
                blocks.append(WideBasic(in_planes, planes, dropout, 2 if (i > 0 and j == 0) else 1))
                in_planes = planes
            layers.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3 = layers
        self.bn1 = nn.BatchNorm2d(in_planes, momentum=0.9)
        self.linear = nn.Linear(in_planes, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        out = self.conv1(self.normalize(x))
        out = self.layer3(self.layer2(self.layer1(out)))
        out = F.relu(self.bn1(out))
        return self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))


@register_model("wrn28_2")
def wrn28_2(num_classes: int, dropout: float = 0.0) -> WideResNet:
    return WideResNet(28, 2, num_classes, dropout)


@register_model("wrn28_4")
def wrn28_4(num_classes: int, dropout: float = 0.1) -> WideResNet:
    return WideResNet(28, 4, num_classes, dropout)
