"""Issue 21: theory.md, the figures' REPORT.md and the reproduce summary count verdicts one way
(``theory.results.tally``): numerical checks as printed and corrected, sympy witnesses apart.
Issue 48: the failing as-printed checks counted by kind of erratum."""

from __future__ import annotations

from theory.results import ERRATUM_KINDS, tally, tally_sentence


def _row(id_, form, kind, verdict, **extra):
    return {"id": id_, "form": form, "kind": kind, "verdict": verdict, **extra}


def _erratum(text, kind):
    return {"erratum": text, "fix": "...", "erratum_kind": kind}


CHECKS = [_row("thm1", "as_printed", "expansion", "fails"), _row("thm1", "corrected", "expansion", "holds"),
          _row("lemma1", "as_printed", "identity", "holds"), _row("lemma1", "corrected", "identity", "holds"),
          _row("prop1", "corrected", "symbolic", "holds"), _row("thm2", "corrected", "symbolic", "fails")]

#: two checks of one wrong term (one erratum), a notation slip, a wrong order, and a failing check
#: that is no erratum (another loss)
CLASSED = [_row("thm1", "as_printed", "expansion", "fails", **_erratum("R1", "wrong term")),
           _row("thm1", "as_printed", "expansion", "fails", **_erratum("R1", "wrong term")),
           _row("lemma1", "as_printed", "identity", "fails", **_erratum("uniform", "typo or notation")),
           _row("prop1", "as_printed", "expansion", "fails", **_erratum("o(eps^3)", "wrong order")),
           _row("thm2", "as_printed", "expansion", "fails", note="another loss"),
           _row("thm2", "as_printed", "expansion", "holds"), _row("thm1", "corrected", "expansion", "holds")]


def test_sympy_witnesses_are_counted_apart_from_the_numerical_checks():
    counts = tally(CHECKS)  # counted by hand from CHECKS
    assert counts["as_printed"] == {"checks": 2, "hold": 1, "failing": ["thm1"]}
    assert counts["corrected"] == {"checks": 2, "hold": 2, "failing": []}
    assert counts["symbolic"] == {"checks": 2, "hold": 1, "failing": ["thm2"]}
    assert tally_sentence(counts).startswith("As printed, 1 of 2 numerical checks hold; the 1 failing trace to no "
                                             "erratum; 1 more failing check tests another loss")


def test_each_kind_of_erratum_is_counted_once_per_erratum_and_named_in_the_sentence():
    counts = tally(CLASSED)  # counted by hand from CLASSED
    kinds = counts["errata"]["kinds"]
    assert list(kinds) == list(ERRATUM_KINDS)
    assert kinds["wrong term"] == {"errata": 1, "checks": 2, "ids": ["thm1"]}
    assert kinds["wrong order"] == {"errata": 1, "checks": 1, "ids": ["prop1"]}
    assert kinds["typo or notation"] == {"errata": 1, "checks": 1, "ids": ["lemma1"]}
    assert kinds["unstated assumption"] == {"errata": 0, "checks": 0, "ids": []}
    assert counts["errata"]["not_errata"] == {"checks": 1, "ids": ["thm2"]}
    assert counts["as_printed"]["failing"] == ["lemma1", "prop1", "thm1", "thm2"]  # the old key, kept
    assert tally_sentence(counts) == (
        "As printed, 1 of 6 numerical checks hold; the 5 failing trace to 3 errata of the paper, by kind: "
        "wrong term 1 (thm1), wrong order 1 (prop1), typo or notation 1 (lemma1); 1 more failing check tests "
        "another loss, not an erratum (thm2). Corrected forms, 1 of 1 hold; sympy agrees with our formulas in 0 "
        "of 0 symbolic witnesses.")


def test_counts_from_before_the_kinds_read_as_they_did():
    """A summary.json written before issue 48 (no ``errata``) renders its old sentence unchanged."""
    old = {k: v for k, v in tally(CHECKS).items() if k != "errata"}
    assert tally_sentence(old) == ("As printed, 1 of 2 numerical checks hold (failing: thm1); corrected forms, 2 of 2 "
                                   "hold; sympy agrees with our formulas in 1 of 2 symbolic witnesses.")


def test_the_summary_and_the_figures_report_print_the_same_sentence(tmp_path):
    from noisymix_app.reproduce.summary import _theory
    from noisymix_figures.report import theory_section
    from noisymix_figures.results import Results
    from noisymix_infra.io import write_json

    path = tmp_path / "theory.json"
    write_json(path, {"checks": CLASSED, "provenance": {}})
    sentence = tally_sentence(_theory(path))
    section = "\n".join(theory_section(Results(tmp_path, theory=(path, {"checks": CLASSED, "provenance": {}}))))
    assert sentence in section and "wrong order 1 (prop1)" in sentence
