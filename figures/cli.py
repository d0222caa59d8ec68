"""``noisymix figures --results DIR --out DIR``: the paper's tables and figures from result files."""

from __future__ import annotations

import argparse
from pathlib import Path

from noisymix_figures import calibration_severity, plots, plots_examples
from noisymix_figures.calibration_shift import calibration_shift
from noisymix_figures.coverage import retitle
from noisymix_figures.registry import portable
from noisymix_figures.report import write_report_text
from noisymix_figures.results import collect
from noisymix_figures.tables import build_tables
from noisymix_infra.folder_kind import KINDS, check_claim, claim_folder, folder_kind
from noisymix_infra.io import printable, write_text
from noisymix_infra.progress import progress
from noisymix_infra.provenance import provenance

__all__ = ["add_arguments", "make_figures", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", required=True, help="folder with run directories, theory.json, toy.json")
    parser.add_argument("--out", required=True, help="where tables/, the PNGs and REPORT.md go")
    parser.add_argument("--no-examples", action="store_true", help="skip the corruption example figure")
    parser.add_argument("--no-paper-only", action="store_true",
                        help="leave out the figures that would draw the paper's values only (no run of ours in "
                             "them: the per-category figures of settings not run, ImageNet-C vs -R); `noisymix "
                             "reproduce` passes it, so its report shows what it ran (issue 52)")


def paper_only(groups: dict) -> set[str]:
    """The figure titles of ``make_figures`` that would draw only the paper's values from ``groups``: a
    per-category figure without runs of its (data set, model) and ImageNet-C vs -R without ImageNet runs
    evaluated on both (issue 52: four such replots filled the main job's report)."""
    left = set()
    for label, (_, dataset, model, _) in plots.CATEGORY_FIGURES.items():
        suite = f"{dataset}-c"
        if not any((d, m) == (dataset, model) and any(suite in r.evals for r in runs)
                   for (d, m, _), runs in groups.items()):
            left.add(f"Accuracy per corruption category ({label})")
    if not plots.imagenet_points(groups):
        left.add(ROBUST_C_VS_R)
    return left


ROBUST_C_VS_R = "ImageNet-C vs ImageNet-R (fig:robustCvsR)"


def make_figures(results_dir: str | Path, out: str | Path, *, examples: bool = True,
                 paper_only_figures: bool = True) -> Path:
    out = Path(out)
    # a report folder of its own, refused in one line when it is a run, a -C/-P set, a sweep or a reproduce
    # folder (issue 32), or the results folder itself (issue 41), before anything is read or written;
    # `reproduce` writes into its OUT/figures
    check_claim(out, "figures")
    if Path(results_dir).is_dir() and Path(results_dir).resolve().is_relative_to(out.resolve()):
        what = "is" if Path(results_dir).resolve() == out.resolve() else "holds"
        raise ValueError(f"--out {printable(str(out))} {what} the --results folder: give the report a folder "
                         "of its own")
    if Path(results_dir).is_dir():
        found = folder_kind(results_dir)
        if found in ("c-set", "p-set", "figures"):
            raise ValueError(f"--results {printable(str(results_dir))} is {KINDS[found]}, not a folder of results")
    results = collect(results_dir)  # inputs first: a missing --results creates no --out (issue 41)
    if not (results.runs or results.theory or results.toy):
        raise ValueError(f"--results {printable(str(results_dir))} holds no results (no run's config.json, "
                         "theory.json or toy.json): nothing to report")
    groups = results.groups()
    tables = build_tables(groups)
    claim_folder(out, "figures")
    jobs = {
        "Robust accuracy on corrupted sets (fig:robust10vs100)":
            lambda: plots.robust_c_bars(groups, out / "robust_c.png"),
        "Accuracy per corruption category, every -C set of ours and two of the paper's":
            lambda: plots.category_bars(groups, out / "categories.png"),
        **{f"Accuracy per corruption category ({label})":
           (lambda label=label: plots.category_figure(groups, label, out / f"{portable(label)}.png"))
           for label in plots.CATEGORY_FIGURES},
        ROBUST_C_VS_R: lambda: plots.robust_c_vs_r(groups, out / "robust_c_vs_r.png"),
        "Accuracy and calibration per corruption severity (ours; issue 31)":
            lambda: calibration_severity.calibration_by_severity(groups, out / "calibration_by_severity.png"),
        "Reliability under shift: clean vs severity 5, before and after the clean-fitted temperature (issue 46)":
            lambda: calibration_shift(groups, out / "calibration_shift.png"),
        "Toy accuracies, ours vs the paper (fig:toy_example)":
            lambda: plots_examples.toy_bars(results.toy[1], out / "toy_accuracy.png") if results.toy else None,
        "Toy decision boundaries (fig:toy_example)":
            lambda: plots_examples.copy_figure(results.toy[0].parent / "decision_boundaries.png",
                                      out / "toy_decision_boundaries.png") if results.toy else None,
        "Toy data (fig:toy_data)":
            lambda: plots_examples.copy_figure(results.toy[0].parent / "toy_data.png", out / "toy_data.png")
            if results.toy else None,
        "Theory: residual convergence": lambda: plots_examples.copy_figure(results.theory[0].parent / "convergence.png",
                                                                  out / "theory_convergence.png")
            if results.theory else None,
    }
    if examples:
        jobs["Digits-C: the 15 corruptions on a test digit (fig:cimages)"] = lambda: plots_examples.corruption_examples(
            out / "corruption_examples.png", shown=plots_examples.examples_set(results))
    left_out = {} if paper_only_figures else {
        title: "the paper's values only, no run of ours in it: `noisymix figures --results DIR --out DIR` draws it"
        for title in paper_only(groups) if title in jobs}
    for title in left_out:
        del jobs[title]
    figures = {}
    for title in progress(list(jobs), desc="figures", unit="figure"):
        try:
            figures[title] = jobs[title]()
        except (KeyError, ValueError, TypeError) as error:  # partial results must not stop the report
            results.problems.append(f"figure '{title}' not drawn: {type(error).__name__}: {error}")
            figures[title] = None
    # the tables after the figures: each heading says what fills it, from the label's one account
    # (``noisymix_figures.coverage.account``), which reads the figures drawn (issue 48)
    retitle(tables, results, out)
    for table in tables:
        write_text(out / "tables" / f"{portable(table.name)}.md", table.markdown())
        write_text(out / "tables" / f"{portable(table.name)}.tex", table.latex())
    write_text(out / "REPORT.md", write_report_text(results, tables, figures, out, provenance(), left_out=left_out))
    return out / "REPORT.md"


def run(args: argparse.Namespace) -> int:
    report = make_figures(args.results, args.out, examples=not args.no_examples,
                          paper_only_figures=not args.no_paper_only)
    print(f"wrote {report}")
    return 0
