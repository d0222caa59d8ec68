"""Slow, obvious per-image versions of the corruptions, written from make_cifar_c.py /
make_imagenet_c.py / make_cifar_p.py (github.com/hendrycks/robustness) with numpy, scipy and PIL
only (no skimage / OpenCV / ImageMagick): one HxWx3 float64 image in [0, 1] at a time.

Where the reference draws random numbers, these take them as arguments, so a test can feed the
same draws as the batched code (then the comparison is exact) or fresh numpy draws (then it is
in distribution)."""

from __future__ import annotations

import io
import math

import numpy as np
import torch
from PIL import Image
from scipy import ndimage


def photo(n: int, size: int, seed: int = 0) -> torch.Tensor:
    """Test images: smooth colourful low-pass random fields with a bright square (uint8)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, size // 4, size // 4, generator=g)
    x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x[:, :, size // 4:size // 2, size // 4:size // 2] = 0.95
    return (x * 255).round().to(torch.uint8)


def to_u8(a: np.ndarray) -> np.ndarray:
    return np.uint8(np.clip(a, 0, 1) * 255)


# skimage.color.rgb2hsv / hsv2rgb, written out
def rgb2hsv(a: np.ndarray) -> np.ndarray:
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    v = a.max(-1)
    delta = np.ptp(a, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.where(v > 0, delta / v, 0)
        h = np.where(r == v, (g - b) / delta, np.where(g == v, 2 + (b - r) / delta, 4 + (r - g) / delta))
    h = np.where(delta > 0, (h / 6) % 1, 0)
    return np.stack([h, s, v], -1)


def hsv2rgb(a: np.ndarray) -> np.ndarray:
    h, s, v = a[..., 0], a[..., 1], a[..., 2]
    i = np.floor(h * 6).astype(int) % 6
    f = h * 6 - np.floor(h * 6)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    out = np.zeros(a.shape)
    for k, (r, g, b) in enumerate(table):
        sel = i == k
        out[sel] = np.stack([r[sel], g[sel], b[sel]], -1)
    return out


def brightness(a: np.ndarray, c: float) -> np.ndarray:
    x = rgb2hsv(a)
    x[..., 2] = np.clip(x[..., 2] + c, 0, 1)
    return hsv2rgb(x)


def saturate(a: np.ndarray, c: tuple[float, float]) -> np.ndarray:
    x = rgb2hsv(a)
    x[..., 1] = np.clip(x[..., 1] * c[0] + c[1], 0, 1)
    return hsv2rgb(x)


def contrast(a: np.ndarray, c: float) -> np.ndarray:
    m = a.mean(axis=(0, 1), keepdims=True)
    return (a - m) * c + m


def gaussian_blur(a: np.ndarray, sigma: float, truncate: float = 4.0) -> np.ndarray:
    return ndimage.gaussian_filter(a, sigma=(sigma, sigma, 0), mode="nearest", truncate=truncate)


def disk(radius: float, alias_blur: float) -> np.ndarray:
    """The reference's disk: cv2.GaussianBlur(ksize, sigma) = separable normalised Gaussian taps,
    border reflect-101 (scipy 'mirror')."""
    size, ksize = (8, 3) if radius <= 8 else (int(radius), 5)
    t = np.arange(-size, size + 1)
    xx, yy = np.meshgrid(t, t)
    d = ((xx ** 2 + yy ** 2) <= radius ** 2).astype(np.float64)
    d /= d.sum()
    taps = np.exp(-0.5 * (np.arange(ksize) - ksize // 2) ** 2 / alias_blur ** 2)
    taps /= taps.sum()
    d = ndimage.correlate1d(d, taps, axis=0, mode="mirror")
    return ndimage.correlate1d(d, taps, axis=1, mode="mirror")


def defocus_blur(a: np.ndarray, c: tuple[float, float]) -> np.ndarray:
    k = disk(*c)  # cv2.filter2D: correlation, border reflect-101
    return np.stack([ndimage.correlate(a[..., ch], k, mode="mirror") for ch in range(3)], -1)


def clipped_zoom(a: np.ndarray, z: float) -> np.ndarray:
    h = a.shape[0]
    ch = int(np.ceil(h / z))
    top = (h - ch) // 2
    img = ndimage.zoom(a[top:top + ch, top:top + ch], (z, z, 1), order=1)
    trim = (img.shape[0] - h) // 2
    return img[trim:trim + h, trim:trim + h]


def zoom_blur(a: np.ndarray, zooms: tuple[float, ...]) -> np.ndarray:
    out = np.zeros_like(a)
    for z in zooms:
        out += clipped_zoom(a, z)
    return (a + out) / (len(zooms) + 1)


def pixelate(img_u8: np.ndarray, c: float) -> np.ndarray:
    h, w = img_u8.shape[:2]
    p = Image.fromarray(img_u8).resize((int(w * c), int(h * c)), Image.BOX).resize((w, h), Image.BOX)
    return np.asarray(p)


def jpeg(img_u8: np.ndarray, quality: int) -> np.ndarray:
    buffer = io.BytesIO()
    Image.fromarray(img_u8).save(buffer, "JPEG", quality=quality)
    return np.asarray(Image.open(buffer))


def shift(image: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """imagecorruptions' shift: np.roll with the edge row / column repeated."""
    if dx < 0:
        shifted = np.roll(image, shift=image.shape[1] + dx, axis=1)
        shifted[:, dx:] = shifted[:, dx - 1:dx]
    elif dx > 0:
        shifted = np.roll(image, shift=dx, axis=1)
        shifted[:, :dx] = shifted[:, dx:dx + 1]
    else:
        shifted = image
    if dy < 0:
        shifted = np.roll(shifted, shift=image.shape[0] + dy, axis=0)
        shifted[dy:, :] = shifted[dy - 1:dy, :]
    elif dy > 0:
        shifted = np.roll(shifted, shift=dy, axis=0)
        shifted[:dy, :] = shifted[dy:dy + 1, :]
    return shifted


def motion_blur(a: np.ndarray, radius: int, sigma: float, angle: float) -> np.ndarray:
    """imagecorruptions' _motion_blur (its numpy re-implementation of ImageMagick's)."""
    width = radius * 2 + 1
    k = np.exp(-np.arange(width) ** 2 / (2 * sigma ** 2))
    k /= k.sum()
    point = (width * np.sin(np.deg2rad(angle)), width * np.cos(np.deg2rad(angle)))
    hypot = math.hypot(*point)
    out = np.zeros_like(a)
    for i in range(width):
        dy = -math.ceil(((i * point[0]) / hypot) - 0.5)
        dx = -math.ceil(((i * point[1]) / hypot) - 0.5)
        if abs(dy) >= a.shape[0] or abs(dx) >= a.shape[1]:
            break
        out = out + k[i] * shift(a, dx, dy)
    return out


def glass_blur(a: np.ndarray, c: tuple[float, int, int], offsets: np.ndarray) -> np.ndarray:
    """The reference's loop; ``offsets[it, step] = (dx, dy)`` are its np.random.randint draws.
    ``a`` must be (H, W, 3): the view semantics of the pixel line depend on that layout."""
    sigma, delta, iterations = c
    x = np.uint8(gaussian_blur(a, sigma) * 255)
    glass_pixel_loop(x, delta, offsets[:iterations])
    return gaussian_blur(x / 255, sigma)


def glass_pixel_loop(x: np.ndarray, delta: int, offsets: np.ndarray) -> None:
    """The reference's pixel loop on an (H, W, 3) array, in place, one pass per row of
    ``offsets`` (its (dx, dy) draws in loop order)."""
    h, w = x.shape[:2]
    for it in range(len(offsets)):
        step = 0
        for row in range(h - delta, delta, -1):
            for col in range(w - delta, delta, -1):
                dx, dy = offsets[it, step]
                step += 1
                rp, cp = row + dy, col + dx
                # the reference's line, verbatim: its right side holds numpy views, so pixel
                # (rp, cp) is copied into (row, col) and (rp, cp) keeps its value (no swap)
                x[row, col], x[rp, cp] = x[rp, cp], x[row, col]


def plasma_fractal(mapsize: int, wibbledecay: float, uniform) -> np.ndarray:
    """The reference's diamond-square; ``uniform(shape)`` supplies U(0, 1) draws in its order."""
    m = np.zeros((mapsize, mapsize))
    step, wibble = mapsize, 100.0

    def wibbled(arr):
        return arr / 4 + wibble * (2 * uniform(arr.shape) - 1) * wibble

    while step >= 2:
        corner = m[0:mapsize:step, 0:mapsize:step]
        sq = corner + np.roll(corner, -1, axis=0)
        sq += np.roll(sq, -1, axis=1)
        m[step // 2:mapsize:step, step // 2:mapsize:step] = wibbled(sq)
        dr = m[step // 2:mapsize:step, step // 2:mapsize:step]
        ul = m[0:mapsize:step, 0:mapsize:step]
        m[0:mapsize:step, step // 2:mapsize:step] = wibbled(dr + np.roll(dr, 1, axis=0) + ul + np.roll(ul, -1, axis=1))
        m[step // 2:mapsize:step, 0:mapsize:step] = wibbled(dr + np.roll(dr, 1, axis=1) + ul + np.roll(ul, -1, axis=0))
        step //= 2
        wibble /= wibbledecay
    m -= m.min()
    return m / m.max()


def fog(a: np.ndarray, c: tuple[float, float], fractal: np.ndarray) -> np.ndarray:
    h, w = a.shape[:2]
    max_val = a.max()
    x = a + c[0] * fractal[:h, :w][..., None]
    return x * max_val / (max_val + c[0])


def snow(a: np.ndarray, c: tuple, layer_noise: np.ndarray, angle: float) -> np.ndarray:
    """``layer_noise``: the N(0, 1) draws of the snow layer (H, W)."""
    layer = c[0] + c[1] * layer_noise
    layer = clipped_zoom(layer[..., None], c[2])[..., 0]
    layer[layer < c[3]] = 0
    layer = np.clip(layer, 0, 1)
    layer = np.uint8(layer * 255) / 255
    layer = np.round(motion_blur(layer, int(c[4]), c[5], angle) * 255) / 255
    grey = (0.299 * a[..., 0] + 0.587 * a[..., 1] + 0.114 * a[..., 2])[..., None]
    x = c[6] * a + (1 - c[6]) * np.maximum(a, grey * 1.5 + 0.5)
    return x + layer[..., None] + np.rot90(layer, k=2)[..., None]


def elastic(a: np.ndarray, c: tuple[float, float, float], shift_pts: np.ndarray, field: np.ndarray) -> np.ndarray:
    """``shift_pts`` (3, 2): the U(-c2, c2) control-point moves; ``field`` (2, H, W): the U(-1, 1)
    draws of dx and dy.  cv2.warpAffine(reflect-101) -> scipy affine_transform(mode='mirror')."""
    h, w = a.shape[:2]
    centre = np.float64([h // 2, w // 2])
    sq = min(h, w) // 3
    pts1 = np.float64([centre + sq, [centre[0] + sq, centre[1] - sq], centre - sq])
    pts2 = pts1 + shift_pts
    m = np.linalg.solve(np.hstack([pts1, np.ones((3, 1))]), pts2).T  # pts2 = M [pts1; 1], (x, y)
    inv = np.linalg.inv(np.vstack([m, [0, 0, 1]]))
    # scipy works in (row, col): src (y, x) = swap(inv (x, y, 1))
    mat = np.array([[inv[1, 1], inv[1, 0]], [inv[0, 1], inv[0, 0]]])
    off = np.array([inv[1, 2], inv[0, 2]])
    warped = np.stack([ndimage.affine_transform(a[..., ch], mat, off, order=1, mode="mirror")
                       for ch in range(3)], -1)
    dx = ndimage.gaussian_filter(field[0], c[1], mode="reflect", truncate=3) * c[0] if c[1] > 0 else field[0] * c[0]
    dy = ndimage.gaussian_filter(field[1], c[1], mode="reflect", truncate=3) * c[0] if c[1] > 0 else field[1] * c[0]
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return np.stack([ndimage.map_coordinates(warped[..., ch], [yy + dy, xx + dx], order=1, mode="reflect")
                     for ch in range(3)], -1)
