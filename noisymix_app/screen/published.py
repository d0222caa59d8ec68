"""A second view at the published strengths (issue 65, goal 3): ``noisymix screen SPEC --also-published``.

The difficulty-matched Digits-C scales each corruption's CIFAR strength (``families``): a method whose
benefit comes from matching a corruption's strength is placed by the wrong ratio there.  The second view
evaluates **the same trained models** (no new training) on Digits-C and Digits-P made at the published CIFAR
rows (``noisymix corrupt --params cifar``: ``published_plan``), under the screen's own folder
(``DIR/data/digits-c``, ``DIR/data/digits-p``, beside the matched ``DIR/data/digits-c-digits-matched``), each
run's results in ``DIR/published/<run>/eval/<suite>.json`` (never over the run's own ``eval/``, which the
matched view reads).  An evaluation is kept while it is complete and of the run's ``final.pt`` (sha256) and
of the set as it is now (``data_fingerprint``).

**The reference at the published rows** is one committed run, made once, like the eight-method summary:
``docs/published-strengths-summary.json`` (``PUBLISHED_SUMMARY``), made from the eight-method plan's finished
runs by ``COMMAND`` (``build_published_summary``).  Its schema, the analogue summary's rows' shape::

    {
      "what": "the eight methods of the eight-method summary at the published CIFAR rows ...",
      "params": "cifar",
      "plan": {"name": "analogue-methods [--set k=v ...]", "seeds": [10, 11, ...]},   # as the summary's
      "seeds": [10, 11, ...],                    # the plan's, aligned with every per_seed list
      "sets": {"c": sha256, "p": sha256},        # set_identity of its published Digits-C and Digits-P
      "analogue_summary": {"path": ..., "sha256": ...},   # the eight-method summary whose runs these are
      "runs": {"<method>-seed<N>": final.pt's sha256},
      "table": [
        {"method": "baseline", "row": "Baseline",
         "per_seed": {"clean": [...], "corrupted": [...], "mean_flip": [...],
                      "per_corruption": {"<corruption>": [...]},          # accuracy %, per seed
                      "per_family": {"noise"|"blur"|"weather"|"digital": [...]}},
         "clean": {"mean", "half_width"}, "corrupted": {"mean", "half_width"}, "mean_flip": {"mean", "half_width"}},
        ...],
      "command": COMMAND as run, "provenance": {...}
    }

Where the file is absent the page says so (``missing_line``: "no committed reference at the published rows;
made by: <command>") and still shows the screened method's own published-view numbers.  A file that is there
is checked whole (``read_published``): its seeds and plan must be the eight-method summary's, and its ``sets``
the identity of the published sets the screen made (``check_published_sets``), else one line.

**Where the two views disagree**, per family (``compare_views``): the gain over the Baseline (the paired
difference seed by seed) in each view, and its change (the per-seed gains' paired difference).  They
disagree where the two gains' means have opposite signs and at least one of their 95 % intervals excludes
0 (a sign flip within noise on both sides is no disagreement), or where the change's 95 % interval excludes 0
(the gain changes by more than its interval).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path

from noisymix_infra.io import printable, read_json

__all__ = ["COMMAND", "PUBLISHED_SUMMARY", "PublishedReference", "build_published_summary",
           "check_published_sets", "compare_views", "evaluate_published", "make_published_sets", "missing_line",
           "published_numbers", "published_plan", "published_steps", "read_published"]

#: the committed reference at the published rows (a source checkout's; ``--published-summary`` names another)
PUBLISHED_SUMMARY = Path(__file__).resolve().parents[2] / "docs" / "published-strengths-summary.json"
#: the command that makes it from the eight-method plan's finished runs
COMMAND = ("python -m noisymix_app.screen.published --results DIR --summary docs/analogue-methods-summary.json "
           "--out docs/published-strengths-summary.json")
#: the folder, under a screen's (or the builder's work folder), of each run's evaluations at the published rows
FOLDER = "published"


def missing_line() -> str:
    """What the page says where the committed reference at the published rows is absent."""
    return f"no committed reference at the published rows; made by: {COMMAND}"


def published_plan(plan):
    """``plan`` with its -C and -P sets at the published CIFAR rows (``--params cifar``)."""
    return dataclasses.replace(plan, corruption_params="cifar", perturbation_params="cifar")


def published_steps(plan, out: Path) -> list:
    """The ``noisymix corrupt`` steps of the published sets, named apart from the matched ones in a log."""
    from noisymix_app.reproduce.steps import _steps

    return [dataclasses.replace(s, name=f"{s.name} published") for s in _steps(published_plan(plan), out, None)[0]
            if s.name in ("corrupt", "corrupt-p")]


def published_sets(plan, out: Path) -> tuple[Path, Path]:
    from noisymix_app.reproduce.steps import _corrupted, _perturbed

    pub = published_plan(plan)
    return _corrupted(pub, out), _perturbed(pub, out)


def make_published_sets(plan, out: Path, log: dict, log_path: Path) -> list[str]:
    """The published -C and -P sets under ``out/data`` (kept when made before with the same arguments)."""
    from noisymix_app.screen.sets import make_sets

    return make_sets(published_steps(plan, out), log, log_path, prefix="screen")


def _done(target: Path, digest: str, root: Path) -> bool:
    """``target`` is a complete evaluation of the weights ``digest`` on the set ``root`` as it is now."""
    from noisymix_infra.io import data_fingerprint, read_json_object

    if not target.is_file():
        return False
    try:
        record = read_json_object(target, "an evaluation of noisymix", {"checkpoint.sha256": "string"})
    except ValueError:
        return False
    used = record.get("data_root")
    return (record.get("complete") is True and record["checkpoint"]["sha256"] == digest and isinstance(used, str)
            and Path(used).resolve() == root.resolve() and record.get("data_fingerprint") == data_fingerprint(root))


def evaluate_published(plan, out: Path, runs: list[tuple[str, Path]], *, device: str | None = None,
                       workers: int = 1) -> list[str]:
    """Each run's ``final.pt`` (``runs``: (name, run folder)) on the published sets of ``out``, into
    ``out/published/<name>/eval/<suite>.json``; returns the evaluations made now.  Only the model is loaded
    (``load_run_model``: the config's architecture and the weights): no user code runs here.  On the CPU,
    ``workers`` > 1 evaluates that many runs side by side, each in a spawned process of one torch thread, as the
    screen's runs are (issue 65, goal 6: one run after another, the second view cost 17 s a run).  A run's two
    sets are evaluated by one process: an evaluation holds its run's folder (``evaluate_model``'s lock)."""
    import torch

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    jobs = [(plan, out, name, run_dir, device) for name, run_dir in runs]
    count = min(workers, len(jobs))
    if count <= 1 or device != "cpu":
        return [m for job in jobs for m in _evaluate_one(job)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_one_thread) as pool:
        return [m for made in pool.map(_evaluate_one, jobs) for m in made]


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)


def _evaluate_one(job: tuple) -> list[str]:
    """One run of ``evaluate_published``: its suites not already done for its weights and the sets as they are."""
    from fullscale.evaluation.context import EvalOptions
    from fullscale.evaluation.evaluate_run import evaluate_model
    from fullscale.run_model import load_run_model
    from noisymix_infra.io import sha256_file

    plan, out, name, run_dir, device = job
    c_root, p_root = published_sets(plan, out)
    suites = [(plan.corrupted_suite, c_root, plan.corruptions is not None),
              (plan.perturbed_suite, p_root, plan.perturbations is not None)]
    final = run_dir / "final.pt"
    digest = sha256_file(final)
    target = out / FOLDER / name
    net = config = None
    made = []
    for suite, root, partial in suites:
        if _done(target / "eval" / f"{suite}.json", digest, root):
            continue
        if net is None:
            net, config = load_run_model(run_dir, None, device)
        target.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        evaluate_model(net, config, suite, target, weights=str(final), digest=digest, own_run=True,
                       data_root=str(root), device=device, options=EvalOptions(partial=partial))
        print(f"screen: {name}: {suite} at the published rows: {time.perf_counter() - t0:.1f} s", flush=True)
        made.append(f"{name} {suite}")
    return made


def published_numbers(out: Path, names: list[str], plan) -> dict:
    """Per seed (``names``, in the seeds' order): Digits-C accuracy (mean, per corruption, per family) and the
    Digits-P mean flip probability at the published rows, points (%), as ``command._ours`` computes them."""
    from noisymix_app.screen.sets import numbers_of

    return numbers_of([out / FOLDER / n / "eval" for n in names], plan, clean=False)


# ----------------------------------------------------------------------------- the committed reference

@dataclass(frozen=True)
class PublishedReference:
    """The committed reference at the published rows, as read (schema: module docstring)."""

    path: Path
    sha256: str
    seeds: tuple[int, ...]
    rows: tuple[dict, ...]
    sets: dict | None

    def row(self, method: str) -> dict | None:
        return next((r for r in self.rows if r["method"] == method), None)

    def on_seeds(self, keep: tuple[int, ...]) -> PublishedReference:
        """Cut to the screen's seeds ``keep``, as ``Reference.on_seeds``."""
        from noisymix_app.screen.reference import cut_per_seed

        return dataclasses.replace(self, seeds=tuple(keep),
                                   rows=tuple(cut_per_seed(r, self.seeds, keep) for r in self.rows))


def read_published(path: Path | None, reference, *, given: bool) -> PublishedReference | None:
    """The reference at the published rows at ``path`` (default ``PUBLISHED_SUMMARY``), checked against the
    eight-method ``reference`` (the same plan and seeds); None where the default file is absent (the page says
    so); one line for a file given that is absent, or any file that is not such a reference."""
    from noisymix_app.screen.reference import _check_row, _refuse, _sets
    from noisymix_infra.io import sha256_file

    path = Path(PUBLISHED_SUMMARY if path is None else path)
    if not path.is_file():
        if given:
            raise ValueError(f"--published-summary {printable(str(path))}: no such file (made by: {COMMAND})")
        return None
    try:
        data = read_json(path)
    except ValueError as error:
        raise _refuse(path, f"not a readable reference at the published rows ({str(error).splitlines()[0][:160]})"
                      ) from None
    if not isinstance(data, dict) or not isinstance(data.get("table"), list) or not isinstance(data.get("plan"), dict):
        raise _refuse(path, "not a reference at the published rows (an object with plan and table)")
    if data.get("params") != "cifar":
        raise _refuse(path, f"params is {printable(repr(data.get('params')))}, not 'cifar' (the published rows)")
    seeds = data["plan"].get("seeds")
    if seeds != list(reference.seeds) or data.get("seeds", seeds) != seeds:
        raise _refuse(path, f"its seeds {printable(str(seeds))[:80]} are not the eight-method summary's "
                            f"{list(reference.seeds)}: remake it from that summary's runs ({COMMAND})")
    if data["plan"].get("name") != reference.plan_name:
        raise _refuse(path, f"its plan {printable(repr(data['plan'].get('name')))[:120]} is not the eight-method "
                            f"summary's ({printable(reference.plan_name)}): remake it ({COMMAND})")
    rows = []
    for i, row in enumerate(data["table"]):
        checked = _check_row(path, i, row, len(seeds), paper=False)
        if not isinstance(checked["per_seed"].get("per_corruption"), dict):
            raise _refuse(path, f"table[{i}] ({printable(checked['method'])}) has no per_seed.per_corruption")
        rows.append(checked)
    if not any(r["method"] == "baseline" for r in rows):
        raise _refuse(path, "no baseline row: the published view's gains are over the Baseline")
    return PublishedReference(path, sha256_file(path), tuple(seeds), tuple(rows), _sets(path, data.get("sets")))


def check_published_sets(published: PublishedReference | None, plan, out: Path) -> dict:
    """The identity of the published sets this screen made, checked against the reference's ``sets`` (one line
    where they differ: its numbers are of other sets); ``verified`` False where it does not say."""
    from noisymix_app.reproduce.summary import set_identity

    c_root, p_root = published_sets(plan, out)
    from noisymix_app.screen.reference import compare_sets

    ours = {"c": set_identity(c_root), "p": set_identity(p_root)}
    if published is None:
        return {**ours, "verified": False}
    return compare_sets(ours, published.sets, published.path,
                        "the reference at the published rows was measured on other sets", f"remake it ({COMMAND})")


# ----------------------------------------------------------------------------- the two views

def compare_views(matched: dict, published: dict, seeds: tuple[int, ...]) -> dict:
    """One family's two views: ``matched`` and ``published`` hold per-seed ``ours`` and ``baseline``
    (aligned with ``seeds``).  The gains over the Baseline in each, their change, and whether the views
    disagree, with why (module docstring)."""
    from noisymix_app.screen.paired import paired_difference

    gain_m = paired_difference(matched["ours"], matched["baseline"], seeds)
    gain_p = paired_difference(published["ours"], published["baseline"], seeds)
    per_seed_m = [a - b for a, b in zip(matched["ours"], matched["baseline"], strict=True)]
    per_seed_p = [a - b for a, b in zip(published["ours"], published["baseline"], strict=True)]
    change = paired_difference(per_seed_p, per_seed_m, seeds)

    def excludes_zero(d: dict) -> bool:
        hw = d["half_width"]
        return hw is not None and math.isfinite(hw) and not d["below_resolution"] and abs(d["mean"]) > hw

    why = []
    if gain_m["mean"] * gain_p["mean"] < 0 and (excludes_zero(gain_m) or excludes_zero(gain_p)):
        why.append("the gain's sign differs")
    if excludes_zero(change):
        why.append(f"the gain changes by {change['mean']:+.1f} ± {change['half_width']:.1f}")
    return {"matched_gain": gain_m, "published_gain": gain_p, "change": change, "disagree": bool(why),
            "why": "; ".join(why)}


# ----------------------------------------------------------------------------- making the committed reference

def build_published_summary(results: str | Path, out_file: str | Path, *, summary: str | Path | None = None,
                            work: str | Path | None = None) -> dict:
    """``docs/published-strengths-summary.json`` (schema: module docstring) from the finished runs of the
    eight-method plan in ``results`` (``noisymix reproduce --plan analogue-methods --out RESULTS``), whose
    summary is ``summary``: every run's ``final.pt`` evaluated on Digits-C and Digits-P made at the published
    rows under ``work`` (default ``RESULTS/published-strengths``), no training.  Every run is checked to be
    of the summary's recipe and seeds before anything is written; the file is written atomically, last."""
    import numpy as np

    from noisymix_app.reproduce.plans import EIGHT_METHODS
    from noisymix_app.reproduce.steps import _corrupted, _perturbed
    from noisymix_app.screen.plan import screen_plan
    from noisymix_app.screen.reference import read_reference
    from noisymix_app.sweep.plan import plan_from_reproduce
    from noisymix_app.sweep.state import check_config
    from noisymix_figures.paper import method_columns
    from noisymix_infra.io import directory_lock, sha256_file, write_json
    from noisymix_infra.provenance import provenance

    results, out_file = Path(results), Path(out_file)
    if out_file.is_dir():
        raise ValueError(f"--out {printable(str(out_file))} is a folder: give the JSON file to write")
    if out_file.exists():  # replaced only where it is such a reference (remade), never another file
        try:
            kept = read_json(out_file)
        except ValueError:
            kept = None
        if not (isinstance(kept, dict) and kept.get("params") == "cifar" and isinstance(kept.get("table"), list)):
            raise ValueError(f"--out {printable(str(out_file))} exists and is not a reference at the published rows: "
                             "give a new file (nothing was written)")
    work = Path(work) if work is not None else results / "published-strengths"
    reference = read_reference(summary)
    plan = screen_plan(reference)
    methods = [m for m in EIGHT_METHODS if m in reference.methods]
    made = plan_from_reproduce(dataclasses.replace(plan, methods=tuple(methods), perturbed_methods=tuple(methods)),
                               _corrupted(plan, results), perturbed=_perturbed(plan, results))
    for r in made.runs:  # before anything is written: every run there, finished, of the summary's recipe
        run_dir = results / "runs" / r.name
        if not (run_dir / "final.pt").is_file():
            raise ValueError(f"{printable(str(run_dir))}: no finished run (final.pt) of the eight-method plan; "
                             f"give --results the folder of `noisymix reproduce --plan {reference.plan_name}`")
        try:
            check_config(r, run_dir)
        except ValueError as error:
            raise ValueError(f"{printable(str(run_dir))} is not a run of the summary's recipe "
                             f"({str(error).splitlines()[0][:160]})") from None
    log_path = work / "published-log.json"
    with directory_lock(work, "evaluating at the published rows"):
        log = read_json(log_path) if log_path.is_file() else {"steps": []}
        make_published_sets(plan, work, log, log_path)
        sets = check_published_sets(None, plan, work)
        evaluate_published(plan, work, [(r.name, results / "runs" / r.name) for r in made.runs])
    paper = method_columns(methods)
    table = []
    for m in methods:
        names = [f"{m}-seed{s}" for s in reference.seeds]
        found = published_numbers(work, names, plan)
        clean = [float(read_json(results / "runs" / n / "eval" / "clean.json")["summary"]["accuracy"]) * 100
                 for n in names]
        per_seed = {"clean": clean, "corrupted": found["corrupted"], "mean_flip": found["mean_flip"],
                    "per_corruption": found["per_corruption"], "per_family": found["per_family"]}
        per_seed = _rounded(per_seed)
        row = {"method": m, "row": paper[m]["row"], "per_seed": per_seed}
        for key in ("clean", "corrupted", "mean_flip"):
            from noisymix_infra.stats import interval

            got = interval(list(np.asarray(found[key] if key != "clean" else clean, dtype=float)))
            row[key] = {"mean": got["mean"], "half_width": got["half_width"]}
        table.append(row)
    record = {"what": "the eight methods of the eight-method summary at the published CIFAR rows (Digits-C and "
                      "Digits-P made with `noisymix corrupt --params cifar`), their own trained models, not retrained "
                      "(issue 65)",
              "params": "cifar", "plan": {"name": reference.plan_name, "seeds": list(reference.seeds)},
              "seeds": list(reference.seeds), "sets": {"c": sets["c"], "p": sets["p"]},
              "analogue_summary": {"path": str(reference.path), "sha256": reference.sha256},
              "runs": {r.name: sha256_file(results / "runs" / r.name / "final.pt") for r in made.runs},
              "table": table, "command": COMMAND, "provenance": provenance()}
    write_json(out_file, record)
    return record


def _rounded(per_seed: dict) -> dict:
    """The per-seed values to the analogue summary's decimals (its means are of the unrounded ones)."""
    from noisymix_app.analogue.methods import PER_SEED_DECIMALS

    def r(values):
        return [round(float(v), PER_SEED_DECIMALS) for v in values]

    return {k: ({n: r(v) for n, v in vs.items()} if isinstance(vs, dict) else r(vs)) for k, vs in per_seed.items()}


def main(argv: list[str] | None = None) -> int:
    from noisymix_infra.threads import add_threads_argument, torch_threads

    parser = argparse.ArgumentParser(prog="python -m noisymix_app.screen.published",
                                     description="the eight methods at the published CIFAR rows, from their runs "
                                                 "(docs/published-strengths-summary.json; issue 65)")
    parser.add_argument("--results", required=True, help="the folder of noisymix reproduce --plan analogue-methods")
    parser.add_argument("--summary", default=None, help="its eight-method summary (default: the committed one)")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--work", default=None, help="where the published sets and evaluations go "
                                                     "(default: RESULTS/published-strengths)")
    add_threads_argument(parser, None)
    args = parser.parse_args(argv)
    with torch_threads(args.threads):  # the free cores, as every command (a busy machine is not oversubscribed)
        record = build_published_summary(args.results, args.out, summary=args.summary, work=args.work)
    print(f"wrote {args.out}: {len(record['table'])} methods on {len(record['seeds'])} seeds at the published rows")
    return 0


if __name__ == "__main__":
    import sys

    from noisymix_app.cli import main_in_one_line

    sys.exit(main_in_one_line("python -m noisymix_app.screen.published", main))
