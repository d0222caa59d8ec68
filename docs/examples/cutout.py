"""Cutout (DeVries & Taylor, 2017, "Improved Regularization of Convolutional Neural Networks with Cutout"),
a method the project does not ship, as the batch function ``noisymix screen`` takes (README: "Screening
your own augmentation"):

    PYTHONPATH=. noisymix screen docs.examples.cutout:cutout --out screens/cutout

Each image loses a square of ``SIDE`` pixels at a uniformly drawn centre (it may lie partly outside the
image, as in the paper); the labels are kept (returned as they came: one-hot targets).  ``SIDE = 16`` is
the paper's CIFAR-10 setting at 32 x 32.  Every random number comes from ``generator``, on its device: a
run is reproducible from its seed.
"""

import torch

SIDE = 16


def cutout(images, labels, generator):
    n, _, h, w = images.shape
    cy = torch.randint(0, h, (n, 1, 1), generator=generator, device=generator.device)
    cx = torch.randint(0, w, (n, 1, 1), generator=generator, device=generator.device)
    dy = torch.arange(h, device=images.device).view(1, h, 1) - cy + SIDE // 2  # rows cy - 8 .. cy + 7 are cut
    dx = torch.arange(w, device=images.device).view(1, 1, w) - cx + SIDE // 2
    inside = (dy >= 0) & (dy < SIDE) & (dx >= 0) & (dx < SIDE)  # (n, h, w)
    return images * (~inside).unsqueeze(1).to(images.dtype), labels
