"""A paper table as a list of runs: (preset, seed, overrides, evaluation suites) per run.

The plan is data-driven: the table's rows come from ``fullscale.vocabulary`` (``METHOD_ROWS``,
``ABLATION_ROWS``), the training configurations from ``fullscale.training.presets`` (a row whose preset
does not exist yet is skipped with a note, not guessed), and the run's config is resolved the
way ``noisymix train`` resolves it (``fullscale.training.presets.resolve_config``).

Runs are identified by what they compute: two rows whose resolved configs are equal but for the
preset's name (tab:ablation's Baseline, Manifold Mixup, NFM, AugMix and NoisyMix rows are
tab:results_cifar100's WRN runs on CIFAR-100) are ONE run, trained once, in one directory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TABLES", "EvalSpec", "Plan", "RunSpec", "TableSpec", "build_plan", "config_identity",
           "plan_from_reproduce"]


@dataclass(frozen=True)
class EvalSpec:
    """One ``fullscale.evaluation.evaluate`` call after training: the suite and its data."""

    suite: str
    data_root: str | None = None  # None: the run's own data (clean, calibration, fgsm)
    partial: bool = False  # a -C set with a chosen subset of the 15 corruptions


@dataclass(frozen=True)
class RunSpec:
    """One training run of the sweep and its evaluations; ``name`` is its folder under ``runs/``."""

    name: str
    preset: str
    seed: int
    overrides: tuple[str, ...] = ()  # ``key=value`` applied after the preset (the ``--set`` dialect)
    evals: tuple[EvalSpec, ...] = ()
    gpus: int = 1  # > 1: one distributed run (one process per GPU)
    rows: tuple[str, ...] = ()  # the table rows this run fills ("tab:ablation AFNJ", ...)
    data_root: str | None = None  # the training data (not part of what the run computes)

    def config(self) -> Any:
        """The resolved ``TrainConfig`` (method defaults, then the preset, then the overrides)."""
        from fullscale.training.presets import resolve_config

        return resolve_config(self.preset, [*self.overrides, f"seed={self.seed}"], self.data_root)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(data: dict) -> RunSpec:
        evals = tuple(EvalSpec(**e) for e in data.get("evals", ()))
        return RunSpec(**{**data, "overrides": tuple(data.get("overrides", ())), "evals": evals,
                          "rows": tuple(data.get("rows", ()))})


@dataclass(frozen=True)
class Plan:
    """The runs of a table, the notes on rows left out, and the paper tables to compare with
    (``noisymix_figures.tables.COMPARISONS`` labels; the first is the table itself, then its -C/-P detail
    tables filled by the same runs)."""

    table: str
    runs: tuple[RunSpec, ...]
    notes: tuple[str, ...] = ()
    comparisons: tuple[str, ...] = ()
    analogue: bool = False


def config_identity(config: dict) -> dict:
    """The part of a config (as in ``config.json``, grouped or the flat layout of older runs) that
    decides what a run computes, in the flat layout (``fullscale.run_record.flat_config``): the
    trainer's own rule for a resume (keys added since a run was made take the values that run
    computed with; ``RESUMABLE_CHANGES`` such as the device or the loader's workers do not count),
    and the preset name does not count either (table rows share equal runs)."""
    from fullscale.run_record import RESUMABLE_CHANGES, flat_config, later_keys

    flat = {**later_keys(), **flat_config(config)}
    return {k: v for k, v in flat.items() if k not in RESUMABLE_CHANGES and k != "preset"}


def _digest(config: dict) -> str:
    return hashlib.sha256(json.dumps(config_identity(config), sort_keys=True).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class TableSpec:
    """How a paper table expands: rows (label -> method), and per method the presets to train.

    ``presets`` is a format string over ``dataset`` and ``method`` (``"{dataset}-wrn28_4-{method}"``)
    or, for tab:ablation, over ``row`` (the row's switch string).  ``suites`` are per dataset,
    ``{dataset}`` is filled in; a suite needing a data folder that ``--suite-root`` does not
    give is left out with a note."""

    label: str
    rows: dict[str, str | None]
    datasets: tuple[str, ...]
    preset: str
    suites: tuple[str, ...]
    comparisons: tuple[str, ...]
    gpus: int = 1
    description: str = ""
    extra_suites: dict[str, tuple[str, ...]] = field(default_factory=dict)  # per dataset, extra suites


def _tables() -> dict[str, TableSpec]:
    from fullscale.vocabulary import ABLATION_ROWS, METHOD_ROWS, TRANSFER_ROWS

    cifar_suites = ("clean", "calibration", "{dataset}-c")
    return {
        "results_cifar10": TableSpec(
            "tab:results_cifar10", METHOD_ROWS, ("cifar10", "cifar100"), "{dataset}-preactresnet18-{method}",
            cifar_suites, ("tab:results_cifar10", "tab:results_cifar10_c", "tab:results_cifar100_c",
                           "tab:results_cifar_p"), description="PreActResNet-18 on CIFAR-10 and CIFAR-100",
            extra_suites={"cifar10": ("cifar10-p",)}),
        "results_cifar100": TableSpec(
            "tab:results_cifar100", METHOD_ROWS, ("cifar10", "cifar100"), "{dataset}-wrn28_4-{method}",
            cifar_suites, ("tab:results_cifar100", "tab:results_wrs_cifar10_c", "tab:results_wrs_cifar100_c",
                           "tab:results_cifar_p_wrs"),
            description="Wide-ResNet-28 (the public code's WRN-28-4) on CIFAR-10 and CIFAR-100",
            extra_suites={"cifar10": ("cifar10-p",)}),
        "ablation": TableSpec(
            "tab:ablation", ABLATION_ROWS, ("cifar100",), "ablation-{row}", cifar_suites, ("tab:ablation",),
            description="the ten switch combinations, WRN-28-4 on CIFAR-100"),
        # the ImageNet runs fill the summary table and its three appendix tables; the calibration
        # table reads the imagenet-r suite (ImageNet-R), the calibration suite the clean validation set
        "results_imagenet": TableSpec(
            "tab:results_imagenet", METHOD_ROWS, ("imagenet",), "imagenet-resnet50-{method}",
            ("clean", "calibration", "imagenet-c", "imagenet-r", "imagenet-p"),
            ("tab:results_imagenet", "tab:results_imagenet_c", "tab:results_imagenet_p",
             "tab:results_imagenet_r_calibration"), gpus=8,
            description="ResNet-50 on ImageNet (one run on 8 GPUs)"),
        "results_transfer": TableSpec(
            "tab:results_transfer", TRANSFER_ROWS, ("cifar10", "cifar100"), "transfer-{dataset}-{method}",
            cifar_suites, (), description="ImageNet ResNet-50s fine-tuned on CIFAR-10/100"),
    }


TABLES: dict[str, TableSpec] = _tables()
#: the small-scale analogue of ``noisymix reproduce`` (its laptop plan) as a sweep table
ANALOGUE = "digits_analogue"


def _resolve_suites(suites: Iterable[str], dataset: str, suite_roots: dict[str, str],
                    notes: list[str]) -> tuple[EvalSpec, ...]:
    out = []
    for template in suites:
        suite = template.format(dataset=dataset)
        needs_root = suite.endswith(("-c", "-p", "-r"))
        if needs_root and suite not in suite_roots:
            note = f"suite {suite} left out: no --suite-root {suite}=DIR given"
            if note not in notes:
                notes.append(note)
            continue
        out.append(EvalSpec(suite, suite_roots.get(suite)))
    return tuple(out)


def _check_names(table: str, suite_roots: dict[str, str], sources: dict[str, str]) -> None:
    """Refuse a ``--suite-root`` of a suite the table does not evaluate and a ``--source`` of a row
    it does not have: silently ignored, they made a sweep report "0/0 runs done" (issue 23)."""
    if table == ANALOGUE:
        from noisymix_app.reproduce.plans import PLANS

        laptop = PLANS["laptop"]
        suites, rows = {laptop.corrupted_suite, *([laptop.perturbed_suite] if laptop.perturbed_suite else [])}, set()
    elif table in TABLES:
        spec = TABLES[table]
        suites = {t.format(dataset=d) for d in spec.datasets
                  for t in (*spec.suites, *spec.extra_suites.get(d, ()))}
        rows = {m for m in spec.rows.values() if m} if table == "results_transfer" else set()
    else:
        return  # the unknown table is refused by the caller, with the list of known ones
    needs_root = sorted(s for s in suites if s.endswith(("-c", "-p", "-r")))
    unknown = sorted(set(suite_roots) - set(needs_root))
    if unknown:
        raise ValueError(f"--suite-root {unknown[0]}=...: table {table} evaluates no suite {unknown[0]!r} "
                         f"from a folder; its suites with data folders: {', '.join(needs_root) or 'none'}")
    unknown = sorted(set(sources) - rows)
    if unknown:
        raise ValueError(f"--source {unknown[0]}=...: table {table} has no source row {unknown[0]!r}; "
                         + (f"its rows: {', '.join(sorted(rows))}" if rows else "only results_transfer takes --source"))


def build_plan(table: str, seeds: Iterable[int], *, overrides: Iterable[str] = (),
               suite_roots: dict[str, str] | None = None, data_root: str | None = None,
               sources: dict[str, str] | None = None) -> Plan:
    """Expand ``table`` into runs, one per (row, dataset, seed); rows equal in config are shared.

    ``sources`` (results_transfer): the ImageNet ResNet-50 state dict of each row's source model,
    by its method name (``baseline``, ``noisymix``, ...); a row without one is left out, with a note."""
    from fullscale.training.presets import PRESETS
    from noisymix_infra.config import config_to_dict

    seeds, overrides, suite_roots = tuple(seeds), tuple(overrides), dict(suite_roots or {})
    _check_names(table, suite_roots, dict(sources or {}))
    if table == ANALOGUE:
        from noisymix_app.reproduce.plans import PLANS

        laptop = PLANS["laptop"]
        return plan_from_reproduce(laptop, suite_roots.get(laptop.corrupted_suite), seeds=seeds,
                                   extra_overrides=overrides, data_root=data_root,
                                   perturbed=suite_roots.get(laptop.perturbed_suite or ""))
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; known: {', '.join([*TABLES, ANALOGUE])}")
    spec = TABLES[table]
    notes: list[str] = []
    by_identity: dict[str, RunSpec] = {}
    for dataset in spec.datasets:
        evals = _resolve_suites((*spec.suites, *spec.extra_suites.get(dataset, ())), dataset, suite_roots, notes)
        for row, method in spec.rows.items():
            if method is None:
                note = f"{spec.label} row {row!r}: not implemented (no method)"
                if note not in notes:  # once, not once per data set
                    notes.append(note)
                continue
            preset = spec.preset.format(dataset=dataset, method=method, row=row)
            if preset not in PRESETS:
                notes.append(f"{spec.label} row {row!r} on {dataset}: preset {preset!r} does not exist yet; skipped")
                continue
            row_overrides = overrides
            if table == "results_transfer":
                if method not in (sources or {}):
                    notes.append(f"{spec.label} row {row!r} on {dataset}: no --source {method}=PATH given; skipped")
                    continue
                row_overrides = (f"source_weights={sources[method]}", *overrides)
            for seed in seeds:
                run = RunSpec("", preset, seed, row_overrides, evals, spec.gpus, (f"{spec.label} {row} {dataset}",),
                              data_root)
                cfg = run.config()
                key = _digest(config_to_dict(cfg))
                if key in by_identity:  # the same computation under another row's preset: share it
                    kept = by_identity[key]
                    by_identity[key] = dataclasses.replace(kept, rows=(*kept.rows, *run.rows))
                    continue
                # a transfer run is named by its source row (every row fine-tunes with method=baseline)
                what = cfg.transfer.source_row or cfg.method
                name = f"{cfg.data.dataset}-{cfg.model.name}-{what}-seed{seed}"
                by_identity[key] = dataclasses.replace(run, name=name)
    runs = tuple(by_identity.values())
    names = [r.name for r in runs]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ValueError(f"table {table}: runs {clash[:3]} would share a folder with different configs")
    return Plan(table, runs, tuple(notes), spec.comparisons)


def plan_from_reproduce(plan: Any, corrupted: str | Path | None, *, seeds: Iterable[int] | None = None,
                        extra_overrides: Iterable[str] = (), data_root: str | None = None,
                        perturbed: str | Path | None = None) -> Plan:
    """The training runs of a ``noisymix_app.reproduce.plans.ReproducePlan``: method x seed, named
    ``<method>-seed<N>`` as ``noisymix reproduce`` always named them; its corrupted suite reads
    ``corrupted`` (None: that suite is left out, with a note), its perturbed suite ``perturbed``
    for the plan's ``perturbed_methods`` only."""
    notes: list[str] = []
    perturbed_evals: tuple[EvalSpec, ...] = ()
    if plan.perturbed_suite:
        if perturbed is None:
            notes.append(f"suite {plan.perturbed_suite} left out: no --suite-root {plan.perturbed_suite}=DIR given "
                         f"(make one with `noisymix corrupt --dataset {plan.dataset} --kind p --out DIR`)")
        else:
            perturbed_evals = (EvalSpec(plan.perturbed_suite, str(perturbed), plan.perturbations is not None),)
    evals = []
    for suite in plan.eval_suites:
        if suite != plan.corrupted_suite:
            evals.append(EvalSpec(suite, data_root))
        elif corrupted is None:
            notes.append(f"suite {suite} left out: no --suite-root {suite}=DIR given "
                         f"(make one with `noisymix corrupt --dataset {plan.dataset} --kind c --out DIR`)")
        else:  # a plan's chosen subset of the 15 corruptions is evaluated as a partial set
            evals.append(EvalSpec(suite, str(corrupted), plan.corruptions is not None))
    overrides = (f"dataset={plan.dataset}", f"model={plan.model}", f"width={plan.width}", f"epochs={plan.epochs}",
                 *plan.train_overrides, *extra_overrides)
    runs = []
    for seed in (plan.seeds if seeds is None else tuple(seeds)):
        for method in plan.methods:
            wanted = perturbed_evals if method in plan.perturbed_methods else ()
            runs.append(RunSpec(f"{method}-seed{seed}", method, seed, overrides, (*evals, *wanted), 1,
                                (f"tab:results_cifar10 (small-scale analogue) {method}",), data_root))
    return Plan(ANALOGUE, tuple(runs), tuple(notes), ("tab:results_cifar10",), analogue=True)
