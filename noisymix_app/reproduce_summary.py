"""The findings of a ``noisymix reproduce`` folder: ``SUMMARY.md`` and ``summary.json``.

Every number the README shows for the small-scale run comes from here, never by hand:
``python -m noisymix_app.reproduce_summary --out results --update-readme`` (or
``noisymix reproduce --out results --update-readme``) writes the summary, copies it to
``docs/reproduce-summary.md`` / ``.json`` and replaces the README between the markers
``<!-- reproduce-summary:begin -->`` and ``<!-- reproduce-summary:end -->``.  The summary names
the git commit it was made from; ``tests/test_readme.py`` fails when the README and the committed
summary disagree, or when the code that made the numbers changed after that commit.

Statistics.  Per method: mean over seeds and a 95 % t-interval (mean ± t_{0.975, n-1} s/√n).
Per claim of the paper (Sec. 4: NoisyMix and the other methods raise robustness over the
Baseline while keeping clean accuracy, NoisyMix the most robust) the paired difference over
seeds (same seed, same data order) with its 95 % t-interval: the claim **holds** when the
interval lies on the claimed side, is **within noise** when it covers the boundary, **fails**
when it lies on the other side.  The power: the minimum difference a paired t-test at 5 % detects
with 80 % power given the observed spread of the differences, (t_{0.975} + t_{0.80}) s_d / √n.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from fullscale.evaluation.resolution import summary_step
from fullscale.vocabulary import CATEGORIES
from noisymix_app.report_ablation import ablation_lines, read_ablation
from noisymix_app.report_calibration import calibration_shift_lines, calibration_shift_summary
from noisymix_app.reproduce_claims import (
    CLEAN_TOLERANCE,
    LABELS,
    analogue_profile,
    category_claims,
    claims_of,
    correct,
    decidable,
    paper_effects,
    verdict,
)
from noisymix_app.reproduce_headline import paper_calibration
from noisymix_app.reproduce_margins import (
    CROSS_MACHINE_MARGIN,
    MARGINS,
    METRIC_WORDS,
    claim_metric,
    cross_machine_margins,
    fragile_note,
    made_on,
    margins_of,
    ran_on,
    read_margins,
    robustness,
)
from noisymix_app.reproduce_readme import BEGIN, END, readme_figures, stale_figures, update_readme
from noisymix_figures.results import stale_evaluation
from noisymix_infra.io import read_json, write_json, write_text
from noisymix_infra.provenance import git_state, machine
from noisymix_infra.stats import Seeds, interval
from theory.results import checks_of, tally, tally_sentence

__all__ = ["BEGIN", "CLEAN_TOLERANCE", "CODE_PATHS", "CROSS_MACHINE_MARGIN", "END", "LABELS", "claim_metric",
           "cross_machine_margins", "main",
           "paper_calibration", "read_margins", "readme_figures", "render", "robustness", "stale_figures", "summarize",
           "update_readme", "write_summary"]

ROOT = Path(__file__).resolve().parents[1]
_verdict, _claims = verdict, claims_of  # their old names here (tests, notes)
# the code whose change makes a summary stale (methods, trainer, evaluation, metrics, augmentation,
# corruptions, models and the reproduce job itself)
CODE_PATHS = ("noisymix", "noisymix_app/plans.py", "noisymix_app/reproduce.py", "noisymix_app/reproduce_summary.py",
              "noisymix_app/reproduce_headline.py", "noisymix_app/reproduce_claims.py",
              "noisymix_app/reproduce_margins.py", "noisymix_infra/stats.py", "noisymix_app/reproduce_readme.py",
              "noisymix_app/reproduce_steps.py", "noisymix_app/reproduce_log.py",
              "noisymix_app/report_calibration.py", "noisymix_app/report_ablation.py",
              "noisymix_app/sweep", "fullscale/training",
              "fullscale/evaluation", "fullscale/metrics.py", "fullscale/vocabulary.py", "fullscale/augment",
              "fullscale/corruptions", "fullscale/models",
              "fullscale/data", "theory", "toy")
# (value, eval file (None: the corrupted suite's), key path in its summary): the calibration suite
# is the clean test images; calibration under corruption is the corrupted suite's (every corrupted
# set's RMS error, averaged: fullscale.evaluation), the question the paper asks of ImageNet-R (issue 31)
METRICS = (("clean", "clean", ("accuracy",)), ("corrupted", None, ("mean_accuracy",)),
           ("rms_calibration_error", "calibration", ("rms_calibration_error",)),
           ("rms_calibration_error_corrupted", None, ("calibration", "rms_calibration_error")),
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

def total_seconds(log: dict) -> float:
    """The job's time: the sum of its steps' recorded seconds, each recorded when the step ran and
    kept when a rerun skips it, so that a resumed invocation that recomputes nothing leaves it as it
    was (issue 32: a 2 s rerun rewrote 1132 s to 2.47).  Steps of parallel workers overlap: it is
    then more than the wall time."""
    return round(sum(float(e.get("seconds") or 0) for e in log.get("steps", [])), 2)


def _lookup(summary: dict, path: tuple[str, ...]) -> float | None:
    value: object = summary
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return float(value)  # type: ignore[arg-type]


def _git() -> dict:
    return git_state(CODE_PATHS)


def summarize(out: str | Path) -> dict:
    """The findings of the reproduce folder ``out`` as a JSON-ready dict (see the module doc)."""
    out = Path(out)
    log = read_json(out / "reproduce.json")
    plan = log["plan"]
    suite = plan["corrupted_suite"]
    files = {None: suite, "PERTURBED": plan.get("perturbed_suite")}
    values: dict[str, dict[str, dict[int, float]]] = {}
    n_corruptions = set()
    for method in plan["methods"]:
        # each metric's per-seed values with the step of its grid (one test image; issue 54)
        values[method] = {name: Seeds() for name, *_ in METRICS}
        for seed in plan["seeds"]:
            run = out / "runs" / f"{method}-seed{seed}" / "eval"
            for name, file, key in METRICS:
                stem = files.get(file, file)
                path = run / f"{stem}.json"
                if stem and path.exists():
                    record = read_json(path)
                    value = _lookup(record.get("summary", {}), key)
                    if value is None:  # an incomplete or foreign record: no number
                        continue
                    if stale_evaluation(run.parent, record):  # NaN, other weights, edited config (issue 41)
                        continue
                    values[method][name][seed] = value if name in NOT_PERCENT else 100 * value
                    step = summary_step(record, key)
                    if step is not None and name not in NOT_PERCENT:  # the coarsest of the seeds' grids
                        values[method][name].step = max(values[method][name].step or 0.0, 100 * step)
                    if file is None and name == "corrupted":
                        n_corruptions.add(len(record["summary"].get("per_corruption", {})))
    table = {m: {name: interval(list(v.values())) for name, v in per.items() if v} for m, per in values.items()}
    claims = claims_of(values, plan["methods"])
    correct(claims)  # the primary claim, and Holm's correction over the secondary ones (issue 46)
    effects = paper_effects(LABELS)
    for claim in claims:
        claim["paper_effect"] = effects.get(claim["id"])
        claim["decidable"] = decidable(claim, claim["paper_effect"])
    return {"plan": plan, "plan_name": log.get("plan_name", "custom"), "corrupted_suite": suite,
            "corruptions": sorted(n_corruptions),
            # both the sum of the steps' recorded times (total_seconds), never the
            # last invocation's: a resume that recomputed nothing rewrote 1132 s to 2.47 (issue 32)
            "git": _git(), "seconds": round(sum(e.get("seconds", 0) for e in log.get("steps", [])), 1),
            "wall_seconds": total_seconds(log),
            "table": table, "claims": claims,
            "ran_on": ran_on(log),
            "machine": {**machine(), "workers": log.get("workers", plan.get("workers", 0))},
            "categories": category_claims(values, LABELS),
            "calibration_under_shift": calibration_shift_summary(out),
            # why NoisyMix is under-confident: the ablation plan's rows, run apart (issue 46, item 4)
            "ablation": (read_ablation() if str(log.get("plan_name", "")).split(" ")[0]
                         in ("laptop", "laptop-published-rows", "gpu") else None),
            "analogue": analogue_profile(out, plan, suite),
            "theory": _theory(out / "theory" / "theory.json"), "toy": _toy(out / "toy" / "toy.json"),
            "paper_calibration": paper_calibration(), "margins": read_margins()}


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
                       for c in toy.get("claims", [])],
            "tuning": _toy_tuning(toy.get("hyperparameters") or {})}


def _toy_tuning(hyper: dict) -> dict | None:
    """How the toy's strengths were chosen and how noisy the choice was (issue 48): the chosen strengths,
    the span of every grid point's validation accuracy, and per grid the chosen point's lead over the
    runner-up against the standard error of that lead (paired over the tuning seeds)."""
    grids = (hyper.get("tuning") or {}).get("grids") or {}
    strengths = hyper.get("strengths") or {}
    if not grids:
        return None
    accuracies = [row["validation_accuracy"] for rows in grids.values() for row in rows]
    leads = {}
    for component, rows in grids.items():
        chosen = next((r for r in rows if r["strengths"] == strengths.get(component)), None)
        others = [r for r in rows if r is not chosen]
        if chosen is None or not others or "per_seed_accuracy" not in chosen:
            continue
        runner = max(others, key=lambda r: r["validation_accuracy"])
        diffs = [a - b for a, b in zip(chosen["per_seed_accuracy"], runner["per_seed_accuracy"], strict=True)]
        spread = interval(diffs)
        leads[component] = {"lead": 100 * spread["mean"],
                            "standard_error": None if spread["sd"] is None else 100 * spread["sd"] / len(diffs) ** 0.5,
                            "runner_up": runner["strengths"]}
    return {"strengths": strengths, "validation_range": [100 * min(accuracies), 100 * max(accuracies)],
            "leads": leads}


def _paper_order(scheme: str) -> int:
    from toy.schemes import PAPER_SCHEMES

    return PAPER_SCHEMES.index(scheme) if scheme in PAPER_SCHEMES else len(PAPER_SCHEMES)


def _fmt(cell: dict | None) -> str:
    if not cell:
        return "—"
    if cell["half_width"] is None:
        return f"{cell['mean']:.1f} (1 seed)"
    return f"{cell['mean']:.1f} ± {cell['half_width']:.1f}"


def _duration(summary: dict) -> str:
    """How long the job took: the sum of its steps' recorded times (each recorded when the step ran
    and kept when a rerun skipped it: a resumed invocation's own seconds are not the job's; issue 32)."""
    if not summary.get("seconds"):
        return ""
    steps = f"its steps took {summary['seconds'] / 60:.1f} min, the sum of each step's recorded time"
    workers = summary.get("machine", {}).get("workers", 0)
    if workers and workers > 1:
        return f" ({steps}; {workers} worker processes ran them side by side, so the wall time was less)"
    return f" ({steps})"


def _has(summary: dict, column: str) -> bool:
    return any(column in row for row in summary["table"].values())


_PROMISE = re.compile(r",? ?<\s*(\d+(?:\.\d+)?)\s*min")
_PAPER_NUMBER = re.compile(r" \(\d+\.\d\)")


def _description(summary: dict) -> str:
    """The plan's description with any promised duration ("< 15 min") checked against the measured
    steps: kept when they took less, replaced by the measured minutes when not (issue 40)."""
    text = summary["plan"]["description"]
    seconds = summary.get("seconds") or 0

    def check(match: re.Match) -> str:
        minutes = seconds / 60
        if seconds and minutes >= float(match.group(1)):
            return f", {minutes:.1f} min measured"
        return match.group(0)

    return _PROMISE.sub(check, text)


def _claim_line(c: dict, margins: dict[str, float]) -> str:
    d = c["difference"]
    if d is None:
        return f"- {c['statement']}: no paired runs"
    interval = "" if d["half_width"] is None else (
        f" [{d['mean'] - d['half_width']:+.1f}, {d['mean'] + d['half_width']:+.1f}]")
    mdd = "" if d.get("mdd80") is None else f"; MDD {d['mdd80']:.1f}"
    firm = robustness(c, margins=margins)
    tag = "" if firm is None else (" (firm)" if firm else " (fragile)")
    if firm is None and d["half_width"] is not None and claim_metric(c) is not None:
        tag = " (no cross-machine margin measured)"
    line = f"- {c['statement']}: {d['mean']:+.1f}{interval}{mdd}"
    effect = c.get("paper_effect")
    if effect is not None and d.get("mdd80") is not None:
        undecided = (c.get("verdict_adjusted") or c["verdict"]) == "within noise" and c.get("decidable") is False
        line += (f" against the paper's {effect['effect']:+.1f} ({effect['source']})"
                 + (": this run cannot decide it (its MDD exceeds the paper's effect)" if undecided else ""))
    line += f" — **{c['verdict']}**{tag}"
    if c.get("role") == "primary":
        line += " (the primary claim" + ("" if c.get("p") is None else f", p {_p(c['p'])}") + ")"
    elif c.get("p_adjusted") is not None:
        line += f"; after Holm: p {_p(c['p'])} → {_p(c['p_adjusted'])}, **{c['verdict_adjusted']}**"
    return line


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _toy_lines(toy: dict) -> list[str]:
    """The toy's claims, ours beside the paper's: the statements name no number (an old toy.json's
    paper captions are taken out of them), the accuracies follow, each marked whose it is."""
    lines = [f"Toy experiment (`noisymix toy`, {toy['seeds']} seeds):", ""]
    for c in toy["claims"]:
        lines.append(f"- {_PAPER_NUMBER.sub('', c['statement'])} — **{c['verdict']}**")
    rows = toy.get("accuracy") or []
    if rows:
        lines += ["", f"Toy test accuracy (%), ours (mean over {toy['seeds']} seeds) and the paper's (its one run, "
                  "fig:toy_example captions), in the paper's order: "
                  + "; ".join(f"{r['label']} {r['ours']:.1f} (paper {r['paper']:.1f})" if r.get("paper") is not None
                              else f"{r['label']} {r['ours']:.1f}" for r in rows) + "."]
    tuning = toy.get("tuning")
    if tuning:
        lo, hi = tuning["validation_range"]
        mix = (tuning["strengths"].get("mix") or {}).get("alpha")
        text = "Toy tuning (toy/tuned.json, tuning seeds apart from the reported ones): "
        if mix is not None:
            text += (f"the tuned mixing strength is alpha = {mix:g}, so Manifold Mixup (and the mixing inside NFM and "
                     "NoisyMix) barely mixes and sits close to Baseline; ")
        text += f"the grids' validation accuracies span {lo:.1f}–{hi:.1f} %"
        leads = {c: v for c, v in tuning["leads"].items() if v.get("standard_error") is not None}
        if leads:
            within = [c for c, v in leads.items() if abs(v["lead"]) < 2 * v["standard_error"]]
            text += ("; the chosen point of each grid leads its runner-up by "
                     + ", ".join(f"{v['lead']:.1f} points (`{c}`, standard error {v['standard_error']:.1f})"
                                 for c, v in leads.items())
                     + (f": {'every' if len(within) == len(leads) else len(within)} of these lead"
                        f"{'s' if len(within) == 1 else ''} under two standard errors, so the choice is within "
                        "the tuning's own noise" if within else ""))
        lines += ["", text + "."]
    return lines


def render(summary: dict) -> str:
    """``SUMMARY.md``: the findings as Markdown (what the README includes between its markers): the
    verdict in plain words first (``reproduce_headline.headline``), the terms, then the numbers."""
    from noisymix_app.reproduce_claims import analogue_lines, category_lines
    from noisymix_app.reproduce_headline import aims_sentence, calibration_section, headline, opening, terms

    plan, git = summary["plan"], summary["git"]
    seeds = len(plan["seeds"])
    n_c = ",".join(str(n) for n in summary["corruptions"]) or "?"
    dirty = "" if not git.get("dirty") else " (working tree had uncommitted changes)"
    margins = margins_of(summary)
    lines = [opening(summary), "", headline(summary), "",
             terms({METRIC_WORDS.get(k, k): v for k, v in margins.items()}), "",
             f"Generated by `noisymix reproduce --plan {summary.get('plan_name', '?')}` "
             f"({_description(summary)}) from commit `{(git.get('commit') or 'unknown')[:12]}`{dirty}"
             + _duration(summary) + ": "
             f"{', '.join(LABELS.get(m, m) for m in plan['methods'])} on {plan['dataset']}, "
             f"{plan['model']} width {plan['width']}, {plan['epochs']} epochs"
             + "".join(f", {o.replace('=', ' ')}" for o in plan.get("train_overrides") or ())
             + f", {seeds} seed(s); the corrupted set has {n_c} corruption(s) × 5 severities. "
             "Our numbers: mean ± 95 % t-interval over seeds (%).", "",
             "| method | clean | corrupted | RMS calibration error, clean test images | "
             "RMS calibration error, corrupted sets |" + (" mean flip probability, perturbed sequences |"
                                                          if _has(summary, "flip_probability") else ""),
             "|---|---:|---:|---:|---:|" + ("---:|" if _has(summary, "flip_probability") else "")]
    for m in (m for m in plan["methods"] if m in summary["table"]):  # plan order (JSON sorts keys)
        row = summary["table"][m]
        lines.append(f"| {LABELS.get(m, m)} | {_fmt(row.get('clean'))} | {_fmt(row.get('corrupted'))} | "
                     f"{_fmt(row.get('rms_calibration_error'))} | {_fmt(row.get('rms_calibration_error_corrupted'))} |"
                     + (f" {_fmt(row.get('flip_probability'))} |" if _has(summary, "flip_probability") else ""))
    lines += ["", "Claims of the paper at this scale (paired difference over seeds in points, 95 % t-interval, "
              "MDD; the verdict words and marks as defined above):", ""]
    lines += [_claim_line(c, margins) for c in summary["claims"]]
    for section in (category_lines(summary), analogue_lines(summary)):
        if section:
            lines += ["", *section]
    aims = aims_sentence(summary)
    if aims:
        lines += ["", aims]
    calibration = calibration_section(summary)
    if calibration:
        lines += ["", *calibration]
    shift = calibration_shift_lines(summary.get("calibration_under_shift"))
    if shift:
        lines += ["", *shift]
    ablation = ablation_lines(summary.get("ablation"))
    if ablation:
        lines += ["", *ablation]
    if summary.get("ran_on") or summary.get("machine"):
        lines += ["", made_on(summary)]
    elif any(robustness(c, margins=margins) is not None for c in summary["claims"]):
        lines += ["", fragile_note(summary)]
    if summary.get("theory"):
        t = summary["theory"]
        lines += ["", f"Theory (`noisymix verify`): {tally_sentence(t)}"]
    if summary.get("toy"):
        lines += ["", *_toy_lines(summary["toy"])]
    return "\n".join(lines) + "\n"


def write_summary(out: str | Path, plan_name: str | None = None) -> dict:
    """Write ``out/summary.json`` and ``out/SUMMARY.md``; return the summary."""
    out = Path(out)
    summary = summarize(out)
    summary["plan_name"] = plan_name or summary["plan_name"]  # the name reproduce.json recorded
    write_json(out / "summary.json", summary)
    write_text(out / "SUMMARY.md", render(summary))
    return summary


def _summary_at(where: str) -> dict:
    """A summary.json file, or ``COMMIT:PATH`` of one committed in this repository (``git show``)."""
    if Path(where).is_file() or ":" not in where:
        return read_json(Path(where))
    import subprocess

    shown = subprocess.run(["git", "show", where], cwd=ROOT, capture_output=True, text=True)
    if shown.returncode:
        raise SystemExit(f"--margins: cannot read {where}: {shown.stderr.strip()}")
    return json.loads(shown.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m noisymix_app.reproduce_summary",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="a folder written by `noisymix reproduce`")
    parser.add_argument("--margins", nargs="+", metavar="SUMMARY_JSON",
                        help="write docs/cross-machine-margins.json from these summary.json files or COMMIT:PATH "
                             "of committed ones (the same plan on different CPUs): each metric's largest shift of "
                             "a paired mean")
    parser.add_argument("--update-readme", action="store_true",
                        help="copy the summary to docs/reproduce-summary.* and into README.md")
    args = parser.parse_args(argv)
    if args.margins:
        record = cross_machine_margins([_summary_at(path) for path in args.margins])
        write_json(MARGINS, {**record, "how": "python -m noisymix_app.reproduce_summary --margins "
                                                + " ".join(args.margins)})
        print(json.dumps(record))
        if not args.out:
            return 0
    if not args.out:
        parser.error("--out is required (or --margins alone)")
    write_summary(args.out)
    if args.update_readme:
        update_readme(args.out)
    print(json.dumps({"summary": str(Path(args.out) / "SUMMARY.md"), "readme_updated": args.update_readme}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
