"""REPORT.md: what was run, what agrees with the paper and what does not, every table and figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from noisymix_figures.coverage import coverage_section
from noisymix_figures.registry import portable
from noisymix_figures.render import Table
from noisymix_figures.results import Results
from theory.results import checks_of, tally, tally_sentence

__all__ = ["theory_section", "write_report_text"]


def _runs_section(results: Results) -> list[str]:
    lines = ["## What was run", ""]
    if not results.runs:
        return [*lines, "No training runs were found under the results folder.", ""]
    lines += ["| dataset | model | method | seeds | epochs | width | device | suites evaluated |",
              "|---|---|---|---:|---|---|---|---|"]
    for (dataset, model, method), runs in results.groups().items():
        epochs = ",".join(sorted({str(r.config.get("epochs")) for r in runs}))
        widths = ",".join(sorted({str(r.config.get("model_kwargs", {}).get("width", "default")) for r in runs}))
        devices = ",".join(sorted({str(r.config.get("device")) for r in runs}))
        suites = ", ".join(sorted({s for r in runs for s in r.evals}))
        lines.append(f"| {dataset} | {model} | {method} | {len(runs)} | {epochs} | {widths} | {devices} | {suites} |")
    if any(d.startswith("digits") for d, _, _ in results.groups()):  # digits, digits16
        lines += ["", "**Scale.** The digits runs are a *small-scale analogue*: scikit-learn's 8x8 digits "
                  "upscaled to 32x32, a reduced-width PreActResNet-18 and a few epochs on a CPU, evaluated on our "
                  "own Digits-C. They exercise every step of the paper's pipeline; their numbers are not the "
                  "paper's CIFAR numbers and are compared with them only through rankings and signs."]
    return [*lines, ""]


def _agreement(tables: list[Table]) -> list[str]:
    lines = ["## Where we agree with the paper, and where not", ""]
    found = False
    for table in tables:
        if not table.numbers or not any("paper" in c for row in table.numbers.values() for c in row.values()):
            continue
        columns = list(next(iter(table.numbers.values())).keys())
        for col in columns:
            pairs = {row: cells[col] for row, cells in table.numbers.items()
                     if cells.get(col, {}).get("ours") and cells[col].get("paper") is not None}
            if len(pairs) < 2:
                continue
            found = True
            paper = {r: v["paper"] for r, v in pairs.items()}
            ours = {r: v["ours"]["mean"] for r, v in pairs.items()}
            lines.append(f"**{table.title} — {col}** ({len(pairs)} methods with runs)")
            lines.append("")
            higher = not _lower_is_better(table, col)
            rank_p = sorted(paper, key=paper.get, reverse=higher)
            rank_o = sorted(ours, key=ours.get, reverse=higher)
            order = "best first" + ("" if higher else ", lower is better")
            lines.append(f"- ranking ({order}), paper: {' > '.join(rank_p)}")
            lines.append(f"- ranking ({order}), ours:  {' > '.join(rank_o)}")
            rho = spearmanr([rank_p.index(r) for r in pairs], [rank_o.index(r) for r in pairs]).statistic
            lines.append(f"- Spearman rank correlation: {rho:+.2f}; best method agrees: "
                         f"{'yes' if rank_p[0] == rank_o[0] else 'no'}")
            base = next((r for r in pairs if r.lower().startswith("baseline") or r == "----"), None)
            if base:
                for r in pairs:
                    if r == base:
                        continue
                    sp = np.sign(paper[r] - paper[base])
                    verdict = ("the paper shows no difference" if sp == 0 else "the paper's sign on our seeds: "
                               f"**{_sign_verdict(pairs[r]['ours'], pairs[base]['ours'], sp)}**")
                    lines.append(f"- {r} vs {base}: paper {paper[r] - paper[base]:+.1f}, ours "
                                 f"{ours[r] - ours[base]:+.1f} — {verdict}")
            lines.append("")
    if not found:
        lines += ["No paper table has at least two methods with our runs yet; nothing to compare.", ""]
    return lines


def _sign_verdict(ours: dict, base: dict, sign: float) -> str:
    """The paper's sign of a difference checked on our seeds, in the summary's words (one vocabulary
    in every file, issue 40): *holds* when the 95 % t-interval of our difference (paired over the seeds
    both rows ran, as the summary's claims; Welch otherwise) lies on the paper's side of 0, *fails*
    when on the other, *within noise* when it covers
    0; *not enough seeds* with one seed on either side; no verdict (``UNJUDGED``) from a spread of
    zero with no known resolution (a zero spread is rounding, never certainty; ``noisymix_infra.stats``)."""
    from noisymix_infra.stats import UNJUDGED, paired, t_quantile

    a, b = ours.get("values"), base.get("values")
    if not a or not b or len(a) < 2 or len(b) < 2:
        return "not enough seeds"
    sa, sb = ours.get("seeds"), base.get("seeds")
    if sa and sb and None not in sa and None not in sb and len(set(sa) & set(sb)) >= 2:
        # the same seeds on both rows: the paired interval, as the reproduce summary computes it
        d = paired(dict(zip(sa, a, strict=True)), dict(zip(sb, b, strict=True)))
        if d is not None and d.get("half_width") is None:  # no spread to divide by (noisymix_infra.stats)
            return UNJUDGED
        if d is not None and d.get("half_width") is not None:
            lo, hi = sign * d["mean"] - d["half_width"], sign * d["mean"] + d["half_width"]
            return "holds" if lo > 0 else "fails" if hi < 0 else "within noise"
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    diff = sign * (np.mean(a) - np.mean(b))
    se = float(np.sqrt(va + vb))
    if se == 0:
        return UNJUDGED
    df = ((va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if va and vb
          else len(a) + len(b) - 2)
    half = t_quantile(0.975, df) * se
    return "holds" if diff - half > 0 else "fails" if diff + half < 0 else "within noise"


def _lower_is_better(table: Table, column: str) -> bool:
    """Flip rates and probabilities (the -P tables), mCE and calibration errors: lower is better
    (the paper's arrows, where it prints them)."""
    return "↓" in column or "mCE" in column or table.name.startswith(("results_imagenet_p", "results_cifar_p"))


def theory_section(results: Results) -> list[str]:
    if results.theory is None:
        return ["## Theory", "", "No theory.json found (run `noisymix verify`).", ""]
    path, data = results.theory
    try:
        checks = checks_of(data, str(path))
    except ValueError as error:
        return ["## Theory", "", f"Unreadable theory results: {error}", ""]
    lines = ["## Theory (`noisymix verify`)", "",
             f"{tally_sentence(tally(checks))} Details: `{path}` and the theory report "
             "beside it.", ""]
    return lines


def _toy_section(results: Results) -> list[str]:
    if results.toy is None:
        return ["## Toy experiment", "", "No toy.json found (run `noisymix toy`).", ""]
    _, toy = results.toy
    lines = ["## Toy experiment (`noisymix toy`)", "",
             f"{toy['experiment']['seeds']} seeds per scheme (the paper shows one run).", "",
             "| scheme | paper (its one run) | ours (mean ± std over seeds) |", "|---|---:|---:|"]
    from toy.schemes import PAPER_SCHEMES

    order = sorted(toy["schemes"], key=lambda n: (PAPER_SCHEMES.index(n) if n in PAPER_SCHEMES else 99, n))
    for s in (toy["schemes"][n] for n in order):  # the paper's order, not toy.json's alphabetical one
        lines.append(f"| {s['label']} | {100 * s.get('paper_accuracy', float('nan')):.1f} | "
                     f"{100 * s['accuracy']['mean']:.1f} ± {100 * s['accuracy']['std']:.1f} |")
    lines += ["", "Claims of the paper about the toy figure:", ""]
    lines += [f"- {c['statement']} — **{c['verdict']}**" for c in toy.get("claims", [])]
    return [*lines, ""]


def _provenance_line(record: dict[str, Any]) -> str:
    """Which code wrote the report (``noisymix_infra.provenance``): the commit, and whether it was dirty."""
    commit = record.get("commit") or "unknown (not a git checkout)"
    dirty = {True: " (with uncommitted changes)", False: "", None: ""}[record.get("dirty")]
    return f"Written by the code at commit `{commit}`{dirty} on {record.get('written')}."


def write_report_text(results: Results, tables: list[Table], figures: dict[str, Path | None], out: Path,
                      provenance: dict[str, Any] | None = None, left_out: dict[str, str] | None = None) -> str:
    lines = ["# NoisyMix, regenerated", "",
             f"Results folder: `{results.root}`. Tables (Markdown and LaTeX) are in `tables/`, figures in this "
             "folder. Missing runs are shown as —.", ""]
    if provenance is not None:
        lines += [_provenance_line(provenance), ""]
    lines += _runs_section(results) + coverage_section(results, tables, out) + _agreement(tables)
    lines += theory_section(results) + _toy_section(results)
    lines += ["## Figures", ""]
    for title, path in figures.items():
        lines.append(f"### {title}" if path else f"### {title} — not drawn (no data)")
        if path:
            lines += ["", f"![{title}]({path.relative_to(out)})", ""]
    if left_out:
        lines += ["Left out of this report (" + "; ".join(sorted(set(left_out.values()))) + "): "
                  + "; ".join(sorted(left_out)) + ".", ""]
    lines += ["## Tables", ""]
    for table in tables:
        tex = f"tables/{portable(table.name)}.tex"
        lines += [table.markdown(), f"LaTeX: [{tex}]({tex})", ""]
    if results.problems:
        lines += ["## Warnings", ""] + [f"- {p}" for p in results.problems] + [""]
    return "\n".join(lines)
