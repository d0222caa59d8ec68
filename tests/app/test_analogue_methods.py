"""The analogue's test of the eight methods (issue 51): its statistics against scipy and hand values,
the bootstrap's contract, and the summary's words against its numbers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.stats
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fullscale.vocabulary import CORRUPTIONS, P_COLUMNS
from noisymix_app.analogue.methods import (
    analogue_summary,
    bootstrap_interval,
    finding,
    kendall_tau_b,
    paper_columns,
    render_markdown,
    slope_through_origin,
    spearman,
)
from noisymix_app.reproduce.plans import EIGHT_METHODS, PLANS

values = st.lists(st.integers(-5, 5).map(float), min_size=3, max_size=12)


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_rank_correlations_equal_scipys_with_ties(data):
    x = data.draw(values)
    y = data.draw(st.lists(st.integers(-5, 5).map(float), min_size=len(x), max_size=len(x)))
    rho, tau = scipy.stats.spearmanr(x, y).statistic, scipy.stats.kendalltau(x, y).statistic
    if math.isnan(rho):
        assert math.isnan(spearman(x, y))
    else:
        assert spearman(x, y) == pytest.approx(rho, abs=1e-12)
    if math.isnan(tau):
        assert math.isnan(kendall_tau_b(x, y))
    else:
        assert kendall_tau_b(x, y) == pytest.approx(tau, abs=1e-12)


def test_rank_correlations_hand_values():
    # one swapped pair of four: rho = 1 - 6 * 2 / (4 * 15) = 0.8; tau = (5 - 1) / 6
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="equal-length"):
        spearman([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="finite"):
        kendall_tau_b([1, 2, math.nan], [1, 2, 3])


def test_slope_through_origin_hand_values():
    assert slope_through_origin([1, 2, 3], [2, 4, 6]) == pytest.approx(0.5)
    # sum(o p) / sum(p^2) = (1*1 + 0*1) / 2
    assert slope_through_origin([1, 0], [1, 1]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="all zero"):
        slope_through_origin([1, 2], [0, 0])


def test_bootstrap_resamples_seeds_jointly_and_covers_the_point():
    rng = np.random.default_rng(0)
    per_seed = {"a": rng.normal(0, 1, (5, 3)), "b": rng.normal(0, 1, (5, 3))}
    # the statistic sees the same rows for both methods: their difference at equal arrays is always 0
    same = {"a": per_seed["a"], "b": per_seed["a"].copy()}
    found = bootstrap_interval(same, lambda s: float((s["a"] - s["b"]).sum()), draws=200,
                               generator=torch.Generator().manual_seed(1))
    assert found == (0.0, 0.0)
    low, high = bootstrap_interval(per_seed, lambda s: float(s["a"].mean()), draws=500,
                                   generator=torch.Generator().manual_seed(1))
    assert low < per_seed["a"].mean() < high
    with pytest.raises(ValueError, match="same seeds"):
        bootstrap_interval({"a": np.zeros((4, 1)), "b": np.zeros((5, 1))}, lambda s: 0.0,
                           generator=torch.Generator())


def test_the_plan_holds_the_eight_rows_of_the_paper_and_five_seeds():
    plan = PLANS["analogue-methods"]
    assert plan.methods == EIGHT_METHODS == plan.perturbed_methods
    assert len(plan.seeds) >= 5
    paper = paper_columns()
    # tab:results_cifar10's CIFAR-10-C column and tab:results_cifar_p's mFR, as printed in the paper
    assert [paper[m]["corrupted"] for m in EIGHT_METHODS] == [73.8, 80.4, 77.7, 73.0, 84.1, 83.3, 88.8, 91.2]
    assert [paper[m]["mfr"] for m in EIGHT_METHODS] == [9.4, 6.0, 7.4, 14.3, 4.3, 3.5, 2.8, 1.9]


def _runs_like_the_paper(scale: float, noise: float, seeds: int = 5) -> dict:
    """Per-seed numbers whose gains are ``scale`` times the paper's, plus seed noise."""
    paper = paper_columns()
    rng = np.random.default_rng(3)
    base_c = np.array([paper["baseline"]["per_corruption"][c] for c in CORRUPTIONS])
    runs = {}
    for m in EIGHT_METHODS:
        c = np.array([paper[m]["per_corruption"][c] for c in CORRUPTIONS])
        p = np.array([paper[m]["per_perturbation"][q] for q in P_COLUMNS])
        runs[m] = {"clean": paper[m]["clean"] + rng.normal(0, noise, seeds),
                   "per_corruption": base_c + scale * (c - base_c) + rng.normal(0, noise, (seeds, 15)),
                   "per_perturbation": np.clip(p + rng.normal(0, noise / 10, (seeds, 10)), 0, None)}
    return runs


def test_summary_of_a_half_size_copy_of_the_paper_says_so():
    summary = analogue_summary(_runs_like_the_paper(0.5, 0.2), draws=300)
    slopes = {g["method"]: g["slope"]["value"] for g in summary["gains"]}
    assert all(abs(s - 0.5) < 0.05 for s in slopes.values()), slopes
    assert summary["order"]["p"]["spearman"]["value"] > 0.9
    assert "gains about 0.5 times the paper's" in summary["finding"]
    text = render_markdown(summary)
    # the Baseline is the fitted row, every other row is not
    assert text.count("| not fitted |") == 7 and text.count("| fitted |") == 1
    assert [r["method"] for r in summary["table"]] == list(EIGHT_METHODS)


def test_finding_words_follow_the_interval():
    base = {"gains": [{"slope": {"value": 1.0}}],
            "order": {"c": {"spearman": {"value": 0.95, "interval": (0.85, 0.99)}},
                      "p": {"spearman": {"value": 0.2, "interval": (-0.5, 0.7)}}}}
    text = finding(base)
    assert "orders the eight methods as CIFAR-10-C does" in text
    assert "does not order them reliably as CIFAR-10-P does" in text
    assert "gains about the paper's size" in text


def _write_fixture_runs(root, runs: dict) -> None:
    """Evaluation files in the results schema (docs/results-schema.md) for ``runs`` (fractions on disk)."""
    import json

    from noisymix_app.reproduce.plans import PLANS

    seeds = len(next(iter(runs.values()))["clean"])
    plan = {**PLANS["analogue-methods"].__dict__, "seeds": list(range(seeds))}
    plan = {k: list(v) if isinstance(v, tuple) else v for k, v in plan.items()}
    root.mkdir(parents=True, exist_ok=True)
    (root / "reproduce.json").write_text(json.dumps({"plan": plan, "plan_name": "analogue-methods",
                                                     "invocation_seconds": 600.0, "steps": []}))
    for m, r in runs.items():
        for s in range(seeds):
            folder = root / "runs" / f"{m}-seed{s}" / "eval"
            folder.mkdir(parents=True)
            (folder / "clean.json").write_text(json.dumps({"summary": {"accuracy": r["clean"][s] / 100}}))
            per_c = {c: r["per_corruption"][s][i] / 100 for i, c in enumerate(CORRUPTIONS)}
            (folder / "digits-c.json").write_text(json.dumps({"summary": {"per_corruption": per_c}}))
            per_p = {p: {"flip_probability": r["per_perturbation"][s][i] / 100, "n_sequences": 200, "frames": 31}
                     for i, p in enumerate(P_COLUMNS)}
            (folder / "digits-p.json").write_text(json.dumps({"results": per_p}))


def test_the_command_reads_real_result_files_and_the_docs_copy_is_all_or_nothing(tmp_path):
    from noisymix_app.analogue.methods import README_BEGIN, README_END, update_docs
    from noisymix_app.cli import main

    runs = _runs_like_the_paper(1.0, 0.3)
    results = tmp_path / "results"
    _write_fixture_runs(results, runs)
    assert main(["analogue", "--results", str(results), "--draws", "200"]) in (0, None)
    summary = json.loads((results / "analogue" / "analogue.json").read_text())
    # read back from the files: the Baseline's mean corrupted accuracy is the fixture's
    base = next(r for r in summary["table"] if r["method"] == "baseline")
    assert base["corrupted"]["mean"] == pytest.approx(runs["baseline"]["per_corruption"].mean(), abs=1e-9)
    assert summary["plan"]["wall_minutes"] == 10.0
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text("intro\n")
    with pytest.raises(ValueError, match="markers"):
        update_docs(results, root)
    assert not (root / "docs").exists()  # refused before writing anything
    (root / "README.md").write_text(f"intro\n{README_BEGIN}\nold\n{README_END}\nend\n")
    update_docs(results, root)
    readme = (root / "README.md").read_text()
    assert summary["finding"] in readme and "old" not in readme and readme.endswith("end\n")
    assert (root / "docs" / "figures" / "analogue_methods.png").read_bytes()[:4] == b"\x89PNG"


def test_the_command_refuses_a_folder_without_a_job_in_one_line(tmp_path, one_line_error):
    from noisymix_app.cli import main

    assert main(["analogue", "--results", str(tmp_path)]) == 2
    one_line_error()


@pytest.mark.parametrize("spoil", ["truncated", "not an object", "lacks a perturbation"])
def test_a_broken_evaluation_is_one_line_naming_it_and_writes_nothing(tmp_path, one_line_error, spoil):
    from noisymix_app.cli import main

    results = tmp_path / "results"
    _write_fixture_runs(results, _runs_like_the_paper(1.0, 0.3, seeds=2))
    broken = results / "runs" / "nfm-seed1" / "eval" / "digits-p.json"
    if spoil == "truncated":
        broken.write_text(broken.read_text()[:40])
    elif spoil == "not an object":
        broken.write_text("[1, 2]")
    else:
        record = json.loads(broken.read_text())
        del record["results"]["tilt"]
        broken.write_text(json.dumps(record))
    assert main(["analogue", "--results", str(results), "--draws", "200"]) == 2
    assert "nfm-seed1" in one_line_error()
    assert not (results / "analogue").exists()


def test_too_few_bootstrap_draws_are_refused_in_one_line(tmp_path, one_line_error):
    from noisymix_app.cli import main

    assert main(["analogue", "--results", str(tmp_path), "--draws", "5"]) == 2
    assert "--draws" in one_line_error()
