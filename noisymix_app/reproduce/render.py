"""The words of a reproduce summary (``noisymix_app.reproduce.summary``'s record): ``SUMMARY.md`` (``render``),
the README's block (``render_readme``) and their sections: each claim in detail, the seeds pooled, the paper's
sentences not testable here, where the numbers come from, the corruption groups."""

from __future__ import annotations

from fullscale.vocabulary import CATEGORIES
from noisymix_app.reproduce.margins import fragile_note, made_commits, made_on
from noisymix_app.reproduce.report_ablation import ablation_lines
from noisymix_app.reproduce.report_calibration import calibration_shift_lines
from noisymix_app.reproduce.report_published import published_lines
from noisymix_app.reproduce.words import AGAINST_PAPER, MARKS, interval_text, label, level_text
from theory.results import tally_sentence

__all__ = ["render", "render_readme"]


def _fmt(cell: dict | None) -> str:
    if not cell:
        return "—"
    if cell["half_width"] is None:
        return f"{cell['mean']:.1f} (1 seed)"
    return f"{cell['mean']:.1f} ± {cell['half_width']:.1f}"


def _p(p: float | None) -> str:
    return "—" if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}"


def _claim_line(c: dict) -> str:
    """One claim in detail: the quote and its source, the paper's number and setting, ours with its interval at the
    verdict's level, p before and after Holm, the MDD at 5 % / m, the verdict, its mark and where the paper's number
    lies."""
    d = c.get("difference")
    head = f"- **{c['statement']}**" + (" (primary)" if c["role"] == "primary" else "") + f" [{c['family']}]"
    number = ("none, direction only" if c["paper"] is None
              else f"{c['paper']:+.1f} points ({c['table']}, {c['column']}: {' minus '.join(c['rows'])})")
    source = (f" The paper ({c['where']}): \"{c['quote']}\" Its number: {number}; its setting: {c['setting']}"
              + ("" if c["matching"] else ", another, so only the direction is tested") + ".")
    if d is None:
        return head + ": not measured (no paired runs)." + source
    line = f"{head}: {level_text(c)} (the paper's metric: {c['paper_metric'].split(',')[0]}; ours: `{c['metric']}`)"
    if c.get("p") is not None:
        line += f"; p {_p(c['p'])}" + ("" if c["role"] == "primary" else f", after Holm {_p(c['p_adjusted'])}")
    if c.get("mdd") is not None:
        line += f"; MDD {c['mdd']:.1f} at level {c['level']:.3g}"
    line += f" — **{c['verdict']}**, {MARKS[c.get('firm')]}"
    if c.get("against_paper"):
        line += f"; {AGAINST_PAPER[c['against_paper']]}"
    return line + "." + source


def _pooled_lines(pooled: dict | None) -> list[str]:
    """Which committed runs each claim's seeds come from (issue 63, goal 1)."""
    if not pooled or not pooled.get("sources"):
        return []
    text = ("Seeds pooled: this job's own runs with " + "; ".join(
        f"`docs/pooled/{s['file']}` (plan {s['plan']}, seeds {s['seeds'][0]}–{s['seeds'][-1]})"
        for s in pooled["sources"])
        + ", runs of the same recipe on the same sets, no seed counted twice ("
        + ", ".join(f"{label(m)} {len(v)}" for m, v in sorted(pooled["seeds"].items())) + " seeds)")
    skipped = [f"`{s['file']}` ({s['why']})" for s in pooled.get("not_pooled") or []
               if s["why"] != "its own plan's runs"]
    return [" " + text + ("; not pooled: " + ", ".join(skipped) if skipped else "") + "."]


def _untested_lines() -> list[str]:
    """The paper's comparative sentences not decided here, each with its reason (issue 63, goal 4)."""
    from noisymix_figures.paper import not_testable

    return ["**Not testable here** (the paper's other comparative sentences, `figures/paper_claims.json`):", "",
            *(f"- \"{e['quote']}\" ({e['where']}): {e['reason']}." for e in not_testable())]


def _generated(summary: dict) -> str:
    """Where the numbers come from: the plan, the commits the runs were made at and the one that rendered
    them, and the job's time as what it is (issue 57, goal 7)."""
    plan, git = summary["plan"], summary.get("git") or {}
    commits = made_commits(summary)
    text = (f"`noisymix reproduce --plan {summary.get('plan_name', '?')}`: {plan['dataset']}, {plan['model']} width "
            f"{plan['width']}, {plan['epochs']} epochs, {len(plan['seeds'])} seeds; runs made at "
            + (", ".join(f"`{c[:12]}`" for c in commits) or "an unrecorded commit")
            + f", rendered at `{(git.get('commit') or 'unknown')[:12]}`"
            + (" (with uncommitted changes)" if git.get("dirty") else ""))
    if summary.get("wall_seconds"):
        text += f"; {summary['wall_seconds'] / 60:.1f} min wall"
    if summary.get("seconds"):
        text += f" ({summary['seconds'] / 60:.1f} min summed over steps that ran side by side)"
    sources = (summary.get("pooled") or {}).get("sources") or []
    if sources:  # the claims' other seeds: runs of the same recipe and sets, each plan's own file
        text += ("; pooled with " + ", ".join(
            f"`docs/pooled/{s['file']}` (seeds {s['seeds'][0]}–{s['seeds'][-1]}, made at "
            + ", ".join(f"`{c[:12]}`" for c in s.get("made_at") or []) + ")" for s in sources))
    return text + "."


def render_readme(summary: dict) -> str:
    """The README's block (issue 57, goal 7): the answer in one paragraph, one table of the claims, where the
    numbers come from, one figure; every term defined where first used."""
    from noisymix_app.reproduce.headline import claims_table, opening

    lines = [opening(summary, brief=True), "", *claims_table(summary), "",
             "Ours: NoisyMix minus the other, paired over seeds (points; positive: NoisyMix better); the paper's: the "
             "same difference in its table (*direction only*: a setting the digits do not stand for). "
             + _generated(summary) + " The claims with their quotes and every other table: "
             "[docs/reproduce-summary.md](docs/reproduce-summary.md).", "",
             "![The paper's CIFAR-10-C accuracies beside ours on Digits-C, and each paired difference]"
             "(docs/figures/robust_c.png)"]
    return "\n".join(lines) + "\n"


def render(summary: dict) -> str:
    """``SUMMARY.md``, kept as docs/reproduce-summary.md: the answer and the claims table first (as the
    README shows them), then every claim in detail and the descriptive sections."""
    from noisymix_app.analogue.fidelity import lines as fidelity_lines
    from noisymix_app.reproduce.headline import aims_sentence, calibration_section, claims_table, opening
    from noisymix_app.reproduce.report_ablation import ablation_answer, is_ablation

    plan = summary["plan"]
    flips = any("flip_probability" in row for row in summary["table"].values())
    head = " ".join(ablation_answer(summary)) if is_ablation(summary) else opening(summary)
    eight = claims_table(summary, "eight-method") if summary.get("family") == "main" else []
    lines = [head, "", *claims_table(summary, summary.get("family") or "main"), "",
             *(["The paper's claims about Mixup, Manifold Mixup, CutMix and Puzzle Mix (the eight-method family, "
                "its own Holm family, on every pooled seed of each pair):", "", *eight, ""] if eight else []),
             _generated(summary), "",
             "Ours: mean ± 95 % t-interval over seeds (%).", "",
             "| method | clean | corrupted | RMS calibration error, corrupted | AURRA, corrupted |"
             + (" mean flip probability |" if flips else ""), "|---|---:|---:|---:|---:|" + ("---:|" if flips else "")]
    for m in (m for m in plan["methods"] if m in summary["table"]):  # plan order (JSON sorts keys)
        row = summary["table"][m]
        lines.append(f"| {label(m)} | {_fmt(row.get('clean'))} | {_fmt(row.get('corrupted'))} | "
                     f"{_fmt(row.get('rms_calibration_error_corrupted'))} | {_fmt(row.get('aurra_corrupted'))} |"
                     + (f" {_fmt(row.get('flip_probability'))} |" if flips else ""))
    families = list(dict.fromkeys(c.get("family", "main") for c in summary["claims"])) or [summary.get("family")]
    lines += ["", f"**The claims in detail** (`figures/paper_claims.json`, the {' and the '.join(families)} "
              "famil" + ("ies" if len(families) > 1 else "y") + "). Each paired difference is tested two-sided "
              "against 0 by a paired t-test whose spread is the sd over seeds, at least one test image's worth (so a "
              "difference the images cannot resolve is not read as certainty); the primary claim alone at 5 %, each "
              "family's others with Holm's correction; each interval is at the level its verdict was reached (1 − 5 % "
              "p / p after Holm: it holds 0 exactly where the verdict is within noise); the MDD (80 % power, "
              "noncentral t) is at 5 % / m; *too small to decide*: within noise with the paper's effect, where it is "
              "one of the analogue's setting, inside that interval too.", *_pooled_lines(summary.get("pooled")), ""]
    lines += [_claim_line(c) for c in summary["claims"]]
    described = [c for c in summary.get("descriptive") or [] if c.get("difference")]
    if described:
        lines += ["", "**Described, not claimed** (the paper's tables show these, its text does not claim them; "
                  "intervals only, outside the family): "
                  + "; ".join(f"{c['statement']}: {interval_text(c['difference'])}"
                              + (" (both inside the estimator's noise floor)" if c.get("within_floor") else "")
                              for c in described) + "."]
    for section in (_untested_lines() if summary.get("family") == "main" else [], _category_lines(summary),
                    fidelity_lines(summary.get("fidelity")),
                    [aims] if (aims := aims_sentence(summary)) else [], calibration_section(summary),
                    calibration_shift_lines(summary.get("calibration_under_shift")),
                    published_lines(summary, summary.get("published_rows")),
                    ablation_lines(summary.get("ablation"), summary.get("sets"))):
        if section:
            lines += ["", *section]
    lines += ["", made_on(summary) if summary.get("ran_on") else fragile_note(summary)]
    if summary.get("theory"):
        lines += ["", f"Theory (`noisymix verify`): {tally_sentence(summary['theory'])}"]
    if summary.get("toy"):
        toy = summary["toy"]
        lines += ["", f"Toy experiment (`noisymix toy`, {toy['seeds']} seeds): "
                  + "; ".join(f"{c['statement']} — **{c['verdict']}**" for c in toy["claims"]) + ". Test accuracy "
                  "(%), ours (mean over seeds) and the paper's single run (fig:toy_example): "
                  + "; ".join(f"{r['label']} {r['ours']:.1f}" + ("" if r.get("paper") is None
                                                                 else f" (paper {r['paper']:.1f})")
                              for r in toy.get("accuracy") or []) + "."]
    return "\n".join(lines) + "\n"


def _category_lines(summary: dict) -> list[str]:
    """Which corruption groups carry NoisyMix's gain over Baseline and over AugMix (descriptive)."""
    rows = summary.get("categories") or []
    if not rows:
        return []
    against = [a for a in ("baseline", "augmix_jsd") if any(r["against"] == a for r in rows)]
    by = {(r["category"], r["against"]): r for r in rows}
    lines = ["**Where the gain comes from** (mean corrupted accuracy per corruption group, NoisyMix minus the other, "
             f"points, paired over seeds; Holm's correction over these {len(rows)} comparisons; described, not "
             "claimed):", "", "| group | " + " | ".join(f"NoisyMix − {label(a)}" for a in against) + " |",
             "|---|" + "---|" * len(against)]
    for category in (c for c in CATEGORIES if any((c, a) in by for a in against)):
        cells = [by.get((category, a)) for a in against]
        lines.append(f"| {category} | " + " | ".join(
            "—" if r is None else f"{interval_text(r['difference'])} {r.get('verdict_adjusted') or ''}".strip()
            for r in cells) + " |")
    return lines
