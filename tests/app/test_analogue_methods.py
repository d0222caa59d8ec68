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
    kendall_rows,
    kendall_tau_b,
    order_test,
    render_markdown,
    slope_through_origin,
    spearman,
    spearman_rows,
)
from noisymix_app.reproduce.plans import EIGHT_METHODS, PLANS
from noisymix_figures.paper import method_columns

values = st.lists(st.integers(-5, 5).map(float), min_size=3, max_size=12)


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_rank_correlations_equal_scipys_with_ties(data):
    """The single values and the batched rows (the permutation test's and the seed range's) against scipy."""
    x = data.draw(values)
    y = data.draw(st.lists(st.integers(-5, 5).map(float), min_size=len(x), max_size=len(x)))
    others = data.draw(st.lists(st.permutations(x), min_size=1, max_size=4))
    rows = np.array([x, *others])
    for ours, theirs, single, batched in ((x, y, spearman, spearman_rows), (x, y, kendall_tau_b, kendall_rows)):
        reference = scipy.stats.spearmanr if single is spearman else scipy.stats.kendalltau
        expected = [reference(row, theirs).statistic for row in rows]
        got = batched(rows, theirs)
        for e, g in zip(expected, got, strict=True):
            assert (math.isnan(e) and math.isnan(g)) or g == pytest.approx(e, abs=1e-12), (rows, theirs)
        assert (math.isnan(expected[0]) and math.isnan(single(ours, theirs))) or \
            single(ours, theirs) == pytest.approx(expected[0], abs=1e-12)


def test_rank_correlations_hand_values():
    # one swapped pair of four: rho = 1 - 6 * 2 / (4 * 15) = 0.8; tau = (5 - 1) / 6
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))  # a constant side: no order


def test_the_order_test_is_an_exact_permutation_test():
    """Issue 57, goal 6: the p-value of the order agreement, counted over every one of the n! pairings (an
    independent enumeration with itertools), one-sided."""
    import itertools

    ours, paper = [5.0, 1.0, 3.0, 2.0, 4.0, 4.0], [4.0, 2.0, 3.0, 1.0, 6.0, 5.0]  # a tie in ours
    found = order_test(ours, paper)
    observed = scipy.stats.spearmanr(ours, paper).statistic
    count = sum(scipy.stats.spearmanr(p, paper).statistic >= observed - 1e-12 for p in itertools.permutations(ours))
    assert found["spearman"]["value"] == pytest.approx(observed)
    assert found["spearman"]["p"] == pytest.approx(count / math.factorial(6))
    tau = scipy.stats.kendalltau(ours, paper).statistic
    count = sum(scipy.stats.kendalltau(p, paper).statistic >= tau - 1e-12 for p in itertools.permutations(ours))
    assert found["kendall"]["p"] == pytest.approx(count / math.factorial(6))
    # the perfect order of seven: only the identity pairing reaches it, p = 1/7!
    assert order_test(list(range(7)), list(range(7)))["spearman"]["p"] == pytest.approx(1 / math.factorial(7))
    constant = order_test([1.0] * 7, list(range(7)))
    assert constant["spearman"] == {"value": None, "p": None}
    with pytest.raises(ValueError, match="2 to 9 pairs"):
        order_test(list(range(10)), list(range(10)))


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
    assert len(plan.seeds) >= 5 and not set(plan.seeds) & set(range(5))  # issue 57: seeds the first run did not use
    paper = method_columns(EIGHT_METHODS)
    # tab:results_cifar10's CIFAR-10-C column and tab:results_cifar_p's mFR, as printed in the paper
    assert [paper[m]["corrupted"] for m in EIGHT_METHODS] == [73.8, 80.4, 77.7, 73.0, 84.1, 83.3, 88.8, 91.2]
    assert [paper[m]["mfr"] for m in EIGHT_METHODS] == [9.4, 6.0, 7.4, 14.3, 4.3, 3.5, 2.8, 1.9]


def _runs_like_the_paper(scale: float, noise: float, seeds: int = 5) -> dict:
    """Per-seed numbers whose gains are ``scale`` times the paper's, plus seed noise."""
    paper = method_columns(EIGHT_METHODS)
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
    runs = _runs_like_the_paper(0.5, 0.2)
    summary = analogue_summary(runs, list(range(5)), draws=300)
    slopes = {g["method"]: g["slope"] for g in summary["gains"]}
    assert all(abs(s - 0.5) < 0.05 for s in slopes.values()), slopes
    assert "baseline" not in slopes and summary["unfitted"] == list(EIGHT_METHODS[1:])
    assert summary["order"]["c"]["spearman"]["p"] < 0.05
    assert "orders the 7 methods it was not fitted to as CIFAR-10-C does" in summary["finding"]
    assert "does not reproduce their effect sizes" in summary["finding"] and "0.5 times" in summary["finding"]
    text = render_markdown(summary)
    assert text.count("| not fitted |") == 7 and text.count("| fitted |") == 1
    assert "seed-resampling range" in text and "not a confidence interval" in text
    assert [r["method"] for r in summary["table"]] == list(EIGHT_METHODS)
    # per seed, for `noisymix screen` (issue 59): each method's corrupted mean per seed, in the seeds' order
    row = summary["table"][-1]
    assert row["per_seed"]["corrupted"] == pytest.approx(list(runs["noisymix"]["per_corruption"].mean(1)), abs=1e-4)


def test_finding_words_follow_the_numbers():
    """The finding names what the analogue supports and what it does not, from the numbers alone."""
    gains = [{"method": "mixup", "slope": 1.66, "rank_correlation": 0.7, "share_of_drop": 0.4},
             {"method": "cutmix", "slope": -0.41, "rank_correlation": -0.55, "share_of_drop": -0.2},
             {"method": "noisymix", "slope": 0.74, "rank_correlation": 0.6, "share_of_drop": 0.1}]
    base = {"unfitted": ["mixup", "cutmix", "noisymix"], "gains": gains,
            "order": {"c": {"spearman": {"value": 0.93, "p": 0.01, "p_adjusted": 0.02}},
                      "p": {"spearman": {"value": 0.5, "p": 0.035, "p_adjusted": 0.07},
                            "misordered": {"cutmix": {"ours": 1.0, "paper": 2.0},
                                           "mixup": {"ours": 2.0, "paper": 1.0}}}}}
    text = finding(base)
    assert "orders the 3 methods it was not fitted to as CIFAR-10-C does (Spearman +0.93, exact permutation " \
           "p = 0.010, 0.020 after Holm over the two benchmarks)" in text
    # issue 63, goal 3: the words follow the adjusted p (0.035 alone would have said "orders"), misorders named
    assert "does not reliably order them as CIFAR-10-P does" in text and "0.070 after Holm" in text
    assert "ranked otherwise than the paper's: CutMix (1 against 2) and Mixup (2 against 1)" in text
    assert "Mixup 1.66×" in text and "CutMix −0.41×" in text  # the methods where the sizes disagree, named
    assert "the per-corruption gains run against the paper's for CutMix (−0.55)" in text
    assert "AugMix" not in text  # the central comparison is decided once, in the main job's report
    # one seed: no interval, no p; a constant order: undefined, never "does not order"
    one = {**base, "order": {"c": {"spearman": {"value": None, "p": None}},
                             "p": {"spearman": {"value": None, "p": None}}}}
    assert "gives no order" in finding(one) and "does not order" not in finding(one)


def _write_fixture_runs(root, runs: dict) -> None:
    """Evaluation files in the results schema (docs/results-schema.md) for ``runs`` (fractions on disk)."""
    import json

    from noisymix_app.reproduce.plans import PLANS

    seeds = len(next(iter(runs.values()))["clean"])
    plan = {**PLANS["analogue-methods"].__dict__, "seeds": list(PLANS["analogue-methods"].seeds)[:seeds]}
    plan = {k: list(v) if isinstance(v, tuple) else v for k, v in plan.items()}
    root.mkdir(parents=True, exist_ok=True)
    (root / "reproduce.json").write_text(json.dumps({"plan": plan, "plan_name": "analogue-methods",
                                                     "invocation_seconds": 600.0, "steps": []}))
    for m, r in runs.items():
        for s, seed in enumerate(plan["seeds"]):
            folder = root / "runs" / f"{m}-seed{seed}" / "eval"
            folder.mkdir(parents=True)
            (folder.parent / "config.json").write_text("{}")  # a run's own files (the README takes only runs)
            (folder.parent / "final.pt").write_bytes(b"weights")
            (folder / "clean.json").write_text(json.dumps({"summary": {"accuracy": r["clean"][s] / 100}}))
            per_c = {c: r["per_corruption"][s][i] / 100 for i, c in enumerate(CORRUPTIONS)}
            (folder / "digits-c.json").write_text(json.dumps({"summary": {"per_corruption": per_c}}))
            per_p = {p: {"flip_probability": r["per_perturbation"][s][i] / 100, "n_sequences": 200, "frames": 31}
                     for i, p in enumerate(P_COLUMNS)}
            (folder / "digits-p.json").write_text(json.dumps({"results": per_p}))


def test_the_command_reads_real_result_files_and_the_docs_copy_is_guarded_and_all_or_nothing(tmp_path):
    from noisymix_app.analogue.methods import README_BEGIN, README_END, update_docs
    from noisymix_app.cli import main

    runs = _runs_like_the_paper(1.0, 0.3, seeds=10)  # the plan's ten seeds (issue 63, goal 3)
    results = tmp_path / "results"
    _write_fixture_runs(results, runs)
    assert main(["analogue", "--results", str(results), "--draws", "200"]) in (0, None)
    summary = json.loads((results / "analogue" / "analogue.json").read_text())
    base = next(r for r in summary["table"] if r["method"] == "baseline")
    assert base["corrupted"]["mean"] == pytest.approx(runs["baseline"]["per_corruption"].mean(), abs=1e-9)
    assert summary["plan"]["wall_minutes"] == 10.0 and summary["plan"]["differs"] == []
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text("intro\n")
    with pytest.raises(ValueError, match="markers"):
        update_docs(results, root)
    assert not (root / "docs").exists()  # refused before writing anything
    (root / "README.md").write_text(f"intro\n{README_BEGIN}\nthe old block\n{README_END}\nend\n")
    weights = results / "runs" / "mixup-seed12" / "final.pt"
    weights.unlink()  # evaluation files without the run's weights (issue 64): refused, nothing written
    with pytest.raises(ValueError, match=r"run mixup-seed12 has no config\.json or final\.pt"):
        update_docs(results, root)
    assert not (root / "docs").exists()
    weights.write_bytes(b"weights")
    update_docs(results, root)
    readme = (root / "README.md").read_text()
    assert summary["finding"] in readme and "the old block" not in readme and readme.endswith("end\n")
    assert (root / "docs" / "figures" / "analogue_methods.png").read_bytes()[:4] == b"\x89PNG"


def test_the_docs_writer_refuses_any_other_plans_output(tmp_path):
    """Issue 60, cause 1: a 3-method, 2-seed, 1-epoch folder replaced the README's analogue block, still saying
    "the eight methods"; the writer itself refuses it, whoever calls it, and writes nothing."""
    from noisymix_app.analogue.methods import README_BEGIN, README_END, update_docs
    from noisymix_app.cli import main

    runs = {m: r for m, r in _runs_like_the_paper(1.0, 0.3, seeds=2).items()
            if m in ("baseline", "mixup", "cutmix", "noisymix")}
    results = tmp_path / "quick"
    _write_fixture_runs(results, runs)
    record = json.loads((results / "reproduce.json").read_text())
    record["plan"].update(methods=list(runs), perturbed_methods=list(runs), epochs=1)
    (results / "reproduce.json").write_text(json.dumps(record))
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    readme = f"intro\n{README_BEGIN}\nthe committed block\n{README_END}\n"
    (root / "README.md").write_text(readme)
    assert main(["analogue", "--results", str(results), "--draws", "200"]) in (0, None)
    summary = json.loads((results / "analogue" / "analogue.json").read_text())
    assert set(summary["plan"]["differs"]) >= {"epochs", "methods"}
    assert "4 methods × 2 seeds" in (results / "analogue" / "analogue.md").read_text()  # named as it is
    with pytest.raises(ValueError, match="not the analogue-methods plan's complete output"):
        update_docs(results, root)
    assert (root / "README.md").read_text() == readme and not list((root / "docs").iterdir())


def test_the_command_refuses_a_folder_without_a_job_in_one_line(tmp_path, one_line_error):
    from noisymix_app.cli import main

    assert main(["analogue", "--results", str(tmp_path)]) == 2
    one_line_error()


@pytest.mark.parametrize("spoil", ["truncated", "not an object", "lacks a perturbation"])
def test_a_broken_evaluation_is_one_line_naming_it_and_writes_nothing(tmp_path, one_line_error, spoil):
    from noisymix_app.cli import main

    results = tmp_path / "results"
    _write_fixture_runs(results, _runs_like_the_paper(1.0, 0.3, seeds=2))
    broken = results / "runs" / "nfm-seed11" / "eval" / "digits-p.json"
    if spoil == "truncated":
        broken.write_text(broken.read_text()[:40])
    elif spoil == "not an object":
        broken.write_text("[1, 2]")
    else:
        record = json.loads(broken.read_text())
        del record["results"]["tilt"]
        broken.write_text(json.dumps(record))
    assert main(["analogue", "--results", str(results), "--draws", "200"]) == 2
    assert "nfm-seed11" in one_line_error()
    assert not (results / "analogue").exists()


def test_too_few_bootstrap_draws_are_refused_in_one_line(tmp_path, one_line_error):
    from noisymix_app.cli import main

    assert main(["analogue", "--results", str(tmp_path), "--draws", "5"]) == 2
    assert "--draws" in one_line_error()


def test_the_papers_gains_are_ranked_at_their_printed_precision():
    """Issue 63, goal 5: two gains of the paper printed equal (11.4, 11.4) were ranked apart as float differences
    (11.399999 and 11.400000), which broke the paper's tie in the rank correlation."""
    summary = analogue_summary(_runs_like_the_paper(1.0, 0.3), list(range(5)), draws=200)
    gains = {g["method"]: g["paper"] for g in summary["gains"]}
    assert all(v == round(v, 1) for values in gains.values() for v in values)
    nm = gains["noisymix"]
    assert nm[CORRUPTIONS.index("contrast")] == nm[CORRUPTIONS.index("jpeg_compression")] == 11.4


def test_per_family_validity_is_each_familys_rank_agreement_and_slope():
    """Issue 65, goal 4: per CIFAR-10-C family, the unfitted methods' family gains ranked against the paper's (exact
    one-sided p, Holm over the four families) and the slope through the origin; a family whose gains we invert is
    named as not ranked."""
    from scipy.stats import spearmanr

    from fullscale.vocabulary import CATEGORIES

    runs = _runs_like_the_paper(1.0, 0.3)
    base = runs["baseline"]["per_corruption"].copy()
    index = [CORRUPTIONS.index(c) for c in CATEGORIES["weather"]]
    for m in EIGHT_METHODS[1:]:  # weather gains turned upside down
        runs[m]["per_corruption"][:, index] = base[:, index] - (runs[m]["per_corruption"][:, index] - base[:, index])
    summary = analogue_summary(runs, list(range(5)), draws=200)
    fam = summary["families"]
    noise = [CORRUPTIONS.index(c) for c in CATEGORIES["noise"]]
    ours = [np.mean([g["ours"][i] for i in noise]) for g in summary["gains"]]
    paper = [round(float(np.mean([g["paper"][i] for i in noise])), 2) for g in summary["gains"]]
    assert fam["noise"]["spearman"] == pytest.approx(spearmanr(ours, paper).statistic)
    assert fam["noise"]["slope"] == pytest.approx(float(np.dot(ours, paper) / np.dot(paper, paper)))
    assert fam["weather"]["spearman"] < 0 and fam["weather"]["p_adjusted"] >= fam["weather"]["p"]
    assert "not reliably on weather" in summary["finding"] and "| weather |" in render_markdown(summary)
