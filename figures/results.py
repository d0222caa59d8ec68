"""Reading a results folder: run directories, theory.json, toy.json — never crashing on bad files."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fullscale.run_record import flat_config

__all__ = ["Results", "Run", "collect", "stale_evaluation"]


@dataclass
class Run:
    path: Path
    config: dict
    evals: dict[str, dict]
    metrics: list[dict]
    computed: dict = field(default_factory=dict)  # the config part alone (what the run computes)
    weights_sha256: str | None = None  # of final.pt: seeds are counted by their weights (issue 41)

    @property
    def key(self) -> tuple[str, str, str]:
        """(dataset, model, method); for a transfer run (``source_row`` set) (dataset, model, source
        row), the model suffixed ``-freeze<k>`` when layers were frozen: its table row is its source."""
        if self.config.get("source_row"):
            level = self.config.get("freeze_level", -1)
            model = self.config.get("model", "?") + (f"-freeze{level}" if level not in (-1, None) else "")
            return (self.config.get("dataset", "?"), model, str(self.config["source_row"]))
        return (self.config.get("dataset", "?"), self.config.get("model", "?"), self.config.get("method", "?"))


@dataclass
class Results:
    root: Path
    runs: list[Run] = field(default_factory=list)
    theory: tuple[Path, Any] | None = None
    toy: tuple[Path, Any] | None = None
    problems: list[str] = field(default_factory=list)

    def groups(self) -> dict[tuple[str, str, str], list[Run]]:
        """The runs of each table cell, pooled as its seeds; refused in one line when runs of one
        cell differ in more than the seed (other epochs, widths, ...) or repeat a seed: they are not
        seeds of one experiment (issue 23: a 1-epoch test run was pooled with 12-epoch ones)."""
        out: dict[tuple[str, str, str], list[Run]] = defaultdict(list)
        for run in self.runs:
            out[run.key].append(run)
        for runs in out.values():
            _check_one_experiment(runs)
        return dict(sorted(out.items()))


#: config keys that do not change what a run computes, besides its seed (where and how it ran)
NOT_THE_EXPERIMENT = frozenset({"seed", "preset", "data_root", "device", "workers", "decoder", "checkpoint_every",
                                "compile", "runtime.cuda_graph", "source_weights", "started", "finished",
                                "provenance", "host"})


def _check_one_experiment(runs: list[Run]) -> None:
    first = runs[0]
    seeds: dict = {}
    weights: dict = {}
    for run in runs:
        if run.weights_sha256 is not None and run.weights_sha256 in weights:
            raise ValueError(f"{weights[run.weights_sha256].path} and {run.path} hold the same weights (final.pt "
                             f"sha256 {run.weights_sha256[:12]}): one run copied, not two seeds of "
                             f"{'/'.join(run.key)}; remove the copy")
        weights[run.weights_sha256] = run
        if run.config.get("seed") in seeds:
            raise ValueError(f"{seeds[run.config.get('seed')].path} and {run.path} are both seed "
                             f"{run.config.get('seed')} of {'/'.join(run.key)}: one experiment's runs differ in their "
                             "seed; point --results at the runs of one experiment")
        seeds[run.config.get("seed")] = run
        differ = sorted(k for k in set(first.computed) | set(run.computed)
                        if k not in NOT_THE_EXPERIMENT and first.computed.get(k) != run.computed.get(k))
        if differ:
            detail = ", ".join(f"{k} {first.computed.get(k)!r} vs {run.computed.get(k)!r}" for k in differ[:3])
            raise ValueError(f"{first.path} and {run.path} would be pooled as seeds of {'/'.join(run.key)} but "
                             f"differ in {detail}; point --results at the runs of one experiment")


def _read(path: Path, problems: list[str]) -> Any | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:  # ValueError: JSONDecodeError and UnicodeDecodeError (not UTF-8)
        problems.append(f"`{path}`: unreadable or malformed JSON ({type(error).__name__}: {str(error)[:80]})")
        return None


def _binding(config_path: Path, run_dir: Path, problems: list[str]) -> tuple[str | None, str] | None:
    """(the sha256 of the run's final.pt, ``None`` when it has none; the ``config_sha256`` of its
    config.json) or ``None`` with a problem noted: a config.json that is not a training config (a
    group given as a number, a value of the wrong type) is left out, not tabulated (issue 41)."""
    from fullscale.run_record import config_sha256
    from fullscale.runs import split_run_record
    from fullscale.training.config import check_run_config
    from noisymix_infra.io import read_json, sha256_file

    try:
        config, _ = split_run_record(read_json(config_path), config_path)
        check_run_config(config, config_path)
    except (OSError, ValueError) as error:
        problems.append(f"`{config_path}`: left out: {str(error).splitlines()[0][:200]}")
        return None
    final = run_dir / "final.pt"
    return (sha256_file(final) if final.is_file() else None), config_sha256(config)


def _non_finite(value: Any, where: str = "") -> str | None:
    """The key of the first NaN or infinity in ``value`` (JSON read back), or ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "value"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        found = _non_finite(inner, f"{where}.{key}" if where else str(key))
        if found:
            return found
    return None


def _stale(record: dict, weights_sha256: str | None, config_digest: str | None) -> str | None:
    """Why an evaluation cannot be reported for its run today, or ``None``: a NaN or infinite metric;
    weights other than the run's final.pt (``checkpoint.sha256``); a config.json edited since
    (``config_sha256``: another method or seed would relabel it).  Records made before a field
    existed are not checked on it."""
    bad = _non_finite(record.get("summary")) or _non_finite(record.get("results"))
    if bad:
        return f"a non-finite metric ({bad} is NaN or infinite)"
    recorded = (record.get("checkpoint") or {}).get("sha256") if isinstance(record.get("checkpoint"), dict) else None
    if weights_sha256 is not None and isinstance(recorded, str) and recorded != weights_sha256:
        return (f"computed with other weights than the run's final.pt of today (sha256 {recorded[:12]} vs "
                f"{weights_sha256[:12]})")
    recorded = record.get("config_sha256")
    if config_digest is not None and isinstance(recorded, str) and recorded != config_digest:
        return (f"its run's config.json changed since it was computed (config_sha256 {recorded[:12]} vs "
                f"{config_digest[:12]})")
    return None


def stale_evaluation(run_dir: str | Path, record: dict) -> str | None:
    """Why the evaluation ``record`` of the run ``run_dir`` cannot be reported today (a NaN metric,
    other weights, an edited or unreadable config.json), or ``None``: ``collect``'s check, for
    readers of single records (the reproduce summary)."""
    from noisymix_infra.io import sha256_file

    run_dir = Path(run_dir)
    if not (run_dir / "config.json").exists():  # the weights and metrics alone are checked
        final = run_dir / "final.pt"
        return _stale(record, sha256_file(final) if final.is_file() else None, None)
    problems: list[str] = []
    bound = _binding(run_dir / "config.json", run_dir, problems)
    if bound is None:
        return problems[0] if problems else "no readable config.json"
    return _stale(record, *bound)


def collect(root: str | Path) -> Results:
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"results folder {root} does not exist")
    results = Results(root)
    for config_path in sorted(root.rglob("config.json")):
        config = _read(config_path, results.problems)
        computed = config
        if isinstance(config, dict) and isinstance(config.get("config"), dict) and isinstance(config.get("run"), dict):
            # {config, run}: the config grouped (flat before issue 33), read in the flat layout
            computed = flat_config(config["config"])
            config = {**computed, **config["run"]}  # (runs older still wrote one flat object)
        if not isinstance(config, dict) or "method" not in config:
            if config is not None:
                results.problems.append(f"`{config_path}`: not a training run config (no 'method')")
            continue
        run_dir = config_path.parent
        bound = _binding(config_path, run_dir, results.problems)
        if bound is None:
            continue
        weights_sha256, config_digest = bound
        evals = {}
        for eval_path in sorted((run_dir / "eval").glob("*.json")):
            record = _read(eval_path, results.problems)
            if isinstance(record, dict) and record.get("complete", True) and "summary" in record:
                stale = _stale(record, weights_sha256, config_digest)
                if stale:
                    results.problems.append(f"`{eval_path}`: left out: {stale}; rerun `noisymix evaluate`")
                    continue
                evals[eval_path.stem] = record
            elif record is not None:
                results.problems.append(f"`{eval_path}`: incomplete evaluation (rerun `noisymix evaluate`)")
        metrics = []
        metrics_path = run_dir / "metrics.jsonl"
        if metrics_path.exists():
            try:
                text = metrics_path.read_text(encoding="utf-8")
            except (OSError, ValueError) as error:  # a file that is not UTF-8: named, not a bare codec error
                results.problems.append(f"`{metrics_path}`: unreadable ({type(error).__name__}: {str(error)[:80]})")
                text = ""
            for line in text.splitlines():
                try:
                    metrics.append(json.loads(line))
                except ValueError:
                    results.problems.append(f"`{metrics_path}`: a malformed line")
        if not (run_dir / "final.pt").exists():
            results.problems.append(f"`{run_dir}`: no final.pt (unfinished run; its evaluations are still used)")
        results.runs.append(Run(run_dir, config, evals, metrics, dict(computed), weights_sha256))
    for name, attr in (("theory.json", "theory"), ("toy.json", "toy")):
        for path in sorted(root.rglob(name)):
            data = _read(path, results.problems)
            if data is not None:
                setattr(results, attr, (path, data))
                break
    _one_set_per_suite(results)
    return results


def set_identity(record: dict) -> tuple[tuple[str, ...] | None, str | None]:
    """What an evaluation was computed on: the names of its sets (the corruptions of a -C/-P suite)
    and, where ``noisymix evaluate`` recorded it, the fingerprint of the data folder; ``None`` where
    the record does not say."""
    names = record.get("results")
    if not isinstance(names, dict) or not names:
        summary = record.get("summary")
        names = summary.get("per_corruption") if isinstance(summary, dict) else None
    fingerprint = record.get("data_fingerprint")
    return (tuple(sorted(names)) if isinstance(names, dict) and names else None,
            fingerprint if isinstance(fingerprint, str) else None)


def _one_set_per_suite(results: Results) -> None:
    """Seeds pool one suite's evaluations only when they were computed on the same set: the same
    corruption names and, where recorded, the same data fingerprint.  A -C mean over 13 corruptions
    averaged with one over 15, or two different Digits-C sets of one name, is no seed spread (issue
    32).  The runs of the set most seeds were evaluated on are kept (ties: the first by path); the
    others' evaluations of that suite are left out of the pooled cell, each named in the report."""
    cells: dict[tuple[str, str, str], list[Run]] = defaultdict(list)
    for run in results.runs:
        cells[run.key].append(run)
    for key, runs in sorted(cells.items()):
        for suite in sorted({s for r in runs for s in r.evals}):
            with_suite = [r for r in runs if suite in r.evals]
            idents = {r.path: set_identity(r.evals[suite]) for r in with_suite}
            by_names: dict[tuple[str, ...], list[Run]] = defaultdict(list)
            for r in with_suite:
                if idents[r.path][0] is not None:
                    by_names[idents[r.path][0]].append(r)
            # max keeps the first of a tie (path order); a record that does not name its sets is not told apart
            names = max(by_names, key=lambda n: len(by_names[n])) if by_names else None
            kept = [r for r in with_suite if idents[r.path][0] in (None, names)]
            by_print: dict[str, list[Run]] = defaultdict(list)
            for r in kept:
                if idents[r.path][1] is not None:
                    by_print[idents[r.path][1]].append(r)
            fingerprint = max(by_print, key=lambda f: len(by_print[f])) if by_print else None
            kept = [r for r in kept if idents[r.path][1] in (None, fingerprint)]
            kept_paths = {r.path for r in kept}
            for r in with_suite:
                if r.path in kept_paths:
                    continue
                theirs, ours = idents[r.path], (names, fingerprint)
                why = (f"{len(theirs[0] or ())} set(s) vs {len(ours[0] or ())}" + (
                    f" (not in the others: {', '.join(sorted(set(theirs[0] or ()) - set(ours[0] or ()))[:3]) or '-'};"
                    f" missing: {', '.join(sorted(set(ours[0] or ()) - set(theirs[0] or ()))[:3]) or '-'})")
                       if theirs[0] != ours[0] else "another data_fingerprint (the set's files differ)")
                results.problems.append(
                    f"`{r.path}`: its `{suite}` evaluation is left out of {'/'.join(key)}: it was computed on "
                    f"another set than the pooled seeds' ({', '.join(str(k.path) for k in kept[:3])}"
                    f"{' ...' if len(kept) > 3 else ''}): {why}; evaluate every seed on one set")
                del r.evals[suite]
