"""The many-seed toy experiment: every scheme on every seed, trained together, then measured.

Seed s names one data set, one initialization and one batch order shared by all schemes
(``toy.train``), so scheme-vs-scheme differences on a seed are paired.  After training:
test accuracy per model, the smoothness measures of ``toy.smoothness`` on a fixed grid, and
the probability fields of one representative seed for the figure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from noisymix import generator_for
from noisymix_infra.progress import progress
from toy.data import ToyData, ToyDataConfig, make_toy_data
from toy.schemes import PAPER_SCHEMES, SchemeConfig, check_schemes, scheme_config
from toy.smoothness import Grid, make_grid, probability_field, smoothness
from toy.train import Member, Params, TrainConfig, accuracy, stream_seed, train_members

__all__ = ["ExperimentConfig", "ExperimentResult", "make_seed_data", "representative_seed", "run_experiment"]

MEASURES = ("grad_norm", "hessian_norm", "contour_length")


@dataclass(frozen=True)
class ExperimentConfig:
    """What to run.

    Attributes:
        schemes: scheme names (``toy.schemes.SCHEMES``), default the six of fig:toy_example.
        seeds: number of reported seeds (0, ..., seeds - 1 in the "report" namespace).
        train, data: the recipe and the data set.
        grid_size: points per side of the smoothness grid.
        plot_grid_size: points per side of the figure's probability fields.
    """

    schemes: tuple[str, ...] = PAPER_SCHEMES
    seeds: int = 20
    train: TrainConfig = field(default_factory=TrainConfig)
    data: ToyDataConfig = field(default_factory=ToyDataConfig)
    grid_size: int = 101
    plot_grid_size: int = 201
    namespace: str = "report"

    def __post_init__(self) -> None:
        if self.seeds < 1:
            raise ValueError(f"--seeds must be >= 1, got {self.seeds}")
        check_schemes(self.schemes)


@dataclass
class ExperimentResult:
    """Per scheme, per seed numbers (lists in seed order) and the figure's material."""

    config: ExperimentConfig
    scheme_configs: dict[str, SchemeConfig]
    accuracy: dict[str, list[float]]
    smoothness: dict[str, dict[str, list[float]]]
    data: list[ToyData]
    representative_seed: int
    fields: np.ndarray                 # (n_schemes, n, n) of the representative seed
    field_axis: np.ndarray
    seconds: dict[str, float]
    params: Params


def make_seed_data(seed: int, config: ToyDataConfig, namespace: str = "report",
                   device: torch.device | str = "cpu") -> ToyData:
    """Seed ``seed``'s data set (its "data" stream)."""
    return make_toy_data(config, generator=generator_for(stream_seed(namespace, seed, "data"), device))


def representative_seed(accuracy: Mapping[str, list[float]]) -> int:
    """The seed whose accuracies across schemes are closest (squared distance) to the
    per-scheme means: the medoid, not a hand-picked seed.  Ties go to the lowest seed."""
    table = np.array(list(accuracy.values()))                 # (schemes, seeds)
    distance = ((table - table.mean(axis=1, keepdims=True)) ** 2).sum(axis=0)
    return int(np.argmin(distance))


def run_experiment(config: ExperimentConfig, strengths: Mapping[str, Mapping[str, Any]], *,
                   device: torch.device | str = "cpu",
                   on_epoch: Callable[[int], None] | None = None) -> ExperimentResult:
    """Train every (scheme, seed), measure accuracy and smoothness."""
    device = torch.device(device)
    start = time.perf_counter()
    configs = {name: scheme_config(name, strengths) for name in config.schemes}
    data = [make_seed_data(s, config.data, config.namespace, device) for s in range(config.seeds)]
    members = [Member(configs[name], s, config.namespace) for name in config.schemes
               for s in range(config.seeds)]
    sets = [data[m.seed] for m in members]
    own_bar = on_epoch is None
    bar = progress(desc="toy: training", total=len(members) * config.train.epochs, unit="model-epoch")
    params = train_members(members, sets, config.train, device=device,
                           on_epoch=bar.update if own_bar else on_epoch)
    bar.close()
    trained = time.perf_counter()
    with torch.no_grad():
        acc = accuracy(params, torch.stack([d.x_test for d in sets]), torch.stack([d.y_test for d in sets]))
    n = config.seeds
    accuracies = {name: acc[k * n:(k + 1) * n].cpu().tolist() for k, name in enumerate(config.schemes)}
    grid = make_grid(config.grid_size, device=device)
    smooth: dict[str, dict[str, list[float]]] = {}
    for k, name in enumerate(progress(config.schemes, desc="toy: smoothness", unit="scheme")):
        piece = {p: v[k * n:(k + 1) * n] for p, v in params.items()}
        values = smoothness(piece, grid)
        smooth[name] = {m: values[m].tolist() for m in MEASURES}
    measured = time.perf_counter()
    rep = representative_seed(accuracies)
    plot_grid: Grid = make_grid(config.plot_grid_size, device=device)
    pick = [k * n + rep for k in range(len(config.schemes))]
    fields = probability_field({p: v[pick] for p, v in params.items()}, plot_grid).cpu().numpy()
    return ExperimentResult(
        config=config, scheme_configs=configs, accuracy=accuracies, smoothness=smooth, data=data,
        representative_seed=rep, fields=fields, field_axis=plot_grid.axis.cpu().numpy(),
        seconds={"train": trained - start, "measure": measured - trained,
                 "total": time.perf_counter() - start},
        params=params,
    )
