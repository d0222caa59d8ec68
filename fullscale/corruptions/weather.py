"""The weather group (snow, frost, fog, brightness) and the extra spatter, with the re-done OpenCV
steps spatter needs (Canny, distance transform, histogram equalisation); see ``registry``."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from fullscale.corruptions._draws import cast_like, randn_like, uniform
from fullscale.corruptions._filters import (
    conv2d_same,
    gaussian_blur,
    hsv_to_rgb,
    motion_blur,
    plasma_fractal,
    rgb_to_hsv,
    zoom_about_centre,
)
from fullscale.corruptions.frost import frost_textures


def _grey(x: Tensor) -> Tensor:
    return 0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3]


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


def frost(x: Tensor, c: tuple[float, float, float], g: torch.Generator, frost_dir: str | None = None) -> Tensor:
    a, b, scale = c
    n, _, h, w = x.shape
    return a * x + b * frost_textures(n, h, w, scale, g, frost_dir).to(x)


def fog(x: Tensor, c: tuple[float, float], g: torch.Generator) -> Tensor:
    strength, decay = c
    n, _, h, w = x.shape
    size = 1 << (max(h, w) - 1).bit_length()  # the reference: 32 for CIFAR, 256 for ImageNet
    fractal = cast_like(x, plasma_fractal(n, size, decay, g)[:, :h, :w]).unsqueeze(1)
    max_val = x.amax(dim=(1, 2, 3), keepdim=True)
    return (x + strength * fractal) * max_val / (max_val + strength)


def brightness(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    hsv = rgb_to_hsv(x)
    hsv[:, 2] = (hsv[:, 2] + c).clamp(0, 1)
    return hsv_to_rgb(hsv)


def _box3(x: Tensor) -> Tensor:
    """cv2.blur(x, (3, 3)): 3x3 mean, border reflect-101."""
    return F.avg_pool2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), 3, stride=1)


def _canny(img: Tensor, low: float, high: float) -> Tensor:
    """cv2.Canny(img, low, high) on (N, 1, H, W) grey levels 0..255: 3x3 Sobel, L1 magnitude,
    non-maximum suppression in 4 directions, hysteresis (8-connected) -> bool edges."""
    sobel = torch.tensor([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]], device=img.device, dtype=img.dtype)
    padded = F.pad(img, (1, 1, 1, 1), mode="replicate")
    gx = F.conv2d(padded, sobel.view(1, 1, 3, 3))
    gy = F.conv2d(padded, sobel.T.contiguous().view(1, 1, 3, 3))
    mag = gx.abs() + gy.abs()
    m = F.pad(mag, (1, 1, 1, 1))

    def at(dy: int, dx: int) -> Tensor:
        return m[:, :, 1 + dy:m.shape[2] - 1 + dy, 1 + dx:m.shape[3] - 1 + dx]

    ax, ay = gx.abs(), gy.abs()
    tan22, tan67 = 0.4142135623730951, 2.414213562373095
    horizontal = ay <= ax * tan22
    vertical = ay > ax * tan67
    diagonal_sign = (gx * gy) >= 0
    keep = torch.where(horizontal, (mag > at(0, -1)) & (mag >= at(0, 1)),
                       torch.where(vertical, (mag > at(-1, 0)) & (mag >= at(1, 0)),
                                   torch.where(diagonal_sign, (mag > at(-1, -1)) & (mag >= at(1, 1)),
                                               (mag > at(-1, 1)) & (mag >= at(1, -1)))))
    candidate = keep & (mag > low)
    edges = candidate & (mag > high)
    while True:
        grown = candidate & (F.max_pool2d(edges.to(img.dtype), 3, stride=1, padding=1) > 0)
        if torch.equal(grown, edges):
            return edges
        edges = grown


def _distance_to(mask: Tensor, cap: float) -> Tensor:
    """Euclidean distance of every pixel to the nearest True pixel of ``mask`` (N, 1, H, W),
    capped at ``cap``: exact, separable (row distances first, then the minimum over rows of
    dy^2 + row distance^2), with only offsets within the cap."""
    r = int(cap)
    h, w = mask.shape[2:]
    far = float(cap) ** 2
    padded = F.pad(mask.float(), (r, r, 0, 0))
    row = torch.full(mask.shape, far, device=mask.device)
    for dx in range(-r, r + 1):
        hit = padded[:, :, :, r + dx:r + dx + w] > 0
        row = torch.where(hit, torch.clamp(row, max=float(dx * dx)), row)
    padded = F.pad(row, (0, 0, r, r), value=far)
    best = torch.full(mask.shape, far, device=mask.device)
    for dy in range(-r, r + 1):
        best = torch.minimum(best, padded[:, :, r + dy:r + dy + h] + dy * dy)
    return best.clamp(max=far).sqrt()


def _equalise_hist(u8: Tensor) -> Tensor:
    """cv2.equalizeHist per image on integer levels (N, 1, H, W) stored as floats."""
    n = u8.shape[0]
    flat = u8.reshape(n, -1).long()
    hist = torch.zeros(n, 256, device=u8.device).scatter_add_(1, flat, torch.ones_like(flat, dtype=torch.float32))
    cdf = hist.cumsum(1)
    first = torch.where(hist > 0, cdf, torch.full_like(cdf, float("inf"))).amin(1, keepdim=True)
    total = cdf[:, -1:]
    scale = 255 / (total - first).clamp_min(1)
    lut = torch.round((cdf - first) * scale).clamp(0, 255)
    lut = torch.where(total == first, torch.arange(256, device=u8.device, dtype=lut.dtype).expand(n, 256), lut)
    return lut.gather(1, flat).view_as(u8).to(u8.dtype)


def water(liquid: Tensor, intensity: float) -> Tensor:
    """Spatter's water drops from a liquid layer (N, 1, H, W): what the reference adds to the
    image, (N, 3, H, W).  Edges of the 8-bit layer (Canny 50/150) -> distance to them capped at 20
    -> 3x3 mean -> histogram equalisation -> an emboss filter (8-bit) -> 3x3 mean, times the layer,
    normalised per image, in pale turquoise (the reference adds the "BGR" colour (175, 238, 238)
    to the RGB channels in order)."""
    u8 = torch.floor((liquid * 255).clamp(0, 255))
    edges = _canny(u8, 50, 150)
    dist = torch.floor(_box3(_distance_to(edges, 20.0)))  # .astype(np.uint8) truncates
    dist = _equalise_hist(dist)
    ker = torch.tensor([[-2.0, -1, 0], [-1, 1, 1], [0, 1, 2]])
    dist = torch.round(conv2d_same(dist, ker)).clamp(0, 255)  # CV_8U saturates
    m = u8 * _box3(dist)
    m = m / m.amax(dim=(2, 3), keepdim=True).clamp_min(1e-12) * intensity
    colour = torch.tensor([175, 238, 238], device=liquid.device, dtype=liquid.dtype).view(1, 3, 1, 1) / 255
    return m * colour


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
