"""Smoothness measures against hand-derived formulas and known curves."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from toy.smoothness import contour_length, make_grid, probability_field, smoothness


def _random_params(g: int, hidden: int = 6, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {"w1": torch.randn(g, 2, hidden, generator=gen), "b1": torch.randn(g, hidden, generator=gen),
            "w2": torch.randn(g, hidden, 2, generator=gen), "b2": torch.randn(g, 2, generator=gen)}


def _analytic(params, points):
    """NumPy, float64: p = sigmoid(u), u = (w2[:,1] - w2[:,0]) . relu(W1^T x + b1) + b2[1] - b2[0];
    grad p = s'(u) grad u, Hess p = s''(u) grad u grad u^T (ReLU is piecewise linear)."""
    w1, b1 = params["w1"].double().numpy(), params["b1"].double().numpy()
    w2, b2 = params["w2"].double().numpy(), params["b2"].double().numpy()
    x = points.double().numpy()
    grads, hessians = [], []
    for k in range(w1.shape[0]):
        pre = x @ w1[k] + b1[k]                               # (N, H)
        c = w2[k][:, 1] - w2[k][:, 0]
        u = np.maximum(pre, 0) @ c + b2[k][1] - b2[k][0]
        gu = ((pre > 0) * c) @ w1[k].T                         # (N, 2)
        s = 1 / (1 + np.exp(-u))
        s1, s2 = s * (1 - s), s * (1 - s) * (1 - 2 * s)
        grads.append(np.linalg.norm(s1[:, None] * gu, axis=1).mean())
        hess = s2[:, None, None] * gu[:, :, None] * gu[:, None, :]
        hessians.append(np.sqrt((hess**2).sum(axis=(1, 2))).mean())
    return np.array(grads), np.array(hessians)


def test_gradient_and_hessian_norms_match_the_closed_form():
    params = _random_params(5)
    grid = make_grid(23)
    ours = smoothness(params, grid, chunk=2)
    grads, hessians = _analytic(params, grid.points)
    np.testing.assert_allclose(ours["grad_norm"].numpy(), grads, rtol=1e-4)
    np.testing.assert_allclose(ours["hessian_norm"].numpy(), hessians, rtol=1e-3)
    assert ours["contour_length"].shape == (5,)


def test_smoother_function_has_smaller_norms():
    params = _random_params(1, seed=3)
    sharp = {k: v * (3.0 if k in ("w2", "b2") else 1.0) for k, v in params.items()}   # u -> 3u
    grid = make_grid(41)
    a, b = smoothness(params, grid), smoothness(sharp, grid)
    assert b["grad_norm"].item() > a["grad_norm"].item()
    assert b["hessian_norm"].item() > a["hessian_norm"].item()


@pytest.mark.parametrize("radius", [0.3, 0.7, 1.1])
def test_contour_length_of_a_circle(radius):
    axis = np.linspace(-1.3, 1.3, 201)
    xx, yy = np.meshgrid(axis, axis)
    field = 1 / (1 + np.exp(5 * (np.hypot(xx, yy) - radius)))   # p = 0.5 on the circle
    assert contour_length(field, axis) == pytest.approx(2 * math.pi * radius, rel=2e-3)


def test_contour_length_of_a_line_and_of_nothing():
    axis = np.linspace(-1.3, 1.3, 101)
    xx, _ = np.meshgrid(axis, axis)
    assert contour_length(1 / (1 + np.exp(-3 * xx)), axis) == pytest.approx(2.6, rel=1e-9)
    assert contour_length(np.full((101, 101), 0.9), axis) == 0.0


def test_probability_field_orientation():
    """Rows index y and columns x: p depends on x only for this model."""
    params = {"w1": torch.tensor([[[1.0, -1.0], [0.0, 0.0]]]), "b1": torch.zeros(1, 2),
              "w2": torch.tensor([[[0.0, 1.0], [1.0, 0.0]]]), "b2": torch.zeros(1, 2)}
    grid = make_grid(11)
    field = probability_field(params, grid)[0]
    x = grid.axis
    # u = relu(x) - relu(-x) = x
    torch.testing.assert_close(field[3], torch.sigmoid(x), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(field[:, 4], torch.full((11,), torch.sigmoid(x[4]).item()))
