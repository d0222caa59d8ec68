"""``noisymix fit-analogue --kind p --out DIR [--freeze]``: fit the difficulty-matched Digits-P (issue 51).

At the published CIFAR-10-P sequences the digits' Baseline hardly flips under the noises (white
0.06 % against the paper's 44.6 %) and flips most under brightness, translate and scale, so the
perturbations that carry the paper's stability result moved nothing.  This fit finds, per
perturbation of ``tab:results_cifar_p``, the strength ``k``
(``fullscale.corruptions.perturbations.STRENGTHENED``) at which the Baseline's flip probability
equals the paper's Baseline's on CIFAR-10-P, as the Digits-C fit (``noisymix_app.analogue.fit_c``)
does for the corruptions' drops.

What keeps it honest, as for Digits-C:

* the Baseline models are the main job's recipe on seeds it never evaluates (``FIT_SEEDS``, 100+;
  the same models as the Digits-C fit's, reused from ``DIR/models`` when present);
* the sequences are drawn with another seed than the set's (``DRAW_SEED``) and from the digits' fit
  split (``fit_c.FIT_SPLIT``: held-out digits no evaluated set is made from, the Digits-C fit's too), so
  even the deterministic sequences (rotate, tilt, ...) are not the set's;
* a bisection on ``log2 k`` in ``[-SPAN, SPAN]`` from ``k = 1`` (the published sequence), assuming
  the flip probability grows with ``k``; the strength kept is the evaluated one nearest the target
  (``choose``), so it follows from the recorded trace alone.

It writes ``DIR/digits_p_matched.json``; ``--freeze`` also writes it to
``fullscale/corruptions/digits_p_matched.json``, the file the suite reads
(``fullscale.corruptions.matched_p``).  ``--set key=value`` over ``FitPOptions``.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from fullscale.corruptions.matched_p import check_matched_p
from fullscale.corruptions.perturbations import perturbation_sequence
from fullscale.corruptions.writer import chunk_generator
from fullscale.data import load_dataset
from fullscale.evaluation.inference import cpu_inference_model, logits_of
from fullscale.metrics import flip_probability, is_noise_sequence
from fullscale.run_model import load_run_model
from fullscale.vocabulary import P_COLUMNS
from noisymix_app.analogue.fit_c import FIT_SEEDS, FIT_SPLIT, _train, bisect_strength, choose, fit_names, fit_seeds
from noisymix_app.reproduce.plans import PLANS
from noisymix_figures.paper import baseline_flips
from noisymix_infra.progress import progress

__all__ = ["DRAW_SEED", "FitPOptions", "fit_p", "within_tolerance"]

DRAW_SEED = 1
SPAN = 5.0  # log2 k in [-5, 5]: k from 1/32 to 32 (white noise needs about 15x the published sd)
CHUNK = 50  # sequences drawn per generator, as the set's writer chunks them


@dataclasses.dataclass(frozen=True)
class FitPOptions:
    """The -P fit's knobs (``--set``); the defaults made the committed fit."""

    seeds: str = ",".join(map(str, FIT_SEEDS))
    draw_seed: int = DRAW_SEED
    steps: int = 6  # bisection steps after k = 1: a final bracket of 2 SPAN / 2^steps (0.16) in log2 k
    perturbations: str = ",".join(P_COLUMNS)
    epochs: int = 0  # 0: the laptop plan's
    # the first N digits of the fit split (0: all 150): 150 x 30 frame pairs x 3 models resolve the
    # smallest target (0.4 %) to about 54 flips
    images: int = 0

    def seed_list(self) -> tuple[int, ...]:
        return fit_seeds(self.seeds)

    def names(self) -> tuple[str, ...]:
        return fit_names(self.perturbations, P_COLUMNS, "perturbations", "the ten")

    def __post_init__(self) -> None:
        if not 0 <= self.steps <= 20 or self.epochs < 0 or self.images < 0:
            raise ValueError(f"need steps in 0..20, epochs >= 0 and images >= 0, got steps={self.steps}, "
                             f"epochs={self.epochs}, images={self.images}")
        self.seed_list()
        self.names()


def within_tolerance(ours: float, paper: float) -> bool:
    """Issue 51's rule for a fitted flip probability: within 40 % of the paper's or 0.5 points of it."""
    return abs(ours - paper) <= max(0.4 * paper, 0.5)


def _predictions(model: torch.nn.Module, sequences: torch.Tensor) -> np.ndarray:
    n, f = sequences.shape[:2]
    # batch 64, the traced model's own: 20 % more images/s than 992 on one busy core
    return logits_of(model, sequences.reshape(n * f, *sequences.shape[2:]), torch.device("cpu"),
                     batch=64).argmax(1).view(n, f).numpy()


def fit_p(options: FitPOptions, out: Path, command: str) -> dict:
    """Train (or reuse) the fit's Baseline models, then bisect each perturbation's strength on the digits'
    fit split; the fit's record (``digits_p_matched.json``'s content), each entry naming what made it
    (``command`` and ``made``, as Digits-C's: ``fit_c.freeze``).  ``command``: the command line as typed."""
    from noisymix_app.analogue.fit_c import MADE, _model_record, _provenance

    started = time.time()
    images = load_dataset("digits", FIT_SPLIT).images  # held-out digits no evaluated set is made from
    if options.images:
        images = images[:options.images]
    models, made = [], []
    for seed in progress(options.seed_list(), desc="fit -P: Baseline models", unit="model"):
        run_dir = _train(seed, out, options.epochs)
        model, _ = load_run_model(run_dir)
        models.append(cpu_inference_model(model, images[:64]))
        made.append(_model_record(seed, run_dir, out))

    def flip(name: str, strength: float) -> float:
        per_model = np.zeros(len(models))
        for index, start in enumerate(range(0, len(images), CHUNK)):
            g = chunk_generator(options.draw_seed, name, 0, index, "cpu")
            sequences = perturbation_sequence(images[start:start + CHUNK], name, generator=g, strength=strength)
            per_model += [flip_probability(_predictions(m, sequences), noise=is_noise_sequence(name))
                          * len(sequences) for m in models]
        return float(100.0 * np.mean(per_model) / len(images))

    wanted = baseline_flips()
    record: dict[str, dict] = {}
    for name in progress(options.names(), desc="fit -P: strengths", unit="perturbation"):
        target = wanted[name]
        trace = bisect_strength(lambda k, name=name: flip(name, k), target, options.steps, SPAN)
        strength, measured = choose(trace, target)
        record[name] = {"target": target, "strength": strength, "flip": measured,
                        "residual": round(measured - target, 4), "within_tolerance": within_tolerance(measured, target),
                        "trace": [list(p) for p in trace]}
    laptop = PLANS["laptop"]
    own = {"command": command, "options": dataclasses.asdict(options),
           "recipe": {"plan": "laptop", "epochs": options.epochs or laptop.epochs,
                      "train_overrides": list(laptop.train_overrides)},
           "images": {"split": FIT_SPLIT, "count": len(images)}, "clean_accuracy": None, "models": made,
           "provenance": _provenance()}
    for entry in record.values():  # a partial freeze keeps each entry's own (issue 60)
        entry["command"] = command
        entry["made"] = {k: own.get(k) for k in MADE}
    return {
        "what": "strengths of the difficulty-matched Digits-P (noisymix_app.analogue.fit_p): each perturbation of "
                "tab:results_cifar_p at the strength whose Baseline flip probability (%, mean over the fit's "
                "models) is nearest the paper's Baseline's on CIFAR-10-P",
        **own,
        "paper": {"table": "tab:results_cifar_p", "baseline_flip": wanted},
        "strengths": {name: entry["strength"] for name, entry in record.items()},
        "fit": record,
        "seconds": round(time.time() - started, 1),
    }


def merge_p(result: dict, frozen: dict | None) -> dict:
    """The suite's record after this fit: Digits-C's freeze (``fit_c.freeze``: each entry keeps what made
    it, the top level only what all share) over the ten perturbations; checked (``check_matched_p``)."""
    from noisymix_app.analogue.fit_c import freeze

    return check_matched_p(freeze(result, frozen, P_COLUMNS, "perturbations"), "the -P fit to freeze")
