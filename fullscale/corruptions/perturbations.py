"""The -P perturbation sequences (Hendrycks & Dietterich, 2019), batched over images.

Each sequence starts at (or passes through) the clean image and changes it frame by frame; the
parameters and frame counts are those of ``make_cifar_p.py`` (github.com/hendrycks/robustness,
ImageNet-P/create_p), its test-set blocks and its validation-set blocks (speckle noise, gaussian
blur, spatter, shear), under the 20 file names of the released CIFAR-10-P: each noise in the three
strengths of its three blocks (``gaussian_noise``, ``gaussian_noise_2``, ``gaussian_noise_3``, ...).
The affine sets (rotate, scale, shear, zoom blur) turn about torchvision 0.2-0.7's centre
(w / 2 + 0.5, h / 2 + 0.5), the one the released files were made with.  Noise frames are
independent draws around the clean image (flip probability against the first frame); the other
sequences move smoothly (flip probability between consecutive frames).  The paper's CIFAR-10-P
table lists snow where the public ``cifar-p-eval`` script reads spatter: both are here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from fullscale.corruptions._draws import to_u8
from fullscale.corruptions._filters import (
    gaussian_blur,
    hsv_to_rgb,
    motion_blur,
    rgb_to_hsv,
    warp,
    zoom_about_centre,
)
from fullscale.corruptions.registry import check_pixel_scale
from fullscale.corruptions.weather import water

__all__ = ["AFFINE_CENTRES", "EMPTY_SPATTER", "FRAMES", "PERTURBATIONS", "STRENGTHENED", "check_strength",
           "perturbation_sequence"]

Sequence = Callable[[Tensor, torch.Generator], list[Tensor]]


def _randn(t: Tensor, g: torch.Generator) -> Tensor:
    return torch.randn(t.shape, generator=g, device=g.device).to(t)


def _gaussian(scale: float) -> Sequence:
    def frames(x: Tensor, g: torch.Generator) -> list[Tensor]:
        return [x] + [x + scale * _randn(x, g) for _ in range(30)]
    return frames


def _shot(photons: float) -> Sequence:
    def frames(x: Tensor, g: torch.Generator) -> list[Tensor]:
        return [x] + [torch.poisson(x.to(g.device) * photons, generator=g).to(x) / photons for _ in range(30)]
    return frames


def _speckle(scale: float) -> Sequence:
    def frames(x: Tensor, g: torch.Generator) -> list[Tensor]:
        return [x] + [x + x * scale * _randn(x, g) for _ in range(30)]
    return frames


def _brightness(x: Tensor, g: torch.Generator, k: float = 1.0) -> list[Tensor]:
    hsv = rgb_to_hsv(x)
    frames = []
    for i in range(31):
        h = hsv.clone()
        h[:, 2] = (h[:, 2] + (i - 15) * 1.5 / 100 * k).clamp(0, 1)
        frames.append(hsv_to_rgb(h))
    return frames


def _quantised(x: Tensor) -> Tensor:
    """OpenCV / ImageMagick write 8-bit results, rounded."""
    return torch.round(x.clamp(0, 1) * 255) / 255


def _pil_quantised(x: Tensor) -> Tensor:
    """PIL's bilinear transform writes 8-bit results, truncated."""
    return torch.floor(x.clamp(0, 1) * 255 + 1e-3) / 255


#: where torchvision's affine puts the rotation / scale / shear centre, in PIL's pixel units: its
#: versions 0.2-0.7 (those of make_cifar_p.py) use (w / 2 + 0.5, h / 2 + 0.5), later ones (w / 2, h / 2)
AFFINE_CENTRES = {"reference": 0.5, "modern": 0.0}


def _matrix(x: Tensor, a: float, b: float, c: float, d: float, e: float, f: float,
            centre: str = "reference") -> Tensor:
    """PIL-convention affine about the image centre: input = A (out - centre) + centre + (c, f)."""
    h, w = x.shape[2:]
    cx, cy = w / 2 + AFFINE_CENTRES[centre], h / 2 + AFFINE_CENTRES[centre]
    m = torch.tensor([[a, b, cx - a * cx - b * cy + c], [d, e, cy - d * cx - e * cy + f]],
                     dtype=torch.float64)
    return m.expand(x.shape[0], 2, 3)


def _geometric(params: list[tuple[float, ...]], centre: str = "reference") -> Sequence:
    """torchvision's affine on the PIL image (bilinear, zeros outside), one frame per row."""
    def frames(x: Tensor, g: torch.Generator) -> list[Tensor]:
        return [_pil_quantised(warp(x, _matrix(x, *p, centre=centre))) for p in params]
    return frames


def _rotation(deg: float) -> tuple[float, ...]:
    """torchvision (2019)'s inverse rotation: positive angles turn the image clockwise."""
    t = math.radians(deg)
    return (math.cos(t), math.sin(t), 0.0, -math.sin(t), math.cos(t), 0.0)


def _shear(deg: float) -> tuple[float, ...]:
    """torchvision (2019)'s inverse affine for shear only: [[1, tan s], [0, 1 / cos s]]."""
    t = math.radians(deg)
    return (1.0, math.tan(t), 0.0, 0.0, 1 / math.cos(t), 0.0)


def _tilt_matrix(h: int, w: int, deg: float) -> np.ndarray:
    """make_cifar_p.py's tilt: rotate the image plane by deg about the x and y axes, seen by a
    pinhole camera at focal length sqrt(w^2 + h^2)."""
    phi = theta = np.deg2rad(deg)
    f = np.sqrt(w ** 2 + h ** 2)
    p1 = np.array([[1, 0, -w / 2], [0, 1, -h / 2], [0, 0, 1], [0, 0, 1]])
    rx = np.array([[1, 0, 0, 0], [0, np.cos(theta), -np.sin(theta), 0], [0, np.sin(theta), np.cos(theta), 0],
                   [0, 0, 0, 1]])
    ry = np.array([[np.cos(phi), 0, -np.sin(phi), 0], [0, 1, 0, 0], [np.sin(phi), 0, np.cos(phi), 0],
                   [0, 0, 0, 1]])
    t = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, f], [0, 0, 0, 1]])
    p2 = np.array([[f, 0, w / 2, 0], [0, f, h / 2, 0], [0, 0, 1, 0]])
    return p2 @ t @ rx @ ry @ p1


def _perspective(x: Tensor, matrix: np.ndarray) -> Tensor:
    """cv2.warpPerspective(x, matrix, (w, h)): dst(u, v) = src(matrix^-1 (u, v, 1)), bilinear,
    zeros outside (pixel centres at integers)."""
    n, _, h, w = x.shape
    inv = torch.from_numpy(np.linalg.inv(matrix))
    ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64),
                            indexing="ij")
    src = torch.stack([xs, ys, torch.ones_like(xs)], -1) @ inv.T
    px, py = src[..., 0] / src[..., 2], src[..., 1] / src[..., 2]
    grid = torch.stack([(2 * px + 1) / w - 1, (2 * py + 1) / h - 1], -1).to(x).expand(n, h, w, 2)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def _tilt(x: Tensor, g: torch.Generator, k: float = 1.0) -> list[Tensor]:
    h, w = x.shape[2:]
    return [_quantised(_perspective(x, _tilt_matrix(h, w, 0.75 * (i - 15) * k))) for i in range(31)]


def _zoom_blur(x: Tensor, g: torch.Generator, centre: str = "reference", k: float = 1.0) -> list[Tensor]:
    frames, total = [x], x.clone()
    for i in range(1, 31):
        s = 1 / (1 + 0.004 * i * k)
        total = total + _pil_quantised(warp(x, _matrix(x, s, 0, 0, 0, s, 0, centre=centre)))
        frames.append(total / (i + 1))
    return frames


def _motion_blur(x: Tensor, g: torch.Generator, k: float = 1.0) -> list[Tensor]:
    angles = torch.zeros(x.shape[0])
    radius = max(1, round(6 * k))
    return [_quantised(motion_blur(x, radius, 1.8 * k, angles + (i - 20) * 9)) for i in range(21)]


def _gaussian_blur(x: Tensor, g: torch.Generator, k: float = 1.0) -> list[Tensor]:
    return [gaussian_blur(x, (0.3 + 0.015 * i) * k, truncate=7.0) for i in range(31)]


def _snow(x: Tensor, g: torch.Generator, k: float = 1.0) -> list[Tensor]:
    """One snow layer per image (N(0.05, 0.3), zoomed 2x, below 0.5 cleared) falling along a
    motion blur whose angle turns by 4 degrees a frame (-150 .. -30)."""
    n, _, h, w = x.shape
    layer = 0.05 + 0.3 * torch.randn((n, 1, h, w), generator=g, device=g.device).to(x)
    layer = zoom_about_centre(layer, 2)
    layer = torch.where(layer < 0.5, torch.zeros_like(layer), layer)
    layer = torch.floor(layer.clamp(0, 1) * 255) / 255
    grey = 0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3]
    base = 0.85 * x + 0.15 * torch.maximum(x, grey * 1.5 + 0.5)
    frames = []
    for i in range(31):
        moving = _quantised(motion_blur(layer, max(1, round(10 * k)), 2 * k, torch.full((n,), i * 4 - 150.0)))
        frames.append(base + moving + moving.flip(-1, -2))
    return frames


#: what a spatter frame is where its water layer is empty (no liquid left in the 8-bit layer, or
#: none where the edge map is non-zero): make_cifar_p.py then divides 0 by 0 and np.uint8 turns
#: the NaN frame into zeros, so the released files hold an all-black frame ("black", about 7 % of
#: frames); "clean" adds no water there instead (the frame is the clean image)
EMPTY_SPATTER = ("black", "clean")


def _spatter(x: Tensor, g: torch.Generator, empty: str = "black", k: float = 1.0) -> list[Tensor]:
    """Water drops (N(0.6, 0.265) blurred by 1.75, below 0.7 cleared) that run down the image:
    each frame convolves the layer's columns with (0.2, 0.8) (np.convolve 'same').  A frame whose
    water is empty is all black (``empty="black"``, the released files) or clean (``"clean"``)."""
    n, _, h, w = x.shape
    liquid = gaussian_blur(0.6 + 0.265 * torch.randn((n, 1, h, w), generator=g, device=g.device).to(x), 1.75 * k)
    liquid = torch.where(liquid < 0.7, torch.zeros_like(liquid), liquid)
    frames = []
    for _ in range(31):
        drops = water(liquid, 0.6, distance="chamfer")  # make_cifar_p.py's OpenCV steps
        frame = x + drops
        if empty == "black":
            # water() is m / max(m) times a non-zero colour: all zero exactly when max(m) = 0
            nothing = drops.flatten(1).amax(1) == 0
            frame = torch.where(nothing.view(n, 1, 1, 1), torch.zeros_like(frame), frame)
        frames.append(frame)
        liquid = 0.2 * liquid + 0.8 * F.pad(liquid, (0, 0, 1, 0))[:, :, :h]
    return frames


def _translations(k: float = 1.0) -> list[tuple[float, ...]]:
    return [(1, 0, -(i - 7) * k, 0, 1, 0) for i in range(16)]


def _rotations(k: float = 1.0) -> list[tuple[float, ...]]:
    return [_rotation((i - 15) * k) for i in range(31)]


def _scales(k: float = 1.0) -> list[tuple[float, ...]]:
    """make_cifar_p.py's zoom factors 100 / (2 i + 70), raised to ``k`` (the factor's log times k: a
    factor stays positive at any strength, and k = 1 is the published row)."""
    return [((100 / (2 * i + 70)) ** k, 0, 0, 0, (100 / (2 * i + 70)) ** k, 0) for i in range(31)]


_TRANSLATE = _translations()
_ROTATE = _rotations()
_SCALE = _scales()
_SHEAR = [_shear(i - 15) for i in range(31)]

# The 20 sets of the released CIFAR-10-P, under their file names: each noise in the three
# strengths of make_cifar_p.py's three blocks (the easiest unsuffixed, then _2 and _3).
PERTURBATIONS: dict[str, Sequence] = {
    "gaussian_noise": _gaussian(0.02),
    "shot_noise": _shot(700),
    "motion_blur": _motion_blur,
    "zoom_blur": _zoom_blur,
    "snow": _snow,
    "brightness": _brightness,
    "translate": _geometric(_TRANSLATE),
    "rotate": _geometric(_ROTATE),
    "tilt": _tilt,
    "scale": _geometric(_SCALE),
    "spatter": _spatter,
    "speckle_noise": _speckle(0.05),
    "gaussian_blur": _gaussian_blur,
    "shear": _geometric(_SHEAR),
    "gaussian_noise_2": _gaussian(0.04),
    "gaussian_noise_3": _gaussian(0.06),
    "shot_noise_2": _shot(400),
    "shot_noise_3": _shot(200),
    "speckle_noise_2": _speckle(0.07),
    "speckle_noise_3": _speckle(0.1),
}
# torchvision >= 0.8's centre (w / 2, h / 2) for the sets made with its affine transform
_MODERN: dict[str, Sequence] = {
    "zoom_blur": lambda x, g: _zoom_blur(x, g, centre="modern"),
    "rotate": _geometric(_ROTATE, "modern"),
    "scale": _geometric(_SCALE, "modern"),
    "shear": _geometric(_SHEAR, "modern"),
}
FRAMES = {"translate": 16, "motion_blur": 21}  # the rest have 31

#: The perturbations with lengths in pixels, and the sequence at ``k`` times the 32x32 side of
#: make_cifar_p.py (``pixel_scale``): translate's shifts, the blur sigmas, the motion-blur radii
#: (rounded, at least 1) and spatter's blur.  The rest (noise, brightness, angles, zoom and scale
#: factors, tilt, which is made at the image's own side) are relative to the image already.
#: Reasoning as for the -C rows: ``fullscale.corruptions.registry.PIXEL_FIELDS``.
PIXEL_SCALED: dict[str, Callable[[float], Sequence]] = {
    "translate": lambda k: _geometric(_translations(k)),
    "gaussian_blur": lambda k: (lambda x, g: _gaussian_blur(x, g, k)),
    "motion_blur": lambda k: (lambda x, g: _motion_blur(x, g, k)),
    "snow": lambda k: (lambda x, g: _snow(x, g, k)),
}


def _clean_difference(sequence: Sequence, k: float) -> Sequence:
    """A sequence without a damage field of its own (snow): each frame's difference from the clean
    image times ``k``, as the -C snow and JPEG strengths (``fullscale.corruptions.specs.Strengthened``)."""
    def frames(x: Tensor, g: torch.Generator) -> list[Tensor]:
        return [x + k * (frame - x) for frame in sequence(x, g)]
    return frames


#: The strength rules of the difficulty-matched Digits-P (issue 51): ``STRENGTHENED[name](k)`` is the
#: sequence whose change from frame to frame is ``k`` times the published one's, each rule moving the
#: perturbation's own damage field as the -C rules do (``CorruptionSpec.strengthen``): a noise's sd
#: times k (shot: photons / k^2, the same sd), the blur lengths (motion blur's radius and sigma, zoom
#: blur's zoom step), brightness's step, translate's shift, rotate's and tilt's angles times k; scale's
#: zoom factors to the power k; snow, without such a field, its difference from the clean image times
#: k.  ``k = 1`` is the published sequence.  The perturbations outside the paper's ten have no rule.
STRENGTHENED: dict[str, Callable[[float], Sequence]] = {
    "gaussian_noise": lambda k: _gaussian(0.02 * k),
    "shot_noise": lambda k: _shot(700 / k ** 2),
    "motion_blur": lambda k: (lambda x, g: _motion_blur(x, g, k)),
    "zoom_blur": lambda k: (lambda x, g: _zoom_blur(x, g, k=k)),
    "snow": lambda k: _clean_difference(_snow, k),
    "brightness": lambda k: (lambda x, g: _brightness(x, g, k)),
    "translate": lambda k: _geometric(_translations(k)),
    "rotate": lambda k: _geometric(_rotations(k)),
    "tilt": lambda k: (lambda x, g: _tilt(x, g, k)),
    "scale": lambda k: _geometric(_scales(k)),
}


def check_strength(name: str, strength: float) -> None:
    """A strength is a finite number in (0, 1000) for a perturbation with a rule (``STRENGTHENED``)."""
    if not (isinstance(strength, float | int) and not isinstance(strength, bool) and 0 < strength < 1e3):
        raise ValueError(f"strength must be a number in (0, 1000), got {strength!r}")
    if strength != 1 and name not in STRENGTHENED:
        raise ValueError(f"perturbation {name!r} has no strength rule; the rules: {', '.join(STRENGTHENED)}")


def perturbation_sequence(images_u8: Tensor, name: str, *, generator: torch.Generator,
                          params: str = "cifar", affine_centre: str = "reference",
                          empty_spatter: str = "black", pixel_scale: float = 1.0,
                          strength: float = 1.0) -> Tensor:
    """uint8 (N, 3, H, W) -> uint8 (N, frames, 3, H, W): 31 frames (translate 16, motion blur 21).

    ``affine_centre`` is where rotate, scale, shear and zoom blur turn / scale about:
    ``"reference"`` (w / 2 + 0.5, h / 2 + 0.5) as torchvision 0.2-0.7 did when the released
    CIFAR-10-P was made, or ``"modern"`` (w / 2, h / 2), torchvision >= 0.8's centre.
    ``empty_spatter`` is spatter's frame where the water layer is empty: ``"black"`` as the
    released files (the reference's 0 / 0), or ``"clean"`` (the image without water).
    ``pixel_scale``: the sequence for images that many times make_cifar_p.py's 32x32 side
    (``PIXEL_SCALED``; 1 is the published sequence).  ``params="digits-matched"``: the difficulty-matched
    Digits-P, each perturbation at its fitted strength (``fullscale.corruptions.matched_p``; 32x32 only).
    ``strength``: a further factor on the perturbation's strength (``STRENGTHENED``; the fit's knob)."""
    if name not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {name!r}; available: {', '.join(PERTURBATIONS)}")
    if params not in ("cifar", "digits-matched"):
        raise ValueError(f"params={params!r}: the -P parameters are cifar (the CIFAR-10-P sequences of "
                         "make_cifar_p.py) or digits-matched (the difficulty-matched Digits-P)")
    check_strength(name, strength)
    if params == "digits-matched":
        from fullscale.corruptions.matched_p import matched_p_strength

        if pixel_scale != 1:
            raise ValueError("the difficulty-matched Digits-P is fitted at 32x32: pixel_scale must be 1")
        strength = strength * matched_p_strength(name)
    if images_u8.dtype != torch.uint8 or images_u8.ndim != 4 or images_u8.shape[1] != 3:
        raise ValueError(f"expected uint8 images (N, 3, H, W), got {images_u8.dtype} "
                         f"{tuple(images_u8.shape)}")
    if affine_centre not in AFFINE_CENTRES:
        raise ValueError(f"affine_centre={affine_centre!r}: expected one of {', '.join(AFFINE_CENTRES)}")
    if empty_spatter not in EMPTY_SPATTER:
        raise ValueError(f"empty_spatter={empty_spatter!r}: expected one of {', '.join(EMPTY_SPATTER)}")
    check_pixel_scale(pixel_scale)
    table = _MODERN if affine_centre == "modern" and name in _MODERN else PERTURBATIONS
    x = images_u8.float() / 255
    if name == "spatter":
        frames = _spatter(x, generator, empty_spatter, pixel_scale)
    elif strength != 1:
        if affine_centre != "reference" or pixel_scale != 1:
            raise ValueError("a strength applies to the published sequence only (reference centre, pixel_scale 1)")
        frames = STRENGTHENED[name](strength)(x, generator)
    elif pixel_scale != 1 and name in PIXEL_SCALED:
        frames = PIXEL_SCALED[name](pixel_scale)(x, generator)
    else:
        frames = table[name](x, generator)
    return to_u8(torch.stack(frames, 1))
