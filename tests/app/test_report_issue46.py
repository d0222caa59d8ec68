"""Issue 46 (and 48, item 1): the opening's one-word answer, the categories that carry the gain, the
analogue's profile against CIFAR-10-C and the paper's effects beside each claim's MDD."""

from __future__ import annotations

import pytest

from noisymix_app.reproduce_claims import (
    analogue_lines,
    category_claims,
    category_lines,
    correct,
    decidable,
    holm,
    paper_effects,
)
from noisymix_app.reproduce_headline import answer, opening
from noisymix_app.reproduce_summary import LABELS, _verdict
from noisymix_infra.stats import paired


def _claim(cid, values, threshold=0.0):
    d = paired(dict(enumerate(values)), dict(enumerate([0.0] * len(values))))
    return {"id": cid, "statement": f"{cid} (gloss)", "difference": d, "threshold": threshold,
            "verdict": _verdict(d, threshold)}


def _claims(primary, beats_augmix, stable):
    claims = [_claim("robust_noisymix", primary), _claim("noisymix_beats_augmix_jsd", beats_augmix),
              _claim("stable_noisymix_vs_baseline", stable)]
    correct(claims)
    return {"claims": claims}


def test_yes_when_everything_holds_after_holm():
    word, sentences = answer(_claims([8, 9, 7, 10, 8.5], [3, 4, 3.5, 4.2, 3.8], [1, 1.2, 0.9, 1.1, 1.0]))
    assert word == "yes" and 1 <= len(sentences) <= 3


def test_no_when_the_primary_claim_does_not_hold():
    word, sentences = answer(_claims([1, -1, 0.5, -0.5, 0.2], [3, 4, 3.5, 4.2, 3.8], [1, 1.2, 0.9, 1.1, 1.0]))
    assert word == "no" and "not shown more robust" in sentences[0]


def test_partly_names_what_holds_and_what_cannot_be_told_apart():
    summary = _claims([8, 9, 7, 10, 8.5], [1, -2, 0.5, 1.5, -1], [1, 1.2, 0.9, 1.1, 1.0])
    word, sentences = answer(summary)
    assert word == "partly"
    text = opening(summary)
    assert text.startswith("**Does NoisyMix do what the paper says, at this scale? Partly.**")
    assert "noisymix_beats_augmix_jsd" in text and "(gloss)" not in text
    assert len(sentences) <= 3


def test_paper_effects_are_the_papers_differences():
    effects = paper_effects(LABELS)
    # tab:results_cifar10: NoisyMix 91.2 and AugMix 88.8 on CIFAR-10-C, Baseline 73.8; clean 95.3 and 95.3
    assert effects["noisymix_beats_augmix_jsd"]["effect"] == pytest.approx(2.4)
    assert effects["robust_noisymix"]["effect"] == pytest.approx(91.2 - 73.8)
    assert effects["clean_gain_noisymix"]["effect"] == pytest.approx(0.0)
    # tab:results_cifar_p mFR: Baseline 9.4, NoisyMix 1.9; ImageNet-R RMS: Baseline 19.7, NoisyMix 3.9
    assert effects["stable_noisymix_vs_baseline"]["effect"] == pytest.approx(7.5)
    assert effects["calibrated_noisymix"]["effect"] == pytest.approx(15.8)


def test_a_run_cannot_decide_an_effect_smaller_than_its_mdd():
    claim = {"difference": {"mdd80": 2.5}, "threshold": 0.0}
    assert decidable(claim, {"effect": 2.4}) is False
    assert decidable(claim, {"effect": 17.4}) is True
    assert decidable({"difference": {"mdd80": 1.0}, "threshold": -1.0}, {"effect": 0.0}) is True
    assert decidable(claim, None) is None


def _values(gains):
    """corrupted_<category> per method and seed: NoisyMix = base + gain per category."""
    values = {m: {} for m in ("baseline", "augmix_jsd", "noisymix")}
    for i, category in enumerate(("noise", "blur", "weather", "digital")):
        base = {s: 60.0 + s * 0.7 + i for s in range(6)}
        values["baseline"][f"corrupted_{category}"] = base
        values["augmix_jsd"][f"corrupted_{category}"] = {s: v + 1 + 0.3 * ((s * 7) % 3) for s, v in base.items()}
        values["noisymix"][f"corrupted_{category}"] = {s: v + gains[category] + 0.4 * ((s * 5) % 3 - 1)
                                                       for s, v in base.items()}
    return values


def test_categories_say_which_group_carries_the_gain():
    rows = category_claims(_values({"noise": 20.0, "blur": 0.0, "weather": 0.1, "digital": -8.0}), LABELS)
    assert len(rows) == 8
    adjusted = holm({r["id"]: r["p"] for r in rows})
    assert all(r["p_adjusted"] == pytest.approx(adjusted[r["id"]]) for r in rows)
    by = {(r["category"], r["against"]): r["verdict_adjusted"] for r in rows}
    assert by[("noise", "baseline")] == "holds" and by[("digital", "baseline")] == "fails"
    assert by[("blur", "baseline")] == "within noise"
    text = "\n".join(category_lines({"categories": rows}))
    assert "over Baseline, NoisyMix's gain is carried by noise, and it loses on digital" in text


def test_the_analogue_section_reports_the_profile_and_the_fit():
    profile = {"params": "digits-matched", "rank_correlation": 0.91,
               "aims": {"rank_correlation": 0.8, "relative": 0.4, "absolute": 5.0, "least_drop": 3.0},
               "met": {"rank_correlation": True, "within_tolerance": 14, "at_least": 15, "of": 15},
               "per_corruption": {"gaussian_noise": {"ours": 45.0, "paper": 48.9, "within_tolerance": True,
                                                     "at_least": True, "fit_residual": -0.1}}}
    text = "\n".join(analogue_lines({"analogue": profile}))
    assert "difficulty-matched" in text and "rank correlation +0.91 (aim ≥ 0.8: met)" in text
    assert "| gaussian_noise | 45.0 | 48.9 | yes | −0.1 |" in text


def test_the_opening_names_the_groups_that_carry_the_gain():
    summary = _claims([8, 9, 7, 10, 8.5], [3, 4, 3.5, 4.2, 3.8], [1, 1.2, 0.9, 1.1, 1.0])
    summary["categories"] = category_claims(_values({"noise": 20.0, "blur": 0.0, "weather": 0.1, "digital": -8.0}),
                                            LABELS)
    text = opening(summary)
    assert "over Baseline the gain is on noise corruptions and it loses on digital" in text
    assert "over AugMix the gain is on noise corruptions" in text
