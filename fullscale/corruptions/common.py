"""The 15 common corruptions of CIFAR-10-C (Hendrycks & Dietterich, 2019) and 4 extras, batched.

Each corruption maps float images (N, 3, H, W) in [0, 1] and a severity 1..5 to corrupted
images, with per-image randomness from a ``torch.Generator``; the parameters are those of
``make_cifar_c.py`` in github.com/hendrycks/robustness (``params="cifar"``).  Where the
reference calls a library we do not ship, we say what we do instead:

* motion blur and the snow streaks: ImageMagick's motion blur is a one-sided Gaussian-weighted
  streak; we sum bilinearly shifted copies with those weights (``_filters.motion_blur``);
* glass blur: the reference swaps pixels one at a time in a Python loop (order-dependent); we
  move every pixel to a random neighbour within the same radius at once, same iterations —
  equal in distribution of the displacement, not pixel for pixel;
* frost: the reference blends six frost photographs shipped with its code; give their folder as
  ``frost_dir`` to use them, otherwise a synthetic frost texture (plasma fractal with crystal
  streaks) stands in and the result files say so;
* JPEG: PIL's libjpeg, one image at a time (a codec; no tensor equivalent);
* elastic transform: cv2.warpAffine + scipy map_coordinates become two bilinear grid_samples
  with reflection padding.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

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

__all__ = ["CATEGORIES", "CORRUPTIONS", "EXTRA_CORRUPTIONS", "corrupt"]

Corruption = Callable[[Tensor, int, torch.Generator], Tensor]


def _uniform(shape: tuple[int, ...], low: float, high: float, g: torch.Generator) -> Tensor:
    return low + (high - low) * torch.rand(shape, generator=g, device=g.device)


def _on(x: Tensor, t: Tensor) -> Tensor:
    return t.to(device=x.device, dtype=x.dtype)


def gaussian_noise(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    c = [0.04, 0.06, 0.08, 0.09, 0.10][s - 1]
    return x + c * _on(x, torch.randn(x.shape, generator=g, device=g.device))


def shot_noise(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    c = [500, 250, 100, 75, 50][s - 1]
    return _on(x, torch.poisson(x.to(g.device) * c, generator=g)) / c


def impulse_noise(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    """skimage random_noise(mode='s&p', amount=c): a fraction c of the values set to 0 or 1."""
    c = [0.01, 0.02, 0.03, 0.05, 0.07][s - 1]
    hit = _on(x, torch.rand(x.shape, generator=g, device=g.device)) < c
    salt = _on(x, torch.rand(x.shape, generator=g, device=g.device)) < 0.5
    return torch.where(hit, salt.to(x.dtype), x)


def speckle_noise(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    c = [0.06, 0.1, 0.12, 0.16, 0.2][s - 1]
    return x + x * c * _on(x, torch.randn(x.shape, generator=g, device=g.device))


def gaussian_blur_corruption(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    return gaussian_blur(x, [0.4, 0.6, 0.7, 0.8, 1.0][s - 1])


def defocus_blur(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    radius, alias = [(0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1)][s - 1]
    return conv2d_same(x, disk_kernel(radius, alias))


def glass_blur(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    sigma, delta, iterations = [(0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2)][s - 1]
    x = torch.floor(gaussian_blur(x, sigma) * 255) / 255  # the reference's np.uint8(...)
    n, _, h, w = x.shape
    rows = torch.arange(h, device=x.device).view(1, h, 1)
    cols = torch.arange(w, device=x.device).view(1, 1, w)
    for _ in range(iterations):
        d = _on(x, torch.randint(-delta, delta, (2, n, h, w), generator=g, device=g.device)).long()
        inner = (rows >= delta) & (rows < h - delta) & (cols >= delta) & (cols < w - delta)
        src_r = torch.where(inner, rows + d[0], rows).clamp(0, h - 1)
        src_c = torch.where(inner, cols + d[1], cols).clamp(0, w - 1)
        flat = (src_r * w + src_c).view(n, 1, h * w).expand(n, 3, h * w)
        x = x.reshape(n, 3, h * w).gather(2, flat).view(n, 3, h, w)
    return gaussian_blur(x, sigma)


def motion_blur_corruption(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    radius, sigma = [(6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5)][s - 1]
    return motion_blur(x, radius, sigma, _on(x, _uniform((x.shape[0],), -45, 45, g)))


def zoom_blur(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    top = [1.06, 1.11, 1.16, 1.21, 1.26][s - 1]
    factors = np.arange(1, top, 0.01)
    out = sum(zoom_about_centre(x, float(f)) for f in factors)
    return (x + out) / (len(factors) + 1)


def _grey(x: Tensor) -> Tensor:
    return (0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3])


def snow(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    loc, scale, zoom, threshold, radius, sigma, keep = [
        (0.1, 0.2, 1, 0.6, 8, 3, 0.95), (0.1, 0.2, 1, 0.5, 10, 4, 0.9), (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9),
        (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85), (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8)][s - 1]
    n, _, h, w = x.shape
    layer = loc + scale * _on(x, torch.randn((n, 1, h, w), generator=g, device=g.device))
    layer = zoom_about_centre(layer, zoom) if zoom != 1 else layer
    layer = torch.where(layer < threshold, torch.zeros_like(layer), layer)
    layer = torch.floor(layer.clamp(0, 1) * 255) / 255  # the reference's uint8 PNG round trip
    layer = motion_blur(layer, radius, sigma, _on(x, _uniform((n,), -135, -45, g)))
    x = keep * x + (1 - keep) * torch.maximum(x, _grey(x) * 1.5 + 0.5)
    return x + layer + layer.flip(-1, -2)


def _frost_textures(frost_dir: str | None, n: int, h: int, w: int, g: torch.Generator,
                    device: torch.device) -> Tensor:
    if frost_dir:
        files = sorted(p for p in Path(frost_dir).iterdir() if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
        if not files:
            raise FileNotFoundError(f"no frost images (*.png, *.jpg) in {frost_dir}")
        textures = []
        picks = torch.randint(0, len(files), (n,), generator=g, device=g.device).tolist()
        for k in picks:
            img = Image.open(files[k]).convert("RGB")
            img = img.resize((max(w + 1, round(img.width * 0.2)), max(h + 1, round(img.height * 0.2))))
            arr = torch.from_numpy(np.array(img)).permute(2, 0, 1).float() / 255
            top = int(torch.randint(0, arr.shape[1] - h, (1,), generator=g, device=g.device))
            left = int(torch.randint(0, arr.shape[2] - w, (1,), generator=g, device=g.device))
            textures.append(arr[:, top:top + h, left:left + w])
        return torch.stack(textures).to(device)
    # synthetic frost: a bright fractal haze with crystalline streaks, bluish white
    size = 1 << max(h, w).bit_length()
    haze = plasma_fractal(n, size, 1.6, g)[:, :h, :w].to(device).unsqueeze(1)
    sparks = (torch.rand((n, 1, h, w), generator=g, device=g.device) > 0.9).float().to(device)
    streaks = motion_blur(sparks, 4, 2, _on(haze, _uniform((n,), 0, 180, g)))
    texture = (0.6 * haze ** 2 + 2.5 * streaks).clamp(0, 1)
    tint = torch.tensor([0.85, 0.9, 1.0], device=device).view(1, 3, 1, 1)
    return texture * tint


def frost(x: Tensor, s: int, g: torch.Generator, frost_dir: str | None = None) -> Tensor:
    a, b = [(1, 0.2), (1, 0.3), (0.9, 0.4), (0.85, 0.4), (0.75, 0.45)][s - 1]
    return a * x + b * _frost_textures(frost_dir, x.shape[0], x.shape[2], x.shape[3], g, x.device)


def fog(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    strength, decay = [(0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75)][s - 1]
    n, _, h, w = x.shape
    size = max(32, 1 << (max(h, w) - 1).bit_length())
    fractal = plasma_fractal(n, size, decay, g)[:, :h, :w].to(x).unsqueeze(1)
    max_val = x.amax(dim=(1, 2, 3), keepdim=True)
    return (x + strength * fractal) * max_val / (max_val + strength)


def brightness(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    hsv = rgb_to_hsv(x)
    hsv[:, 2] = (hsv[:, 2] + [0.05, 0.1, 0.15, 0.2, 0.3][s - 1]).clamp(0, 1)
    return hsv_to_rgb(hsv)


def saturate(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    mul, add = [(0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2)][s - 1]
    hsv = rgb_to_hsv(x)
    hsv[:, 1] = (hsv[:, 1] * mul + add).clamp(0, 1)
    return hsv_to_rgb(hsv)


def contrast(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    c = [0.75, 0.5, 0.4, 0.3, 0.15][s - 1]
    means = x.mean(dim=(2, 3), keepdim=True)
    return (x - means) * c + means


def elastic_transform(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    n, _, h, w = x.shape
    size = 32  # the reference's IMSIZE for CIFAR
    alpha, sigma, affine = [(0, 0, 0.08), (0.05, 0.2, 0.07), (0.08, 0.06, 0.06), (0.1, 0.04, 0.05),
                            (0.1, 0.03, 0.03)][s - 1]
    alpha, sigma, affine = size * alpha, size * sigma, size * affine
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
    x = _sample(x, src.view(n, h, w, 2))
    dxy = _uniform((n, 2, h, w), -1, 1, g).to(x)
    if sigma > 0:
        dxy = gaussian_blur(dxy, sigma, mode="reflect") if min(h, w) > 3 * sigma else dxy
    dxy = dxy * alpha
    grid = torch.stack([xs, ys], -1).to(x).unsqueeze(0) + dxy.permute(0, 2, 3, 1)
    return _sample(x, grid.double())


def _sample(x: Tensor, pixel_xy: Tensor) -> Tensor:
    """Bilinear sample at pixel coordinates (x, y) (pixel centres at integers), reflected borders."""
    _n, _, h, w = x.shape
    g = torch.stack([(2 * pixel_xy[..., 0] + 1) / w - 1, (2 * pixel_xy[..., 1] + 1) / h - 1], -1)
    return F.grid_sample(x, g.to(x), mode="bilinear", padding_mode="reflection", align_corners=False)


def pixelate(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    """PIL BOX resize to int(size c) and back."""
    c = [0.95, 0.9, 0.85, 0.75, 0.65][s - 1]
    h, w = x.shape[2:]
    small = _box_resize(x, int(h * c), int(w * c))
    return _box_resize(small, h, w)


def _box_resize(x: Tensor, out_h: int, out_w: int) -> Tensor:
    """PIL's ``resize(..., BOX)`` (Resample.c): output pixel i averages the input pixels whose
    centres fall in the box of width max(scale, 1) around (i + 0.5) scale."""
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
        return (m / m.sum(1, keepdim=True)).to(x)
    wh, ww = weights(x.shape[2], out_h), weights(x.shape[3], out_w)
    return torch.einsum("oh,nchw,pw->ncop", wh, x, ww)


def jpeg_compression(x: Tensor, s: int, g: torch.Generator) -> Tensor:
    quality = [80, 65, 58, 50, 40][s - 1]
    u8 = (x * 255).round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
    out = []
    for img in u8:  # a codec: one call per image
        buffer = io.BytesIO()
        Image.fromarray(img).save(buffer, "JPEG", quality=quality)
        out.append(np.array(Image.open(buffer)))
    return torch.from_numpy(np.stack(out)).permute(0, 3, 1, 2).to(x) / 255


CORRUPTIONS: dict[str, Corruption] = {
    "gaussian_noise": gaussian_noise, "shot_noise": shot_noise, "impulse_noise": impulse_noise,
    "defocus_blur": defocus_blur, "glass_blur": glass_blur, "motion_blur": motion_blur_corruption,
    "zoom_blur": zoom_blur, "snow": snow, "frost": frost, "fog": fog, "brightness": brightness,
    "contrast": contrast, "elastic_transform": elastic_transform, "pixelate": pixelate,
    "jpeg_compression": jpeg_compression,
}
EXTRA_CORRUPTIONS: dict[str, Corruption] = {
    "speckle_noise": speckle_noise, "gaussian_blur": gaussian_blur_corruption, "saturate": saturate,
}
CATEGORIES: dict[str, tuple[str, ...]] = {
    "noise": ("gaussian_noise", "shot_noise", "impulse_noise"),
    "blur": ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur"),
    "weather": ("snow", "frost", "fog", "brightness"),
    "digital": ("contrast", "elastic_transform", "pixelate", "jpeg_compression"),
}


def corrupt(images_u8: Tensor, name: str, severity: int, *, generator: torch.Generator,
            params: str = "cifar", frost_dir: str | None = None) -> Tensor:
    """``name`` at ``severity`` (1..5) on uint8 images (N, 3, H, W) -> uint8, as the -C sets
    store them (the reference's ``np.uint8(...)``: truncation after clipping)."""
    table = {**CORRUPTIONS, **EXTRA_CORRUPTIONS}
    if name not in table:
        raise ValueError(f"unknown corruption {name!r}; available: {', '.join(table)}")
    if not 1 <= severity <= 5:
        raise ValueError(f"severity must be in 1..5, got {severity}")
    if params != "cifar":
        raise ValueError(f"params={params!r}: only the CIFAR-C parameters are implemented")
    if images_u8.dtype != torch.uint8 or images_u8.ndim != 4 or images_u8.shape[1] != 3:
        raise ValueError(f"corrupt expects uint8 images (N, 3, H, W), got {images_u8.dtype} "
                         f"{tuple(images_u8.shape)}")
    x = images_u8.float() / 255
    out = frost(x, severity, generator, frost_dir) if name == "frost" else table[name](x, severity, generator)
    return torch.floor(out.clamp(0, 1) * 255).to(torch.uint8)
