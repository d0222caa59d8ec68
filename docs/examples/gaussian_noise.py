"""Gaussian noise augmentation at CIFAR-10-C's own strengths, a noise-type method written as a user would write it
for CIFAR, as the batch function ``noisymix screen`` takes:

    PYTHONPATH=. noisymix screen docs.examples.gaussian_noise:gaussian_noise --out screens/noise --also-published

Each image gets additive Gaussian noise of a standard deviation drawn uniformly from ``SIGMAS``: none, or one of
the five severities of CIFAR-10-C's Gaussian noise (0.04, 0.06, 0.08, 0.09, 0.10 on [0, 1] images; the public
``make_cifar_c.py``), then clipped to [0, 1]; the labels are kept.  On the digits proxy, whose Gaussian noise is
the fitted multiple of CIFAR's (``fullscale/corruptions/digits_matched.json``), this augmentation is that many
times weaker against the corruption it imitates, and the page says so before any prediction; the second view
(``--also-published``) evaluates it at CIFAR's own strengths.  Every random number comes from ``generator``.
"""

import torch

SIGMAS = (0.0, 0.04, 0.06, 0.08, 0.09, 0.10)


def gaussian_noise(images, labels, generator):
    n = images.shape[0]
    device = generator.device
    pick = torch.randint(0, len(SIGMAS), (n,), generator=generator, device=device)
    sigma = torch.tensor(SIGMAS, device=device)[pick].to(images).view(n, 1, 1, 1)
    noise = torch.randn(images.shape, generator=generator, device=device).to(images)
    return (images + sigma * noise).clamp(0, 1), labels
