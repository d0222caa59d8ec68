"""Small models p for the checks, in float64, as plain functions of the input (torch.func-ready).

A model maps inputs (..., d) to a scalar logit (...,) — the binary classifier p: R^d -> R of
Theorems 1 and 3 — or to K logits (..., K) whose softmax is the simplex-valued p of Proposition 1
and Theorem 2.  ``probs`` turns either into a distribution (a scalar logit f becomes the two
classes softmax([f, 0]) = (sigmoid f, 1 - sigmoid f)).

Registry (name -> builder), each a few lines:

* ``tanh-mlp``, ``softplus-mlp``: one hidden layer with biases; smooth (C^inf), generic Hessians.
* ``linear``: f(x) = w^T x, bias-free, so f(x) = grad f(x)^T x and grad^2 f = 0 (Theorem 3).
* ``relu-mlp``: f(x) = v^T relu(W x), bias-free, positively homogeneous: f(x) = grad f(x)^T x and
  grad^2 f = 0 off the measure-zero kinks (Theorem 3, ReLU case).
* ``polynomial`` and ``rational``: exact rational coefficients, also built as sympy expressions
  for the symbolic witness (``theory.symbolic``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from noisymix import generator_for
from theory import _args

__all__ = ["MODELS", "Model", "build_model", "polynomial_logit", "rational_weights"]

DTYPE = torch.float64


@dataclass(frozen=True)
class Model:
    """p as a function: ``fn(x)`` with x of shape (..., d) gives (...,) or (..., K) logits."""

    name: str
    fn: Callable[[Tensor], Tensor]
    dim: int
    classes: int | None  # None: one scalar logit (binary classifier)
    homogeneous: bool = False
    params: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __call__(self, x: Tensor) -> Tensor:
        return self.fn(x)

    def logits(self, x: Tensor) -> Tensor:
        """K logits; a scalar-logit model gives the two logits (f, 0)."""
        z = self.fn(x)
        if self.classes is None:
            return torch.stack([z, torch.zeros_like(z)], dim=-1)
        return z

    def probs(self, x: Tensor) -> Tensor:
        return torch.softmax(self.logits(x), dim=-1)

    @property
    def num_classes(self) -> int:
        return 2 if self.classes is None else self.classes

    def describe(self) -> str:
        out = "logit" if self.classes is None else f"K={self.classes}"
        return f"{self.name}(d={self.dim}, {out}, {self.params.get('seed', '-')})"


def _randn(g: torch.Generator, *shape: int) -> Tensor:
    return torch.randn(*shape, generator=g, dtype=DTYPE)


def _mlp(activation: Callable[[Tensor], Tensor], name: str) -> Callable[..., Model]:
    def build(dim: int, classes: int | None, width: int, seed: int, scale: float) -> Model:
        g = generator_for(seed)
        out = 1 if classes is None else classes
        w1 = _randn(g, width, dim) / dim**0.5
        b1 = 0.5 * _randn(g, width)
        w2 = scale * _randn(g, out, width) / width**0.5
        b2 = 0.3 * _randn(g, out)

        def fn(x: Tensor) -> Tensor:
            z = activation(x @ w1.T + b1) @ w2.T + b2
            return z[..., 0] if classes is None else z

        return Model(name, fn, dim, classes, params={"seed": seed, "width": width, "scale": scale})

    return build


def _linear(dim: int, classes: int | None, width: int, seed: int, scale: float) -> Model:
    if classes is not None:
        raise ValueError("the linear model is a binary classifier (classes=None)")
    g = generator_for(seed)
    w = scale * _randn(g, dim) / dim**0.5

    def fn(x: Tensor) -> Tensor:
        return x @ w

    return Model("linear", fn, dim, None, homogeneous=True, params={"seed": seed, "scale": scale, "w": w})


def _relu(dim: int, classes: int | None, width: int, seed: int, scale: float) -> Model:
    if classes is not None:
        raise ValueError("the relu-mlp model is a binary classifier (classes=None)")
    g = generator_for(seed)
    w1 = _randn(g, width, dim) / dim**0.5
    v = scale * _randn(g, width) / width**0.5

    def fn(x: Tensor) -> Tensor:
        return torch.relu(x @ w1.T) @ v

    return Model(
        "relu-mlp",
        fn,
        dim,
        None,
        homogeneous=True,
        params={"seed": seed, "scale": scale, "width": width, "w1": w1},
    )


# ------------------------------------------------------------ exact-coefficient models (sympy)
def _fractions(g: torch.Generator, shape: tuple[int, ...], denominator: int = 4) -> list:
    ints = torch.randint(-3, 4, shape, generator=g).reshape(-1).tolist()
    return [Fraction(i, denominator) for i in ints]


def polynomial_logit(x: Sequence[Any], coef: dict[str, list]) -> Any:
    """f(x) = c + a^T x + x^T B x + t x_0^3, written with + and * only so that it evaluates on
    torch tensors and on sympy expressions alike (``x`` is the list of d coordinates)."""
    d = len(x)
    out = coef["c"][0] + sum(coef["a"][i] * x[i] for i in range(d))
    out = out + sum(coef["B"][i * d + j] * x[i] * x[j] for i in range(d) for j in range(d))
    return out + coef["t"][0] * x[0] * x[0] * x[0]


def rational_weights(x: Sequence[Any], coef: dict[str, list], classes: int) -> list:
    """Unnormalised class weights q_k(x) = 1 + (a_k^T x + b_k)^2 > 0; p^k = q_k / sum_j q_j."""
    d = len(x)
    return [
        1 + (coef["b"][k] + sum(coef["a"][k * d + i] * x[i] for i in range(d))) ** 2 for k in range(classes)
    ]


def _as_floats(coef: dict[str, list]) -> dict[str, list]:
    return {k: [float(v) for v in vals] for k, vals in coef.items()}


def _polynomial(dim: int, classes: int | None, width: int, seed: int, scale: float) -> Model:
    if classes is not None:
        raise ValueError("the polynomial model is a binary classifier (classes=None)")
    g = generator_for(seed)
    coef = {
        "c": _fractions(g, (1,)),
        "a": _fractions(g, (dim,), 2),
        "B": _fractions(g, (dim * dim,)),
        "t": _fractions(g, (1,), 8),
    }
    fc = _as_floats(coef)

    def fn(x: Tensor) -> Tensor:
        return polynomial_logit([x[..., i] for i in range(dim)], fc)

    return Model("polynomial", fn, dim, None, params={"seed": seed, "coef": coef})


def _rational(dim: int, classes: int | None, width: int, seed: int, scale: float) -> Model:
    if classes is None or classes < 2:
        raise ValueError("the rational model is a K-class model (classes >= 2)")
    g = generator_for(seed)
    coef = {"a": _fractions(g, (classes * dim,), 2), "b": _fractions(g, (classes,), 2)}
    fc = _as_floats(coef)

    def fn(x: Tensor) -> Tensor:
        q = rational_weights([x[..., i] for i in range(dim)], fc, classes)
        return torch.stack([torch.log(qk) for qk in q], dim=-1)  # softmax(log q) = q / sum q

    return Model("rational", fn, dim, classes, params={"seed": seed, "coef": coef})


MODELS: dict[str, Callable[..., Model]] = {
    "tanh-mlp": _mlp(torch.tanh, "tanh-mlp"),
    "softplus-mlp": _mlp(F.softplus, "softplus-mlp"),
    "linear": _linear,
    "relu-mlp": _relu,
    "polynomial": _polynomial,
    "rational": _rational,
}


def build_model(
    name: str, dim: int, classes: int | None = None, *, width: int = 8, seed: int = 0, scale: float = 1.0
) -> Model:
    """A model from the registry; ``classes=None`` gives a scalar logit (binary classifier)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    _args.count("dim", dim)
    _args.count("width", width)
    _args.positive("scale", scale)
    if classes is not None:
        _args.count("classes", classes, 2)
    return MODELS[name](dim, classes, width, seed, scale)
