"""The two figures: ``toy_data.png`` (fig:toy_data) and ``decision_boundaries.png``
(fig:toy_example), rendered off-screen (Agg canvas, no pyplot state) to PNG bytes.

Sizes are fixed (``DATA_FIGSIZE``, ``BOUNDARY_PANEL`` inches at ``DPI``) and the figures are
saved without tight cropping, so the pixel size of every file is known in advance.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from toy.data import ToyData

__all__ = ["BOUNDARY_PANEL", "DATA_FIGSIZE", "DPI", "boundaries_figure", "plot_boundaries", "plot_data"]

DPI = 100
DATA_FIGSIZE = (10.0, 5.0)
BOUNDARY_PANEL = (4.0, 4.0)
_COLORS = ("#f2a93b", "#3b8c4f")          # class 0 (outside), class 1 (inside), as the public figure
_CMAP = "RdPu"


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer)
    return buffer.getvalue()


def _scatter(ax, x: np.ndarray, y: np.ndarray, size: float = 9.0) -> None:
    for label in (0, 1):
        pick = y == label
        ax.scatter(x[pick, 0], x[pick, 1], s=size, c=_COLORS[label], label=f"class {label}",
                   edgecolors="none", zorder=3)


def _frame(ax, limit: float) -> None:
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-limit, limit)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])


def plot_data(data: ToyData, polygon: np.ndarray, *, limit: float, seed: int) -> bytes:
    """fig:toy_data: (a) all points, (b) the test points; the polygon outline dashed."""
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
    return _png(fig)


def plot_boundaries(fields: np.ndarray, axis: np.ndarray, data: ToyData, titles: Sequence[str],
                    *, limit: float, suptitle: str, ncols: int = 3) -> bytes:
    """fig:toy_example: per scheme the probability field p(class 1 | x), its 0.5 contour and the
    test points.  ``fields`` is (n_schemes, n, n) on ``axis`` x ``axis`` (rows indexed by y)."""
    return _png(boundaries_figure(fields, axis, data, titles, limit=limit, suptitle=suptitle, ncols=ncols))


def boundaries_figure(fields: np.ndarray, axis: np.ndarray, data: ToyData, titles: Sequence[str],
                      *, limit: float, suptitle: str, ncols: int = 3) -> Figure:
    """The figure of ``plot_boundaries``, with one legend naming the point colours, the shading and
    the contour (a reader cannot tell otherwise which class is which nor what the colour scale means)."""
    n = len(titles)
    if fields.shape[0] != n:
        raise ValueError(f"{fields.shape[0]} fields for {n} titles")
    cols, rows = min(ncols, n), math.ceil(n / ncols)
    fig = Figure(figsize=(BOUNDARY_PANEL[0] * cols, BOUNDARY_PANEL[1] * rows), dpi=DPI)
    x, y = data.x_test.cpu().numpy(), data.y_test.cpu().numpy()
    levels = np.linspace(0, 1, 11)
    for k in range(n):
        ax = fig.add_subplot(rows, cols, k + 1)
        ax.contourf(axis, axis, fields[k], levels=levels, cmap=_CMAP, alpha=0.6, vmin=0, vmax=1)
        ax.contour(axis, axis, fields[k], levels=[0.5], colors="k", linewidths=1.2)
        _scatter(ax, x, y, size=7.0)
        _frame(ax, limit)
        ax.set_title(titles[k], fontsize=11)
    fig.suptitle(suptitle, fontsize=10)
    shade = matplotlib.colormaps[_CMAP]
    handles = [Line2D([], [], ls="", marker="o", ms=5, color=_COLORS[0], label="test point, class 0 (outside)"),
               Line2D([], [], ls="", marker="o", ms=5, color=_COLORS[1], label="test point, class 1 (inside)"),
               Patch(color=shade(0.15), alpha=0.6, label="shading: p(class 1 | x) low"),
               Patch(color=shade(0.9), alpha=0.6, label="shading: p(class 1 | x) high"),
               Line2D([], [], color="k", lw=1.2, label="p = 0.5 (decision boundary)")]
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1.0 - 0.45 / fig.get_figheight()),
               ncol=3, fontsize=7, frameon=False)
    fig.subplots_adjust(left=0.02, right=0.98, bottom=0.02, top=1.0 - 1.0 / fig.get_figheight(), wspace=0.05,
                        hspace=0.12)
    return fig
