"""The registry of the paper's tables and figures (``noisymix_figures.registry``), one test per
registered label: it maps to a generator, the generator runs on a results folder without runs, a
table's generator writes the tables the report names for it, and every label of the paper is
registered or listed with a reason (tests/figures/test_label_coverage.py walks the LaTeX)."""

from __future__ import annotations

from pathlib import Path

import pytest

from noisymix_figures.coverage import LABELS
from noisymix_figures.registry import REGISTRY, Coverage, labels
from noisymix_figures.results import collect
from noisymix_figures.tables import Table

ENTRIES = list(labels().values())


def test_the_report_lists_the_registry_in_its_order():
    assert LABELS == labels() and list(LABELS) == [e.label for e in sorted(REGISTRY.values(), key=lambda e: e.position)]
    assert len({e.position for e in ENTRIES}) == len(ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.label)
def test_every_label_maps_to_a_generator_that_runs_without_runs(entry: Coverage, tmp_path):
    assert entry.label.startswith(("tab:", "fig:")) and callable(entry.generate) and entry.files
    assert entry.ours and entry.needs
    (tmp_path / "results").mkdir()
    results = collect(tmp_path / "results")  # an empty results folder
    made = entry.generate(results, tmp_path / "out")
    if entry.label.startswith("tab:"):
        assert made and all(isinstance(t, Table) for t in made)
        names = {t.name for t in made}
        assert {Path(f).stem for f in entry.files} <= names, (entry.files, names)
        assert all(t.markdown() and t.latex() for t in made)
    else:
        assert callable(entry.found) and entry.found(results, False) == []  # no runs, no toy: nothing of ours
        assert made is None or Path(made).is_file()


def test_a_label_is_registered_once():
    from noisymix_figures.registry import register

    with pytest.raises(ValueError, match="twice"):
        register(ENTRIES[0].label, position=99, files=("x",), ours="x", needs="x",
                 found=lambda results, drawn: [])(lambda results, out: None)
    with pytest.raises(ValueError, match="tab: or fig:"):
        register("eq:one", position=99, files=("x",), ours="x", needs="x")
