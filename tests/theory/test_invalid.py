"""Bad arguments to the verifier's public functions raise a clear ValueError."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theory.calculus import derivatives, eps_grid, fit_slope, taylor
from theory.laws import point_law, vicinal_law
from theory.models import build_model
from theory.nfm import theorem1_terms
from theory.problems import Data, Family, independent_family, make_data, sphere_data
from theory.robust import Theorem3Setting, theorem3_rhs
from theory.verify import VerifyConfig

X = torch.zeros(3, 2, dtype=torch.float64)


def _family(**kw):
    base = independent_family(2, point_law(), sigma_add=0.1, sigma_mult=0.1)
    return Family(point_law(), base.noise, **kw)


@pytest.mark.parametrize(
    "make",
    [
        lambda: build_model("no-such-model", 2),
        lambda: build_model("tanh-mlp", 0),
        lambda: build_model("tanh-mlp", 2, 1),
        lambda: build_model("tanh-mlp", 2, width=0),
        lambda: build_model("tanh-mlp", 2, scale=-1.0),
        lambda: build_model("linear", 2, 3),
        lambda: build_model("rational", 2, None),
        lambda: make_data(1, 2),
        lambda: make_data(4, 0),
        lambda: make_data(4, 2, classes=1),
        lambda: sphere_data(0, 2),
        lambda: Data(X, torch.zeros(2, dtype=torch.long), X),
        lambda: Data(X, torch.zeros(3, dtype=torch.long), torch.zeros(3, 3)),
        lambda: _family(sigma_add=-0.1, sigma_mult=0.0),
        lambda: _family(sigma_add=0.0, sigma_mult=float("inf")),
        lambda: fit_slope(np.ones(3), np.ones(4)),
        lambda: fit_slope(np.array([-1.0, 1.0, 2.0]), np.ones(3)),
        lambda: eps_grid(2),
        lambda: eps_grid(5, 1e-1, 1e-3),
        lambda: taylor(lambda e: e, -1),
        lambda: derivatives(lambda x: x.sum(), torch.zeros(3)),
        lambda: VerifyConfig(ids=("thm9",)),
        lambda: VerifyConfig(ids=()),
        lambda: VerifyConfig(points=1),
        lambda: theorem1_terms(
            build_model("tanh-mlp", 2, 3), make_data(3, 2), 0.5, 0.3, _family(sigma_add=0.0, sigma_mult=0.0)
        ),
        lambda: theorem3_rhs(
            Theorem3Setting(
                build_model("linear", 2),
                make_data(3, 2),
                _family(sigma_add=0.0, sigma_mult=0.0),
                (0.3, 0.2),
                1.0,
            ),
            {},
            form="both",
        ),
        lambda: vicinal_law(1.0, 0.0),
    ],
)
def test_invalid_arguments_raise_value_error(make):
    with pytest.raises(ValueError):
        make()
