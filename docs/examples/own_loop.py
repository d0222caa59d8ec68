"""NoisyMix in a training loop of one's own, on a model that is not ours (README: "NoisyMix in your
own training loop").  The lines marked ``# NoisyMix`` are all it adds to a plain loop.

    python docs/examples/own_loop.py --steps 300    # about 30 s on 2 CPU cores

Trains a two-block convolutional network on the built-in digits (8x8 scikit-learn digits upscaled
to 32 x 32, no download) and prints the clean test accuracy.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

from fullscale.api import NoisyMix  # NoisyMix
from fullscale.data import load_dataset


def conv_block(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(),
                         nn.MaxPool2d(2))


class SmallNet(nn.Module):
    """Images in [0, 1] (N, 3, H, W) -> logits; a layout the mixing points are named for."""

    def __init__(self, num_classes: int = 10, width: int = 16) -> None:
        super().__init__()
        self.features = nn.Sequential(conv_block(3, width), conv_block(width, 2 * width))
        self.head = nn.Linear(2 * width * 8 * 8, num_classes)  # 32 x 32 images, pooled twice

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features((x - 0.5) / 0.5).flatten(1))


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    train, test = load_dataset("digits", "train"), load_dataset("digits", "test")
    x_train, y_train = train.images, torch.as_tensor(train.labels).long()  # uint8 (N, 3, 32, 32), labels
    model = SmallNet()
    for p in model.parameters():  # initial weights from their own generator (no global RNG)
        if p.dim() > 1:
            nn.init.kaiming_normal_(p, generator=torch.Generator().manual_seed(args.seed))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    g = torch.Generator().manual_seed(args.seed)  # NoisyMix: its views, draws and noise
    nm = NoisyMix(model, num_classes=10, generator=g, stages=("input", "features.0", "features.1"))  # NoisyMix

    order_g = torch.Generator().manual_seed(args.seed + 1)
    for step in range(args.steps):
        idx = torch.randint(len(y_train), (args.batch_size,), generator=order_g)
        x_u8, y = x_train[idx], y_train[idx]
        loss = nm.loss(x_u8, y)  # NoisyMix (was: cross_entropy(model(x_u8.float() / 255), y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.3f}")

    model.eval()
    with torch.no_grad():
        predicted = model(test.images.float() / 255).argmax(1)
    accuracy = float((predicted == torch.as_tensor(test.labels)).float().mean())
    print(f"clean test accuracy {100 * accuracy:.1f} %")
    return accuracy


if __name__ == "__main__":
    main()
