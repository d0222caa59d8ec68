"""``check_plan(plan, data_root)``: the whole of a ``noisymix reproduce`` plan checked before its
first step, each bad field one line naming it.

Issue 48: a field given with ``reproduce --set`` (``methods=bogus``, ``corruptions=bogus``,
``eval_suites=bogus``, ``dataset=cifar10`` without a data root, ``toy_seeds=-1``,
``theory_points=0``, ``perturbed_limit=-5``, ``train_overrides=nope=1``) was checked only when the
step that reads it ran, 6-14 s in, after the folder was claimed and the earlier steps had run.
Here each field is checked against what its step checks it with: the method registry, the
corruption and perturbation tables of ``noisymix corrupt``, the suite registry, the data sets
(and which need a data root), the numbers' ranges of ``verify``, ``toy`` and ``corrupt``, and the
training overrides by resolving every run's training config (model, width, epochs, seed: the
trainer's own checks).  What the plan dataclass checks itself (seeds, workers, members) is
``ReproducePlan.__post_init__``'s.

Issue 54 (root cause 5): four more fields got past this check and failed after verify, toy and
corrupt had run: ``train_overrides=runtime.cuda_graph=true`` on a CPU (the trainer's
``check_cuda_graph`` on the device the runs will use, now run here), ``corruption_params=digits-matched``
with another data set (``noisymix corrupt``'s own rule, ``check_matched``), a method named twice ("zip()
argument 2 is shorter than argument 1"; every list field is now refused with a repeat), and a suite
of another data set than the plan's (the evaluator's rule: a ``<dataset>-c`` suite scores models of
that data set only).
"""

from __future__ import annotations

from noisymix_app.reproduce.plans import ReproducePlan

__all__ = ["check_device", "check_plan"]

#: ``noisymix verify --points``: the convergence fit needs three points (``theory.calculus``)
_MIN_THEORY_POINTS = 3


def check_plan(plan: ReproducePlan, data_root: str | None = None) -> None:
    """Refuse (one ``ValueError`` line naming the field) a plan one of whose steps would refuse it."""
    from fullscale.cli_corrupt import check_matched
    from fullscale.corruptions.writer import check_names
    from fullscale.data.registry import BUILT_IN, DATASETS
    from fullscale.evaluation.suites import SUITES
    from fullscale.models.registry import list_models
    from fullscale.training.methods import METHODS

    if plan.needs_data_root and data_root is None:  # the words reproduce() has always used
        raise ValueError(f"this plan ({plan.description}) needs --data-root with the {plan.dataset} data")

    for field in ("methods", "perturbed_methods", "eval_suites", "corruptions", "perturbations", "train_overrides"):
        values = getattr(plan, field) or ()
        repeated = next((v for i, v in enumerate(values) if v in values[:i]), None)
        if repeated is not None:  # issue 54: methods=baseline,baseline failed in zip() after three steps
            raise ValueError(f"plan field {field} names {repeated!r} twice: name each once")
    for field, methods in (("methods", plan.methods), ("perturbed_methods", plan.perturbed_methods)):
        unknown = [m for m in methods if m not in METHODS]
        if unknown:
            raise ValueError(f"plan field {field}: unknown method {unknown[0]!r}; known: {', '.join(METHODS)}")
    if plan.model not in list_models():
        raise ValueError(f"plan field model: unknown model {plan.model!r}; known: {', '.join(list_models())}")
    if plan.dataset not in DATASETS:
        raise ValueError(f"plan field dataset: unknown data set {plan.dataset!r}; known: {', '.join(DATASETS)}")
    if plan.dataset not in BUILT_IN and data_root is None:
        raise ValueError(f"plan field dataset={plan.dataset} needs --data-root DIR with its data (nothing is "
                         f"downloaded); built in: {', '.join(sorted(BUILT_IN))}")
    for field, suites in (("eval_suites", plan.eval_suites), ("corrupted_suite", (plan.corrupted_suite,)),
                          ("perturbed_suite", (plan.perturbed_suite,) if plan.perturbed_suite else ())):
        bad = [s for s in suites if s not in SUITES]
        if bad:
            raise ValueError(f"plan field {field}: unknown suite {bad[0]!r}; known: {', '.join(SUITES)}")
    from fullscale.evaluation.evaluate_run import _suite_dataset  # the evaluator's rule: a -C/-P suite's data set

    for field, suites in (("eval_suites", plan.eval_suites), ("corrupted_suite", (plan.corrupted_suite,)),
                          ("perturbed_suite", (plan.perturbed_suite,) if plan.perturbed_suite else ())):
        other = next((s for s in suites if _suite_dataset(s) not in (None, plan.dataset)), None)
        if other is not None:  # issue 54: evaluated only after training, then refused
            raise ValueError(f"plan field {field}: suite {other!r} is for models of {_suite_dataset(other)}, the plan "
                             f"trains on {plan.dataset}: use {plan.dataset}-{other[-1]}")
    for field, params, kind in (("corruption_params", plan.corruption_params, "c"),
                                ("perturbation_params", plan.perturbation_params, "p")):
        try:  # noisymix corrupt's own rule for the difficulty-matched sets (issue 54)
            check_matched(params, plan.dataset, kind, 0)
        except ValueError as error:
            raise ValueError(f"plan field {field}={params} with dataset={plan.dataset}: {error}") from None
    for field, kind, names in (("corruptions", "c", plan.corruptions), ("perturbations", "p", plan.perturbations)):
        if names is None:
            continue
        if not names:
            raise ValueError(f"plan field {field} is empty: name at least one, or leave the plan's default")
        try:
            check_names(kind, list(names))
        except ValueError as error:
            raise ValueError(f"plan field {field}: {error}") from None
    for field, value, least in (("theory_points", plan.theory_points, _MIN_THEORY_POINTS),
                                ("toy_seeds", plan.toy_seeds, 1), ("toy_epochs", plan.toy_epochs, 1),
                                ("perturbed_limit", plan.perturbed_limit, 0)):
        if value < least:
            raise ValueError(f"plan field {field} must be >= {least}"
                             + (" (0: every test image)" if field == "perturbed_limit" else "") + f", got {value}")
    _check_training(plan, data_root)
    _check_matched_sets(plan)


def _check_matched_sets(plan: ReproducePlan) -> None:
    """Each difficulty-matched set the plan makes, of any kind (``fullscale.corruptions.matched_sets``): its
    package file checked whole, and every name the plan asks of it fitted (issue 60: a broken
    ``digits_p_matched.json``, or ``perturbations=speckle_noise``, was refused after verify, toy and
    corrupt had run; issue 54 had checked the -C file only)."""
    from fullscale.corruptions.matched_sets import matched_set
    from noisymix_app.reproduce.steps import _plan_sets

    for made in _plan_sets(plan):
        kind = matched_set(made.kind, made.params)
        if kind is None:
            continue
        try:
            kind.fit()  # the package file, checked whole: its error names it
        except ValueError as error:
            raise ValueError(f"plan field {made.params_field}={made.params}: {error}") from None
        try:
            kind.check_names(made.names)
        except ValueError as error:
            raise ValueError(f"plan field {made.field}: {error}") from None


def _check_training(plan: ReproducePlan, data_root: str | None) -> None:
    """Every run's training config resolved as the sweep resolves it (``RunSpec.config``): an
    unknown or malformed ``train_overrides`` key, a model or seed the trainer refuses; and the
    device checks of its start (``check_device``)."""
    from noisymix_app.sweep.plan import plan_from_reproduce

    runs = plan_from_reproduce(plan, "corrupted", data_root=data_root, perturbed="perturbed")
    for spec in runs.runs:
        try:
            check_device(spec.config())
        except (ValueError, TypeError, KeyError) as error:
            text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ValueError(f"plan: the trainer refuses run {spec.name} (train_overrides "
                             f"{' '.join(plan.train_overrides) or 'none'}): {text}") from None


def check_device(cfg, *, world: int = 1) -> None:
    """What the trainer checks of a resolved config when it starts, before any step: the device is
    usable here and ``runtime.cuda_graph=true`` can run on it (``check_cuda_graph`` with the device
    ``auto`` resolves to and ``world`` processes; stacked members are captured as one, issue 53, so their
    count decides nothing).  Issue 54: ``cuda_graph=true`` on a CPU was refused by every run, after
    verify, toy and corrupt (and by every run of a sweep)."""
    from fullscale.training.graphed import check_cuda_graph
    from fullscale.training.methods import get_method
    from fullscale.training.process import resolve_device

    check_cuda_graph(cfg, get_method(cfg.method), resolve_device(cfg), world)
