"""The findings of a ``noisymix reproduce`` folder: ``SUMMARY.md`` and ``summary.json``.

Every number the README shows for the small-scale run comes from here, never by hand:
``python -m noisymix_app.reproduce.summary --out results --update-readme`` (or
``noisymix reproduce --out results --update-readme``) writes the summary (``SUMMARY.md``, and its short
block ``README-BLOCK.md``), copies it to ``docs/reproduce-summary.md`` / ``.json`` and replaces the README
between the markers ``<!-- reproduce-summary:begin -->`` and ``<!-- reproduce-summary:end -->`` with the
block: the answer in one paragraph, the claims table and one figure, at most ``README_WORDS`` words
(issue 52).  ``--rerender SUMMARY_JSON`` re-derives a kept summary from its per-seed values with the
current report code (``rederive``) and writes the same files without rerunning anything.  The summary
names the git commit it was made from; ``tests/test_readme.py`` fails when the README and the committed
summary disagree, or when the code that made the numbers changed after that commit.

Statistics (``noisymix_app.reproduce.claims``).  Per method: mean over seeds and a 95 % t-interval
(mean ± t_{0.975, n-1} s/√n).  Per claim of the paper, each once (Sec. 4, tab:results_cifar10,
tab:results_cifar_p, App. tab:results_imagenet_r_calibration), the paired difference over seeds (same
seed, same data order) with its 95 % t-interval and its two-sided paired-t p-value; NoisyMix more robust
than Baseline is the primary claim, tested alone at 5 %, the others one family adjusted by Holm's
step-down procedure.  The verdict stated everywhere is the adjusted one: **holds** / **fails** when the
adjusted p is below 5 % (by the side of the mean), else **within noise**.  Each claim's MDD (the
difference detected with 80 % power at the observed spread) is taken at its test level (5 %, or
5 % / m for the m secondary claims), and set against the paper's effect in the matching setting; each
verdict is *firm* or *fragile* against its metric's cross-machine margin
(``noisymix_app.reproduce.margins.firmness``).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from fullscale.evaluation.resolution import summary_step
from fullscale.vocabulary import CATEGORIES
from noisymix_app.reproduce.claims import (
    CLEAN_TOLERANCE,
    LABELS,
    analogue_profile,
    category_claims,
    claims_of,
    correct,
    decidable,
    descriptive_of,
    paper_effects,
    shift_values,
    stated,
    verdict,
)
from noisymix_app.reproduce.headline import paper_calibration
from noisymix_app.reproduce.margins import (
    CROSS_MACHINE_MARGIN,
    MARGINS,
    MARGINS_COMMAND,
    METRIC_WORDS,
    claim_metric,
    cross_machine_margins,
    firmness,
    fragile_note,
    made_on,
    margins_of,
    ran_on,
    read_margins,
    robustness,
)
from noisymix_app.reproduce.readme import BEGIN, BLOCK, END, readme_figures, replace_block, stale_figures, update_readme
from noisymix_app.reproduce.report_ablation import ablation_lines, read_ablation
from noisymix_app.reproduce.report_calibration import calibration_shift_lines, calibration_shift_summary
from noisymix_app.reproduce.report_published import published_lines, read_published
from noisymix_figures.results import stale_evaluation
from noisymix_infra.io import read_json, read_json_object, write_json, write_text
from noisymix_infra.provenance import git_state, machine
from noisymix_infra.stats import Seeds, interval
from theory.results import checks_of, tally, tally_sentence

__all__ = [
    "BEGIN",
    "CLEAN_TOLERANCE",
    "CODE_PATHS",
    "CROSS_MACHINE_MARGIN",
    "END",
    "LABELS",
    "README_WORDS",
    "claim_metric",
    "cross_machine_margins",
    "derive",
    "main",
    "paper_calibration",
    "read_margins",
    "readme_figures",
    "rederive",
    "render",
    "render_readme",
    "robustness",
    "stale_figures",
    "summarize",
    "update_readme",
    "values_of",
    "write_summary",
]

ROOT = Path(__file__).resolve().parents[2]
_verdict, _claims = verdict, claims_of  # their old names here (tests, notes)
# the code whose change makes a summary stale (methods, trainer, evaluation, metrics, augmentation,
# corruptions, models and the reproduce job itself)
CODE_PATHS = ("noisymix", "noisymix_app/reproduce/plans.py", "noisymix_app/reproduce/command.py",
              "noisymix_app/reproduce/summary.py", "noisymix_app/reproduce/headline.py",
              "noisymix_app/reproduce/claims.py", "noisymix_app/reproduce/margins.py", "noisymix_infra/stats.py",
              "noisymix_app/reproduce/readme.py", "noisymix_app/reproduce/steps.py", "noisymix_app/reproduce/log.py",
              "noisymix_app/reproduce/report_calibration.py", "noisymix_app/reproduce/report_ablation.py",
              "noisymix_app/reproduce/report_published.py",
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
    shift = calibration_shift_summary(out)
    for method, per in shift_values(shift).items():  # calibration under shift, severities 1-5 (issue 52)
        values.setdefault(method, {}).update(per)
    table = _table(values)
    margins = read_margins()
    return {"plan": plan, "plan_name": log.get("plan_name", "custom"), "corrupted_suite": suite,
            "corruptions": sorted(n_corruptions),
            # both the sum of the steps' recorded times (total_seconds), never the
            # last invocation's: a resume that recomputed nothing rewrote 1132 s to 2.47 (issue 32)
            "git": _git(), "seconds": round(sum(e.get("seconds", 0) for e in log.get("steps", [])), 1),
            "wall_seconds": total_seconds(log),
            "table": table, **derive(values, plan, margins),
            "ran_on": ran_on(log),
            "machine": {**machine(), "workers": log.get("workers", plan.get("workers", 0))},
            "calibration_under_shift": shift,
            # why NoisyMix is under-confident: the ablation plan's rows, run apart (issue 46, item 4)
            "ablation": _ablation(log.get("plan_name", "")),
            "analogue": analogue_profile(out, plan, suite),
            "published_rows": _published(log.get("plan_name", "")),
            "theory": _theory(out / "theory" / "theory.json"), "toy": _toy(out / "toy" / "toy.json"),
            "paper_calibration": paper_calibration(), "margins": margins}


def _ablation(plan_name: str) -> dict | None:
    return read_ablation() if str(plan_name).split(" ")[0] in ("laptop", "laptop-published-rows", "gpu") else None


def _table(values: dict[str, dict[str, dict[int, float]]]) -> dict:
    """Per method and metric, the interval over seeds with the seeds its values belong to (so that a
    summary read back pairs them by seed: ``values_of``)."""
    return {m: {name: {**interval(list(v.values())), "seeds": list(v)} for name, v in per.items() if v}
            for m, per in values.items()}


def derive(values: dict[str, dict[str, dict[int, float]]], plan: dict, margins: dict[str, float]) -> dict:
    """Everything a summary derives from the per-seed values: the claims (one Holm family, each with its
    MDD at its level, the paper's effect and whether the run can decide it, firm or fragile against the
    cross-machine margins), the descriptive checks and the per-group breakdown."""
    claims = claims_of(values, plan["methods"])
    correct(claims)  # the primary claim, and Holm's correction over the secondary ones (issues 46, 52)
    effects = paper_effects(LABELS)
    for claim in claims:
        claim["paper_effect"] = effects.get(claim["id"])
        claim["decidable"] = decidable(claim, claim["paper_effect"])
    firmness(claims, margins)
    return {"claims": claims, "descriptive": descriptive_of(values), "categories": category_claims(values, LABELS)}


def values_of(record: dict) -> dict[str, dict[str, dict[int, float]]]:
    """The per-seed values of a summary read back: each table cell's values by its seeds (a summary
    made before the cells named them: by the plan's seeds where every seed is there), with the
    calibration-under-shift metrics from its per-severity record."""
    seeds = list((record.get("plan") or {}).get("seeds") or [])
    values: dict[str, dict[str, dict[int, float]]] = {}
    for method, row in (record.get("table") or {}).items():
        for metric, cell in row.items():
            keys = cell.get("seeds") or (seeds if len(cell.get("values") or []) == len(seeds) else None)
            if keys and len(keys) == len(cell.get("values") or []):
                values.setdefault(method, {})[metric] = dict(zip(keys, cell["values"], strict=True))
    for method, per in shift_values(record.get("calibration_under_shift")).items():
        values.setdefault(method, {}).update(per)
    return values


def rederive(record: dict, *, margins: dict[str, float] | None = None) -> dict:
    """A summary read back, re-derived by the current code from its per-seed values (the claims, the
    descriptive checks, the table's derived metrics, the margins, the ablation and the published rows
    as kept in docs/): the same runs, today's statistics.  Used to re-render the README's copy without
    rerunning the job, and to measure the cross-machine margins on today's claims."""
    values = values_of(record)
    margins = read_margins() if margins is None else margins
    plan = record["plan"]
    out = {**record, "table": _table(values), **derive(values, plan, margins), "margins": margins}
    out["ablation"] = _ablation(record.get("plan_name", "")) if "ablation" in record else None
    out["published_rows"] = _published(record.get("plan_name", ""))
    return out


def _published(plan_name: str) -> dict | None:
    """The published rows' verdicts beside the main job's (issue 51, item 4); not the ablation's."""
    return read_published() if str(plan_name).split(" ")[0] in ("laptop", "gpu") else None


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
    """One claim in detail: the paired difference and its interval, p before and after Holm, the MDD at
    the claim's level beside the paper's effect, and the stated verdict with its mark (issue 52)."""
    from noisymix_app.reproduce.headline import cannot_decide

    d = c["difference"]
    if d is None:
        return f"- {c['statement']}: no paired runs"
    interval = "" if d["half_width"] is None else (
        f" [{d['mean'] - d['half_width']:+.1f}, {d['mean'] + d['half_width']:+.1f}]")
    line = f"- {c['statement']}: {d['mean']:+.1f}{interval}"
    if c.get("p") is not None:
        line += (f"; p {_p(c['p'])}" if c.get("role") == "primary"
                 else f"; p {_p(c['p'])}, after Holm {_p(c['p_adjusted'])}")
    size = c.get("mdd", d.get("mdd80"))
    if size is not None:
        level = c.get("level")
        line += f"; MDD {size:.1f}" + ("" if level is None else f" at level {level:.3g}")
    effect = c.get("paper_effect")
    if effect is not None:
        line += (f"; the paper's {effect['effect']:+.1f} ({effect['source']}"
                 + (": another setting, the direction is tested" if effect.get("direction_only") else "") + ")")
    if c.get("unscaled"):
        u = c["unscaled"]
        line += f"; unscaled (the paper's metric) {u['mean']:+.1f}"
        if u.get("half_width") is not None:
            line += f" [{u['mean'] - u['half_width']:+.1f}, {u['mean'] + u['half_width']:+.1f}]"
    firm = c.get("firm")
    mark = ("" if firm is None else f", {'firm' if firm else 'fragile'} (margin {c['margin']:g})")
    line += f" — **{stated(c)}**{mark}"
    if cannot_decide(c):
        line += "; too small to decide (its MDD exceeds the paper's effect)"
    if c.get("role") == "primary":
        line += " (the primary claim)"
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


#: the README's block at most this many words (issue 52, goal 4: a summary a reader finishes)
README_WORDS = 600


def _generated(summary: dict) -> str:
    git, plan = summary["git"], summary["plan"]
    dirty = "" if not git.get("dirty") else " (working tree had uncommitted changes)"
    n_c = ",".join(str(n) for n in summary["corruptions"]) or "?"
    return (f"Generated by `noisymix reproduce --plan {summary.get('plan_name', '?')}` "
            f"({_description(summary)}) from commit `{(git.get('commit') or 'unknown')[:12]}`{dirty}"
            + _duration(summary) + ": "
            f"{', '.join(LABELS.get(m, m) for m in plan['methods'])} on {plan['dataset']}, "
            f"{plan['model']} width {plan['width']}, {plan['epochs']} epochs"
            + "".join(f", {o.replace('=', ' ')}" for o in plan.get("train_overrides") or ())
            + f", {len(plan['seeds'])} seed(s); the corrupted set has {n_c} corruption(s) × 5 severities.")


def render_readme(summary: dict) -> str:
    """The README's block (issue 52, goal 4; at most ``README_WORDS`` words): the answer in one paragraph,
    one table of the claims, one figure, and where the rest is."""
    from noisymix_app.reproduce.headline import claims_table, opening

    plan = summary["plan"]
    lines = [opening(summary), "", *claims_table(summary), "",
             f"Our runs: {plan['dataset']}, {plan['model']} width {plan['width']}, {plan['epochs']} epochs, "
             f"{len(plan['seeds'])} seeds, commit `{((summary.get('git') or {}).get('commit') or 'unknown')[:12]}`; "
             "differences in points, paired over seeds; the paper's effect from its matching table. Firm / "
             "fragile, MDD and Holm's correction are defined, and every other table (per method, per corruption "
             "group, calibration, the analogue's profile, the published rows, the ablation, theory, toy) is, in "
             "[docs/reproduce-summary.md](docs/reproduce-summary.md) (a run's own: `results/REPORT.md`).", "",
             "![Robust accuracy on corrupted sets: the paper's CIFAR-10-C values beside our digits runs]"
             "(docs/figures/robust_c.png)"]
    return "\n".join(lines) + "\n"


def render(summary: dict) -> str:
    """``SUMMARY.md``, kept as docs/reproduce-summary.md: the answer and the claims table first (as the
    README shows them), the terms, then every claim in detail and the descriptive sections."""
    from noisymix_app.reproduce.claims import analogue_lines, category_lines
    from noisymix_app.reproduce.headline import aims_sentence, calibration_section, claims_table, opening, terms

    plan = summary["plan"]
    margins = margins_of(summary)
    lines = [opening(summary), "", *claims_table(summary), "",
             terms({METRIC_WORDS.get(k, k): v for k, v in margins.items()}), "",
             _generated(summary) + " Our numbers: mean ± 95 % t-interval over seeds (%).", "",
             "| method | clean | corrupted | RMS calibration error, clean test images | "
             "RMS calibration error, corrupted sets |" + (" mean flip probability, perturbed sequences |"
                                                          if _has(summary, "flip_probability") else ""),
             "|---|---:|---:|---:|---:|" + ("---:|" if _has(summary, "flip_probability") else "")]
    for m in (m for m in plan["methods"] if m in summary["table"]):  # plan order (JSON sorts keys)
        row = summary["table"][m]
        lines.append(f"| {LABELS.get(m, m)} | {_fmt(row.get('clean'))} | {_fmt(row.get('corrupted'))} | "
                     f"{_fmt(row.get('rms_calibration_error'))} | {_fmt(row.get('rms_calibration_error_corrupted'))} |"
                     + (f" {_fmt(row.get('flip_probability'))} |" if _has(summary, "flip_probability") else ""))
    lines += ["", "Each claim in detail (paired difference over seeds in points, 95 % t-interval; the verdict stated "
              "is after Holm's correction):", ""]
    lines += [_claim_line(c, margins) for c in summary["claims"]]
    for section in (category_lines(summary), analogue_lines(summary)):
        if section:
            lines += ["", *section]
    aims = aims_sentence(summary)
    if aims:
        lines += ["", aims]
    for section in (calibration_section(summary), calibration_shift_lines(summary.get("calibration_under_shift")),
                    published_lines(summary, summary.get("published_rows")), ablation_lines(summary.get("ablation"))):
        if section:
            lines += ["", *section]
    if summary.get("ran_on") or summary.get("machine"):
        lines += ["", made_on(summary)]
    elif any(c.get("firm") is not None for c in summary["claims"]):
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
    write_text(out / BLOCK, render_readme(summary))
    return summary


def rerender(path: str, root: Path = ROOT, kept: str = "reproduce") -> dict:
    """Re-derive a kept summary (``rederive``) and write it back as docs/KEPT-summary.* (and, for the main
    job's, the README's block, its figures as recorded: the same run's files, unchanged).  No run is redone."""
    record = rederive(_summary_at(path))
    write_json(root / "docs" / f"{kept}-summary.json", record)
    write_text(root / "docs" / f"{kept}-summary.md", render(record))
    if kept == "reproduce":
        write_text(root / "README.md", replace_block((root / "README.md").read_text(), render_readme(record)))
    return record


def _summary_at(where: str) -> dict:
    """A summary.json file, or ``COMMIT:PATH`` of one committed in this repository (``git show``)."""
    if Path(where).is_file() or ":" not in where:  # every malformed file one line naming it (issue 60)
        return read_json_object(Path(where), "a summary.json of noisymix reproduce", {"plan": "object",
                                                                                     "table": "object"})
    import subprocess

    shown = subprocess.run(["git", "show", where], cwd=ROOT, capture_output=True, text=True)
    if shown.returncode:
        raise SystemExit(f"--margins: cannot read {where}: {shown.stderr.strip()}")
    return json.loads(shown.stdout)


def margins_from(sources: list[str] | tuple[str, ...]) -> dict:
    """The cross-machine margins of ``sources`` (summary.json files or COMMIT:PATH), each re-derived by the
    current code with no margins (firmness aside), with the command that remakes them."""
    summaries = [rederive(_summary_at(path), margins={}) for path in sources]
    return {**cross_machine_margins(summaries), "how": "python -m noisymix_app.reproduce.summary --margins "
            + " ".join(sources)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m noisymix_app.reproduce.summary",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="a folder written by `noisymix reproduce`")
    parser.add_argument("--margins", nargs="+", metavar="SUMMARY_JSON",
                        help="write docs/cross-machine-margins.json from these summary.json files or COMMIT:PATH "
                             "of committed ones (the same plan on different CPUs): each metric's largest shift of "
                             "a paired mean, every summary's claims re-derived by the current code "
                             f"(the committed margins: `{MARGINS_COMMAND}`)")
    parser.add_argument("--rerender", metavar="SUMMARY_JSON",
                        help="re-derive a kept summary.json (or COMMIT:PATH) with the current report code and write "
                             "it as docs/reproduce-summary.* and the README's block, without rerunning anything")
    parser.add_argument("--kept", choices=("reproduce", "ablation"), default="reproduce",
                        help="with --rerender: which kept summary it is, docs/KEPT-summary.* (only the main job's, "
                             "reproduce, goes into the README)")
    parser.add_argument("--update-readme", action="store_true",
                        help="copy the summary to docs/reproduce-summary.* and into README.md")
    args = parser.parse_args(argv)
    if args.margins:
        record = margins_from(args.margins)
        write_json(MARGINS, record)
        print(json.dumps(record))
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
