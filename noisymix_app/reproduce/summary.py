"""The findings of a ``noisymix reproduce`` folder: ``SUMMARY.md``, ``summary.json`` and the README's block.

Every number the README shows for the small-scale run comes from here, never by hand:
``noisymix reproduce --out results --update-readme`` writes the summary (``SUMMARY.md``, and its short block
``README-BLOCK.md``), copies it to ``docs/reproduce-summary.md`` / ``.json`` and replaces the README between
the markers with the block (``noisymix_app.reproduce.readme``, which refuses anything but the main job's
finished, complete output).  ``python -m noisymix_app.reproduce.summary --rerender SUMMARY_JSON``
re-derives a kept summary from its per-seed values, each with the resolution its verdict used, by the
current report code (``rederive``) and writes the same files without rerunning anything; ``--margins``
measures the cross-machine margins from two summaries of the same plan, seeds and sets.

What the summary holds: per method and metric the mean over seeds with its 95 % t-interval, the per-seed
values and each metric's resolution (``table``); the plan's family of the paper's claims, decided
(``noisymix_app.reproduce.claims``); the descriptive rows; the analogue's out-of-sample fidelity
(``noisymix_app.analogue.fidelity``); calibration under shift; the identity of the sets (``sets``) the
margins are bound to; the commits the runs were made at (``made_at``); the job's wall time and the sum of
its steps, each named as what it is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from fullscale.evaluation.resolution import summary_step
from fullscale.vocabulary import CATEGORIES
from noisymix_app.reproduce.claims import (
    POOLED_FAMILIES,
    category_claims,
    decide,
    descriptive_of,
    family_of,
    shift_values,
)
from noisymix_app.reproduce.log import total_seconds
from noisymix_app.reproduce.margins import (
    cross_machine_margins,
    merge_margins,
    ran_on,
    read_margins,
    read_pairs,
)
from noisymix_app.reproduce.readme import BLOCK, publishable, replace_block, update_readme
from noisymix_app.reproduce.record import check_whole, run_hashes, values_digest, values_of
from noisymix_app.reproduce.render import render, render_readme
from noisymix_app.reproduce.report_ablation import read_ablation
from noisymix_app.reproduce.report_calibration import calibration_shift_summary
from noisymix_app.reproduce.report_published import read_published
from noisymix_figures.results import stale_evaluation
from noisymix_infra.io import read_json, read_json_object, write_files
from noisymix_infra.provenance import git_state, machine
from noisymix_infra.stats import Seeds, interval
from theory.results import checks_of, tally

__all__ = ["CODE_PATHS", "README_WORDS", "check_whole", "derive", "main", "rederive", "render", "render_readme",
           "run_hashes", "set_identity", "summarize", "values_digest", "values_of", "write_summary"]

ROOT = Path(__file__).resolve().parents[2]
# the code whose change makes a summary stale (methods, trainer, evaluation, metrics, augmentation,
# corruptions, models, the paper's claims and the reproduce job itself)
CODE_PATHS = ("noisymix", "noisymix_app/reproduce", "noisymix_app/analogue/fidelity.py", "noisymix_infra/stats.py",
              "noisymix_app/sweep", "fullscale/training", "fullscale/evaluation", "fullscale/metrics.py",
              "fullscale/vocabulary.py", "fullscale/augment", "fullscale/corruptions", "fullscale/models",
              "fullscale/data", "figures/paper_claims.json", "theory", "toy")
# (value, eval file (None: the corrupted suite's), key path in its summary): the calibration suite
# is the clean test images; calibration under corruption is the corrupted suite's (every corrupted
# set's measure, averaged: fullscale.evaluation), the question the paper asks of ImageNet-R
METRICS = (("clean", "clean", ("accuracy",)), ("corrupted", None, ("mean_accuracy",)),
           ("rms_calibration_error", "calibration", ("rms_calibration_error",)),
           ("rms_calibration_error_corrupted", None, ("calibration", "rms_calibration_error")),
           ("aurra_corrupted", None, ("calibration", "aurra")),
           # the stability claims' figure: mean flip probability over the plan's -P sequences
           # (the CIFAR-10-P tables' unnormalised "mFR"); PERTURBED: the plan's perturbed suite
           ("flip_probability", "PERTURBED", ("mean_flip_probability",)),
           # the signed gaps (mean confidence minus accuracy, > 0: over-confident) and temperature scaling
           # fitted on held-out clean test images (fullscale.metrics.temperature_scaled; issue 40)
           ("confidence_gap", "calibration", ("confidence_gap",)),
           ("confidence_gap_corrupted", None, ("calibration", "confidence_gap")),
           ("rms_calibration_error_scaled", "calibration", ("temperature_scaled", "rms_calibration_error")),
           ("temperature", "calibration", ("temperature_scaled", "temperature")),
           # the corrupted set's mean accuracy per corruption group: which groups carry a gain (issue 46)
           *((f"corrupted_{category}", None, ("per_category", category)) for category in CATEGORIES))
NOT_PERCENT = frozenset({"temperature"})  # a ratio, not a fraction: kept as it is
#: the README's "What it found" at most this many words from its heading to the next (issue 57, goal 7); the
#: block this module writes is the larger part of it
README_WORDS = 800


def _lookup(summary: dict, path: tuple[str, ...]) -> float | None:
    value: object = summary
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return float(value)  # type: ignore[arg-type]


def set_identity(folder: Path) -> str | None:
    """A -C/-P set's identity: the sha256 of what its ``manifest.json`` says made it (source images' content,
    count, kind, table, strengths, names, seed, frost photographs); None without a readable manifest."""
    try:
        manifest = read_json(folder / "manifest.json")
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict):
        return None
    keys = ("dataset", "kind", "params", "source_sha256", "count", "seed", "names", "severities", "strengths",
            "frost_sha256", "size", "pixel_scale")
    text = json.dumps({k: manifest.get(k) for k in keys}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _sets(out: Path, plan: dict) -> dict | None:
    from noisymix_app.reproduce.plans import ReproducePlan
    from noisymix_app.reproduce.steps import _corrupted, _perturbed

    try:
        known = ReproducePlan(**{k: tuple(v) if isinstance(v, list) else v for k, v in plan.items()
                                 if k in ReproducePlan.__dataclass_fields__})
    except (TypeError, ValueError):
        return None
    found = {"c": set_identity(_corrupted(known, out))}
    perturbed = _perturbed(known, out)
    if perturbed is not None:
        found["p"] = set_identity(perturbed)
    return found if all(found.values()) else None


def _made_at(out: Path, plan: dict) -> dict:
    """The commits the runs were trained and evaluated at (each run's own record; issue 57, goal 7: the
    block named only the commit that rendered it)."""
    from fullscale.runs import split_run_record

    trained, evaluated = set(), set()
    for method in plan["methods"]:
        for seed in plan["seeds"]:
            run = out / "runs" / f"{method}-seed{seed}"
            try:
                trained.add(split_run_record(read_json(run / "config.json"))[1]["provenance"]["commit"])
            except (OSError, ValueError, KeyError, TypeError):
                pass
            for path in (run / "eval").glob("*.json"):
                try:
                    evaluated.add(read_json(path)["provenance"]["commit"])
                except (OSError, ValueError, KeyError, TypeError):
                    pass
    return {"training": sorted(c for c in trained if c), "evaluation": sorted(c for c in evaluated if c)}


def summarize(out: str | Path, plan_name: str | None = None) -> dict:
    """The findings of the reproduce folder ``out`` as a JSON-ready dict (see the module doc); ``plan_name``: how
    the plan is named (default: as ``reproduce.json`` records it), which decides its family of claims."""
    from noisymix_app.analogue.fidelity import profiles

    out = Path(out)
    log = read_json(out / "reproduce.json")
    plan = log["plan"]
    suite = plan["corrupted_suite"]
    files = {None: suite, "PERTURBED": plan.get("perturbed_suite")}
    values: dict[str, dict[str, dict[int, float]]] = {}
    n_corruptions, runs_found = set(), 0
    for method in plan["methods"]:
        # each metric's per-seed values with the step of its grid (one test image; issue 54)
        values[method] = {name: Seeds() for name, *_ in METRICS}
        for seed in plan["seeds"]:
            run = out / "runs" / f"{method}-seed{seed}" / "eval"
            runs_found += (run / "clean.json").is_file()
            for name, file, key in METRICS:
                stem = files.get(file, file)
                path = run / f"{stem}.json"
                if stem and path.exists():
                    record = read_json(path)
                    value = _lookup(record.get("summary", {}), key) if isinstance(record, dict) else None
                    if value is None or stale_evaluation(run.parent, record):  # NaN, other weights (issue 41)
                        continue
                    values[method][name][seed] = value if name in NOT_PERCENT else 100 * value
                    step = summary_step(record, key)
                    if step is not None and name not in NOT_PERCENT:  # the coarsest of the seeds' grids
                        values[method][name].step = max(values[method][name].step or 0.0, 100 * step)
                    if file is None and name == "corrupted":
                        n_corruptions.add(len(record["summary"].get("per_corruption", {})))
    shift = calibration_shift_summary(out)
    for method, per in shift_values(shift).items():  # calibration under shift, severities 1-5 (issue 52)
        values.setdefault(method, {}).update(per)
    name = plan_name or log.get("plan_name", "custom")
    sets = _sets(out, plan)
    summary = {"plan": plan, "plan_name": name, "corrupted_suite": suite, "corruptions": sorted(n_corruptions),
               "git": git_state(CODE_PATHS), "made_at": _made_at(out, plan),
               # what each figure is (issue 57): the sum of the steps' recorded seconds, which overlap when runs
               # go side by side, and the job's wall time, its invocations' own seconds added up
               "seconds": total_seconds(log), "wall_seconds": log.get("wall_seconds"),
               "complete": runs_found == len(plan["methods"]) * len(plan["seeds"]) and all(
                   len(v) == len(plan["seeds"]) for per in values.values() for k, v in per.items()
                   if k in ("clean", "corrupted")),
               "table": _table(values), "sets": sets, "ran_on": ran_on(log),
               "machine": {**machine(), "workers": log.get("workers", plan.get("workers", 0))},
               "calibration_under_shift": shift, "fidelity": profiles(out, plan),
               "theory": _theory(out / "theory" / "theory.json"), "toy": _toy(out / "toy" / "toy.json")}
    summary.update(derive(values, summary, read_margins(sets)))
    summary.update(_kept(name))
    # what ties the numbers to their source (issue 64, goal 1): each run's weights and evaluation files, hashed,
    # and the per-seed values' digest; the README's writers check both before writing
    summary["runs"] = run_hashes(out, plan)
    summary["digest"] = values_digest(summary)
    return summary


def _kept(plan_name: str) -> dict:
    """The kept summaries the main job's report shows beside its own (the ablation's calibration rows, the
    published rows' verdicts re-derived by today's claims code); none for another plan."""
    if family_of(plan_name) != "main":
        return {"ablation": None, "published_rows": None}
    published = read_published()
    return {"ablation": read_ablation(),
            "published_rows": None if published is None else {**rederive(published, margins={}),
                                                              "source": published["source"]}}


def _table(values: dict[str, dict[str, dict[int, float]]]) -> dict:
    """Per method and metric, the interval over seeds with the seeds its values belong to and the resolution
    the verdicts divide by (issue 60: a summary read back without it re-rendered "cannot be judged" as holds)."""
    return {m: {name: {**interval(list(v.values())), "seeds": list(v), "step": getattr(v, "step", None)}
                for name, v in per.items() if v} for m, per in values.items()}


def derive(values: dict[str, dict[str, dict[int, float]]], record: dict, margins: dict[str, float],
           pooled: bool = True) -> dict:
    """Everything a summary derives from the per-seed values: the paper's claims (decided, marked against
    ``margins``), the descriptive rows and the per-group breakdown.  ``record``: the summary's plan, plan name
    and sets.  The main job decides the main and the eight-method families on every committed run of its
    recipe and sets (``noisymix_app.reproduce.pool``; ``pooled=False``: its own runs alone, as the margins
    compare them); a plan whose runs are pooled into it (``claims.POOLED_FAMILIES``) decides nothing itself, so each
    claim has one verdict (issue 63, goal 1); the ablation plan decides its own family."""
    from noisymix_app.reproduce.pool import pool

    family = family_of(record.get("plan_name", "custom"))
    joined, pooling, fresh = pool(values, record) if pooled and family == "main" else (values, None, None)
    # the Baseline's profile on a pooled plan's seeds, trained after the fits were frozen (goal 6)
    fidelity = record.get("fidelity")
    if fidelity:
        fidelity = {k: v for k, v in fidelity.items() if k != "fresh"} | ({"fresh": fresh} if fresh else {})
    methods = list(dict.fromkeys([*record["plan"]["methods"], *joined]))
    families = () if family in POOLED_FAMILIES else ("main", "eight-method") if family == "main" else (family,)
    return {"family": family, "claims": [c for f in families for c in decide(joined, methods, f, margins)],
            "descriptive": descriptive_of(values, record["plan"]["methods"]), "categories": category_claims(values),
            "margins": margins, "margin_pairs": read_pairs(record.get("sets")) if margins else [],
            "pooled": pooling, "fidelity": fidelity}


def rederive(record: dict, *, margins: dict[str, float] | None = None, pooled: bool = True) -> dict:
    """A summary read back, re-derived by the current code from its per-seed values and their resolutions:
    the same runs, today's statistics.  ``margins``: the margins to mark against (default: those measured on
    the summary's sets)."""
    values = values_of(record)
    margins = read_margins(record.get("sets")) if margins is None else margins
    return {**record, "table": _table(values),
            **derive(values, record, margins, pooled)}


def _theory(path: Path) -> dict | None:
    if not path.exists():
        return None
    return tally(checks_of(read_json(path), str(path)))


def _toy(path: Path) -> dict | None:
    if not path.exists():
        return None
    toy = read_json(path)
    schemes = toy.get("schemes") or {}
    # our mean test accuracy per scheme (%) beside the paper's single run, in the paper's order
    accuracy = [{"scheme": name, "label": entry.get("label", name), "ours": 100 * entry["accuracy"]["mean"],
                 "paper": None if entry.get("paper_accuracy") is None else round(100 * entry["paper_accuracy"], 1)}
                for name, entry in sorted(schemes.items(), key=lambda kv: _paper_order(kv[0]))
                if isinstance(entry.get("accuracy"), dict)]
    return {"seeds": toy["experiment"]["seeds"], "accuracy": accuracy,
            "claims": [{"id": c["id"], "statement": c["statement"], "verdict": c["verdict"]}
                       for c in toy.get("claims", [])]}


def _paper_order(scheme: str) -> int:
    from toy.schemes import PAPER_SCHEMES

    return PAPER_SCHEMES.index(scheme) if scheme in PAPER_SCHEMES else len(PAPER_SCHEMES)


def write_summary(out: str | Path, plan_name: str | None = None) -> dict:
    """Write ``out/summary.json``, ``out/SUMMARY.md`` and ``out/README-BLOCK.md``, all or none (issue 60:
    a report's files are rendered before any is written); return the summary."""
    out = Path(out)
    summary = summarize(out, plan_name)
    write_files({out / "summary.json": summary, out / "SUMMARY.md": render(summary),
                 out / BLOCK: render_readme(summary)})
    return summary


def rerender(path: str, root: Path = ROOT, kept: str = "reproduce") -> dict:
    """Re-derive a kept summary (``rederive``) and write it back as docs/KEPT-summary.* and, for the main job's,
    the README's block: only a whole summary (``check_whole``: its numbers as written, issue 64) of the kept plan
    (the main job's finished, complete output, ``readme.publishable``; the ablation plan's for ``ablation``),
    whose figures are those docs/ holds, that decides every claim it decided before.  No run is redone; the record
    names the commit that re-derived it (``git``: "rendered at"), its runs' own commits stay in ``made_at``."""
    from noisymix_app.reproduce.plans import protocol_differences

    original = _summary_at(path)
    check_whole(original, path)
    record = {**rederive(original), "git": git_state(CODE_PATHS), "digest": values_digest(original)}
    before = {c["id"] for c in original.get("claims") or [] if c.get("difference")}
    lost = sorted(before - {c["id"] for c in record["claims"] if c.get("difference")})
    if lost:
        raise ValueError(f"{path}: re-derived, it no longer decides {lost[0]} (its values are missing): "
                         "not re-rendered")
    if kept == "reproduce":
        publishable(record, root)
    elif {k for k in protocol_differences(record.get("plan") or {}, kept) if k in (record.get("plan") or {})} \
            - {"seeds"} or record.get("complete") is False:
        # the kept ablation ran 3 of the plan's seeds (and predates some fields): any other field it records
        # makes it another plan's (issue 64: a quick run's replaced docs/ablation-summary.*)
        raise ValueError(f"{path} is not the {kept} plan's complete output: only that goes to docs/{kept}-summary.*")
    files = {root / "docs" / f"{kept}-summary.json": record, root / "docs" / f"{kept}-summary.md": render(record)}
    if kept == "reproduce":
        files[root / "README.md"] = replace_block((root / "README.md").read_text(), render_readme(record))
    write_files(files)
    return record


def _summary_at(where: str) -> dict:
    """A summary.json file, or ``COMMIT:PATH`` of one committed in this repository (``git show``); a missing,
    unreadable or malformed one is one line naming it (issue 60)."""
    if Path(where).is_file() or ":" not in where:
        return read_json_object(Path(where), "a summary.json of noisymix reproduce", {"plan": "object",
                                                                                     "table": "object"})
    import subprocess

    shown = subprocess.run(["git", "show", where], cwd=ROOT, capture_output=True, text=True)
    if shown.returncode:
        raise ValueError(f"cannot read {where}: {shown.stderr.strip()}")
    try:
        data = json.loads(shown.stdout)
    except ValueError:
        raise ValueError(f"{where} is not JSON") from None
    if not isinstance(data, dict) or "plan" not in data or "table" not in data:
        raise ValueError(f"{where} is not a summary.json (a JSON object with plan and table)")
    return data


def main(argv: list[str] | None = None) -> int:
    from noisymix_app.reproduce.margins import MARGINS

    parser = argparse.ArgumentParser(prog="python -m noisymix_app.reproduce.summary",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="a folder written by `noisymix reproduce`")
    parser.add_argument("--margins", nargs="+", metavar="SUMMARY_JSON",
                        help="measure the cross-machine margins from these summary.json files (or COMMIT:PATH): the "
                             "same plan, seeds and sets on different CPUs, each re-derived by the current code; "
                             "written into docs/cross-machine-margins.json under the sets' identity")
    parser.add_argument("--rerender", metavar="SUMMARY_JSON",
                        help="re-derive a kept summary.json (or COMMIT:PATH) with the current report code and write "
                             "it as docs/reproduce-summary.* and the README's block, without rerunning anything")
    parser.add_argument("--kept", choices=("reproduce", "ablation"), default="reproduce",
                        help="with --rerender: which kept summary it is, docs/KEPT-summary.* (only the main job's, "
                             "reproduce, goes into the README)")
    parser.add_argument("--update-readme", action="store_true",
                        help="copy the summary to docs/reproduce-summary.* and into README.md (the main job's only)")
    args = parser.parse_args(argv)
    if args.margins:
        # each summary's own runs: the pooled seeds are the same files on both sides (issue 63, goal 7)
        measured = cross_machine_margins([rederive(_summary_at(p), margins={}, pooled=False) for p in args.margins])
        measured["how"] = "python -m noisymix_app.reproduce.summary --margins " + " ".join(args.margins)
        write_files({MARGINS: merge_margins(measured)})
        print(json.dumps(measured))
        if not args.out and not args.rerender:
            return 0
    if args.rerender:
        rerender(args.rerender, kept=args.kept)
        print(json.dumps({"rerendered": args.rerender}))
        return 0
    if not args.out:
        parser.error("--out is required (or --margins alone)")
    write_summary(args.out)
    if args.update_readme:
        update_readme(args.out)
    print(json.dumps({"summary": str(Path(args.out) / "SUMMARY.md"), "readme_updated": args.update_readme}))
    return 0


if __name__ == "__main__":
    from noisymix_app.cli import main_in_one_line

    raise SystemExit(main_in_one_line("python -m noisymix_app.reproduce.summary", main))
