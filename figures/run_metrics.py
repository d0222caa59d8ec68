"""What a table's column reads of a run: a ``Metric`` is ``run -> percentage`` (None where the run
lacks it), each reading one evaluation suite's JSON (``runs/*/eval/<suite>.json``).  ImageNet-P flip
rates are normalised by AlexNet's flip probabilities (``noisymix_figures.alexnet``)."""

from __future__ import annotations

from collections.abc import Callable

from noisymix_figures.alexnet import flip_rates, mean_flip_rate
from noisymix_figures.results import Run

__all__ = ["Metric", "at", "category", "corruption", "fgsm", "flip", "flip_rate", "mfr", "summary",
           "transfer_metric", "with_paren"]

Metric = Callable[[Run], float | None]


def at(suite: str, *path: str) -> Metric:
    """The percentage at ``evals[suite][path...]`` of a run, or None where it is missing."""
    def metric(run: Run) -> float | None:
        value = run.evals.get(suite, {})
        for key in path:
            value = value.get(key, {}) if isinstance(value, dict) else {}
        return None if isinstance(value, dict) else 100 * float(value)
    return metric


def summary(suite: str, key: str) -> Metric:
    return at(suite, "summary", key)


def corruption(suite: str, name: str) -> Metric:
    return at(suite, "summary", "per_corruption", name)


def category(suite: str, name: str) -> Metric:
    return at(suite, "summary", "per_category", name)


def flip(suite: str, name: str) -> Metric:
    return at(suite, "results", name, "flip_probability")


def transfer_metric(suite: str, part: str) -> Metric:
    return at(suite, "summary", "transfer", part)


def with_paren(metric: Metric, paren: Metric) -> Metric:
    """``metric``, carrying ``paren``: the value the paper prints in parentheses beside it (the
    mean without the noise corruptions of tab:results_imagenet); ours is shown the same way."""
    metric.paren = paren  # type: ignore[attr-defined]
    return metric


def _imagenet_p_rates(run: Run) -> dict[str, float]:
    """The run's ImageNet-P flip rates per paper column, normalised by AlexNet's flip
    probabilities (``noisymix_figures.alexnet``), the weather column on the set it was evaluated on."""
    record = run.evals.get("imagenet-p", {})
    summary = record.get("summary", {}) if isinstance(record.get("summary"), dict) else {}
    results = record.get("results", {})
    return flip_rates(results if isinstance(results, dict) else {}, summary.get("weather_perturbation", "snow"))


def flip_rate(column: str) -> Metric:
    """100 FR of one column of tab:results_imagenet_p."""
    def metric(run: Run) -> float | None:
        rate = _imagenet_p_rates(run).get(column)
        return None if rate is None else 100 * rate
    return metric


def mfr(no_noise: bool = False) -> Metric:
    """100 mFR over the ten columns (``no_noise``: without the two noise columns); None unless all ten."""
    def metric(run: Run) -> float | None:
        value = mean_flip_rate(_imagenet_p_rates(run), no_noise=no_noise)
        return None if value is None else 100 * value
    return metric


def fgsm(eps: float) -> Metric:
    """100 x the FGSM accuracy at ``eps`` (the ``fgsm`` suite), None where it was not attacked at it."""
    def metric(run: Run) -> float | None:
        summary = run.evals.get("fgsm", {}).get("summary", {})
        for e, a in zip(summary.get("epsilons", []), summary.get("accuracy", []), strict=False):
            if abs(e - eps) < 1e-9:
                return 100 * a
        return None
    return metric
