"""Issues 40 and 52: the summary answers the reader's question first, in one paragraph and one table
generated from ``summary.json`` (a claim that flips there flips here); every sentence and cell states a
claim's one verdict (the one after Holm), so the opening and the detail cannot disagree; the README's
block stays under 600 words; no number stated as ours is a paper value our runs did not produce; the
calibration section carries the paper's claim and ranks nothing inside the noise floor."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from noisymix_app.reproduce.claims import correct, stated
from noisymix_app.reproduce.headline import calibration_section, claims_table, gap_words, opening
from noisymix_app.reproduce.margins import firmness, read_margins
from noisymix_app.reproduce.summary import README_WORDS, _verdict, paper_calibration, render, render_readme

ROOT = Path(__file__).resolve().parents[2]
PAPER = json.loads((ROOT / "figures" / "paper_values.json").read_text())


def _claim(cid, statement, mean, half, threshold=0.0, metric=None):
    d = {"mean": mean, "half_width": half, "mdd80": 2.0, "n": 9, "sd": None if half is None else half * 3 / 2.306}
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
        _claim("clean_noisymix", "NoisyMix improves clean accuracy over Baseline", -0.9, 0.7),
        _claim("calibrated_noisymix_vs_baseline", "NoisyMix is better calibrated than Baseline under corruption "
               "(gloss)", -8.4, 2.0, metric="rms_calibration_error_corrupted"),
        _claim("noisymix_beats_augmix_jsd", "NoisyMix is more robust than AugMix", 0.8, 2.2),
        _claim("noisymix_beats_nfm", "NoisyMix is more robust than NFM", 4.1, 1.5),
        _claim("stable_noisymix_vs_baseline", "NoisyMix flips less than Baseline", 0.35, 0.15),
    ]
    correct(claims)
    firmness(claims, read_margins())
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


def test_the_summary_opens_with_the_answer_and_the_claims_table():
    text = render(_summary())
    answer_line, table, terms = text.split("\n\n")[:3]
    assert answer_line == opening(_summary())
    assert answer_line.startswith("**Does NoisyMix do what the paper says, at this scale? Partly.**")
    assert "NoisyMix is more robust to corruption than Baseline (+6.8 [+5.1, +8.5] points" in answer_line
    assert table.splitlines() == claims_table(_summary())
    assert table.startswith("| claim | ours (points, 95 % interval) | the paper's | verdict |")
    # the jargon is defined once, below them
    assert terms.startswith("Terms:") and "*MDD*" in terms and "*fragile*" in terms
    assert text.count("*MDD*:") == 1


def test_a_flipped_claim_flips_the_opening_and_the_table():
    summary = _summary()
    flipped = copy.deepcopy(summary)
    beats = next(c for c in flipped["claims"] if c["id"] == "noisymix_beats_augmix_jsd")
    beats["difference"].update(mean=-3.0, half_width=1.0, sd=1.3)  # AugMix now measurably more robust
    beats["verdict"] = _verdict(beats["difference"], 0.0)
    correct(flipped["claims"])
    firmness(flipped["claims"], read_margins())
    assert stated(beats) == "fails"
    before, after = opening(summary), opening(flipped)
    assert before != after
    assert _verdict_in_opening(after, beats) == "fails"
    row = next(line for line in claims_table(flipped) if line.startswith("| NoisyMix is more robust than AugMix |"))
    assert "**fails**" in row


def test_one_seed_gives_no_verdict():
    summary = _summary()
    for claim in summary["claims"]:
        claim["difference"]["half_width"] = None
        claim["difference"]["sd"] = None
        claim["verdict"] = "not enough seeds"
    correct(summary["claims"])
    assert opening(summary).endswith("No claim has a 95 % interval to judge at this size (one seed, or no NoisyMix "
                                     "and Baseline runs).")


def _short(claim: dict) -> str:
    return claim["statement"].split(" (")[0]


def _verdict_in_opening(text: str, claim: dict) -> str | None:
    """The verdict the opening gives a claim: the group (firm) or the parenthesis (fragile) it is named in."""
    name = _short(claim)
    if claim["id"] == "robust_noisymix":
        return re.search(r"the primary claim, tested alone at 5 %: \*\*([\w ]+)\*\*", text).group(1)
    fragile = re.search(re.escape(name) + r" \(\*\*([\w ]+)\*\* here\)", text)
    if fragile:
        return fragile.group(1)
    firm = text.split("firm findings: ", 1)[1].split("Fragile (", 1)[0]
    for group in re.split(r"(?=\*\*(?:holds|within noise|fails)\*\*: )", firm):
        head = re.match(r"\*\*([\w ]+)\*\*: ", group)
        if head and re.search(r"(?:: |; )" + re.escape(name) + r"(?:;|\.)", group):
            return head.group(1)
    return None


def _check_consistent(summary: dict) -> None:
    """Issue 52, goal 4: the opening, the claims table and each claim's detail line give every claim the
    same verdict, the one the summary records after Holm, and the mark (firm / fragile) it records."""
    text = render(summary)
    head = opening(summary)
    rows = {line.split(" | ")[0][2:].removesuffix(" (primary)"): line for line in claims_table(summary)[2:]}
    details = {line[2:].split(": ")[0]: line for line in text.splitlines() if line.startswith("- ")}
    for claim in summary["claims"]:
        if not claim.get("difference") or claim["difference"].get("half_width") is None:
            continue
        verdict = stated(claim)
        assert _verdict_in_opening(head, claim) == verdict, (claim["id"], verdict)
        mark = {True: "firm", False: "fragile"}.get(claim.get("firm"), "no margin measured")
        assert f"| **{verdict}**, {mark}" in rows[_short(claim)], claim["id"]
        assert f"— **{verdict}**" in details[claim["statement"]], claim["id"]
        if claim.get("firm") is False:
            assert f"{_short(claim)} (**{verdict}** here)" in head.split("Fragile (", 1)[1]
    # no sentence of the detail states another verdict for a claim than its line: one verdict per line
    for line in details.values():
        assert len(re.findall(r"\*\*(?:holds|within noise|fails)\*\*", line)) == 1, line


def test_the_opening_the_table_and_the_detail_agree_on_every_claim():
    _check_consistent(_summary())


def test_the_committed_summary_is_consistent_and_the_readme_block_short():
    """The README's own numbers: the committed summary read back agrees with itself, and its block is at
    most 600 words (issue 52: it was about 3,700)."""
    from noisymix_app.reproduce.summary import BEGIN, END

    record = json.loads((ROOT / "docs" / "reproduce-summary.json").read_text())
    _check_consistent(record)
    assert len(render_readme(record).split()) <= README_WORDS
    readme = (ROOT / "README.md").read_text()
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    assert len(block.split()) <= README_WORDS
    assert block.count("](docs/figures/") == 1 and block.count("\n| ") >= 3  # one figure, one table
    assert "[docs/reproduce-summary.md](docs/reproduce-summary.md)" in block


def test_the_word_limit_is_checked():
    """The check above can fail: a block padded past 600 words is caught."""
    summary = _summary()
    assert len(render_readme(summary).split()) <= README_WORDS
    for claim in summary["claims"]:
        claim["statement"] = claim["statement"].split(" (")[0] + " words" * 60
    assert len(render_readme(summary).split()) > README_WORDS


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
    text = re.sub(r"the paper's [+−-]?\d+\.\d \([^)]*(\([^)]*\))?[^)]*\)", "", text)  # ... in the detail (issue 52)
    # the claims table's "the paper's" column (issue 52): its third cell
    text = re.sub(r"^(\| [^|]+ \| [^|]+ \| )[^|]+( \|)", r"\1\2", text, flags=re.M)
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


def test_calibration_section_quotes_the_paper_and_ranks_nothing_inside_the_noise_floor():
    summary = _summary()
    text = render(summary)
    assert "The paper's claim (App., tab:results_imagenet_r_calibration, ImageNet-R" in text
    assert "considerably improves the calibration" in text and "NoisyMix's RMS calibration error 3.9 %" in text
    assert "Manifold Mixup 5.0" in text  # every other method of its table, with its value as printed
    row = next(line for line in text.splitlines() if line.startswith("| NoisyMix | 18.6 |"))
    assert "| 2.1 | 0.41 |" in row and "under-confident (mean confidence 12.3 points below accuracy)" in row
    assert "lowest first: Baseline 1.3, NoisyMix 2.1" in text  # no noise floor recorded: ranked
    # issue 52: errors inside the estimator's noise floor are not ranked
    summary["calibration_under_shift"] = {"methods": {m: {"per_severity": {"0": {"noise_floor": {"p95": 2.5}}}}
                                                      for m in ("baseline", "noisymix")}}
    text = "\n".join(calibration_section(summary))
    assert "lowest first" not in text
    assert "Baseline 1.3 and NoisyMix 2.1 inside the estimator's noise floor" in text and "not ranked" in text


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
