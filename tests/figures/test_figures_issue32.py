"""Issue 32 on `noisymix figures`: seeds pooled only over one set, unreadable files named, the
report folder claimed, and the figures' error bars, failing lines and legends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from fullscale.vocabulary import CATEGORIES, CORRUPTIONS
from noisymix_app.cli import main
from noisymix_infra.folder_kind import folder_kind
from noisymix_infra.io import write_json


def _c_eval(acc: float, names=CORRUPTIONS, fingerprint: str | None = None) -> dict:
    per = {c: acc for c in names}
    cats = {k: acc for k, v in CATEGORIES.items() if any(c in per for c in v)}
    record = {"suite": "digits-c", "complete": True,
              "results": {c: {str(s): {"accuracy": acc, "n": 10} for s in range(1, 6)} for c in names},
              "summary": {"mean_accuracy": acc, "per_corruption": per, "per_category": cats,
                          "n_corruptions": len(per)}}
    if fingerprint is not None:
        record["data_fingerprint"] = fingerprint
    return record


def _run(root: Path, name: str, seed: int, c_eval: dict | None, method: str = "baseline") -> Path:
    run = root / name
    write_json(run / "config.json", {"config": {"method": method, "model": "preactresnet18", "dataset": "digits",
                                                "seed": seed, "epochs": 3}, "run": {"num_classes": 10}})
    (run / "final.pt").write_bytes(f"weights of {name}".encode())  # distinct: seeds are counted by weights
    write_json(run / "eval" / "clean.json", {"suite": "clean", "complete": True, "summary": {"accuracy": 0.9},
                                             "results": {"clean": {"accuracy": 0.9, "n": 10}}})
    if c_eval is not None:
        write_json(run / "eval" / "digits-c.json", c_eval)
    return run


@pytest.mark.parametrize("odd", [
    _c_eval(0.10, names=CORRUPTIONS[:13]),                      # another corruption count
    _c_eval(0.10, fingerprint="sha256:other"),                  # the same names, another set's files
])
def test_seeds_evaluated_on_another_set_are_not_pooled(tmp_path, odd):
    """A -C mean over 13 corruptions (or over another Digits-C of the same names) is not a seed of a
    mean over the 15: it is left out of the cell and named in the report, not averaged silently."""
    from noisymix_figures.results import collect

    root = tmp_path / "runs"
    _run(root, "s0", 0, _c_eval(0.80, fingerprint="sha256:same"))
    _run(root, "s1", 1, _c_eval(0.70, fingerprint="sha256:same"))
    _run(root, "s2", 2, odd)
    results = collect(root)
    (runs,) = results.groups().values()
    pooled = [r.evals["digits-c"]["summary"]["mean_accuracy"] for r in runs if "digits-c" in r.evals]
    assert sorted(pooled) == [0.70, 0.80]
    assert all("clean" in r.evals for r in runs)  # only the suite on another set is left out
    notes = [p for p in results.problems if "digits-c" in p]
    assert len(notes) == 1 and "s2" in notes[0] and "left out" in notes[0], results.problems

    assert main(["figures", "--results", str(root), "--out", str(tmp_path / "report"), "--no-examples"]) == 0
    report = (tmp_path / "report" / "REPORT.md").read_text()
    assert "s2" in report and "left out" in report


def test_a_metrics_file_that_is_not_utf8_is_named(tmp_path, capsys):
    from fullscale.runs import read_metrics
    from noisymix_figures.results import collect

    run = _run(tmp_path / "runs", "s0", 0, None)
    (run / "metrics.jsonl").write_bytes(b'{"epoch": 1, "note": "\xff\xfe"}\n')
    with pytest.raises(ValueError) as error:
        read_metrics(run)
    assert "metrics.jsonl" in str(error.value) and "\n" not in str(error.value)
    problems = collect(tmp_path / "runs").problems  # no bare codec error: the file is named
    assert any("metrics.jsonl" in p and "\n" not in p for p in problems), problems
    (run / "eval" / "clean.json").write_bytes(b'{"suite": "\xff"}')
    problems = collect(tmp_path / "runs").problems
    assert any("clean.json" in p for p in problems), problems


def test_the_report_folder_is_claimed_and_a_run_folder_refused(tmp_path, capsys):
    root = tmp_path / "runs"
    run = _run(root, "s0", 0, _c_eval(0.8))
    assert main(["figures", "--results", str(root), "--out", str(run), "--no-examples"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "training run" in err, err
    assert not (run / "REPORT.md").exists() and not (run / "tables").exists()
    # a reproduce folder's figures/ (where `noisymix reproduce` writes) is a figures folder: accepted, twice
    write_json(tmp_path / "rep" / "reproduce.json", {})
    for _ in range(2):
        assert main(["figures", "--results", str(root), "--out", str(tmp_path / "rep" / "figures"),
                     "--no-examples"]) == 0
    assert folder_kind(tmp_path / "rep" / "figures") == "figures"
    assert folder_kind(tmp_path / "rep") == "reproduce"


def test_category_bars_show_the_seeds_95_percent_interval(tmp_path):
    from matplotlib.container import ErrorbarContainer

    from noisymix_figures import plots
    from noisymix_figures.results import collect

    root = tmp_path / "runs"
    for seed, acc in enumerate((0.6, 0.7, 0.8)):
        _run(root, f"s{seed}", seed, _c_eval(acc))
    fig = plots.category_bars_figure(collect(root).groups())
    ours = [ax for ax in fig.axes if ax.get_title().startswith("ours")]
    assert ours
    bars = [c for c in ours[0].containers if isinstance(c, ErrorbarContainer)]
    assert bars, "no error bars on our seeds"
    segments = bars[0].lines[2][0].get_segments()
    heights = [abs(s[1][1] - s[0][1]) for s in segments]
    assert max(heights) > 0  # three seeds 60/70/80: a non-zero interval
    assert "95 %" in ours[0].get_ylabel() or "95 %" in ours[0].get_title()


def test_failing_as_printed_lines_are_drawn_on_top_and_labelled():
    from theory.checks import Check
    from theory.report import convergence_fig

    eps = [0.1, 0.05, 0.025]

    def check(form, verdict, residuals):
        return Check(id="prop1", statement="", form=form, term="t", kind="expansion", verdict=verdict, detail="",
                     conditions="", eps=eps, residuals=residuals)

    checks = [check("as_printed", "fails", [1e-2, 5e-3, 2.5e-3]),
              check("corrected", "holds", [1e-2, 2.5e-3, 6.25e-4])]
    fig = convergence_fig(checks)
    ax = fig.axes[0]
    lines = {line.get_label().split(":")[0]: line for line in ax.get_lines() if not line.get_label().startswith("_")}
    failing, corrected = lines["as printed, fails"], lines["corrected, holds"]
    assert failing.get_zorder() > corrected.get_zorder()
    assert failing.get_linestyle() != corrected.get_linestyle() and failing.get_marker() not in ("None", "", None)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]  # issue 48: one legend per panel, at its right
    assert any(text.startswith("as printed, fails: t") for text in legend)


def test_decision_boundaries_have_a_legend_for_points_and_shading():
    from toy.data import make_toy_data
    from toy.plots import boundaries_figure

    data = make_toy_data(generator=torch.Generator().manual_seed(0))
    axis = np.linspace(-2, 2, 9)
    fields = np.tile(np.linspace(0, 1, 9), (2, 9, 1))
    fig = boundaries_figure(fields, axis, data, ["a", "b"], limit=2.0, suptitle="s")
    assert fig.legends, "no legend"
    texts = " | ".join(t.get_text() for t in fig.legends[0].get_texts())
    assert "class 0" in texts and "class 1" in texts and "p(class 1 | x)" in texts and "0.5" in texts, texts

