"""Issue 52 (and 51, item 4): the cross-machine margins recomputed from the committed summaries, the
Holm family of the paper's claims only, calibration under shift against every other method, the kept
summary re-derived without a rerun, and the published rows' verdicts beside the matched ones."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from noisymix_app.reproduce.claims import SHIFT_METRICS, shift_values
from noisymix_app.reproduce.margins import MARGIN_SOURCES, MARGINS_COMMAND
from noisymix_app.reproduce.summary import margins_from, rederive, render, values_of

ROOT = Path(__file__).resolve().parents[2]
INTEL = ROOT / "docs" / "runs" / "intel-xeon-5f9bece-summary.json"


def _committed() -> dict:
    """The README's AMD run that issue 52 measured (docs/reproduce-summary.json at 47aa50d, kept in
    docs/runs/: the README's summary has been re-run since, on the matched Digits-P of issue 51)."""
    return json.loads((ROOT / "docs" / "runs" / "amd-epyc-47aa50d-summary.json").read_text())


def _has_history(*commits: str) -> bool:
    return shutil.which("git") is not None and all(
        subprocess.run(["git", "cat-file", "-e", f"{c}^{{commit}}"], cwd=ROOT, capture_output=True).returncode == 0
        for c in commits)


def test_the_committed_margins_are_recomputed_from_the_files():
    """docs/cross-machine-margins.json is what its one command makes from the four committed summaries
    (two CPUs on the published rows, the README's AMD EPYC run and the Intel Xeon fresh clone on the matched
    set), every claim re-derived by today's code."""
    if not _has_history(*(s.split(":")[0] for s in MARGIN_SOURCES if ":" in s)):
        pytest.skip("the margins' commits are not in this clone's history")
    kept = json.loads((ROOT / "docs" / "cross-machine-margins.json").read_text())
    assert kept["how"] == MARGINS_COMMAND
    again = margins_from(MARGIN_SOURCES)
    assert again["margins"] == pytest.approx(kept["margins"])
    assert [[list(side) for side in pair] for pair in again["pairs"]] == kept["pairs"]
    cpus = {side[1] for pair in kept["pairs"] for side in pair}
    assert cpus == {"AMD EPYC", "Intel(R) Xeon(R) Processor"} and len(kept["pairs"]) == 2


def test_the_intel_run_moves_the_calibration_claim_by_its_margin():
    """Issue 52's measurement: NoisyMix - Baseline after the clean-fitted temperature is -12.2 on the Intel
    run and -13.6 on the README's AMD run; the margin of that metric is their shift."""
    intel, amd = rederive(json.loads(INTEL.read_text()), margins={}), rederive(_committed(), margins={})

    def mean(record, cid):
        return next(c for c in record["claims"] if c["id"] == cid)["difference"]["mean"]

    assert mean(intel, "calibrated_noisymix_vs_baseline") == pytest.approx(12.2, abs=0.05)
    assert mean(amd, "calibrated_noisymix_vs_baseline") == pytest.approx(13.6, abs=0.05)
    assert mean(intel, "calibrated_noisymix_vs_augmix_jsd") == pytest.approx(2.0, abs=0.05)
    kept = json.loads((ROOT / "docs" / "cross-machine-margins.json").read_text())["margins"]
    assert kept[SHIFT_METRICS["after"]] >= abs(mean(intel, "calibrated_noisymix_vs_baseline")
                                                - mean(amd, "calibrated_noisymix_vs_baseline")) - 1e-3


def test_the_family_is_the_papers_claims_each_once():
    record = rederive(_committed())
    ids = [c["id"] for c in record["claims"]]
    assert len(ids) == len(set(ids))
    assert "clean_gain_noisymix" not in ids and "calibrated_clean_noisymix" not in ids
    assert "calibrated_scaled_noisymix" not in ids
    assert {"calibrated_noisymix_vs_baseline", "calibrated_noisymix_vs_augmix_jsd",
            "calibrated_noisymix_vs_nfm"} <= set(ids)
    # the descriptive checks are kept apart, never adjusted
    assert {c["id"] for c in record["descriptive"]} == {"calibrated_clean_noisymix", "calibrated_scaled_noisymix"}
    assert all("p_adjusted" not in c for c in record["descriptive"])
    secondary = [c for c in record["claims"] if c["role"] == "secondary"]
    assert all(c["level"] == pytest.approx(0.05 / len(secondary)) for c in secondary)
    # the same paired differences as the committed table's per-seed values
    values = values_of(record)
    base, nm = values["baseline"]["corrupted"], values["noisymix"]["corrupted"]
    primary = next(c for c in record["claims"] if c["id"] == "robust_noisymix")
    assert primary["difference"]["mean"] == pytest.approx(sum(nm[s] - base[s] for s in base) / len(base))


def test_calibration_under_shift_is_the_mean_over_severities_one_to_five():
    record = _committed()
    row = record["calibration_under_shift"]["methods"]["noisymix"]
    per = shift_values(record["calibration_under_shift"])["noisymix"][SHIFT_METRICS["after"]]
    seed = row["seeds"][0]
    expected = sum(row["per_severity"][s]["after"]["values"][0] for s in "12345") / 5
    assert per[seed] == pytest.approx(expected)
    # a method missing a severity has no such value (it cannot be averaged over 1-5)
    broken = json.loads(json.dumps(record["calibration_under_shift"]))
    del broken["methods"]["nfm"]["per_severity"]["3"]
    assert "nfm" not in shift_values(broken)


def test_the_published_rows_are_shown_beside_the_matched_ones():
    """Issue 51, item 4: the published-rows run's verdicts, from the committed file naming its commit, and
    the one sentence on why the matched set is primary and that it was chosen after them."""
    kept = json.loads((ROOT / "docs" / "published-rows-summary.json").read_text())
    assert kept["source"]["commit"].startswith("ae9d296") and kept["plan"].get("corruption_params") is None
    text = render(rederive(_committed()))
    section = text.split("**The published CIFAR-10-C rows.**", 1)[1].split("\n\n**", 1)[0]
    assert "it was chosen after the published-rows results below were seen" in section
    assert "`ae9d296`" in section
    assert "| NoisyMix − AugMix, corrupted accuracy | +1.1 [+0.0, +2.2] **within noise** | −0.0 [−1.8, +1.7] " \
           "**within noise** |" in section
    assert "−7.6 [−9.1, −6.0] **fails** |" in section
    if _has_history("ae9d296"):
        from noisymix_app.reproduce.report_published import extract

        assert extract("ae9d296") == kept


def test_a_verdict_that_cannot_be_judged_is_named_not_dropped():
    """The concurrent change (issue 54) gives a paired spread below the quantisation step the verdict
    "cannot be judged" with no p: the report names it as it is, marks it neither firm nor fragile."""
    from noisymix_app.reproduce.headline import answer
    from noisymix_app.reproduce.margins import firmness, read_margins

    record = rederive(_committed())
    flip = next(c for c in record["claims"] if c["id"] == "stable_noisymix_vs_augmix_jsd")
    flip.update(p=None, p_adjusted=None, verdict="cannot be judged", verdict_adjusted="cannot be judged")
    firmness(record["claims"], read_margins())
    assert flip["firm"] is None
    _, sentences = answer(record)
    assert "NoisyMix flips less than AugMix (cannot be judged)" in " ".join(sentences)
    render(record)  # renders


def test_the_ablation_summary_says_what_it_can_decide_before_any_verdict():
    """Issue 52, goal 6: docs/ablation-summary.md opened "No answer ... (one seed)" with 3 seeds; it opens
    with each row's MDD at its Holm level against tab:ablation's effect, and what deciding a row would take."""
    from noisymix_app.reproduce.headline import opening

    record = json.loads((ROOT / "docs" / "ablation-summary.json").read_text())
    text = opening(record)
    assert text.startswith("**Are all of NoisyMix's components needed, at this scale (tab:ablation)?**")
    assert "No answer" not in text and "one seed" not in text
    assert text.index("can decide") < text.index("after Holm's correction")
    # tab:ablation, CIFAR-100-C: AFNJ 71.9 against A-NJ 66.7 (the feature mixing), AF-J 69.3, AFN- 68.6
    assert "without the feature mixing (its mixed soft labels): MDD 4.5 against the paper's +5.2" in text
    assert "to decide it: 9 seeds" in text and "min per run as recorded" in text
    kept = (ROOT / "docs" / "ablation-summary.md").read_text()
    assert kept.startswith(text)
    from noisymix_app.reproduce.summary import render

    assert render(record) == kept  # the kept Markdown is the rendering of the kept JSON


def test_seeds_to_decide_is_the_first_n_whose_mdd_reaches_the_effect():
    from noisymix_app.reproduce.report_ablation import seeds_to_decide
    from noisymix_infra.stats import mdd

    claim = {"difference": {"sd": 2.0}, "paper_effect": {"effect": 2.6}, "threshold": 0.0, "level": 0.05 / 3}
    n = seeds_to_decide(claim)
    assert mdd(2.0, n, alpha=0.05 / 3) <= 2.6 < mdd(2.0, n - 1, alpha=0.05 / 3)
    assert seeds_to_decide({**claim, "paper_effect": None}) is None
