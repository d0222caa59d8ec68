"""Issue 57 (and 52, 51 item 4): the claims registry decided on kept summaries — the family is exactly the
registry's entries whose methods ran, calibration on the paper's own metrics with the clean-fitted temperature
as a descriptive diagnostic, margins bound to the sets they were measured on, the published rows' verdicts
beside the matched ones, the ablation's opening."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from noisymix_app.reproduce.claims import SHIFT_METRICS, shift_values
from noisymix_app.reproduce.margins import cross_machine_margins, firmness, merge_margins, read_margins
from noisymix_app.reproduce.summary import rederive, render, values_of
from noisymix_figures.paper import paper_claims
from noisymix_infra.stats import paired

ROOT = Path(__file__).resolve().parents[2]
INTEL = ROOT / "docs" / "runs" / "intel-xeon-5f9bece-summary.json"


def _committed() -> dict:
    """The AMD run that issue 52 measured (docs/reproduce-summary.json at 47aa50d, kept in docs/runs/)."""
    return json.loads((ROOT / "docs" / "runs" / "amd-epyc-47aa50d-summary.json").read_text())


def test_the_family_is_the_registrys_entries_whose_methods_ran():
    record = rederive(_committed())
    ids = [c["id"] for c in record["claims"]]
    main = [c["id"] for c in paper_claims("main")]
    assert ids == main  # the four methods of the main job hold every main claim
    secondary = [c for c in record["claims"] if c["role"] == "secondary" and c["difference"] is not None]
    assert all(c["level"] == pytest.approx(0.05 / len(secondary)) for c in secondary)
    # an old run had no AURRA: those claims are listed with no difference and counted in no family
    assert {c["id"] for c in record["claims"] if c["difference"] is None} == {
        "aurra_noisymix_vs_baseline", "aurra_noisymix_vs_augmix_jsd", "aurra_noisymix_vs_nfm"}
    # the same paired differences as the kept table's per-seed values
    values = values_of(record)
    base, nm = values["baseline"]["corrupted"], values["noisymix"]["corrupted"]
    primary = record["claims"][0]
    assert primary["role"] == "primary"
    assert primary["difference"]["mean"] == pytest.approx(sum(nm[s] - base[s] for s in base) / len(base))


def test_calibration_is_decided_unscaled_and_the_temperature_is_the_diagnostic():
    """Issue 57, goal 3: the verdict's metric is the RMS error as evaluated on the corrupted sets; the error after
    the clean-fitted temperature is a descriptive row beside it, never a claim."""
    record = rederive(_committed())
    claim = next(c for c in record["claims"] if c["id"] == "calibrated_noisymix_vs_baseline")
    values = values_of(record)
    expected = paired(values["baseline"]["rms_calibration_error_corrupted"],
                      values["noisymix"]["rms_calibration_error_corrupted"])
    assert claim["metric"] == "rms_calibration_error_corrupted"
    assert claim["difference"]["mean"] == pytest.approx(expected["mean"])
    scaled = {c["id"]: c for c in record["descriptive"]}["scaled_noisymix_vs_baseline"]
    assert scaled["role"] == "descriptive" and "p_adjusted" not in scaled
    assert all(c["metric"] != SHIFT_METRICS["after"] for c in record["claims"])


def test_the_intel_run_moves_the_diagnostic_by_its_shift():
    """Issue 52's measurement, now on the diagnostic row: Baseline's after-scaling error minus NoisyMix's is
    12.2 on the Intel run and 13.6 on the AMD run."""
    intel, amd = rederive(json.loads(INTEL.read_text()), margins={}), rederive(_committed(), margins={})

    def mean(record, cid):
        return {c["id"]: c for c in record["descriptive"]}[cid]["difference"]["mean"]

    assert mean(intel, "scaled_noisymix_vs_baseline") == pytest.approx(12.2, abs=0.05)
    assert mean(amd, "scaled_noisymix_vs_baseline") == pytest.approx(13.6, abs=0.05)


def _pair(shift: float) -> list[dict]:
    """Two summaries of one plan, seeds and sets on two CPUs, the second's NoisyMix corrupted values moved."""
    a = rederive(_committed(), margins={})
    a["sets"] = {"c": "c-digest", "p": "p-digest"}
    b = json.loads(json.dumps(a))
    b["machine"]["cpu_model"] = "another CPU"
    cell = b["table"]["noisymix"]["corrupted"]
    cell["values"] = [v + shift for v in cell["values"]]
    return [a, rederive(b, margins={})]


def test_margins_are_measured_and_read_only_on_the_same_sets(tmp_path):
    """Issue 57, goal 5: a margin is bound to the sets it was measured on; read for other sets it is unknown."""
    a, b = _pair(0.7)
    measured = cross_machine_margins([a, b])
    assert measured["sets"] == a["sets"] and measured["margins"]["corrupted"] == pytest.approx(0.7)
    path = tmp_path / "margins.json"
    path.write_text(json.dumps(merge_margins(measured, path)))
    assert read_margins(a["sets"], path)["corrupted"] == pytest.approx(0.7)
    assert read_margins({"c": "other", "p": "p-digest"}, path) == {}
    assert read_margins(None, path) == {}
    # another plan, or other sets, make no pair
    other = json.loads(json.dumps(b))
    other["sets"] = {"c": "x", "p": "y"}
    with pytest.raises(ValueError, match="same plan, seeds and sets"):
        cross_machine_margins([a, other])


def test_the_committed_margins_bind_only_the_sets_they_were_measured_on():
    """The margins measured before the refit (450 test digits, the old strengths) keep no identity and bind no set;
    the one measured on today's sets (issue 63, goal 7: the AMD EPYC main job against a second main job on an
    Intel Xeon with torch's AVX2 kernels) binds exactly the summary's, with the two runs it compared."""
    data = json.loads((ROOT / "docs" / "cross-machine-margins.json").read_text())
    assert all("sets" in m for m in data["measurements"])
    summary = json.loads((ROOT / "docs" / "reproduce-summary.json").read_text())
    assert [m["sets"] for m in data["measurements"]].count(summary["sets"]) == 1
    margins = read_margins(summary["sets"])
    assert set(margins) >= {"corrupted", "flip_probability", "clean", "rms_calibration_error_corrupted"}
    (pair,) = next(m for m in data["measurements"] if m["sets"] == summary["sets"])["pairs"]
    assert {side[2] for side in pair} == {"AVX512", "AVX2"} and pair[0][1] != pair[1][1]
    assert read_margins({"c": "another", "p": "set"}) == {}
    claims = rederive(_committed(), margins={})["claims"]
    firmness(claims, {})
    assert {c["firm"] for c in claims} == {None}


def test_calibration_under_shift_is_the_mean_over_severities_one_to_five():
    record = _committed()
    row = record["calibration_under_shift"]["methods"]["noisymix"]
    per = shift_values(record["calibration_under_shift"])["noisymix"][SHIFT_METRICS["after"]]
    seed = row["seeds"][0]
    expected = sum(row["per_severity"][s]["after"]["values"][0] for s in "12345") / 5
    assert per[seed] == pytest.approx(expected)
    broken = json.loads(json.dumps(record["calibration_under_shift"]))
    del broken["methods"]["nfm"]["per_severity"]["3"]
    assert "nfm" not in shift_values(broken)


def test_the_published_rows_are_shown_beside_the_matched_ones():
    """Issue 51, item 4: the published-rows run's verdicts, re-derived by today's claims code from the committed
    file naming its commit, beside the matched run's."""
    from noisymix_app.reproduce.words import interval_text

    kept = json.loads((ROOT / "docs" / "published-rows-summary.json").read_text())
    assert kept["source"]["commit"].startswith("ae9d296")
    record = rederive(_committed())
    record["published_rows"] = {**rederive(kept, margins={}), "source": kept["source"]}
    text = render(record)
    section = text.split("**The published CIFAR-10-C rows.**", 1)[1].split("\n\n**", 1)[0]
    assert "it was chosen after the published-rows results below were seen" in section and "`ae9d296`" in section
    values = values_of(kept)
    d = paired(values["noisymix"]["corrupted"], values["augmix_jsd"]["corrupted"])  # independent of the report
    assert "| NoisyMix − AugMix, corrupted accuracy | " in section and interval_text(d) in section


def test_the_ablation_summary_says_what_it_can_decide_before_any_verdict():
    """Issue 52, goal 6: the ablation's opening gives each row's MDD at its Holm level against tab:ablation's
    effect, and what deciding a row would take, before the verdicts."""
    from noisymix_app.reproduce.report_ablation import ablation_answer

    record = rederive(json.loads((ROOT / "docs" / "ablation-summary.json").read_text()))
    assert [c["id"] for c in record["claims"]] == [c["id"] for c in paper_claims("ablation")]
    text = " ".join(ablation_answer(record))
    assert text.startswith("**Are all of NoisyMix's components needed, at this scale (tab:ablation)?**")
    assert text.index("can detect") < text.index("after Holm's correction")
    # tab:ablation, CIFAR-100-C: AFNJ 71.9 against A-NJ 66.7 (the feature mixing)
    assert "without the feature mixing (its mixed soft labels): MDD" in text and "the paper's +5.2" in text
    kept = (ROOT / "docs" / "ablation-summary.md").read_text()
    assert render(record) == kept  # the kept Markdown is the rendering of the kept JSON


def test_seeds_to_decide_is_the_first_n_whose_mdd_reaches_the_effect():
    from noisymix_app.reproduce.report_ablation import seeds_to_decide
    from noisymix_infra.stats import mdd

    claim = {"difference": {"spread": 2.0}, "paper": 2.6, "level": 0.05 / 3}
    n = seeds_to_decide(claim)
    assert mdd(2.0, n, alpha=0.05 / 3) <= 2.6 < mdd(2.0, n - 1, alpha=0.05 / 3)
    assert seeds_to_decide({**claim, "difference": {"spread": None}}) is None
