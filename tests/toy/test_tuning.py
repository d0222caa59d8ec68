"""The tuning protocol: equal budgets, single-component tuning schemes, seeds apart, the
selection rule, and a stored result that matches the current grids."""

from __future__ import annotations

import pytest

from toy.schemes import COMPONENTS, SCHEMES
from toy.train import TrainConfig
from toy.tuning import GRID_POINTS, GRIDS, TUNING_SCHEME, TuningProtocol, load_tuned, tune, tuning_members


def test_equal_budgets_and_single_component_tuning_schemes():
    assert set(GRIDS) == set(COMPONENTS) == set(TUNING_SCHEME)
    for component, grid in GRIDS.items():
        assert len(grid) == GRID_POINTS
        assert len({tuple(sorted(p.items())) for p in grid}) == GRID_POINTS        # distinct points
        assert all(set(p) == set(COMPONENTS[component]) for p in grid)
        assert SCHEMES[TUNING_SCHEME[component]].components == (component,)
        assert all(v > 0 for p in grid for k, v in p.items() if k != "noise_mult")  # component on


def test_tuning_members_use_their_own_seed_namespace():
    plan = tuning_members(TuningProtocol(seeds=3))
    assert len(plan) == 3 * (1 + sum(len(g) for g in GRIDS.values()))
    assert {m.namespace for _, _, m in plan} == {"tune"}
    assert {m.seed for _, _, m in plan} == {0, 1, 2}


def _best(rows):
    top = max(r["validation_accuracy"] for r in rows)
    tied = [r for r in rows if abs(r["validation_accuracy"] - top) < 1e-9]
    return min(tied, key=lambda r: r["validation_cross_entropy"])["strengths"]


def test_tune_selects_by_validation_accuracy_then_cross_entropy():
    result = tune(TuningProtocol(seeds=2, n_validation=50), TrainConfig(epochs=2))
    assert result["protocol"]["n_fit"] == 200 and result["protocol"]["seeds"] == 2
    for component, rows in result["grids"].items():
        assert [r["strengths"] for r in rows] == list(GRIDS[component])
        assert all(len(r["per_seed_accuracy"]) == 2 for r in rows)
        assert result["strengths"][component] == _best(rows)
    assert 0 <= result["baseline"]["validation_accuracy"] <= 1


def test_stored_tuning_is_current_and_self_consistent():
    stored = load_tuned()
    for component, rows in stored["grids"].items():
        assert [r["strengths"] for r in rows] == list(GRIDS[component]), "grids changed: run --retune"
        assert stored["strengths"][component] == _best(rows)
        assert all(len(r["per_seed_accuracy"]) == stored["protocol"]["seeds"] for r in rows)
    assert stored["protocol"]["seed_namespace"] == "tune"
    assert stored["protocol"]["train"] == {"hidden": 32, "lr": 0.1, "batch_size": 50, "epochs": 100,
                                           "num_classes": 2}


def test_protocol_rejects_bad_values():
    with pytest.raises(ValueError):
        TuningProtocol(seeds=0)
    with pytest.raises(ValueError):
        TuningProtocol(n_validation=0)


@pytest.mark.slow
def test_stored_tuning_is_reproduced_by_retuning():
    """The stored tuning is what the current code computes (about 35 s on 2 cores): every grid
    point's validation accuracy within 0.01, and the stored choice among the best of the retuned
    grid.  Not the identical choice: grid points tie to one validation image (0.0005), and float
    rounding differs between CPUs, so the argmax may move to a tied neighbour (on this VM JSD's
    (4, 0.01) scored 0.8825 against the stored (1, 0.03)'s 0.882)."""
    stored = load_tuned()
    again = tune(TuningProtocol(seeds=stored["protocol"]["seeds"]))
    for component, rows in again["grids"].items():
        for ours, theirs in zip(rows, stored["grids"][component], strict=True):
            assert ours["validation_accuracy"] == pytest.approx(theirs["validation_accuracy"], abs=0.01)
        chosen = next(r for r in rows if r["strengths"] == stored["strengths"][component])
        best = max(r["validation_accuracy"] for r in rows)
        assert chosen["validation_accuracy"] >= best - 0.0025, (component, chosen, best)  # 5 images of 2,000
