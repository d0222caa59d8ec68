"""Where the paper contradicts itself: found by recomputing its printed numbers, and footnoted in the
generated tables.  The two cases of issue 31 must be found; a corrected row must not be; rounding
alone must never be reported (property test), and a real disagreement always is."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from noisymix_figures.consistency import ROUNDING, check_paper, findings_for
from noisymix_figures.tables import build_tables, paper_values


def _texts(label: str, paper: dict | None = None) -> list[str]:
    return [f.text for f in findings_for(label, paper or paper_values())]


def test_the_two_cases_of_the_issue_are_found():
    imagenet_c = _texts("tab:results_imagenet_c")
    assert any("'Adversarial Trained' and 'Puzzle Mix' print the same 15 numbers" in t for t in imagenet_c)
    # ... and against tab:results_imagenet, whose Puzzle Mix row prints 44.6 (46.4)
    assert any("'Puzzle Mix': the mean of its tab:results_imagenet_c columns is 32.09" in t and "44.6" in t
               for t in _texts("tab:results_imagenet"))
    imagenet_p = _texts("tab:results_imagenet_p")
    assert any("'Stylized ImageNet': mFR printed 54.4, the mean of its 10 columns is 41.61" in t for t in imagenet_p)


def test_contradictions_nobody_listed_are_found_by_the_same_checks():
    """Not a list of known errors: the checks also find the WRN CIFAR-10-C CutMix row (its 15
    corruptions average 72.9, tab:results_cifar100 prints 71.6) and tab:ablation's A--J row (AugMix
    with JSD: 66.9 there, 66.7 in tab:results_cifar100)."""
    assert any("'CutMix'" in t and "72.93" in t and "71.6" in t for t in _texts("tab:results_wrs_cifar10_c"))
    assert any("'A--J'" in t and "66.9" in t and "66.7" in t for t in _texts("tab:ablation"))
    renamed = [t for t in _texts("tab:results_imagenet") if "Fast AutoAugment" in t]
    assert renamed and "'AutoAugment' row" in renamed[0]


def test_a_corrected_paper_has_no_such_findings():
    paper = copy.deepcopy(paper_values())
    rows = dict(paper["tab:results_imagenet_p"]["rows"])
    rows["Stylized ImageNet"][10] = round(float(np.mean(rows["Stylized ImageNet"][:10])), 1)
    main = dict(paper["tab:results_imagenet"]["rows"])
    main["Stylized ImageNet"][3] = {"value": rows["Stylized ImageNet"][10],
                                    "paren": round(float(np.mean(rows["Stylized ImageNet"][2:10])), 1)}
    # a Puzzle Mix row of its own whose means are the summary's 44.6 (46.4)
    c_rows = dict(paper["tab:results_imagenet_c"]["rows"])
    c_rows["Puzzle Mix"][:] = [37.4] * 3 + [46.4] * 12
    found = " ".join(f.text for f in check_paper(paper))
    assert "Stylized ImageNet" not in found and "Puzzle Mix" not in found


def test_the_generated_tables_carry_the_findings_as_footnotes():
    tables = {t.name: t for t in build_tables({})}
    text = tables["results_imagenet_c"].markdown()
    marked = [line for line in text.splitlines() if line.startswith("| Puzzle Mix") or
              line.startswith("| Adversarial Trained")]
    assert len(marked) == 2 and all("[1" in line for line in marked)
    assert "- [1] the rows 'Adversarial Trained' and 'Puzzle Mix'" in text
    p_text = tables["results_imagenet_p"].markdown()
    assert "| Stylized ImageNet" in p_text and "- [1] 'Stylized ImageNet': mFR printed 54.4" in p_text
    assert "\\footnotesize [1] the rows" in tables["results_imagenet_c"].latex()
    assert not tables["results_cifar10"].notes  # a table the checks find nothing in has no notes


def _p_table(cells: list) -> dict:
    return {"tab:results_cifar_p": {"columns": [f"c{i}" for i in range(10)] + ["mFR"], "rows": [["row", cells]]}}


@given(st.lists(st.floats(0, 100, allow_nan=False), min_size=10, max_size=10))
def test_rounding_alone_is_never_a_contradiction(true):
    """Columns and mean each printed to 0.1 from the same true values: never reported."""
    printed = [round(v, 1) for v in true] + [round(float(np.mean(true)), 1)]
    assert not check_paper(_p_table(printed))


@given(st.lists(st.floats(0, 100, allow_nan=False), min_size=10, max_size=10),
       st.floats(ROUNDING + 0.01, 50), st.booleans())
def test_a_mean_off_by_more_than_rounding_is_always_reported(true, off, up):
    columns = [round(v, 1) for v in true]
    printed = [*columns, float(np.mean(columns)) + (off if up else -off)]
    (finding,) = check_paper(_p_table(printed))
    assert finding.rows == {"tab:results_cifar_p": ("row",)} and "mFR printed" in finding.text


@given(st.lists(st.lists(st.integers(0, 999), min_size=3, max_size=3), min_size=2, max_size=6, unique_by=tuple),
       st.data())
def test_a_copied_row_is_reported_and_only_it(rows, data):
    table = {"columns": ["a", "b", "c"], "rows": [[f"r{i}", [v / 10 for v in r]] for i, r in enumerate(rows)]}
    assert not check_paper({"tab:x": table})
    source = data.draw(st.integers(0, len(rows) - 1))
    table["rows"].append(["copy", list(table["rows"][source][1])])
    (finding,) = check_paper({"tab:x": table})
    assert finding.rows == {"tab:x": (f"r{source}", "copy")}
