"""Issue 48, "the report a reader meets": what a reader of each figure needs is in the figure itself —
titles, axis labels, a legend outside the data, one colour per method across all figures (classes in
none of them), a cut y-axis marked, the theory's claims drawn as bounds — and one account per paper
label, shared by the label-by-label table and the tables' headings.  Each figure is built as a
matplotlib Figure (``*_figure`` / ``*_plot``), so nothing is rendered to a file here."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pytest
import torch

from fullscale.vocabulary import CATEGORIES, CORRUPTIONS
from noisymix_figures import plots, plots_examples
from noisymix_figures.methods import ALIASES, method_color, method_colors
from noisymix_figures.results import collect
from noisymix_infra.io import write_json

TOY = json.loads((Path(__file__).parent / "toy_fixture.json").read_text())


def _run(root: Path, name: str, seed: int, method: str, acc: float) -> Path:
    """A digits run with a -C evaluation (every corruption at ``acc``) and per-severity calibration."""
    run = root / name
    write_json(run / "config.json", {"config": {"method": method, "model": "preactresnet18", "dataset": "digits",
                                                "seed": seed, "epochs": 3}, "run": {"num_classes": 10}})
    (run / "final.pt").write_bytes(f"weights of {name}".encode())
    write_json(run / "eval" / "clean.json", {"suite": "clean", "complete": True, "summary": {"accuracy": 0.9},
                                             "results": {"clean": {"accuracy": 0.9, "n": 10}}})
    per_severity = {str(s): {"rms_calibration_error": 0.1, "confidence_gap": 0.02} for s in range(1, 6)}
    write_json(run / "eval" / "digits-c.json", {
        "suite": "digits-c", "complete": True,
        "results": {c: {str(s): {"accuracy": acc, "n": 10} for s in range(1, 6)} for c in CORRUPTIONS},
        "summary": {"mean_accuracy": acc, "clean_accuracy": 0.9, "per_corruption": dict.fromkeys(CORRUPTIONS, acc),
                    "per_category": dict.fromkeys(CATEGORIES, acc), "n_corruptions": len(CORRUPTIONS),
                    "calibration": {"per_severity": per_severity}}})
    return run


@pytest.fixture(scope="module")
def groups(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for seed, (b, n) in enumerate(((0.80, 0.90), (0.82, 0.93))):
        _run(root, f"b{seed}", seed, "baseline", b)
        _run(root, f"n{seed}", seed, "noisymix", n)
    return collect(root).groups()


def _legend_outside(fig, ax) -> bool:
    """Whether ``ax``'s legend (or the figure's) lies outside ``ax``'s data area."""
    fig.canvas.draw()
    legend = ax.get_legend() or (fig.legends[0] if fig.legends else None)
    assert legend is not None, "no legend"
    box, area = legend.get_window_extent(), ax.get_window_extent()
    return not box.overlaps(area)


def _y_axis_honest(ax) -> bool:
    """A bar axis starts at 0, or its cut is drawn on it and named in its label."""
    if ax.get_ylim()[0] == 0:
        return True
    marks = [line for line in ax.get_lines() if line.get_gid() == plots.AXIS_BREAK]
    return bool(marks) and "axis cut" in ax.get_ylabel()


# ------------------------------------------------------------------------------ the colour registry

def test_one_colour_per_method_and_none_shared():
    colors = {name: mcolors.to_rgb(c) for name, c in method_colors().items()}
    for a in colors:
        for b in colors:
            if a < b:  # two methods a reader must tell apart: at least a visible step in RGB
                assert np.linalg.norm(np.subtract(colors[a], colors[b])) > 0.1, (a, b)
    # every row name of the paper drawn in a figure has a colour, its aliases the method's own
    rows = {name for label in ("tab:results_cifar10", "tab:results_imagenet", "tab:results_imagenet_c",
                               "fig:toy_example")
            for name in dict(json.loads((Path(plots.__file__).with_name("paper_values.json")).read_text())[label]
                             ["rows"])}
    assert all(method_color(name) for name in rows), [n for n in rows if not method_color(n)]
    assert all(method_color(alias) == method_colors()[name] for alias, name in ALIASES.items())


def test_toy_classes_use_no_method_colour():
    from toy.plots import CLASS_COLORS

    for cls in CLASS_COLORS:
        for name, color in method_colors().items():
            distance = np.linalg.norm(np.subtract(mcolors.to_rgb(cls), mcolors.to_rgb(color)))
            assert distance > 0.3, f"class colour {cls} is close to {name}'s {color}"


# ------------------------------------------------------------------------------ one test per figure

def test_category_figures_share_one_axis_and_keep_their_legends_outside(groups):
    figures = [plots.category_bars_figure(groups), plots.category_plot(groups, "fig:cifar10_wrs_type")[0]]
    for fig in figures:
        bars = [ax for ax in fig.axes if ax.patches]
        assert len({ax.get_ylim() for ax in bars}) == 1
        for ax in bars:
            assert ax.get_title() and ax.get_ylabel() and _y_axis_honest(ax) and _legend_outside(fig, ax)
            for patch, text in zip(ax.get_legend().get_patches(), ax.get_legend().get_texts(), strict=True):
                assert mcolors.to_rgb(patch.get_facecolor()) == mcolors.to_rgb(method_color(text.get_text()))


def test_the_category_figure_draws_the_resnet18_table_with_nfm(groups):
    """Issue 52: `categories` drew the paper's WRN rows and left NFM out; its paper CIFAR-10-C panel is the
    ResNet-18 table our claims are held against, with the main job's four methods."""
    from noisymix_figures.paper import paper_values

    fig = plots.category_bars_figure(groups)
    cifar = next(ax for ax in fig.axes if ax.get_title().startswith("paper CIFAR-10-C"))
    assert "ResNet-18" in cifar.get_title() and "WRN" not in cifar.get_title()
    names = [t.get_text() for t in cifar.get_legend().get_texts()]
    assert names == ["Baseline", "NFM", "AugMix", "NoisyMix"]
    rows = dict(paper_values()["tab:results_cifar10_c"]["rows"])
    noise = float(np.mean(rows["NFM"][:3]))  # the noise group: gaussian, shot, impulse
    nfm_bars = cifar.containers[1]
    assert nfm_bars[0].get_height() == pytest.approx(noise)


def test_calibration_figure_has_a_title_that_names_its_error_bars(groups):
    from noisymix_figures.calibration_severity import calibration_figure

    fig, _ = calibration_figure(groups)
    assert "error bars" in fig.get_suptitle() and "95 %" in fig.get_suptitle()
    for ax in fig.axes:
        assert ax.get_title() and ax.get_ylabel() and ax.get_xlabel()
    assert _legend_outside(fig, fig.axes[1])
    for ax in fig.axes:
        for line in ax.get_lines():
            if not line.get_label().startswith("_"):
                assert mcolors.to_rgb(line.get_color()) == mcolors.to_rgb(method_color(line.get_label()))


def test_robust_c_vs_r_legend_outside_and_method_colours():
    fig, _ = plots.robust_c_vs_r_figure({})
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel() and _legend_outside(fig, ax)
    for handle, text in zip(ax.get_legend().legend_handles, ax.get_legend().get_texts(), strict=True):
        name = text.get_text().split(" (")[0]
        assert mcolors.to_rgb(handle.get_facecolor()[0]) == mcolors.to_rgb(method_color(name)), name


def test_toy_bars_colour_each_scheme_as_its_method_and_say_paper_from_ours():
    fig = plots_examples.toy_bars_figure(TOY)
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_ylabel() and _y_axis_honest(ax) and _legend_outside(fig, ax)
    legend = " | ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert "paper" in legend and "ours" in legend
    for handle in ax.get_legend().legend_handles:  # the legend's swatches: in no method's colour
        assert mcolors.to_hex(handle.get_facecolor()) not in {mcolors.to_hex(c) for c in method_colors().values()}
    labels = [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()]
    n = len(labels)
    for k, label in enumerate(labels):  # the paper's bar, then ours: both in the scheme's method colour
        for patch in (ax.patches[k], ax.patches[n + k]):
            assert mcolors.to_rgb(patch.get_facecolor()) == mcolors.to_rgb(method_color(label)), label


def test_decision_boundaries_have_a_colour_bar_ticks_and_a_legend():
    from toy.data import make_toy_data
    from toy.plots import CLASS_COLORS, boundaries_figure

    data = make_toy_data(generator=torch.Generator().manual_seed(0))
    axis = np.linspace(-2, 2, 9)
    fields = np.tile(np.linspace(0, 1, 9), (4, 9, 1))
    fig = boundaries_figure(fields, axis, data, ["a", "b", "c", "d"], limit=2.0, suptitle="s", ncols=2)
    panels = [ax for ax in fig.axes if ax.get_title()]
    bars = [ax for ax in fig.axes if ax not in panels]
    assert len(panels) == 4 and len(bars) == 1 and "p(class 1 | x)" in bars[0].get_ylabel()
    fig.canvas.draw()
    for ax in panels:
        assert [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert {ax.get_xlabel() for ax in panels[2:]} == {"x1"} and {ax.get_ylabel() for ax in panels[::2]} == {"x2"}
    colors = {mcolors.to_hex(h.get_color()) for h in fig.legends[0].legend_handles}
    assert {mcolors.to_hex(c) for c in CLASS_COLORS} <= colors


# ------------------------------------------------------------------------------ the theory figure

def _check(term, form, verdict, slope, residuals, expected, **extra):
    from theory.checks import Check

    return Check(id="prop1", statement="", form=form, term=term, kind="expansion", verdict=verdict, detail="",
                 conditions="", eps=[0.1, 0.01, 0.001], residuals=residuals, residual_slope=slope,
                 expected_slope=expected, extra=extra)


def test_a_remainder_claim_is_drawn_as_a_bound_of_its_kind():
    from theory.report import claim_of, convergence_fig

    o3 = _check("expansion", "as_printed", "fails", 3.0, [1e-3, 1e-6, 1e-9], 4.0,
                erratum="o(eps^3)", erratum_kind="wrong order", claimed_remainder="o(eps^3)")
    big_o = _check("R1", "as_printed", "fails", 1.0, [1e-2, 1e-3, 1e-4], 2.0, erratum="R1", erratum_kind="wrong term")
    holds = [_check("R2", "as_printed", "holds", 3.0, [v * k for v in (1e-3, 1e-6, 1e-9)], 3.0) for k in (1, 2, 3)]
    assert claim_of(o3) == (3.0, True) and claim_of(big_o) == (2.0, False) and claim_of(holds[0]) == (3.0, False)
    fig = convergence_fig([o3, big_o, *holds])
    ax = fig.axes[0]
    labels = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
    bound = labels["claim: slope > 3 (o(eps^3))"]  # o(eps^3): above 3, not "slope 4"
    x, y = bound.get_data()
    assert np.polyfit(np.log(x), np.log(y), 1)[0] == pytest.approx(3.0)
    assert "claim: slope ≥ 2 (O(eps^2))" in labels and "claim: slope ≥ 3 (O(eps^3))" in labels
    # each failing term its own line; the three that hold one band
    assert any("fails: expansion" in k for k in labels) and any("fails: R1" in k for k in labels)
    assert sum("holds" in k for k in labels) == 1
    assert _legend_outside(fig, ax) and ax.get_xlabel() and ax.get_ylabel()
    assert "wrong order" in ax.get_title() and "wrong term" in ax.get_title()


# ------------------------------------------------------------------------------ label accounting

def _results(root: Path) -> Path:
    """Four digits methods (the main job's: 4 of tab:ablation's 10 rows) and a toy result."""
    import shutil

    from PIL import Image

    for seed in (0, 1):
        for method, acc in (("baseline", 0.8), ("augmix_jsd", 0.9), ("nfm", 0.85), ("noisymix", 0.92)):
            _run(root, f"{method}{seed}", seed, method, acc)
    toy = root / "toy"
    toy.mkdir()
    shutil.copyfile(Path(__file__).parent / "toy_fixture.json", toy / "toy.json")
    for png in ("toy_data.png", "decision_boundaries.png"):
        Image.new("RGB", (8, 8)).save(toy / png)
    return root


def test_one_account_per_label_heads_its_tables_and_its_line(tmp_path):
    from noisymix_app.cli import main

    out = tmp_path / "out"
    assert main(["figures", "--results", str(_results(tmp_path / "results")), "--out", str(out),
                 "--no-examples"]) == 0
    report = (out / "REPORT.md").read_text()
    line = {ln.split("|")[1].strip(" `"): ln for ln in report.splitlines() if ln.startswith("| `")}
    # fig:toy_example: filled in the table, and its paper values headed with what draws ours, not "no runs"
    assert "**filled**" in line["fig:toy_example"]
    assert "no matching runs" not in (out / "tables" / "toy_example.md").read_text()
    assert "### fig:toy_example (paper values; ours: `toy_accuracy.png`" in report
    # the ablation analogue: headed with what fills it (the four methods run here), not `--plan ablation`
    ablation = (out / "tables" / "ablation_digits_analogue.md").read_text().splitlines()[0]
    assert "--plan ablation" not in ablation and "4 of 10 rows filled by these results" in ablation, ablation
    assert "only its small-scale analogue is filled: 4 row(s)" in line["tab:ablation"]
    # the figures that are analogues of a label are credited to it
    assert "`categories.png`" in line["fig:imagenet_type"]
    assert "`categories.png`" not in line["fig:cifar10_wrs_type"]  # its CIFAR panel is the ResNet-18's (issue 52)
    assert "`calibration_by_severity.png`" in line["tab:results_imagenet_r_calibration"]


def test_the_status_and_the_table_line_come_from_one_account(tmp_path):
    from noisymix_figures.coverage import LABELS, account, label_status

    results = collect(_results(tmp_path / "r"))
    for entry in LABELS.values():
        found = account(entry, results, [], tmp_path)
        assert label_status(entry, results, [], tmp_path) == (found.filled, found.status)
