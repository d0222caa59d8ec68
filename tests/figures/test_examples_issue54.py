"""Issue 54: ``corruption_examples.png`` was always drawn at the package's current matched strengths, also for
plans that evaluate the published rows, and its row of the report called them "CIFAR-10-C parameters".  It
is drawn at the strengths of the Digits-C set the runs evaluated (that set's ``manifest.json``: real sets made
by ``noisymix corrupt``), and says which."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from fullscale.corruptions.matched import matched_fit
from noisymix_app.cli import main
from noisymix_figures import plots_examples
from noisymix_figures.registry import REGISTRY


def _set(tmp_path, params: str):
    out = tmp_path / params
    assert main(["corrupt", "--dataset", "digits", "--params", params, "--out", str(out), "--corruptions", "contrast",
                 "--limit", "4"]) == 0
    return out


def _results(*sets):
    """Results whose runs evaluated ``digits-c`` on ``sets`` (the evaluation records' ``data_root``)."""
    return SimpleNamespace(runs=[SimpleNamespace(evals={"digits-c": {"data_root": str(s.resolve())}}) for s in sets])


def test_the_published_rows_are_drawn_for_runs_that_evaluated_them(tmp_path, monkeypatch):
    shown = plots_examples.examples_set(_results(_set(tmp_path, "cifar")))
    assert shown["params"] == "cifar" and shown["strengths"] is None and "published" in shown["what"]
    import fullscale.corruptions as corruptions

    drawn = []
    real = corruptions.corrupt

    def spy(x, name, severity, **kwargs):
        drawn.append((name, kwargs.get("params"), kwargs.get("strength")))
        return real(x, name, severity, **kwargs)

    monkeypatch.setattr(corruptions, "corrupt", spy)
    assert plots_examples.corruption_examples(tmp_path / "published.png", shown=shown).read_bytes()[:4] == b"\x89PNG"
    # 15 corruptions x the five severities (issue 52), all at the published rows
    assert len(drawn) == 75 and {(p, k) for _, p, k in drawn} == {("cifar", 1.0)}
    drawn.clear()
    plots_examples.corruption_examples(tmp_path / "matched.png")  # no set named: the package's fit
    assert {(n, k) for n, _, k in drawn} == {(n, k) for n, k in matched_fit()["strengths"].items()}


def test_the_matched_strengths_are_the_sets_own_not_the_packages(tmp_path):
    made = _set(tmp_path, "digits-matched")
    manifest_path = made / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["strengths"]["contrast"] *= 2  # a set made before a refit
    manifest_path.write_text(json.dumps(manifest))
    shown = plots_examples.examples_set(_results(made))
    assert shown["strengths"]["contrast"] == pytest.approx(2 * matched_fit()["strengths"]["contrast"])
    assert "difficulty-matched strengths of the set the runs evaluated" in shown["what"]


def test_without_runs_the_package_fit_is_drawn_and_said_so():
    shown = plots_examples.examples_set(SimpleNamespace(runs=[]))
    assert shown["strengths"] == matched_fit()["strengths"] and "no Digits-C set evaluated" in shown["what"]


def test_two_different_sets_are_no_one_set_to_draw(tmp_path):
    with pytest.raises(ValueError, match="2 Digits-C sets"):
        plots_examples.examples_set(_results(_set(tmp_path, "cifar"), _set(tmp_path, "digits-matched")))


def test_the_reports_row_does_not_call_matched_strengths_cifar_parameters(tmp_path):
    entry = REGISTRY["fig:cimages"]
    assert "CIFAR-10-C parameters" not in entry.ours
    found = entry.found(_results(_set(tmp_path, "cifar")), True)
    assert found and "published CIFAR-10-C rows" in found[0]
