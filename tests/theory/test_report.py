"""Issue 21: theory.md, the figures' REPORT.md and the reproduce summary count verdicts one way
(``theory.results.tally``): numerical checks as printed and corrected, sympy witnesses apart."""

from __future__ import annotations

from theory.results import tally, tally_sentence


def _row(id_, form, kind, verdict):
    return {"id": id_, "form": form, "kind": kind, "verdict": verdict}


CHECKS = [_row("thm1", "as_printed", "expansion", "fails"), _row("thm1", "corrected", "expansion", "holds"),
          _row("lemma1", "as_printed", "identity", "holds"), _row("lemma1", "corrected", "identity", "holds"),
          _row("prop1", "corrected", "symbolic", "holds"), _row("thm2", "corrected", "symbolic", "fails")]


def test_sympy_witnesses_are_counted_apart_from_the_numerical_checks():
    counts = tally(CHECKS)  # counted by hand from CHECKS
    assert counts["as_printed"] == {"checks": 2, "hold": 1, "failing": ["thm1"]}
    assert counts["corrected"] == {"checks": 2, "hold": 2, "failing": []}
    assert counts["symbolic"] == {"checks": 2, "hold": 1, "failing": ["thm2"]}
    assert tally_sentence(counts).startswith("As printed, 1 of 2 numerical checks hold (failing: thm1); "
                                             "corrected forms, 2 of 2 hold; sympy agrees")


def test_the_summary_and_the_figures_report_print_the_same_sentence(tmp_path):
    from noisymix_app.reproduce_summary import _theory
    from noisymix_figures.report import theory_section
    from noisymix_figures.results import Results
    from noisymix_infra.io import write_json

    path = tmp_path / "theory.json"
    write_json(path, {"checks": CHECKS, "provenance": {}})
    sentence = tally_sentence(_theory(path))
    section = "\n".join(theory_section(Results(tmp_path, theory=(path, {"checks": CHECKS, "provenance": {}}))))
    assert sentence in section
