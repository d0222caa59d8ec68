"""``noisymix fit-analogue --out DIR [--freeze]``: fit the difficulty-matched Digits-C (issue 46).

The digits' Baseline at the published CIFAR rows loses 2.5 points or less on 10 of the 15
corruptions and 20-61 on four, the reverse of CIFAR-10-C.  This fit finds, per corruption, the
strength ``k`` (``fullscale.corruptions.registry.strengthened``) at which the Baseline's drop from
clean accuracy, averaged over the five severities, equals the paper's Baseline drop on CIFAR-10-C
(``tab:results_cifar10_c`` against ``tab:results_cifar10``'s clean 95.3), floored at
``MIN_DROP`` points (brightness costs the paper's Baseline 1.5 points: too little to measure at 450
test images, and the analogue asks every corruption to cost at least 3).

What keeps it honest:

* the Baseline models are trained with the main job's recipe (``--plan laptop``: the same
  overrides) on seeds the main job never evaluates (``FIT_SEEDS``, 100+; the main job's are 0-8);
* the images are the digits' **fit** split (``fullscale.data.digits``: 150 held-out digits that no
  evaluated set is made from; issue 57, goal 4: the fit had bisected on the very test digits the
  evaluated set was made from), the corrupted ones drawn with another seed than the set's
  (``DRAW_SEED``; the set uses 0);
* the search is a bisection on ``log2 k`` in ``[-SPAN, SPAN]`` starting at ``k = 1`` (the published
  rows), assuming the drop grows with ``k``; the strength kept is the evaluated one whose drop is
  nearest the target (``choose``), so the chosen value follows from the recorded trace alone;
* no severity may land at chance or at a clip of its strength rule unless the published rows do the
  same there (``refusal``; issue 57, goal 4: one strength matched the mean drop with impulse noise's
  severity 5 at chance and pixelate's at its clip): a strength that does so counts as too strong in the
  bisection and is never chosen, and each entry records the five severities' accuracies at the chosen
  strength and at the published rows (``severities``) with their flags
  (``noisymix_app.analogue.severities``).

It writes ``DIR/digits_matched.json`` (and keeps the trained models under ``DIR/models``: a rerun
reuses them only when they were trained with the same options, ``check_models``); ``--freeze`` also
writes it to ``fullscale/corruptions/digits_matched.json``, the file the suite reads
(``fullscale.corruptions.matched``).  ``--set key=value`` over ``FitOptions``.

Issue 54: the record says what made it - the command as typed (``typed_command``), the options, the
recipe, each model's training config and weights by sha256, ``provenance`` - per entry too (``made``),
so a freeze of some corruptions merged into the frozen record keeps each entry's own; ``--freeze`` is
guarded (``noisymix_app.analogue.freeze``): the package folder is checked writable and a partial fit's
frozen record readable before the fit runs, a fit whose residuals miss their tolerance
(``residual_tolerance``: the report's 40 % or 5 points) is refused unless ``--force-freeze``, and the
read-merge-write holds a lock on the package file.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Collection
from pathlib import Path

import numpy as np
import torch

from fullscale.corruptions.registry import CORRUPTIONS, corrupt
from fullscale.corruptions.writer import chunk_generator
from fullscale.data import load_dataset
from fullscale.evaluation.inference import cpu_inference_model, logits_of
from fullscale.run_model import load_run_model
from noisymix_app.reproduce.plans import PLANS
from noisymix_figures.paper import baseline_drops
from noisymix_infra.io import read_json
from noisymix_infra.progress import progress
from noisymix_infra.validate import check_seed

__all__ = ["DRAW_SEED", "FIT_SEEDS", "FIT_SPLIT", "MADE", "MIN_DROP", "PROFILE_AIMS", "FitOptions", "bisect_strength",
           "check_models", "choose", "fit_names", "fit_seeds", "fit_summary", "freeze", "missed", "residual_tolerance",
           "targets", "typed_command"]


# five models: with three, the -P fit's white-noise flips were 45.5 in sample and 59.4 on the main job's
# Baseline seeds (issue 57)
FIT_SEEDS = (100, 101, 102, 103, 104)
DRAW_SEED = 1
FIT_SPLIT = "fit"  # the digits' held-out images that only the fits read (fullscale.data.digits)
MIN_DROP = 4.5  # points: the least target (>= 3 with a margin for the seeds' spread)
SPAN = 4.0  # log2 k in [-4, 4]: k from 1/16 to 16


def fit_seeds(text: str) -> tuple[int, ...]:
    """A fit's ``seeds`` option: comma-separated seeds the main job does not evaluate, each one torch takes
    (issue 54: a 20-digit seed failed in training, after the folder was claimed).  Both fits' rule."""
    try:
        seeds = tuple(int(s) for s in text.split(","))
    except ValueError:
        raise ValueError(f"seeds must be comma-separated numbers, got {text!r}") from None
    if not seeds or min(seeds) < 0 or set(seeds) & set(PLANS["laptop"].seeds):
        raise ValueError(f"seeds must be numbers >= 0 that the main job does not evaluate "
                         f"(not {', '.join(map(str, PLANS['laptop'].seeds))}), got {text!r}")
    for seed in seeds:
        check_seed(seed, "seeds")
    return seeds


def fit_names(text: str, every: tuple[str, ...], field: str, units: str) -> tuple[str, ...]:
    """A fit's list of what to fit (``corruptions``, ``perturbations``): comma-separated, some of ``every``."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in every]
    if unknown or not names:
        raise ValueError(f"{field} must name some of {units} ({', '.join(every)}), got {unknown or '[]'}")
    return names


@dataclasses.dataclass(frozen=True)
class FitOptions:
    """The fit's knobs (``--set``); the defaults made the committed fit."""

    seeds: str = ",".join(map(str, FIT_SEEDS))
    draw_seed: int = DRAW_SEED
    steps: int = 8  # bisection steps after k = 1: a final bracket of 2 SPAN / 2^steps in log2 k
    corruptions: str = ",".join(CORRUPTIONS)
    epochs: int = 0  # 0: the laptop plan's

    def seed_list(self) -> tuple[int, ...]:
        return fit_seeds(self.seeds)

    def names(self) -> tuple[str, ...]:
        return fit_names(self.corruptions, CORRUPTIONS, "corruptions", "the 15")

    def __post_init__(self) -> None:
        if not 0 <= self.steps <= 20 or self.epochs < 0:
            raise ValueError(f"need steps in 0..20 and epochs >= 0, got steps={self.steps}, epochs={self.epochs}")
        self.seed_list()
        self.names()


def targets() -> dict[str, float]:
    """The drop each corruption is fitted to: the paper's, at least ``MIN_DROP``."""
    _, drops = baseline_drops()
    return {name: max(drop, MIN_DROP) for name, drop in drops.items()}


def bisect_strength(measure: Callable[[float], float], target: float, steps: int, span: float,
                    refuse: Callable[[float], str | None] | None = None) -> list[tuple[float, float]]:
    """The fits' search (Digits-C's drops, Digits-P's flip rates): a bisection on ``log2 k`` in
    ``[-span, span]`` from ``k = 1`` (the published rows), assuming ``measure`` grows with ``k``;
    ``steps + 1`` evaluations, returned as the trace of (strength, measured) that ``choose`` picks from.
    ``refuse(strength)``, asked after ``measure``: a reason the strength may not be chosen (a severity at
    chance or at a clip, issue 57), and the search then treats it as too strong."""
    low, high, log_k = -span, span, 0.0
    trace = []
    for _ in range(steps + 1):
        strength = round(2.0 ** log_k, 6)
        measured = measure(strength)
        trace.append((strength, round(measured, 4)))
        if measured < target and (refuse is None or refuse(strength) is None):
            low = log_k
        else:
            high = log_k
        log_k = (low + high) / 2
    return trace


def choose(trace: list[tuple[float, float]], target: float, refused: Collection[float] = ()) -> tuple[float, float]:
    """(strength, drop) of the evaluated point whose drop is nearest ``target`` (ties: the earlier), of the
    points whose strength is not ``refused``."""
    allowed = [point for point in trace if point[0] not in set(refused)]
    if not allowed:
        raise ValueError("a trace with no allowed strength has nothing to choose")
    return min(allowed, key=lambda point: abs(point[1] - target))


def _model_spec(seed: int, epochs: int):
    """The ``RunSpec`` of the fit's Baseline model of ``seed``: the laptop plan's recipe at ``epochs``."""
    from noisymix_app.sweep.plan import RunSpec

    laptop = PLANS["laptop"]
    overrides = (f"dataset={laptop.dataset}", f"model={laptop.model}", f"width={laptop.width}",
                 f"epochs={epochs or laptop.epochs}", *laptop.train_overrides)
    return RunSpec(f"baseline-seed{seed}", "baseline", seed, overrides)


def check_models(options: FitOptions, out: Path) -> None:
    """One-line ``ValueError`` when a model the fit would reuse under ``out/models`` was trained with other
    options than these (issue 54: ``--set epochs=3`` into a folder first fitted with ``epochs=1`` reused the
    1-epoch models while recording epochs 3).  Every seed is checked before any is trained."""
    from noisymix_app.sweep.state import check_config

    for seed in options.seed_list():
        run_dir = out / "models" / f"baseline-seed{seed}"
        try:
            check_config(_model_spec(seed, options.epochs), run_dir)
        except ValueError as error:
            text = str(error).split("; give another --out")[0]
            raise ValueError(f"{text}: this fit would reuse it; give another --out, or the options it was "
                             "fitted with") from None


def _train(seed: int, out: Path, epochs: int) -> Path:
    from fullscale.training.loop import train
    from noisymix_app.sweep.state import check_config

    spec = _model_spec(seed, epochs)
    run_dir = out / "models" / spec.name
    config = check_config(spec, run_dir)  # a model of other options is never reused (issue 54)
    if not (run_dir / "final.pt").is_file():
        train(config, run_dir, resume=(run_dir / "checkpoint.pt").is_file())
    return run_dir


def _model_record(seed: int, run_dir: Path, out: Path) -> dict:
    """What made one of the fit's models, by content: its training config's sha256 and its epochs, and its
    weights' sha256 (``fullscale.run_record.config_sha256``, as evaluations bind their runs)."""
    from fullscale.run_record import config_sha256
    from fullscale.runs import split_run_record
    from noisymix_infra.io import sha256_file

    config = split_run_record(read_json(run_dir / "config.json"))[0]
    return {"seed": seed, "run": run_dir.relative_to(out).as_posix(), "epochs": config.get("epochs"),
            "config_sha256": config_sha256(config), "final_sha256": sha256_file(run_dir / "final.pt")}


def typed_command(args: argparse.Namespace) -> str:
    """The command line as typed (``--out`` as given, the flags, each ``--set`` in its order), quoted for a
    shell: what the record names as the command that made it (issue 54: every record said ``--out fit
    --freeze`` whatever was typed)."""
    import shlex

    kind = getattr(args, "kind", "c")
    argv = ["noisymix", "fit-analogue", *(("--kind", kind) if kind != "c" else ()), "--out", str(args.out)]
    argv += ["--freeze"] * bool(args.freeze) + ["--force-freeze"] * bool(getattr(args, "force_freeze", False))
    for item in args.overrides:
        argv += ["--set", item]
    return shlex.join(argv)


def _provenance() -> dict:
    """The fit's provenance: git commit, package versions (torch's among them), host, CPU model, date
    (``noisymix_infra.provenance``, as every results file of the project carries)."""
    from noisymix_infra.provenance import machine, provenance

    return {**provenance(), "cpu_model": machine()["cpu_model"]}


#: the analogue's aims for the Baseline's drops (issue 46): rank correlation with CIFAR-10-C's, each drop within
#: 40 % of the paper's or 5 points, each at least 3 points
PROFILE_AIMS = {"rank_correlation": 0.8, "relative": 0.4, "absolute": 5.0, "least_drop": 3.0}


def residual_tolerance(target: float) -> float:
    """How far a drop may miss its target (``PROFILE_AIMS``: within 40 % of it or 5 points): the fit's
    freeze guard and the report's out-of-sample profile alike."""
    return max(PROFILE_AIMS["relative"] * target, PROFILE_AIMS["absolute"])


def missed(record: dict) -> list[str]:
    """The fitted corruptions whose residual exceeds ``residual_tolerance``, as ``name residual (tolerance)``."""
    return [f"{name} {entry['residual']:+.1f} points (tolerance {residual_tolerance(entry['target']):.1f})"
            for name, entry in record["fit"].items() if abs(entry["residual"]) > residual_tolerance(entry["target"])]


def _accuracy(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    return 100.0 * float((logits_of(model, images, torch.device("cpu")).argmax(1) == labels).float().mean())


def fit(options: FitOptions, out: Path, command: str | None = None) -> dict:
    """Train (or reuse, when trained with the same options: ``check_models``) the fit's Baseline models, then
    bisect each corruption's strength on the digits' fit split; the fit's record (``digits_matched.json``'s
    content).  ``command``: the command line that asked for it (``typed_command``; default: the equivalent
    one into ``out``)."""
    from noisymix_app.analogue.severities import refusal, severity_flags

    started = time.time()
    check_models(options, out)
    held_out = load_dataset("digits", FIT_SPLIT)  # images no evaluated set is made from (issue 57)
    images, labels = held_out.images, held_out.labels
    models, made = [], []
    for seed in progress(options.seed_list(), desc="fit: Baseline models", unit="model"):
        run_dir = _train(seed, out, options.epochs)
        model, _ = load_run_model(run_dir)
        models.append(cpu_inference_model(model, images[:64]))
        made.append(_model_record(seed, run_dir, out))
    clean = [_accuracy(m, images, labels) for m in models]
    seen: dict[tuple[str, float], list[float]] = {}  # (corruption, strength) -> accuracy per severity

    def severities(name: str, strength: float) -> list[float]:
        """The five severities' accuracies at ``strength``, mean over the fit's models (measured once)."""
        if (name, strength) not in seen:
            per = []
            for severity in range(1, 6):
                g = chunk_generator(options.draw_seed, name, severity, 0, "cpu")
                corrupted = corrupt(images, name, severity, generator=g, params="cifar", strength=strength)
                per.append(float(np.mean([_accuracy(m, corrupted, labels) for m in models])))
            seen[name, strength] = per
        return seen[name, strength]

    def drop(name: str, strength: float) -> float:
        return float(np.mean(clean) - np.mean(severities(name, strength)))

    wanted = targets()
    record: dict[str, dict] = {}
    for name in progress(options.names(), desc="fit: strengths", unit="corruption"):
        target = wanted[name]

        def refuse(k: float, name: str = name) -> str | None:
            return refusal(name, k, severities(name, k), severities(name, 1.0))

        trace = bisect_strength(lambda k, name=name: drop(name, k), target, options.steps, SPAN, refuse)
        refused = {k: why for k, _ in trace if (why := refuse(k)) is not None}
        strength, measured = choose(trace, target, refused)
        matched, published = severities(name, strength), severities(name, 1.0)
        record[name] = {"target": target, "strength": strength, "drop": measured,
                        "residual": round(measured - target, 4), "trace": [list(p) for p in trace],
                        "refused": {f"{k:g}": why for k, why in refused.items()},
                        "severities": {"matched": [round(a, 2) for a in matched],
                                       "published": [round(a, 2) for a in published]},
                        "flags": {"matched": severity_flags(name, matched, strength),
                                  "published": severity_flags(name, published, 1.0)}}
    paper_clean, drops = baseline_drops()
    if command is None:
        import shlex

        command = shlex.join(["noisymix", "fit-analogue", "--out", str(out), *(
            x for f in dataclasses.fields(options) if getattr(options, f.name) != getattr(FitOptions(), f.name)
            for x in ("--set", f"{f.name}={getattr(options, f.name)}"))])
    own = {"command": command, "options": dataclasses.asdict(options),
           "recipe": {"plan": "laptop", "epochs": options.epochs or PLANS["laptop"].epochs,
                      "train_overrides": list(PLANS["laptop"].train_overrides)},
           "images": {"split": FIT_SPLIT, "count": len(labels)},
           "clean_accuracy": clean, "models": made, "provenance": _provenance()}
    for entry in record.values():  # each entry says what made it: a merged freeze keeps them apart (issue 54)
        entry["command"] = command
        entry["made"] = own
    return {
        "what": "strengths of the difficulty-matched Digits-C (noisymix_app.analogue.fit_c): each corruption's "
                "CIFAR rows at the strength whose Baseline drop (clean minus the mean over 5 severities, points, "
                "mean over the fit's models) is nearest the target",
        **own,
        "paper": {"baseline_clean": paper_clean, "baseline_drop": drops, "min_drop": MIN_DROP},
        "strengths": {name: entry["strength"] for name, entry in record.items()},
        "fit": record,
        "seconds": round(time.time() - started, 1),
    }


#: the top-level fields that say what made a record: each entry's ``made`` holds its own (issue 54)
MADE = ("command", "options", "recipe", "images", "clean_accuracy", "models", "provenance")


def freeze(result: dict, frozen: dict | None, every: tuple[str, ...] = CORRUPTIONS, units: str = "corruptions"
           ) -> dict:
    """The suite's record after this fit, for every kind of fitted set (Digits-C's 15 corruptions,
    Digits-P's ten perturbations: ``every``): the fit itself when it covers them all, else the frozen
    record with those fitted now replaced.  Each entry keeps what made it (``command`` and ``made``:
    options, recipe, images, clean accuracy, models, provenance; an entry of a record older than ``made``
    gets the old record's top-level fields); each top-level field of ``MADE`` is the one value all entries
    share, or None where fits of other options made them (issue 54: a merged freeze kept the old top-level
    options, recipe and clean accuracy; issue 60: Digits-P's merge did the same, with no per-entry record)."""
    for entry in result["fit"].values():
        entry.setdefault("command", result["command"])
        entry.setdefault("made", {k: result.get(k) for k in MADE})
    if set(result["fit"]) == set(every):
        return result
    if frozen is None or set(frozen.get("fit", {})) | set(result["fit"]) != set(every):
        raise ValueError(f"--freeze of some {units} needs a frozen fit of the others to keep")
    fit = {**frozen["fit"], **result["fit"]}
    for _name, entry in fit.items():
        entry.setdefault("command", frozen.get("command"))
        entry.setdefault("made", {k: frozen.get(k) for k in MADE if k in frozen})
    names = [n for n in every if n in fit]  # the benchmark's order
    top = {}
    for key in MADE:
        values = [fit[n]["made"].get(key) for n in names]
        top[key] = values[0] if all(v == values[0] for v in values) else None
    return {**frozen, **top, "fit": {n: fit[n] for n in names}, "strengths": {n: fit[n]["strength"] for n in names},
            "seconds": round(frozen.get("seconds", 0) + result["seconds"], 1)}


def _merged(result: dict, package_file: Path) -> dict:
    """``freeze``'s record for ``package_file``, read under the freeze's lock (a hand-edited bad one is one
    line), and checked whole before it is written (``check_fit_record``)."""
    from fullscale.corruptions.matched import check_fit_record, read_fit_file

    frozen = None
    if set(result["fit"]) != set(CORRUPTIONS) and package_file.is_file():
        frozen = read_fit_file(package_file)
    return check_fit_record(freeze(result, frozen), f"the record for {package_file}")


def _seed_words(seeds: list[int]) -> str:
    """``100–102`` for consecutive seeds, else ``100, 105``."""
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def fit_summary(record: dict, set_folder: str | Path | None = None, names: tuple[str, ...] = CORRUPTIONS) -> dict:
    """What the report says of the frozen fit ``record``, from the record itself (issue 54: the report's
    paragraph was fixed text, "seeds 100–102, the main job's recipe", whatever was run).

    Returns ``{"fits": [...], "matches_set": bool | None, "residuals": {...}}``: one item per distinct
    command that made entries (its corruptions, seeds, epochs, whether its recipe is the main job's, the
    command); ``matches_set``: whether ``set_folder``'s ``manifest.json`` (the set the runs evaluated)
    holds the record's strengths (None: no set named, or it does not say); ``residuals``: per entry, only
    where the set is the fit's (a refit's residuals are never shown beside values measured on an older set).
    ``names``: the record's entries in their order (Digits-P's ten perturbations for its record)."""
    laptop = PLANS["laptop"]
    groups: dict[str, dict] = {}
    for name in (n for n in names if n in record.get("fit", {})):
        made = record["fit"][name].get("made")
        made = made if isinstance(made, dict) else {k: record.get(k) for k in MADE}  # a record older than `made`
        command = str(record["fit"][name].get("command") or made.get("command") or "?")
        options, recipe = made.get("options"), made.get("recipe")
        options, recipe = (options if isinstance(options, dict) else {}), (recipe if isinstance(recipe, dict) else {})
        try:
            seeds = sorted(int(s) for s in str(options.get("seeds", "")).split(","))
        except ValueError:
            seeds = []
        group = groups.setdefault(command, {
            "command": command, "corruptions": [], "seeds": seeds, "epochs": recipe.get("epochs"),
            "main_recipe": (recipe.get("epochs") == laptop.epochs
                            and list(recipe.get("train_overrides") or []) == list(laptop.train_overrides)),
            "seed_words": _seed_words(seeds) if seeds else "?"})
        group["corruptions"].append(name)
    matches = None
    if set_folder is not None:
        try:
            manifest = read_json(Path(set_folder) / "manifest.json")
        except (OSError, ValueError):
            manifest = None
        if isinstance(manifest, dict) and isinstance(manifest.get("strengths"), dict):
            matches = manifest["strengths"] == record.get("strengths")
    residuals = {} if matches is False else {n: e.get("residual") for n, e in record.get("fit", {}).items()}
    return {"fits": list(groups.values()), "matches_set": matches, "residuals": residuals}
