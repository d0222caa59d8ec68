"""Batched image filters the corruptions are made of (float images (N, C, H, W) in [0, 1])."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "canny_cv2",
    "capped_distance",
    "chamfer_distance",
    "conv2d_same",
    "disk_kernel",
    "equalize_hist_cv2",
    "fold_index",
    "gaussian_blur",
    "gaussian_kernel1d",
    "hsv_to_rgb",
    "hysteresis",
    "motion_blur",
    "motion_offsets",
    "plasma_fractal",
    "rgb_to_hsv",
    "warp",
    "zoom_about_centre",
]


def gaussian_kernel1d(sigma: float, truncate: float = 4.0) -> Tensor:
    """scipy.ndimage's Gaussian taps: radius int(truncate sigma + 0.5), normalised, float64."""
    radius = max(int(truncate * sigma + 0.5), 1)
    t = torch.arange(-radius, radius + 1, dtype=torch.float64)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    return k / k.sum()


def fold_index(index: Tensor, n: int, mode: str) -> Tensor:
    """Map out-of-range indices into [0, n) the way scipy.ndimage's boundary ``mode`` does:
    ``nearest`` (edge), ``reflect`` (half-sample symmetric, d c b a | a b c d | d c b a),
    ``mirror`` (whole-sample symmetric, d c b | a b c d | c b a; cv2/torch 'reflect')."""
    if mode == "nearest":
        return index.clamp(0, n - 1)
    if mode == "reflect":
        period = 2 * n
        i = index % period
        return torch.where(i >= n, period - 1 - i, i)
    if mode == "mirror":
        if n == 1:
            return torch.zeros_like(index)
        period = 2 * n - 2
        i = index % period
        return torch.where(i >= n, period - i, i)
    raise ValueError(f"unknown boundary mode {mode!r}; expected nearest, reflect or mirror")


def _blur_matrix(n: int, kernel: Tensor, mode: str) -> Tensor:
    """(n, n) matrix M with (M v)_i = sum_t k_t v[fold(i + t)]: a 1-D filter with its boundary."""
    r = kernel.numel() // 2
    rows = torch.arange(n).repeat_interleave(kernel.numel())
    taps = torch.arange(-r, r + 1).repeat(n)
    cols = fold_index(rows + taps, n, mode)
    m = torch.zeros(n * n, dtype=torch.float64)
    m.index_add_(0, rows * n + cols, kernel.repeat(n))
    return m.view(n, n)


def gaussian_blur(x: Tensor, sigma: float, mode: str = "nearest", truncate: float = 4.0) -> Tensor:
    """skimage.filters.gaussian / scipy gaussian_filter per channel (default mode 'nearest').

    Written as two small matrix products (rows, then columns) with the boundary folded into the
    matrix, so any sigma works, also kernels wider than the image (elastic transform)."""
    if sigma <= 0:
        return x
    k = gaussian_kernel1d(sigma, truncate)
    mh = _blur_matrix(x.shape[-2], k, mode).to(x)
    mw = mh if x.shape[-1] == x.shape[-2] else _blur_matrix(x.shape[-1], k, mode).to(x)
    return torch.matmul(torch.matmul(mh, x), mw.T)


def conv2d_same(x: Tensor, kernel: Tensor, mode: str = "reflect") -> Tensor:
    """cv2.filter2D(x, -1, kernel) per channel (a correlation; default border reflect-101 = torch
    'reflect').  Kernels above 5x5 go through the FFT (OpenCV switches to a DFT from 11x11)."""
    kh, kw = kernel.shape
    n, c, h, w = x.shape
    y = x.reshape(n * c, 1, h, w)
    pads = (kw // 2, (kw - 1) // 2, kh // 2, (kh - 1) // 2)
    if max(pads) < min(h, w):
        y = F.pad(y, pads, mode=mode)
    else:  # wider than the image: fold the indices (torch's reflect pad refuses)
        rows = fold_index(torch.arange(-pads[2], h + pads[3]), h, "mirror").to(x.device)
        cols = fold_index(torch.arange(-pads[0], w + pads[1]), w, "mirror").to(x.device)
        y = y[:, :, rows][:, :, :, cols]
    k = kernel.to(x)
    if kh * kw <= 25:
        return F.conv2d(y, k.view(1, 1, kh, kw)).view(n, c, h, w)
    ph, pw = y.shape[-2:]
    spectrum = torch.fft.rfft2(y) * torch.fft.rfft2(k.flip(0, 1), s=(ph, pw))
    full = torch.fft.irfft2(spectrum, s=(ph, pw))  # circular convolution; the valid part is exact
    return full[:, :, kh - 1:kh - 1 + h, kw - 1:kw - 1 + w].reshape(n, c, h, w)


def zoom_about_centre(x: Tensor, factor: float) -> Tensor:
    """The reference's ``clipped_zoom``: crop the central ceil(h / factor) square and scale it by
    ``factor`` with scipy.ndimage.zoom(order=1) (corner-aligned bilinear), trimmed back to h."""
    _n, _c, h, w = x.shape
    ch = math.ceil(h / factor)
    top = (h - ch) // 2
    crop = x[:, :, top:top + ch, top:top + ch]
    size = round(ch * factor)
    up = F.interpolate(crop, size=(size, size), mode="bilinear", align_corners=True)
    trim = (size - h) // 2
    return up[:, :, trim:trim + h, trim:trim + w]


def warp(x: Tensor, matrix: Tensor, padding: str = "pil") -> Tensor:
    """Bilinear resampling of float images: output pixel centre (u, v) reads the input at
    ``matrix @ (u, v, 1)`` (pixel units, centres at +0.5, PIL's AFFINE convention), per image.

    ``padding="pil"`` is PIL's transform: a source point outside the image gives 0, one inside
    interpolates with the edge pixels repeated; otherwise a grid_sample padding mode."""
    n, _, h, w = x.shape
    to_pixels = torch.tensor([[w / 2, 0, w / 2], [0, h / 2, h / 2], [0, 0, 1]], dtype=torch.float64)
    full = torch.cat([matrix.double().cpu(), to_pixels[2:].expand(n, 1, 3)], 1)
    theta = torch.linalg.inv(to_pixels)[:2] @ full @ to_pixels
    grid = F.affine_grid(theta.to(device=x.device, dtype=torch.float64), [n, 1, h, w], align_corners=False)
    out = F.grid_sample(x, grid.to(x.dtype), mode="bilinear", align_corners=False,
                        padding_mode="border" if padding == "pil" else padding)
    if padding == "pil":
        inside = (grid.abs() <= 1).all(-1) & (grid < 1).all(-1)  # source in [0, size) in PIL's units
        out = out * inside.unsqueeze(1).to(x.dtype)
    return out


def motion_offsets(radius: int, angle_deg: Tensor) -> tuple[Tensor, Tensor]:
    """ImageMagick's MotionBlurImage taps (also the ``imagecorruptions`` package's ``_motion_blur``):
    ``width = 2 ceil(radius) + 1`` taps; with ``p = width (sin a, cos a)``, tap i reads the pixel at
    (x + ceil(i p_y / |p| - 1/2), y + ceil(i p_x / |p| - 1/2)), all in double precision as
    ImageMagick's C computes it (a = pi deg / 180).  Dividing by ``hypot`` rather than using
    ``sin a`` directly decides the ties: at -30 and -150 degrees (sin a = -1/2) tap 1 lands on
    offset 0 for width 21, where ``ceil(i sin a - 1/2)`` gives -1.  Python's ``math`` (the C
    library) rather than torch's vectorised sin keeps the last bit equal to ImageMagick's.
    Returns integer offsets (N, taps) for x and y."""
    width = 2 * math.ceil(radius) + 1
    xs, ys = {}, {}
    for angle in set(angle_deg.double().cpu().tolist()):
        a = math.pi * angle / 180
        px, py = width * math.sin(a), width * math.cos(a)
        norm = math.hypot(px, py)
        xs[angle] = [math.ceil(i * py / norm - 0.5) for i in range(width)]
        ys[angle] = [math.ceil(i * px / norm - 0.5) for i in range(width)]
    angles = angle_deg.double().cpu().tolist()
    return (torch.tensor([xs[a] for a in angles], dtype=torch.long).view(len(angles), width),
            torch.tensor([ys[a] for a in angles], dtype=torch.long).view(len(angles), width))


def motion_blur(x: Tensor, radius: int, sigma: float, angle_deg: Tensor) -> Tensor:
    """ImageMagick's ``-motion-blur radius x sigma + angle`` (one angle per image), edge pixels
    repeated: weights exp(-i^2 / 2 sigma^2) normalised over the taps.  As the ``imagecorruptions``
    re-implementation, taps that would leave the image stop the sum (without renormalising).
    Batched as one gather per tap over all images; on the CPU a shifted slice per image and tap."""
    n, c, h, w = x.shape
    taps = 2 * math.ceil(radius) + 1
    k = torch.exp(-torch.arange(taps, dtype=torch.float64) ** 2 / (2 * sigma ** 2))
    k = k / k.sum()
    ox, oy = motion_offsets(radius, angle_deg)
    inside = torch.cummin(((ox.abs() < w) & (oy.abs() < h)).long(), dim=1).values.bool()
    weights = (k * inside).to(x)  # (N, taps)
    if x.device.type == "cpu":
        # per image and tap a shifted window of the edge-replicated image: a contiguous slice,
        # several times cheaper on the CPU than a gather (the same products and sums, in order)
        r = int(max(ox.abs().max(), oy.abs().max()))
        padded = F.pad(x, (r, r, r, r), mode="replicate") if r else x
        out = torch.zeros_like(x)
        for i, (wi, xi, yi) in enumerate(zip(weights.tolist(), ox.tolist(), oy.tolist(), strict=True)):
            for wt, dx, dy in zip(wi, xi, yi, strict=True):
                if wt:
                    out[i] += wt * padded[i, :, r + dy:r + dy + h, r + dx:r + dx + w]
        return out
    ox, oy = ox.to(x.device), oy.to(x.device)
    rows = torch.arange(h, device=x.device).view(1, h, 1)
    cols = torch.arange(w, device=x.device).view(1, 1, w)
    flat = x.reshape(n, c, h * w)
    out = torch.zeros_like(flat)
    for i in range(taps):
        src = (rows + oy[:, i].view(n, 1, 1)).clamp(0, h - 1) * w + (cols + ox[:, i].view(n, 1, 1)).clamp(0, w - 1)
        out += weights[:, i].view(n, 1, 1) * flat.gather(2, src.view(n, 1, h * w).expand(n, c, h * w))
    return out.view(n, c, h, w)


def plasma_fractal(n: int, mapsize: int, wibbledecay: float, generator: torch.Generator) -> Tensor:
    """The reference's diamond-square height map in [0, 1], for ``n`` maps at once (N, S, S),
    with the reference's wibble: mean / 4 + wibble * U(-wibble, wibble)."""
    if mapsize & (mapsize - 1):
        raise ValueError(f"mapsize must be a power of two, got {mapsize}")
    dev = generator.device
    m = torch.zeros(n, mapsize, mapsize, dtype=torch.float32, device=dev)
    step, wibble = mapsize, 100.0

    def wibbled(a: Tensor) -> Tensor:
        u = torch.rand(a.shape, generator=generator, device=dev, dtype=torch.float32)
        return a / 4 + wibble * (2 * u - 1) * wibble

    while step >= 2:
        half = step // 2
        corner = m[:, 0::step, 0::step]
        square = corner + corner.roll(-1, 1)
        square = square + square.roll(-1, 2)
        m[:, half::step, half::step] = wibbled(square)
        dr = m[:, half::step, half::step]
        ul = m[:, 0::step, 0::step]
        m[:, 0::step, half::step] = wibbled(dr + dr.roll(1, 1) + ul + ul.roll(-1, 2))
        m[:, half::step, 0::step] = wibbled(dr + dr.roll(1, 2) + ul + ul.roll(-1, 1))
        step //= 2
        wibble /= wibbledecay
    m = m - m.amin(dim=(1, 2), keepdim=True)
    return m / m.amax(dim=(1, 2), keepdim=True)


def rgb_to_hsv(x: Tensor) -> Tensor:
    """skimage.color.rgb2hsv, batched (N, 3, H, W) -> (N, 3, H, W) with h in [0, 1)."""
    r, g, b = x.unbind(1)
    v, _ = x.max(1)
    mn, _ = x.min(1)
    delta = v - mn
    s = torch.where(v > 0, delta / v.clamp_min(1e-12), torch.zeros_like(v))
    safe = delta.clamp_min(1e-12)
    h = torch.where(r == v, (g - b) / safe, torch.where(g == v, 2 + (b - r) / safe, 4 + (r - g) / safe))
    h = torch.where(delta > 0, (h / 6) % 1.0, torch.zeros_like(h))
    return torch.stack([h, s, v], 1)


def hsv_to_rgb(x: Tensor) -> Tensor:
    """skimage.color.hsv2rgb, batched."""
    h, s, v = x.unbind(1)
    i = torch.floor(h * 6)
    f = h * 6 - i
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    i = i.long() % 6
    choices = torch.stack([torch.stack(c, 1) for c in ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v),
                                                        (v, p, q))], 0)  # (6, N, 3, H, W)
    index = i.unsqueeze(0).unsqueeze(2).expand(1, -1, 3, -1, -1)
    return choices.gather(0, index).squeeze(0)


def disk_kernel(radius: float, alias_blur: float) -> Tensor:
    """The reference's ``disk``: an aliased disk blurred by a 3x3 (5x5 for r > 8) Gaussian."""
    size = 8 if radius <= 8 else int(radius)
    ksize = 3 if radius <= 8 else 5
    t = np.arange(-size, size + 1)
    xx, yy = np.meshgrid(t, t)
    d = ((xx ** 2 + yy ** 2) <= radius ** 2).astype(np.float64)
    d /= d.sum()
    # cv2.GaussianBlur(ksize, sigma) = separable normalised Gaussian, border reflect-101
    g = np.exp(-0.5 * (np.arange(ksize) - ksize // 2) ** 2 / alias_blur ** 2)
    g /= g.sum()
    kernel = torch.from_numpy(d).view(1, 1, *d.shape)
    kernel = conv2d_same(kernel, torch.from_numpy(np.outer(g, g))).view(*d.shape)
    # the support is mostly exact zeros for small radii: trim it symmetrically (same result)
    nonzero = torch.nonzero(kernel.abs().sum(0) > 0).flatten()
    r = int(max(size - nonzero.min(), nonzero.max() - size))
    return kernel[size - r:size + r + 1, size - r:size + r + 1].float()


def canny_cv2(img: Tensor, low: float, high: float, engine: str = "auto") -> Tensor:
    """cv2.Canny(img, low, high) (3x3 Sobel, L1 magnitude) on (N, 1, H, W) grey levels 0..255 ->
    bool edges, with OpenCV's own integer rules: the direction sectors in fixed point
    (tan 22.5 = 13573 / 2^15), strict maxima on both sides across a diagonal, thresholds floored
    and exceeded strictly, 8-connected hysteresis, Sobel with replicated borders.

    Written on the flattened padded images (``_canny_slots``), so that every step is an op on
    contiguous 1-D slices.  On the CPU in numpy 16-bit integers (its SIMD comparisons are about
    3x torch's there), elsewhere in torch float32; both exact (``engine="torch"`` forces the
    torch code on the CPU, for tests)."""
    n, _, h, w = img.shape
    pw = w + 2
    if engine not in ("auto", "torch"):
        raise ValueError(f"canny_cv2: engine={engine!r}, expected auto or torch")
    if img.device.type == "cpu" and engine == "auto":
        p = np.pad(img[:, 0].numpy().astype(np.int16), ((0, 0), (1, 1), (1, 1)), mode="edge").ravel()
        interior = np.zeros((n, h + 2, pw), dtype=bool)
        interior[:, 1:-1, 1:-1] = True
        slots = _canny_slots(p, interior.ravel(), pw, low, high, lambda a: np.pad(a, (pw + 1, pw + 1)),
                             lambda a: a.astype(np.int32))
        candidate, strong = (torch.from_numpy(np.pad(a, (pw + 1, pw + 1))) for a in slots)
    else:
        p = F.pad(img.to(torch.float32), (1, 1, 1, 1), mode="replicate").flatten()
        interior = torch.zeros(n, h + 2, pw, dtype=torch.bool, device=img.device)
        interior[:, 1:-1, 1:-1] = True
        slots = _canny_slots(p, interior.flatten(), pw, low, high, lambda a: F.pad(a, (pw + 1, pw + 1)),
                             lambda a: a)
        candidate, strong = (F.pad(a, (pw + 1, pw + 1)) for a in slots)

    def image(padded_flat: Tensor) -> Tensor:
        return padded_flat.view(n, 1, h + 2, pw)[:, :, 1:-1, 1:-1]

    return hysteresis(image(candidate), image(strong))


def _canny_slots(p: Any, interior: Any, pw: int, low: float, high: float, pad: Callable[[Any], Any],
                 wide: Callable[[Any], Any]) -> tuple[Any, Any]:
    """Canny's candidate and strong pixels on the flattened padded images ``p`` (row pitch
    ``pw``), for numpy arrays (``wide``: to int32 for the products) or torch tensors (float32,
    where every product stays an integer below 2^24 or a power-of-two multiple).  Slot k of the
    arrays here is padded pixel k + pw + 1; what lands in the padding is discarded."""
    d = p[2:] - p[:-2]
    gx = d[:-2 * pw] + d[pw:-pw] * 2 + d[2 * pw:]
    e = p[2 * pw:] - p[:-2 * pw]
    gy = e[:-2] + e[1:-1] * 2 + e[2:]
    ax, ay = abs(gx), abs(gy)
    mag = pad((ax + ay) * interior[pw + 1:pw + 1 + gx.shape[0]])  # padded slots again, zero in the padding
    mid = mag[pw + 1:-pw - 1]

    def at(dy: int, dx: int) -> Any:
        return mag[pw + 1 + dy * pw + dx:mag.shape[0] - pw - 1 + dy * pw + dx]

    # OpenCV: horizontal when |dy| 2^15 < |dx| 13573; vertical when |dy| 2^15 > |dx| (13573 + 2^16)
    tan22 = wide(ax) * 13573
    horizontal = wide(ay) * 32768 < tan22
    vertical = wide(ay - ax * 2) * 32768 > tan22
    diagonal = ~(horizontal | vertical)
    same_sign = (gx < 0) == (gy < 0)  # OpenCV: (dx ^ dy) >= 0
    keep = ((horizontal & (mid > at(0, -1)) & (mid >= at(0, 1)))
            | (vertical & (mid > at(-1, 0)) & (mid >= at(1, 0)))
            | (diagonal & same_sign & (mid > at(-1, -1)) & (mid > at(1, 1)))
            | (diagonal & ~same_sign & (mid > at(-1, 1)) & (mid > at(1, -1))))
    candidate = keep & (mid > math.floor(low))
    return candidate, candidate & (mid > math.floor(high))


def hysteresis(candidate: Tensor, strong: Tensor) -> Tensor:
    """The ``candidate`` pixels (N, 1, H, W bool) 8-connected through candidates to a ``strong``
    one.  On the CPU: connected components (scipy.ndimage.label, each image its own plane), the
    components holding a strong pixel; elsewhere: dilation within the candidates until nothing
    changes.  The same set either way."""
    if candidate.device.type == "cpu":
        from scipy import ndimage

        structure = np.zeros((3, 3, 3), dtype=bool)
        structure[1] = True  # 8-connected within an image, never across images
        labels, count = ndimage.label(candidate[:, 0].numpy(), structure=structure)
        hit = np.zeros(count + 1, dtype=bool)
        hit[labels[strong[:, 0].numpy()]] = True
        hit[0] = False
        return torch.from_numpy(np.take(hit, labels)).unsqueeze(1)
    edges = strong
    while True:
        grown = candidate & (F.max_pool2d(edges.to(torch.float16), 3, stride=1, padding=1) > 0)
        if torch.equal(grown, edges):
            return edges
        edges = grown


def capped_distance(mask: Tensor, cap: int, engine: str = "auto") -> Tensor:
    """The exact Euclidean distance of every pixel to the nearest True pixel of ``mask``
    (N, 1, H, W), capped at the integer ``cap`` (where cv2.distanceTransform(DIST_L2, 5) is the
    5x5 chamfer approximation, ``chamfer_distance``).  Separable, in 16-bit integers: the
    distance along each row to the nearest True pixel (a running maximum of the True positions
    from each side), then the minimum over rows of dy^2 + row distance^2 for |dy| < cap.  On the
    CPU in numpy (its 16-bit SIMD is several times torch's there; ``engine="torch"`` forces
    torch, for tests), elsewhere in torch."""
    h, w = mask.shape[2:]
    if int(cap) != cap or not 0 < cap <= 100 or w > 16000:
        raise ValueError(f"capped_distance: cap must be an integer in 1..100 and width <= 16000, got {cap}, {w}")
    if engine not in ("auto", "torch"):
        raise ValueError(f"capped_distance: engine={engine!r}, expected auto or torch")
    cap = int(cap)
    none = -2 * cap - 1  # a position whose distance to any pixel exceeds the cap
    r = cap - 1
    if mask.device.type == "cpu" and engine == "auto":
        m = mask.numpy()
        idx = np.broadcast_to(np.arange(w, dtype=np.int16), m.shape)
        left = idx - np.maximum.accumulate(np.where(m, idx, np.int16(none)), axis=3)
        right = (idx - np.maximum.accumulate(np.where(m[..., ::-1], idx, np.int16(none)), axis=3))[..., ::-1]
        row = np.minimum(np.minimum(left, right), np.int16(cap))
        row = row * row
        padded = np.pad(row, ((0, 0), (0, 0), (r, r), (0, 0)), constant_values=cap * cap)
        best = row
        for dy in range(1, r + 1):
            best = np.minimum(best, np.minimum(padded[:, :, r + dy:r + dy + h], padded[:, :, r - dy:r - dy + h])
                              + np.int16(dy * dy))
        return torch.from_numpy(np.sqrt(best.astype(np.float32)))
    idx = torch.arange(w, device=mask.device, dtype=torch.int16).expand(mask.shape)
    left = idx - torch.cummax(idx.masked_fill(~mask, none), dim=3).values
    right = (idx - torch.cummax(idx.masked_fill(~mask.flip(3), none), dim=3).values).flip(3)
    row = torch.minimum(left, right).clamp_(max=cap)
    row = row * row
    padded = F.pad(row, (0, 0, r, r), value=cap * cap)
    best = row
    for dy in range(1, r + 1):
        best = torch.minimum(best, torch.minimum(padded[:, :, r + dy:r + dy + h], padded[:, :, r - dy:r - dy + h])
                             + dy * dy)
    return best.float().sqrt()


#: cv2.distanceTransform(DIST_L2, 5)'s chamfer weights for steps (1, 0), (1, 1), (2, 1)
_CHAMFER5 = {(1, 0): 1.0, (1, 1): 1.4, (2, 1): 2.1969}


def chamfer_distance(mask: Tensor, cap: float) -> Tensor:
    """cv2.distanceTransform(255 - 255 mask, cv2.DIST_L2, 5), then capped at ``cap``
    (THRESH_TRUNC): the 5x5 chamfer distance (steps weighing 1, 1.4 and 2.1969, not the exact
    Euclidean distance) of every pixel to the nearest True pixel, summed in float32 as OpenCV
    does.  Relaxed over the 16 chamfer steps until nothing changes (paths stay inside the image)."""
    steps = []
    for (a, b), w in _CHAMFER5.items():
        for dx, dy in {(a, b), (b, a), (-a, b), (-b, a), (a, -b), (b, -a), (-a, -b), (-b, -a)}:
            steps.append((dx, dy, torch.tensor(w, dtype=torch.float32)))
    h, w_ = mask.shape[2:]
    big = float(cap) + 8
    dist = torch.where(mask, 0.0, big).float()
    while True:
        padded = F.pad(dist, (2, 2, 2, 2), value=big)
        best = dist
        for dx, dy, w in steps:
            best = torch.minimum(best, padded[:, :, 2 + dy:2 + dy + h, 2 + dx:2 + dx + w_] + w)
        if torch.equal(best, dist):
            break
        dist = best
    return dist.clamp(max=cap)


def equalize_hist_cv2(u8: Tensor) -> Tensor:
    """cv2.equalizeHist per image on integer levels (N, 1, H, W) stored as floats: the scale
    255 / (total - count of the lowest level) divided in float32 as OpenCV does (a correctly
    rounded quotient; torch's vectorised division can land one unit lower, which turns a
    half-way level such as 127.5 the other way), times the cumulative count, rounded half to even."""
    n = u8.shape[0]
    flat = u8.reshape(n, -1).long()
    hist = torch.zeros(n, 256, dtype=torch.float64, device=u8.device).scatter_add_(
        1, flat, torch.ones_like(flat, dtype=torch.float64))
    cdf = hist.cumsum(1)
    first = torch.where(hist > 0, cdf, torch.full_like(cdf, float("inf"))).amin(1, keepdim=True)
    total = cdf[:, -1:]
    scale = (255 / (total - first).clamp_min(1)).float()  # float64 quotient rounded once to float32
    lut = torch.round((cdf - first).float() * scale).clamp(0, 255)
    lut = torch.where(total == first, torch.arange(256, device=u8.device, dtype=lut.dtype).expand(n, 256), lut)
    return lut.gather(1, flat).view_as(u8).to(u8.dtype)
