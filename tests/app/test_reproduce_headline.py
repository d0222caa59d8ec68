"""Issue 40: the summary answers the reader's question first.  The verdict paragraph is generated
from ``summary.json`` (a claim that flips there flips here), no number stated as ours is a paper
value our runs did not produce, and the calibration section carries the paper's claim, the signed
gap in words and the temperature-scaled error."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from noisymix_app.reproduce_headline import gap_words, headline
from noisymix_app.reproduce_summary import _verdict, paper_calibration, render

ROOT = Path(__file__).resolve().parents[2]
PAPER = json.loads((ROOT / "figures" / "paper_values.json").read_text())


def _claim(cid, statement, mean, half, threshold=0.0, metric=None):
    d = {"mean": mean, "half_width": half, "mdd80": 2.0, "n": 9}
    return {"id": cid, "statement": statement, "difference": d, "threshold": threshold,
            "verdict": _verdict(d, threshold), **({"metric": metric} if metric else {})}


def _cell(mean):
    return {"mean": mean, "half_width": 0.5, "sd": 0.6, "n": 9}


def _summary() -> dict:
    """A laptop-like summary: robust over Baseline and NFM, AugMix within noise, worse calibrated."""
    table = {
        "baseline": {"clean": _cell(96.1), "corrupted": _cell(84.3), "rms_calibration_error": _cell(1.7),
                     "rms_calibration_error_corrupted": _cell(10.8), "confidence_gap": _cell(0.6),
                     "confidence_gap_corrupted": _cell(7.2), "temperature": _cell(1.21),
                     "rms_calibration_error_scaled": _cell(1.3), "flip_probability": _cell(1.26)},
        "augmix_jsd": {"clean": _cell(96.0), "corrupted": _cell(91.3), "rms_calibration_error": _cell(4.2),
                       "rms_calibration_error_corrupted": _cell(6.2)},
        "nfm": {"clean": _cell(95.4), "corrupted": _cell(86.6)},
        "noisymix": {"clean": _cell(95.2), "corrupted": _cell(91.1), "rms_calibration_error": _cell(18.6),
                     "rms_calibration_error_corrupted": _cell(19.2), "confidence_gap": _cell(-17.9),
                     "confidence_gap_corrupted": _cell(-12.3), "temperature": _cell(0.41),
                     "rms_calibration_error_scaled": _cell(2.1), "flip_probability": _cell(0.91)},
    }
    claims = [
        _claim("robust_noisymix", "NoisyMix is more robust than Baseline", 6.8, 1.7),
        _claim("clean_noisymix", "NoisyMix keeps clean accuracy (loses < 1 point)", -0.9, 0.7, -1.0),
        _claim("clean_gain_noisymix", "NoisyMix improves clean accuracy over Baseline", -0.9, 0.7),
        _claim("calibrated_clean_noisymix", "NoisyMix is better calibrated than Baseline on the clean test images",
               -16.9, 1.8, metric="rms_calibration_error"),
        _claim("calibrated_scaled_noisymix", "NoisyMix is better calibrated than Baseline after scaling",
               -0.8, 0.6, metric="rms_calibration_error_scaled"),
        _claim("calibrated_noisymix", "NoisyMix is better calibrated than Baseline under corruption", -8.4, 2.0,
               metric="rms_calibration_error_corrupted"),
        _claim("noisymix_beats_augmix_jsd", "NoisyMix is more robust than AugMix", 0.8, 2.2),
        _claim("noisymix_beats_nfm", "NoisyMix is more robust than NFM", 4.1, 1.5),
        _claim("stable_noisymix_vs_baseline", "NoisyMix flips less than Baseline", 0.35, 0.15),
    ]
    return {"plan": {"seeds": list(range(9)), "description": "small-scale run (CPU, < 15 min)", "dataset": "digits",
                     "model": "preactresnet18", "width": 16, "epochs": 10,
                     "methods": ["baseline", "augmix_jsd", "nfm", "noisymix"]},
            "plan_name": "laptop", "git": {"commit": "abc"}, "corruptions": [15], "table": table, "claims": claims,
            "seconds": 954.0, "machine": {"workers": 2, "versions": {}}, "ran_on": [],
            "paper_calibration": paper_calibration(),
            "toy": {"seeds": 20, "claims": [{"id": "accuracy_ordering", "verdict": "within noise",
                                             "statement": "Test accuracy orders the schemes as the paper's "
                                                          "captions: Baseline (86.8) = Noise injection (86.8) "
                                                          "< NoisyMix (88.8)"}],
                    "accuracy": [{"scheme": "baseline", "label": "Baseline", "ours": 86.12, "paper": 86.8},
                                 {"scheme": "noisymix", "label": "NoisyMix", "ours": 86.41, "paper": 88.8}]}}


def test_the_summary_opens_with_the_verdict_in_plain_words():
    text = render(_summary())
    # issue 48: the one-word answer first (reproduce_headline.opening), the detailed verdict right below it
    answer_line, first = text.split("\n\n")[:2]
    assert answer_line.startswith("**Does NoisyMix do what the paper says, at this scale? ")
    assert first.startswith("**In detail**") and first == headline(_summary())
    assert "more robust to corruption than Baseline (+6.8) and NFM (+4.1)" in first
    assert "not distinguishable in robustness from AugMix (+0.8 [−1.4, +3.0])" in first
    assert "loses about one point of clean accuracy" in first
    assert "much worse calibrated than Baseline" in first and "under-confident" in first
    # the jargon is defined once, below it
    second = text.split("\n\n")[2]
    assert second.startswith("Terms:") and "*MDD*" in second and "*fragile*" in second
    assert text.count("*MDD*:") == 1


def test_a_flipped_claim_flips_the_sentence():
    summary = _summary()
    flipped = copy.deepcopy(summary)
    beats = next(c for c in flipped["claims"] if c["id"] == "noisymix_beats_augmix_jsd")
    beats["difference"].update(mean=-3.0, half_width=1.0)  # AugMix now measurably more robust
    beats["verdict"] = _verdict(beats["difference"], 0.0)
    calibrated = next(c for c in flipped["claims"] if c["id"] == "calibrated_noisymix")
    calibrated["difference"].update(mean=4.0, half_width=1.0)
    calibrated["verdict"] = _verdict(calibrated["difference"], 0.0)
    before, after = headline(summary), headline(flipped)
    assert before != after
    assert "less robust than AugMix (−3.0 [−4.0, −2.0]), so the paper's ranking fails there" in after
    assert "AugMix" not in after.split("less robust than")[0]
    assert "it is better calibrated than Baseline" in after and "much worse calibrated" not in after
    assert render(flipped).split("\n\n")[1] == after  # below the one-word answer


def test_one_seed_gives_no_verdict():
    summary = _summary()
    for claim in summary["claims"]:
        claim["difference"]["half_width"] = None
        claim["verdict"] = "not enough seeds"
    assert headline(summary).startswith("**Verdict:** none at this size")


def _paper_numbers() -> set[str]:
    numbers = set()
    for table in PAPER.values():
        for _, values in table.get("rows", []):
            numbers |= {f"{v:.1f}" for v in values if isinstance(v, int | float)}
    return numbers


def _our_numbers(summary: dict) -> set[str]:
    """Every number of ours the summary records (its paper entries left out), as the report may print it."""
    found: set[str] = set()

    def walk(value, key=""):
        if key in ("paper_calibration", "paper"):
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            found.update({f"{value:.1f}", f"{abs(value):.1f}"})
    walk(summary)
    if summary.get("seconds"):  # the report states the steps' time in minutes
        found.add(f"{summary['seconds'] / 60:.1f}")
    for where in summary.get("ran_on") or []:  # each machine's steps, in minutes
        found.add(f"{where['seconds'] / 60:.1f}")
    for claim in [*summary["claims"], *(summary.get("categories") or [])]:  # interval ends
        d = claim["difference"]
        if d and d.get("half_width") is not None:
            found |= {f"{abs(d['mean'] - d['half_width']):.1f}", f"{abs(d['mean'] + d['half_width']):.1f}"}
    return found


def _stated_as_ours(text: str) -> str:
    """The report without what it marks as the paper's: "(paper X)" and the paper's claim's sentence."""
    text = re.sub(r"\(paper \d+(\.\d+)?\)", "", text)
    text = re.sub(r"against the paper's [+−-]?\d+\.\d", "", text)  # each claim's paper effect, named so (issue 46)
    # the analogue's table, "| corruption | our drop | the paper's drop | ..." (issue 46): its third column
    text = re.sub(r"^(\| \w+ \| [\d.]+ \| )[\d.]+( \|)", r"\1\2", text, flags=re.M)
    return "\n".join(line for line in text.splitlines() if not line.startswith("The paper's claim"))


def _check_no_paper_number_as_ours(summary: dict) -> None:
    text = _stated_as_ours(render(summary))
    stated = set(re.findall(r"(?<![\d.])\d+\.\d(?!\d)", text))
    borrowed = (stated & _paper_numbers()) - _our_numbers(summary)
    assert not borrowed, f"paper values stated as ours: {sorted(borrowed)}"


def test_no_number_stated_as_ours_is_a_paper_value_we_did_not_produce():
    _check_no_paper_number_as_ours(_summary())
    # the committed summary (its toy statement carried the paper's captions as if ours: issue 40, item 2)
    _check_no_paper_number_as_ours(json.loads((ROOT / "docs" / "reproduce-summary.json").read_text()))


def test_the_check_catches_a_paper_value_printed_as_ours():
    summary = _summary()
    summary["toy"]["accuracy"][0]["paper"] = None  # the paper's 86.8 no longer marked as the paper's ...
    summary["toy"]["accuracy"][0]["ours"] = 86.8  # ... and printed as ours, which our fixture did produce
    _check_no_paper_number_as_ours(summary)
    summary["toy"]["claims"][0]["statement"] += " (ours 88.8)"  # a paper value we did not produce
    try:
        _check_no_paper_number_as_ours(summary)
    except AssertionError as error:
        assert "88.8" in str(error)
    else:
        raise AssertionError("the check let a paper value pass as ours")


def test_the_toy_line_gives_ours_beside_the_paper_s():
    text = render(_summary())
    assert "Baseline (86.8)" not in text
    assert "Baseline 86.1 (paper 86.8); NoisyMix 86.4 (paper 88.8)" in text


def test_calibration_section_quotes_the_paper_and_scales_every_method():
    text = render(_summary())
    assert "The paper's claim (App., tab:results_imagenet_r_calibration, ImageNet-R" in text
    assert "considerably improves the calibration" in text and "NoisyMix's RMS calibration error 3.9 %" in text
    assert "Manifold Mixup 5.0" in text  # every other method of its table, with its value as printed
    row = next(line for line in text.splitlines() if line.startswith("| NoisyMix | 18.6 |"))
    assert "under-confident (mean confidence 17.9 points below accuracy)" in row and "| 0.41 | 2.1 |" in row
    assert "before scaling, NoisyMix's clean-image RMS error ranks 3 of 3" in text
    assert "after scaling, NoisyMix's clean-image RMS error ranks 2 of 2" in text


def test_gap_words():
    assert gap_words(3.0).startswith("over-confident (mean confidence 3.0 points above")
    assert gap_words(-3.0).startswith("under-confident")
    assert gap_words(0.2).startswith("about as confident as accurate")


def test_a_broken_promise_is_replaced_by_the_measured_value():
    summary = _summary()
    summary["seconds"] = 954.0  # 15.9 min: the plan's "< 15 min" is not true
    text = render(summary)
    assert "< 15 min" not in text and "15.9 min measured" in text
    summary["seconds"] = 600.0
    assert "(CPU, < 15 min)" in render(summary)  # kept where it held
    assert "aim ≤ 1.5: met" in text
