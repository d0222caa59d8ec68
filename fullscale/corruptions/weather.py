"""The weather group (snow, frost, fog, brightness) and the extra spatter, whose water step
(``water``, shared with the -P spatter) uses the re-done OpenCV steps of ``_filters`` (Canny,
distance transform, histogram equalisation); each registered with its parameter rows
(``specs.register_corruption``); see ``registry``."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from fullscale.corruptions._draws import cast_like, randn_like, uniform
from fullscale.corruptions._filters import (
    canny_cv2,
    capped_distance,
    chamfer_distance,
    equalize_hist_cv2,
    gaussian_blur,
    hsv_to_rgb,
    motion_blur,
    plasma_fractal,
    rgb_to_hsv,
    zoom_about_centre,
)
from fullscale.corruptions.frost import frost_textures
from fullscale.corruptions.specs import away_from, register_corruption


def _grey(x: Tensor) -> Tensor:
    return 0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3]


@register_corruption("snow",
                     cifar=((0.1, 0.2, 1, 0.6, 8, 3, 0.95), (0.1, 0.2, 1, 0.5, 10, 4, 0.9),
                            (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9), (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85),
                            (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8)),
                     imagenet=((0.1, 0.3, 3, 0.5, 10, 4, 0.8), (0.2, 0.3, 2, 0.5, 12, 4, 0.7),
                               (0.55, 0.3, 4, 0.9, 12, 8, 0.7), (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
                               (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55)),
                     pixel_fields={4: "int", 5: "float"})
def snow(x: Tensor, c: tuple[float, ...], g: torch.Generator) -> Tensor:
    loc, scale, zoom, threshold, radius, sigma, keep = c
    n, _, h, w = x.shape
    layer = loc + scale * randn_like(x, g, (n, 1, h, w))
    layer = zoom_about_centre(layer, zoom)
    layer = torch.where(layer < threshold, torch.zeros_like(layer), layer)
    layer = torch.floor(layer.clamp(0, 1) * 255) / 255  # the reference's uint8 PNG round trip
    layer = motion_blur(layer, int(radius), sigma, uniform((n,), -135, -45, g))
    layer = torch.round(layer * 255) / 255  # ImageMagick's 8-bit output
    x = keep * x + (1 - keep) * torch.maximum(x, _grey(x) * 1.5 + 0.5)
    return x + layer + layer.flip(-1, -2)


# (image weight, frost weight, frost photo scale): CIFAR shrinks the photos by 0.2 first
@register_corruption("frost",
                     cifar=((1, 0.2, 0.2), (1, 0.3, 0.2), (0.9, 0.4, 0.2), (0.85, 0.4, 0.2), (0.75, 0.45, 0.2)),
                     imagenet=((1, 0.4, 1.0), (0.8, 0.6, 1.0), (0.7, 0.7, 1.0), (0.65, 0.7, 1.0), (0.6, 0.75, 1.0)),
                     pixel_fields={2: "float"}, frost_dir=True,
                     strengthen=lambda c, k: (away_from(1, c[0], k, low=0), c[1] * k, c[2]))
def frost(x: Tensor, c: tuple[float, float, float], g: torch.Generator, frost_dir: str | None = None) -> Tensor:
    a, b, scale = c
    n, _, h, w = x.shape
    return a * x + b * frost_textures(n, h, w, scale, g, frost_dir).to(x)


@register_corruption("fog", cifar=((0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75)),
                     imagenet=((1.5, 2), (2, 2), (2.5, 1.7), (2.5, 1.5), (3, 1.4)),
                     strengthen=lambda c, k: (c[0] * k, c[1]))  # the fog's strength; its fractal's decay stays
def fog(x: Tensor, c: tuple[float, float], g: torch.Generator) -> Tensor:
    strength, decay = c
    n, _, h, w = x.shape
    size = 1 << (max(h, w) - 1).bit_length()  # the reference: 32 for CIFAR, 256 for ImageNet
    fractal = cast_like(x, plasma_fractal(n, size, decay, g)[:, :h, :w]).unsqueeze(1)
    max_val = x.amax(dim=(1, 2, 3), keepdim=True)
    return (x + strength * fractal) * max_val / (max_val + strength)


@register_corruption("brightness", cifar=(0.05, 0.1, 0.15, 0.2, 0.3), imagenet=(0.1, 0.2, 0.3, 0.4, 0.5),
                     strengthen=lambda c, k: c * k)
def brightness(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    hsv = rgb_to_hsv(x)
    hsv[:, 2] = (hsv[:, 2] + c).clamp(0, 1)
    return hsv_to_rgb(hsv)


def _box3(x: Tensor) -> Tensor:
    """cv2.blur(x, (3, 3)): 3x3 mean, border reflect-101 (separable sums of shifted views:
    a few times faster on the CPU than a pooling kernel)."""
    p = F.pad(x, (1, 1, 1, 1), mode="reflect")
    rows = p[:, :, :-2] + p[:, :, 1:-1] + p[:, :, 2:]
    return (rows[..., :-2] + rows[..., 1:-1] + rows[..., 2:]) / 9


def _emboss(x: Tensor) -> Tensor:
    """cv2.filter2D(x, -1, [[-2, -1, 0], [-1, 1, 1], [0, 1, 2]]) (a correlation, border
    reflect-101) as sums of shifted views."""
    p = F.pad(x, (1, 1, 1, 1), mode="reflect")
    h, w = x.shape[2:]

    def at(dy: int, dx: int) -> Tensor:
        return p[:, :, 1 + dy:1 + dy + h, 1 + dx:1 + dx + w]

    return (x + at(0, 1) + at(1, 0) - at(0, -1) - at(-1, 0) + 2 * (at(1, 1) - at(-1, -1)))


def water(liquid: Tensor, intensity: float, distance: str = "euclidean") -> Tensor:
    """Spatter's water drops from a liquid layer (N, 1, H, W): what the reference adds to the
    image, (N, 3, H, W), stage by stage with OpenCV's own rules: Canny 50/150 of the 8-bit layer,
    the distance to its edges capped at 20, 3x3 mean truncated to 8 bits, histogram
    equalisation, the emboss filter saturated to 8 bits, a 3x3 mean of that 8-bit image (rounded
    to 8 bits, as cv2.blur keeps the depth), times the layer, normalised per image, in pale
    turquoise (the reference adds the "BGR" colour (175, 238, 238) to the RGB channels in order).

    ``distance``: ``"euclidean"`` (exact, ``capped_distance``; the -C default, a few times faster
    on the CPU) or ``"chamfer"`` (cv2.distanceTransform's 5x5 approximation, ``chamfer_distance``,
    as the -P sets use): the exact distance gives about 4 % less water."""
    u8 = torch.floor((liquid * 255).clamp(0, 255))
    edges = canny_cv2(u8, 50, 150)
    if distance == "euclidean":
        dist = capped_distance(edges, 20)
    elif distance == "chamfer":
        dist = chamfer_distance(edges, 20.0)
    else:
        raise ValueError(f"water: distance={distance!r}, expected euclidean or chamfer")
    dist = equalize_hist_cv2(torch.floor(_box3(dist)))  # .astype(np.uint8) truncates
    dist = _emboss(dist).clamp(0, 255)  # integer levels, integer taps: exact; CV_8U saturates
    m = u8 * torch.round(_box3(dist))
    m = m / m.amax(dim=(2, 3), keepdim=True).clamp_min(1e-12) * intensity
    colour = torch.tensor([175, 238, 238], device=liquid.device, dtype=liquid.dtype).view(1, 3, 1, 1) / 255
    return m * colour


@register_corruption("spatter",
                     cifar=((0.62, 0.1, 0.7, 0.7, 0.5, 0), (0.65, 0.1, 0.8, 0.7, 0.5, 0),
                            (0.65, 0.3, 1, 0.69, 0.5, 0), (0.65, 0.1, 0.7, 0.69, 0.6, 1),
                            (0.65, 0.1, 0.5, 0.68, 0.6, 1)),
                     imagenet=((0.65, 0.3, 4, 0.69, 0.6, 0), (0.65, 0.3, 3, 0.68, 0.6, 0),
                               (0.65, 0.3, 2, 0.68, 0.5, 0), (0.65, 0.3, 1, 0.65, 1.5, 1),
                               (0.67, 0.4, 1, 0.65, 1.5, 1)),
                     pixel_fields={2: "float"}, mud_field=4,  # in mud mode index 4 is the mud mask's blur
                     cpu_block=2)  # the water step: a long chain of cheap ops on one grey layer per image
def spatter(x: Tensor, c: tuple[float, ...], g: torch.Generator) -> Tensor:
    loc, scale, sigma, threshold, intensity, mud = c
    n, _, h, w = x.shape
    liquid = gaussian_blur(loc + scale * randn_like(x, g, (n, 1, h, w)), sigma)
    liquid = torch.where(liquid < threshold, torch.zeros_like(liquid), liquid)
    if not mud:
        return x + water(liquid, intensity)
    m = (liquid > threshold).to(x.dtype)
    m = gaussian_blur(m, intensity)
    m = torch.where(m < 0.8, torch.zeros_like(m), m)
    colour = torch.tensor([63, 42, 20], device=x.device, dtype=x.dtype).view(1, 3, 1, 1) / 255
    return x * (1 - m) + colour * m
