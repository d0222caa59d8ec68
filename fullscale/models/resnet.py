"""ResNet-50 (He et al., 2016) for ImageNet with torchvision's module names, so a torchvision
``resnet50`` state dict loads with ``strict=True`` (the normalisation buffers are not saved)."""

from __future__ import annotations

from torch import Tensor, nn

from fullscale.models.registry import IMAGENET_MEAN_STD, Normalize, register_model


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_planes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        out_planes = planes * self.expansion
        self.conv1 = nn.Conv2d(in_planes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out_planes, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_planes != out_planes:
            self.downsample = nn.Sequential(nn.Conv2d(in_planes, out_planes, 1, stride, bias=False),
                                            nn.BatchNorm2d(out_planes))

    def forward(self, x: Tensor) -> Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + identity)


class ResNet(nn.Module):
    stages = ("input", "layer1", "layer2", "layer3")

    def __init__(self, layers: tuple[int, ...], num_classes: int = 1000, width: int = 64) -> None:
        super().__init__()
        self.normalize = Normalize(IMAGENET_MEAN_STD)
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        in_planes = width
        for i, n in enumerate(layers):
            planes = width * 2 ** i
            blocks = [Bottleneck(in_planes, planes, 1 if i == 0 else 2)]
            in_planes = planes * Bottleneck.expansion
            blocks += [Bottleneck(in_planes, planes) for _ in range(n - 1)]
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_planes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(self.normalize(x)))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


@register_model("resnet50")
def resnet50(num_classes: int = 1000, width: int = 64) -> ResNet:
    return ResNet((3, 4, 6, 3), num_classes, width)
