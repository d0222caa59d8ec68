"""The two figures: ``toy_data.png`` (fig:toy_data) and ``decision_boundaries.png``
(fig:toy_example), rendered off-screen (Agg canvas, no pyplot state) to PNG bytes.

Sizes are fixed (``DATA_FIGSIZE``, ``BOUNDARY_PANEL`` inches at ``DPI``) and the figures are
saved without tight cropping, so the pixel size of every file is known in advance.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from toy.data import ToyData

__all__ = ["BOUNDARY_PANEL", "CLASS_COLORS", "CLASS_MARKERS", "DATA_FIGSIZE", "DPI", "FIELD_CMAP", "boundaries_figure",
           "data_figure", "plot_boundaries", "plot_data"]

DPI = 100
DATA_FIGSIZE = (10.0, 5.0)
BOUNDARY_PANEL = (4.0, 4.0)
#: class 0 (outside), class 1 (inside): in colours no method has in any figure (orange and green were
#: AugMix and NFM elsewhere; issue 48; noisymix_figures.methods holds the method colours, and
#: tests/figures/test_figures_issue48.py the two apart) and in two shapes, for grey-scale prints
CLASS_COLORS = ("blue", "magenta")
CLASS_MARKERS = ("o", "^")
#: the probability field p(class 1 | x), grey: a field, not a method or a class
FIELD_CMAP = "Greys"


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer)
    return buffer.getvalue()


def _scatter(ax, x: np.ndarray, y: np.ndarray, size: float = 9.0) -> None:
    for label in (0, 1):
        pick = y == label
        ax.scatter(x[pick, 0], x[pick, 1], s=size, c=CLASS_COLORS[label], marker=CLASS_MARKERS[label],
                   label=f"class {label}", edgecolors="none", zorder=3)


def _frame(ax, limit: float, *, xlabel: bool = True, ylabel: bool = True) -> None:
    """Square axes over [-limit, limit]^2 with ticks (the coordinates x1, x2 of the toy data)."""
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-limit, limit)
    ax.set_aspect("equal")
    ticks = np.linspace(-math.floor(limit), math.floor(limit), 2 * math.floor(limit) + 1)
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.tick_params(labelsize=7)
    if xlabel:
        ax.set_xlabel("x1", fontsize=8)
    if ylabel:
        ax.set_ylabel("x2", fontsize=8)


def plot_data(data: ToyData, polygon: np.ndarray, *, limit: float, seed: int) -> bytes:
    """fig:toy_data: (a) all points, (b) the test points; the polygon outline dashed."""
    return _png(data_figure(data, polygon, limit=limit, seed=seed))


def data_figure(data: ToyData, polygon: np.ndarray, *, limit: float, seed: int) -> Figure:
    """The figure of ``plot_data``."""
    fig = Figure(figsize=DATA_FIGSIZE, dpi=DPI)
    x, y = data.x.cpu().numpy(), data.y.cpu().numpy()
    test = data.test.cpu().numpy()
    closed = np.vstack([polygon, polygon[:1]])
    for k, (title, pick) in enumerate((("(a) all data points", slice(None)),
                                       ("(b) data points used for testing", test))):
        ax = fig.add_subplot(1, 2, k + 1)
        _scatter(ax, x[pick], y[pick])
        ax.plot(closed[:, 0], closed[:, 1], "k--", lw=0.8, label="polygon (noise-free)")
        _frame(ax, limit)
        ax.set_title(title)
    fig.axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"Toy data set (seed {seed}): {x.shape[0]} points, {test.size} for testing")
    return fig


def plot_boundaries(fields: np.ndarray, axis: np.ndarray, data: ToyData, titles: Sequence[str],
                    *, limit: float, suptitle: str, ncols: int = 3) -> bytes:
    """fig:toy_example: per scheme the probability field p(class 1 | x), its 0.5 contour and the
    test points.  ``fields`` is (n_schemes, n, n) on ``axis`` x ``axis`` (rows indexed by y)."""
    return _png(boundaries_figure(fields, axis, data, titles, limit=limit, suptitle=suptitle, ncols=ncols))


def boundaries_figure(fields: np.ndarray, axis: np.ndarray, data: ToyData, titles: Sequence[str],
                      *, limit: float, suptitle: str, ncols: int = 3) -> Figure:
    """The figure of ``plot_boundaries``, with one legend naming the point colours and the contour, a
    colour bar for the shading p(class 1 | x), and the coordinates on the axes (a reader cannot tell
    otherwise which class is which, what the shading means, nor where the points lie; issue 48)."""
    n = len(titles)
    if fields.shape[0] != n:
        raise ValueError(f"{fields.shape[0]} fields for {n} titles")
    cols, rows = min(ncols, n), math.ceil(n / ncols)
    # the pixel size stays BOUNDARY_PANEL per panel: the colour bar and the legend take their room inside it
    fig = Figure(figsize=(BOUNDARY_PANEL[0] * cols, BOUNDARY_PANEL[1] * rows), dpi=DPI, layout="constrained")
    x, y = data.x_test.cpu().numpy(), data.y_test.cpu().numpy()
    levels = np.linspace(0, 1, 11)
    axes, shading = [], None
    for k in range(n):
        ax = fig.add_subplot(rows, cols, k + 1)
        shading = ax.contourf(axis, axis, fields[k], levels=levels, cmap=FIELD_CMAP, alpha=0.6, vmin=0, vmax=1)
        ax.contour(axis, axis, fields[k], levels=[0.5], colors="k", linewidths=1.2)
        _scatter(ax, x, y, size=7.0)
        _frame(ax, limit, xlabel=k >= n - cols, ylabel=k % cols == 0)  # coordinates on the outer panels
        ax.set_title(titles[k], fontsize=11)
        axes.append(ax)
    fig.suptitle(suptitle, fontsize=10)
    bar = fig.colorbar(shading, ax=axes, shrink=0.8, pad=0.02)
    bar.set_label("shading: p(class 1 | x), the model's probability of class 1 (inside)", fontsize=8)
    handles = [Line2D([], [], ls="", marker=CLASS_MARKERS[0], ms=5, color=CLASS_COLORS[0],
                      label="test point, class 0 (outside)"),
               Line2D([], [], ls="", marker=CLASS_MARKERS[1], ms=5, color=CLASS_COLORS[1],
                      label="test point, class 1 (inside)"),
               Line2D([], [], color="k", lw=1.2, label="p(class 1 | x) = 0.5 (decision boundary)")]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    return fig
