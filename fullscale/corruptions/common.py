"""The 15 common corruptions of CIFAR-10-C / ImageNet-C (Hendrycks & Dietterich, 2019) and 4
extras, batched over images.

Each corruption maps float images (N, 3, H, W) in [0, 1] and the parameter row of one severity
to corrupted images, with per-image randomness from a ``torch.Generator``.  The rows are those
of ``make_cifar_c.py`` (``params="cifar"``) and ``make_imagenet_c.py`` (``params="imagenet"``)
in github.com/hendrycks/robustness, kept as data in ``SPECS``.  Where the reference calls a
library we do not ship, we say what we do instead:

* motion blur and the snow streaks: ImageMagick's motion-blur taps (integer offsets along the
  angle, one-sided Gaussian weights), as in the ``imagecorruptions`` package's ``_motion_blur``;
* glass blur: the reference's sequential pixel loop (a copy of pixel (h', w') into (h, w), which
  is what its tuple "swap" of numpy views does), run once for all images of a batch on pixel
  indices (the same copies, exact), then one gather;
* frost: the reference's frost photographs, from the installed ``imagecorruptions`` package's
  ``frost/`` folder or ``frost_dir`` (``fullscale.corruptions.frost``); never shipped here;
* spatter: OpenCV's Canny / distance transform / histogram equalisation re-done in torch (Canny
  with Sobel L1 magnitude, 4-direction non-maximum suppression and hysteresis by dilation; the
  exact Euclidean distance instead of OpenCV's 5x5 chamfer approximation);
* JPEG: PIL's libjpeg, one image at a time, on the CPU; on an accelerator the batched DCT
  re-implementation of ``jpeg.py`` (not bit-exact: mean difference below one level);
* pixelate: PIL's BOX resizes re-done as matrix products with PIL's rounding (bit-exact); on
  the CPU PIL itself is faster and is called per image;
* elastic transform: cv2.warpAffine (reflect-101) + scipy map_coordinates (half-sample reflect)
  become two bilinear grid_samples on folded coordinates.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import Tensor

from fullscale.corruptions._filters import (
    conv2d_same,
    disk_kernel,
    gaussian_blur,
    hsv_to_rgb,
    motion_blur,
    plasma_fractal,
    rgb_to_hsv,
    zoom_about_centre,
)
from fullscale.corruptions.frost import frost_textures
from fullscale.corruptions.jpeg import jpeg_roundtrip

__all__ = [
    "CATEGORIES", "CORRUPTIONS", "EXTRA_CORRUPTIONS", "PARAMS", "SPECS", "CorruptionSpec", "corrupt", "to_u8", "water",
]

PARAMS = ("cifar", "imagenet")


def _uniform(shape: tuple[int, ...], low: float, high: float, g: torch.Generator) -> Tensor:
    return low + (high - low) * torch.rand(shape, generator=g, device=g.device)


def _on(x: Tensor, t: Tensor) -> Tensor:
    return t.to(device=x.device, dtype=x.dtype)


def _randn(x: Tensor, g: torch.Generator, shape: tuple[int, ...] | None = None) -> Tensor:
    return _on(x, torch.randn(shape or x.shape, generator=g, device=g.device))


# ----------------------------------------------------------------------------------- noise

def gaussian_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return x + c * _randn(x, g)


def shot_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return _on(x, torch.poisson(x.to(g.device) * c, generator=g)) / c


def impulse_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    """skimage random_noise(mode='s&p', amount=c): a fraction c of the values set to 0 or 1,
    half each."""
    hit = _on(x, torch.rand(x.shape, generator=g, device=g.device)) < c
    salt = _on(x, torch.rand(x.shape, generator=g, device=g.device)) < 0.5
    return torch.where(hit, salt.to(x.dtype), x)


def speckle_noise(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return x + x * c * _randn(x, g)


# ------------------------------------------------------------------------------------ blur

def gaussian_blur_corruption(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    return gaussian_blur(x, c)


def defocus_blur(x: Tensor, c: tuple[float, float], g: torch.Generator) -> Tensor:
    return conv2d_same(x, disk_kernel(*c))


def _glass_sources(offsets: np.ndarray, h: int, w: int, delta: int) -> np.ndarray:
    """The reference's pixel loop on pixel indices: ``offsets[it, step, i] = (dx, dy)`` are image
    ``i``'s draws at that step; returns, per image, the source pixel of every position (N, H W).

    The reference's line ``x[h, w], x[h', w'] = x[h', w'], x[h, w]`` on an (H, W, 3) array builds
    its right side from *views*: (h', w') is written into (h, w) first, and (h, w), now holding
    the same values, is written back into (h', w'). So pixel (h', w') is copied into (h, w) and
    (h', w') is left unchanged: a copy, not a swap. That is what the released CIFAR-10-C and
    ImageNet-C files contain (Hendrycks & Dietterich's ``make_cifar_c.py`` /
    ``make_imagenet_c.py``), so it is what the benchmark the paper evaluates on is made of."""
    n = offsets.shape[2]
    src = np.tile(np.arange(h * w, dtype=np.int64), (n, 1))
    rows = np.arange(n)
    here = np.array([r * w + col for r in range(h - delta, delta, -1) for col in range(w - delta, delta, -1)],
                    dtype=np.int64)
    for d in offsets:
        there = here[:, None] + d[:, :, 1] * w + d[:, :, 0]  # (steps, N): dx drawn first, then dy
        for a, b in zip(here.tolist(), there, strict=True):
            src[:, a] = src[rows, b]  # the copy; sequential, as a later step may read this pixel
    return src


def _glass_permutation(n: int, h: int, w: int, delta: int, iterations: int, g: torch.Generator) -> Tensor:
    """The reference's loop (for h from H - delta down to delta + 1, for w likewise: copy pixel
    (h + dy, w + dx) into (h, w), dx, dy ~ U{-delta, .., delta - 1}) applied to pixel indices of
    ``n`` images at once: returns, per image, which source pixel ends up where (N, H W)."""
    steps = len(range(h - delta, delta, -1)) * len(range(w - delta, delta, -1))
    offsets = np.stack([torch.randint(-delta, delta, (steps, n, 2), generator=g, device=g.device).cpu().numpy()
                        for _ in range(iterations)]) if steps else np.zeros((iterations, 0, n, 2), np.int64)
    return torch.from_numpy(_glass_sources(offsets, h, w, delta))


def glass_blur(x: Tensor, c: tuple[float, int, int], g: torch.Generator) -> Tensor:
    sigma, delta, iterations = c
    x = torch.floor(gaussian_blur(x, sigma) * 255) / 255  # the reference's np.uint8(...)
    n, ch, h, w = x.shape
    perm = _glass_permutation(n, h, w, delta, iterations, g).to(x.device)
    x = x.reshape(n, ch, h * w).gather(2, perm.unsqueeze(1).expand(n, ch, h * w)).view(n, ch, h, w)
    return gaussian_blur(x, sigma)


def motion_blur_corruption(x: Tensor, c: tuple[int, float], g: torch.Generator) -> Tensor:
    radius, sigma = c
    angle = _uniform((x.shape[0],), -45, 45, g)
    # ImageMagick works on the 8-bit image and writes 8 bits back (rounded)
    return torch.round(motion_blur(x, radius, sigma, angle) * 255) / 255


def zoom_blur(x: Tensor, c: tuple[float, ...], g: torch.Generator) -> Tensor:
    out = sum(zoom_about_centre(x, float(f)) for f in c)
    return (x + out) / (len(c) + 1)


# --------------------------------------------------------------------------------- weather

def _grey(x: Tensor) -> Tensor:
    return 0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3]


def snow(x: Tensor, c: tuple[float, ...], g: torch.Generator) -> Tensor:
    loc, scale, zoom, threshold, radius, sigma, keep = c
    n, _, h, w = x.shape
    layer = loc + scale * _randn(x, g, (n, 1, h, w))
    layer = zoom_about_centre(layer, zoom)
    layer = torch.where(layer < threshold, torch.zeros_like(layer), layer)
    layer = torch.floor(layer.clamp(0, 1) * 255) / 255  # the reference's uint8 PNG round trip
    layer = motion_blur(layer, int(radius), sigma, _uniform((n,), -135, -45, g))
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
    fractal = _on(x, plasma_fractal(n, size, decay, g)[:, :h, :w]).unsqueeze(1)
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
    liquid = gaussian_blur(loc + scale * _randn(x, g, (n, 1, h, w)), sigma)
    liquid = torch.where(liquid < threshold, torch.zeros_like(liquid), liquid)
    if not mud:
        return x + water(liquid, intensity)
    m = (liquid > threshold).to(x.dtype)
    m = gaussian_blur(m, intensity)
    m = torch.where(m < 0.8, torch.zeros_like(m), m)
    colour = torch.tensor([63, 42, 20], device=x.device, dtype=x.dtype).view(1, 3, 1, 1) / 255
    return x * (1 - m) + colour * m


# --------------------------------------------------------------------------------- digital

def saturate(x: Tensor, c: tuple[float, float], g: torch.Generator) -> Tensor:
    mul, add = c
    hsv = rgb_to_hsv(x)
    hsv[:, 1] = (hsv[:, 1] * mul + add).clamp(0, 1)
    return hsv_to_rgb(hsv)


def contrast(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    means = x.mean(dim=(2, 3), keepdim=True)
    return (x - means) * c + means


def elastic_transform(x: Tensor, c: tuple[float, float, float], g: torch.Generator) -> Tensor:
    """A random affine of three control points (cv2.getAffineTransform / warpAffine), then a
    smooth displacement field: uniform(-1, 1) blurred by skimage gaussian(sigma, reflect,
    truncate=3), times alpha, sampled bilinearly (map_coordinates order 1, reflect)."""
    alpha, sigma, affine = c
    n, _, h, w = x.shape
    centre, square = torch.tensor([h // 2, w // 2], dtype=torch.float64), min(h, w) // 3
    corner = torch.stack([centre[0] + square, centre[1] - square])
    pts1 = torch.stack([centre + square, corner, centre - square])
    pts2 = pts1 + _uniform((n, 3, 2), -affine, affine, g).double().cpu()
    # cv2.getAffineTransform(pts1, pts2) = M with pts2 = M [pts1; 1]; warpAffine samples src = M^-1 dst
    ones = torch.ones(3, 1, dtype=torch.float64)
    forward = torch.linalg.solve(torch.cat([pts1, ones], 1), pts2).transpose(1, 2)  # (n, 2, 3)
    full = torch.cat([forward, torch.tensor([[[0.0, 0.0, 1.0]]], dtype=torch.float64).expand(n, 1, 3)], 1)
    inverse = torch.linalg.inv(full)[:, :2]
    ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64),
                            indexing="ij")
    pix = torch.stack([xs, ys, torch.ones_like(xs)], -1).view(1, h * w, 3)
    src = pix @ inverse.transpose(1, 2)  # (n, HW, 2) as (x, y) pixel coordinates
    x = _sample(x, src.view(n, h, w, 2), "mirror")
    dxy = _uniform((n, 2, h, w), -1, 1, g).to(device=x.device, dtype=torch.float64)
    dxy = gaussian_blur(dxy, sigma, mode="reflect", truncate=3.0) * alpha
    grid = torch.stack([xs, ys], -1).to(dxy).unsqueeze(0) + dxy.permute(0, 2, 3, 1)
    return _sample(x, grid, "reflect")


def _fold(coord: Tensor, n: int, mode: str) -> Tensor:
    """Continuous pixel coordinates folded into [0, n - 1]: ``mirror`` = reflect-101 (OpenCV's
    BORDER_REFLECT_101, scipy 'mirror'), ``reflect`` = half-sample symmetric (scipy 'reflect')."""
    if mode == "mirror":
        period = 2 * (n - 1)
        c = torch.remainder(coord, period)
        c = torch.where(c > n - 1, period - c, c)
    else:
        c = torch.remainder(coord + 0.5, 2 * n)
        c = torch.where(c > n, 2 * n - c, c) - 0.5
    return c.clamp(0, n - 1)


def _sample(x: Tensor, pixel_xy: Tensor, mode: str) -> Tensor:
    """Bilinear sample at pixel coordinates (x, y) (pixel centres at integers), borders folded."""
    _n, _, h, w = x.shape
    pixel_xy = pixel_xy.to(x.device, torch.float64)
    px, py = _fold(pixel_xy[..., 0], w, mode), _fold(pixel_xy[..., 1], h, mode)
    grid = torch.stack([(2 * px + 1) / w - 1, (2 * py + 1) / h - 1], -1)
    return F.grid_sample(x, grid.to(x), mode="bilinear", padding_mode="border", align_corners=False)


def pixelate(x: Tensor, c: float, g: torch.Generator) -> Tensor:
    """PIL BOX resize to int(size c) and back (BOX again)."""
    h, w = x.shape[2:]
    return _box_resize(_box_resize(x, int(h * c), int(w * c)), h, w)


def _box_resize(x: Tensor, out_h: int, out_w: int) -> Tensor:
    """PIL's ``resize(..., BOX)`` of an 8-bit image (Resample.c): output pixel i averages the
    input pixels whose centres fall in the box of width max(scale, 1) around (i + 0.5) scale.
    PIL resamples horizontally, rounds to 8 bits (half up), then vertically: the same here.  Its
    22-bit fixed-point weights round the same way: a box mean of k levels is a multiple of 1 / k,
    a tie only when exact."""
    def weights(n_in: int, n_out: int) -> Tensor:
        scale = n_in / n_out
        support = 0.5 * max(scale, 1.0)
        centre = (torch.arange(n_out, dtype=torch.float64) + 0.5) * scale
        pixel = torch.arange(n_in, dtype=torch.float64)
        t = (pixel[None, :] - centre[:, None] + 0.5) / max(scale, 1.0)
        lo = torch.clamp(torch.floor(centre - support + 0.5), min=0)
        hi = torch.clamp(torch.floor(centre + support + 0.5), max=n_in)
        inside = (pixel[None, :] >= lo[:, None]) & (pixel[None, :] < hi[:, None])
        m = ((t > -0.5) & (t <= 0.5) & inside).double()
        return (m / m.sum(1, keepdim=True)).to(device=x.device, dtype=x.dtype)

    levels = torch.round(x * 255)
    across = torch.floor(torch.matmul(levels, weights(x.shape[3], out_w).T) + 0.5 + 1e-4)
    return torch.floor(torch.matmul(weights(x.shape[2], out_h), across) + 0.5 + 1e-4) / 255


def jpeg_compression(x: Tensor, c: int, g: torch.Generator) -> Tensor:
    """PIL's libjpeg (exact) for float images; ``corrupt`` sends CPU uint8 batches straight to
    ``_pil_per_image``, accelerator batches to the tensor re-implementation (``jpeg.py``)."""
    if x.device.type != "cpu":
        return jpeg_roundtrip(x, c)
    u8 = torch.floor(x * 255 + 0.5).clamp(0, 255).to(torch.uint8)
    return _pil_per_image(u8, "jpeg_compression", c).float() / 255


def _pil_per_image(images_u8: Tensor, name: str, c: Any) -> Tensor:
    """JPEG and pixelate on the CPU: PIL's C code one image at a time, uint8 in and out — the
    reference itself, and faster there than any tensor version (pixelate's batched version,
    bit-identical, runs on accelerators)."""
    out = []
    for img in images_u8.permute(0, 2, 3, 1).numpy():
        pil = Image.fromarray(img)
        if name == "jpeg_compression":
            buffer = io.BytesIO()
            pil.save(buffer, "JPEG", quality=c)
            out.append(np.asarray(Image.open(buffer)))
        else:
            w, h = pil.size
            out.append(np.asarray(pil.resize((int(w * c), int(h * c)), Image.BOX).resize((w, h), Image.BOX)))
    return torch.from_numpy(np.stack(out)).permute(0, 3, 1, 2)


# -------------------------------------------------------------------------------- registry

Corruption = Callable[[Tensor, Any, torch.Generator], Tensor]


@dataclass(frozen=True)
class CorruptionSpec:
    """One corruption: its function, category and the five parameter rows per table."""

    fn: Corruption
    category: str
    cifar: tuple[Any, ...]
    imagenet: tuple[Any, ...]

    def row(self, params: str, severity: int) -> Any:
        return getattr(self, params)[severity - 1]


def _zooms(*tops_steps: tuple[float, float]) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(f) for f in np.arange(1, top, step)) for top, step in tops_steps)


_S = 244  # make_imagenet_c.py's elastic rows use 244 ("should have been 224"); kept as published

SPECS: dict[str, CorruptionSpec] = {
    "gaussian_noise": CorruptionSpec(gaussian_noise, "noise", (0.04, 0.06, 0.08, 0.09, 0.10),
                                     (0.08, 0.12, 0.18, 0.26, 0.38)),
    "shot_noise": CorruptionSpec(shot_noise, "noise", (500, 250, 100, 75, 50), (60, 25, 12, 5, 3)),
    "impulse_noise": CorruptionSpec(impulse_noise, "noise", (0.01, 0.02, 0.03, 0.05, 0.07),
                                    (0.03, 0.06, 0.09, 0.17, 0.27)),
    "defocus_blur": CorruptionSpec(defocus_blur, "blur", ((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1)),
                                   ((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5))),
    "glass_blur": CorruptionSpec(glass_blur, "blur",
                                 ((0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2)),
                                 ((0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2))),
    "motion_blur": CorruptionSpec(motion_blur_corruption, "blur", ((6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5)),
                                  ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15))),
    "zoom_blur": CorruptionSpec(zoom_blur, "blur",
                                _zooms((1.06, 0.01), (1.11, 0.01), (1.16, 0.01), (1.21, 0.01), (1.26, 0.01)),
                                _zooms((1.11, 0.01), (1.16, 0.01), (1.21, 0.02), (1.26, 0.02), (1.31, 0.03))),
    "snow": CorruptionSpec(snow, "weather",
                           ((0.1, 0.2, 1, 0.6, 8, 3, 0.95), (0.1, 0.2, 1, 0.5, 10, 4, 0.9),
                            (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9), (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85),
                            (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8)),
                           ((0.1, 0.3, 3, 0.5, 10, 4, 0.8), (0.2, 0.3, 2, 0.5, 12, 4, 0.7),
                            (0.55, 0.3, 4, 0.9, 12, 8, 0.7), (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
                            (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55))),
    # (image weight, frost weight, frost photo scale): CIFAR shrinks the photos by 0.2 first
    "frost": CorruptionSpec(frost, "weather",
                            ((1, 0.2, 0.2), (1, 0.3, 0.2), (0.9, 0.4, 0.2), (0.85, 0.4, 0.2), (0.75, 0.45, 0.2)),
                            ((1, 0.4, 1.0), (0.8, 0.6, 1.0), (0.7, 0.7, 1.0), (0.65, 0.7, 1.0), (0.6, 0.75, 1.0))),
    "fog": CorruptionSpec(fog, "weather", ((0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75)),
                          ((1.5, 2), (2, 2), (2.5, 1.7), (2.5, 1.5), (3, 1.4))),
    "brightness": CorruptionSpec(brightness, "weather", (0.05, 0.1, 0.15, 0.2, 0.3), (0.1, 0.2, 0.3, 0.4, 0.5)),
    "contrast": CorruptionSpec(contrast, "digital", (0.75, 0.5, 0.4, 0.3, 0.15), (0.4, 0.3, 0.2, 0.1, 0.05)),
    "elastic_transform": CorruptionSpec(
        elastic_transform, "digital",
        tuple((32 * a, 32 * s, 32 * f) for a, s, f in
              ((0, 0, 0.08), (0.05, 0.2, 0.07), (0.08, 0.06, 0.06), (0.1, 0.04, 0.05), (0.1, 0.03, 0.03))),
        tuple((_S * a, _S * s, _S * f) for a, s, f in
              ((2, 0.7, 0.1), (2, 0.08, 0.2), (0.05, 0.01, 0.02), (0.07, 0.01, 0.02), (0.12, 0.01, 0.02)))),
    "pixelate": CorruptionSpec(pixelate, "digital", (0.95, 0.9, 0.85, 0.75, 0.65), (0.6, 0.5, 0.4, 0.3, 0.25)),
    "jpeg_compression": CorruptionSpec(jpeg_compression, "digital", (80, 65, 58, 50, 40), (25, 18, 15, 10, 7)),
    "speckle_noise": CorruptionSpec(speckle_noise, "extra", (0.06, 0.1, 0.12, 0.16, 0.2),
                                    (0.15, 0.2, 0.35, 0.45, 0.6)),
    "gaussian_blur": CorruptionSpec(gaussian_blur_corruption, "extra", (0.4, 0.6, 0.7, 0.8, 1), (1, 2, 3, 4, 6)),
    "spatter": CorruptionSpec(spatter, "extra",
                              ((0.62, 0.1, 0.7, 0.7, 0.5, 0), (0.65, 0.1, 0.8, 0.7, 0.5, 0),
                               (0.65, 0.3, 1, 0.69, 0.5, 0), (0.65, 0.1, 0.7, 0.69, 0.6, 1),
                               (0.65, 0.1, 0.5, 0.68, 0.6, 1)),
                              ((0.65, 0.3, 4, 0.69, 0.6, 0), (0.65, 0.3, 3, 0.68, 0.6, 0),
                               (0.65, 0.3, 2, 0.68, 0.5, 0), (0.65, 0.3, 1, 0.65, 1.5, 1),
                               (0.67, 0.4, 1, 0.65, 1.5, 1))),
    "saturate": CorruptionSpec(saturate, "extra", ((0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2)),
                               ((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (20, 0.2))),
}

CORRUPTIONS: tuple[str, ...] = tuple(name for name, s in SPECS.items() if s.category != "extra")
EXTRA_CORRUPTIONS: tuple[str, ...] = tuple(name for name, s in SPECS.items() if s.category == "extra")
# the four categories of the 15 (the paper's and ImageNet-C's grouping); the extras are apart
CATEGORIES: dict[str, tuple[str, ...]] = {
    cat: tuple(name for name, s in SPECS.items() if s.category == cat)
    for cat in ("noise", "blur", "weather", "digital")
}


def corrupt(images_u8: Tensor, name: str, severity: int, *, generator: torch.Generator,
            params: str = "cifar", frost_dir: str | None = None) -> Tensor:
    """``name`` at ``severity`` (1..5) on uint8 images (N, 3, H, W) -> uint8 (N, 3, H, W), as the
    -C sets store them (the reference's ``np.uint8(...)``: truncation after clipping to [0, 1]).

    ``params``: ``"cifar"`` (make_cifar_c.py) or ``"imagenet"`` (make_imagenet_c.py) rows; the
    images may have any size.  Randomness comes from ``generator`` only; the work runs on the
    images' device (on the CPU in blocks of a few images, drawing block by block)."""
    if name not in SPECS:
        raise ValueError(f"unknown corruption {name!r}; available: {', '.join(SPECS)}")
    if not isinstance(severity, int) or not 1 <= severity <= 5:
        raise ValueError(f"severity must be an int in 1..5, got {severity!r}")
    if params not in PARAMS:
        raise ValueError(f"params must be one of {', '.join(PARAMS)}, got {params!r}")
    if images_u8.dtype != torch.uint8 or images_u8.ndim != 4 or images_u8.shape[1] != 3:
        raise ValueError(f"corrupt expects uint8 images (N, 3, H, W), got {images_u8.dtype} "
                         f"{tuple(images_u8.shape)}")
    if images_u8.shape[0] == 0:
        return images_u8.clone()
    spec = SPECS[name]
    row = spec.row(params, severity)
    if name in ("jpeg_compression", "pixelate") and images_u8.device.type == "cpu":
        return _pil_per_image(images_u8, name, row)
    n, _, h, w = images_u8.shape
    # On the CPU, elementwise chains over a large batch run from memory, over a few images from
    # cache (1.5 - 3.5x faster at 224x224); glass blur's swap loop wants the whole batch at once.
    block = n if images_u8.device.type != "cpu" or name == "glass_blur" else max(1, _CPU_BLOCK // (3 * h * w))
    parts = []
    for start in range(0, n, block):
        x = images_u8[start:start + block].float().div_(255)
        out = frost(x, row, generator, frost_dir) if name == "frost" else spec.fn(x, row, generator)
        parts.append(to_u8(out))
    return parts[0] if len(parts) == 1 else torch.cat(parts)


_CPU_BLOCK = 1 << 19  # values per block on the CPU (2 MB of float32)


def to_u8(x: Tensor) -> Tensor:
    """np.uint8(np.clip(x, 0, 1) * 255): truncation; the 1e-3 keeps values that are whole levels
    in exact arithmetic (k / 255 * 255 in float32) from dropping a level."""
    return x.mul(255).add_(1e-3).clamp_(0, 255).floor_().to(torch.uint8)
