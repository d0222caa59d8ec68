"""Which waiting run a free worker takes next (``Schedule``): the plan's order, or the longest first.

With W workers and runs of unequal length, the job ends when the last run ends; a long run taken
last leaves W - 1 cores idle while it finishes (the *tail*).  Taking the longest runs first (the
longest-processing-time rule of list scheduling, within 4/3 of the best makespan) leaves the short
runs for the end, where they fill the cores as they free up.  ``longest`` is the default, chosen from
the measured comparison (``noisymix bench schedule -- --plan laptop --seeds 2 --repeats 2``, 2-core AMD
EPYC, benchmarks/results/schedule.json and RESULTS.md): 157-160 s a sweep against 180 s in the plan's
order, 5 idle core-seconds at the tail against 46, the lower bound 154 s; ``plan`` keeps the plan's order
(for a sweep: seed after seed, methods interleaved).

A run's length is *estimated*: the seconds measured for runs of the same kind (the same preset,
overrides, evaluations and devices; the seed aside), from this invocation's finished runs and the
folder's earlier records (``sweep/state/<run>.json``: ``seconds`` of a finished run); a kind with no
measurement yet takes its training's view-images (``noisymix_app.sweep.estimates.estimate_hours``:
a three-view AugMix/NoisyMix run counts three times a Baseline run) scaled by what the measured
kinds took per estimated second.  The estimate orders runs; it decides nothing a run computes.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from noisymix_app.sweep.plan import RunSpec

__all__ = ["ORDERS", "Schedule", "kind_of"]

#: the orders a launcher may take runs in; the first is the default
ORDERS = ("longest", "plan")


def kind_of(spec: RunSpec) -> tuple:
    """What makes two runs equally long: everything but the seed (and the name, which holds it)."""
    return (spec.preset, spec.overrides, spec.evals, spec.gpus, spec.data_root)


def _prior_seconds(spec: RunSpec) -> float:
    """The training's estimated seconds on one device (view-images x epochs over a throughput): a
    relative cost, right in its ratios between methods; 1.0 where the config cannot be resolved."""
    try:
        from noisymix_app.sweep.estimates import estimate_hours

        return max(estimate_hours(spec) * 3600, 1e-6)
    except (ValueError, KeyError, TypeError, ImportError):
        return 1.0


class Schedule:
    """The order in which waiting runs are taken.  ``pick(waiting)`` returns the run to start next;
    ``ended(spec, seconds)`` records a run's measured seconds (they refine the estimates of its kind).

    ``specs``: every run of the plan (the finished ones too: with ``out``, the sweep's folder, their
    records seed the estimates)."""

    def __init__(self, specs: list[RunSpec], order: str = "longest", out: Path | None = None):
        if order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
        self.order = order
        self._index = {spec.name: i for i, spec in enumerate(specs)}
        self._prior: dict[tuple, float] = {}
        self._measured: dict[tuple, list[float]] = {}
        if order == "longest":
            for spec in specs:
                self._prior.setdefault(kind_of(spec), _prior_seconds(spec))
            if out is not None:
                self._read_records(out, specs)

    def _read_records(self, out: Path, specs: list[RunSpec]) -> None:
        """The seconds of the finished runs among ``specs`` in ``out`` (an earlier invocation's runs:
        the state file of a run that finished holds its ``seconds``)."""
        from noisymix_app.sweep.state import read_state

        for spec in specs:
            record = read_state(out, spec.name)
            seconds = record.get("seconds")
            if record.get("state") == "done" and isinstance(seconds, (int, float)) and seconds > 0:
                self._measured.setdefault(kind_of(spec), []).append(float(seconds))

    def estimate(self, spec: RunSpec) -> float:
        """The run's estimated seconds: its kind's median measured seconds, else its prior scaled by
        the median measured/prior ratio of the measured kinds (1 where none is measured yet)."""
        kind = kind_of(spec)
        if kind in self._measured:
            return statistics.median(self._measured[kind])
        prior = self._prior.get(kind)
        if prior is None:
            prior = self._prior[kind] = _prior_seconds(spec)
        ratios = [statistics.median(v) / self._prior[k] for k, v in self._measured.items() if k in self._prior]
        return prior * (statistics.median(ratios) if ratios else 1.0)

    def pick(self, waiting: list[RunSpec]) -> RunSpec:
        """The run to start next of ``waiting`` (not empty): the first in the plan's order, or the one
        of the longest estimate (ties: the plan's order)."""
        if self.order == "plan":
            return waiting[0]
        return min(waiting, key=lambda s: (-self.estimate(s), self._index.get(s.name, len(self._index))))

    def ended(self, spec: RunSpec, seconds: float) -> None:
        """``spec`` finished in ``seconds`` (measured by the launcher: start-up aside, training and
        evaluation): its kind's estimate follows what was measured."""
        if self.order == "longest" and seconds > 0:
            self._measured.setdefault(kind_of(spec), []).append(float(seconds))
