"""Issue 52, goal 5: the main job's report leaves out the replots of the paper's values alone (kept in
`noisymix figures`), and fig:cimages shows all five severities legibly; each tested on what is drawn."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from noisymix_figures import plots, plots_examples
from noisymix_figures.cli import ROBUST_C_VS_R, paper_only
from tests.figures.test_figures import _run

PAPER_ONLY = {ROBUST_C_VS_R, *(f"Accuracy per corruption category ({label})" for label in plots.CATEGORY_FIGURES)}


def test_the_four_paper_only_replots_are_named():
    assert paper_only({}) == PAPER_ONLY and len(PAPER_ONLY) == 4
    # a CIFAR-10 WRN run evaluated on cifar10-c puts ours into its category figure: no longer paper-only
    run = SimpleNamespace(evals={"cifar10-c": {}})
    assert paper_only({("cifar10", "wrn28_4", "noisymix"): [run]}) == PAPER_ONLY - {
        "Accuracy per corruption category (fig:cifar10_wrs_type)"}


def test_the_report_leaves_them_out_and_noisymix_figures_keeps_them(tmp_path):
    from noisymix_app.cli import main

    root = tmp_path / "results"
    _run(root, "d0", "baseline", 0, 0.90, 0.60, dataset="digits")
    _run(root, "d1", "noisymix", 0, 0.91, 0.70, dataset="digits")
    lean, full = tmp_path / "lean", tmp_path / "full"
    assert main(["figures", "--results", str(root), "--out", str(lean), "--no-examples", "--no-paper-only"]) == 0
    assert main(["figures", "--results", str(root), "--out", str(full), "--no-examples"]) == 0
    report = (lean / "REPORT.md").read_text()
    for title in PAPER_ONLY:
        assert f"### {title}" not in report and title in report.split("Left out of this report", 1)[1]
        assert f"### {title}" in (full / "REPORT.md").read_text()
    assert not (lean / "robust_c_vs_r.png").exists() and (full / "robust_c_vs_r.png").exists()
    assert (lean / "robust_c.png").exists()  # ours is in it: kept


def test_the_main_job_asks_for_the_lean_report():
    from noisymix_app.reproduce.plans import PLANS
    from noisymix_app.reproduce.steps import _steps

    _, figures = _steps(PLANS["laptop"], __import__("pathlib").Path("out"), None)
    assert "--no-paper-only" in figures.argv


@pytest.mark.slow
def test_the_corruption_examples_show_all_five_severities_legibly():
    fig = plots_examples.corruption_examples_figure()
    labels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    assert labels == [f"severity {s}" for s in range(1, 6)]
    assert len(fig.axes) == 5 * 16
    width, height = fig.get_size_inches()
    assert width / 16 >= 1.2 and height / 5 >= 1.2  # each panel at least 1.2 inches a side
    assert all(t.get_fontsize() >= 9 for ax in fig.axes for t in [ax.title] if t.get_text())
