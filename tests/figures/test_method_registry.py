"""Method names, order and colours have one home, the methods registry (``fullscale.training.methods``),
and the paper's rows one, ``fullscale.vocabulary.METHOD_ROWS``, which each method's ``paper_row`` reads;
the order of our tables and figures (``noisymix_figures.methods.method_order``) and the figures' palette
read the registry.
Generated from the registry, as timm's tests are from its: every registered method's record is held
against what the tables and figures show, and a method registered here shows up in both."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import pytest

import noisymix_figures.plots as plots
from fullscale.training.methods import METHODS, Method, paper_rows, register_method, table_order
from fullscale.vocabulary import METHOD_ROWS
from noisymix_figures.methods import method_colors, method_label, method_order
from noisymix_figures.registry import labels
from noisymix_figures.render import ours_tables
from noisymix_figures.table_defs import COMPARISONS

REGISTERED = list(METHODS.values())
PAPER = json.loads((Path(__file__).parents[2] / "figures" / "paper_values.json").read_text())


@pytest.mark.parametrize("method", REGISTERED, ids=lambda m: m.name)
def test_every_registered_method_is_shown_as_its_record_says(method: Method):
    assert method_label(method.name) == method.title
    if method.color is not None:
        assert method_colors()[method.title] == method.color
        assert mcolors.is_color_like(method.color)
    placed = table_order()
    rank, name = method_order(method.name)
    assert name == method.name
    assert rank == (placed.index(method.name) if method.order is not None else len(placed))
    if method.paper_row is not None:
        assert METHOD_ROWS[method.paper_row] == method.name
        assert method_label(method.paper_row) == method.title  # "NoisyMix (ours)" is NoisyMix


def test_the_paper_rows_are_the_registrys_in_the_papers_order():
    rows = [name for name, _ in PAPER["tab:results_cifar10"]["rows"]]
    assert list(METHOD_ROWS) == rows == list(paper_rows())
    assert METHOD_ROWS == paper_rows() and METHOD_ROWS["AugMax*"] is None
    assert {m for m in METHOD_ROWS.values() if m} == {m.name for m in REGISTERED if m.paper_row}


def test_the_order_of_tables_already_written_is_kept():
    """The order our tables were written in before the registry held it (puzzlemix and the ablation
    rows after the ordered methods, by name): a derived order must not reorder them."""
    assert sorted(METHODS, key=method_order) == [
        "baseline", "mixup", "manifold_mixup", "cutmix", "noise", "nfm", "augmix", "augmix_jsd", "noisymix",
        "augmix_manifold_jsd", "augmix_nfm", "augmix_noise_jsd", "puzzlemix"]
    assert method_order("not_a_method") == (len(table_order()), "not_a_method")


@pytest.fixture()
def registered(monkeypatch):
    """A method registered with a place before every other and a colour, as a new method would be."""
    method = Method("zz_new", "ZZ New", order=-1, color="#123456")
    monkeypatch.setitem(METHODS, method.name, method)
    return method


def _run(accuracy: float) -> SimpleNamespace:
    return SimpleNamespace(config={"epochs": 1, "seed": 0}, evals={"clean": {"summary": {"accuracy": accuracy}}})


def test_a_registered_method_takes_its_place_in_our_tables(registered):
    groups = {("digits", "m", name): [_run(0.9)] for name in ("baseline", "puzzlemix", registered.name)}
    (table,) = ours_tables(groups)
    assert [row[0] for row in table.rows] == [registered.name, "baseline", "puzzlemix"]


def test_a_registered_method_has_its_colour_in_the_figures(registered):
    assert method_colors()[registered.title] == registered.color
    fig, ax = plt.subplots()
    try:
        plots._category_panel(ax, "t", {registered.name: {"noise": 50.0}, "baseline": {"noise": 60.0}})
        colours = {text.get_text(): handle.get_facecolor()
                   for handle, text in zip(ax.get_legend().legend_handles, ax.get_legend().get_texts(), strict=True)}
    finally:
        plt.close(fig)
    assert colours[registered.title] == mcolors.to_rgba(registered.color)
    assert colours["Baseline"] == mcolors.to_rgba(METHODS["baseline"].color)


def test_an_order_is_held_by_one_method(registered):
    with pytest.raises(ValueError, match="order -1 is taken"):
        register_method(Method("zz_other", "ZZ Other", order=-1))
    assert "zz_other" not in METHODS


def test_each_paper_table_is_one_record_registered_from_it():
    """The table itself carries what the report says of it (its position included); its analogues
    carry nothing and are named among its files when written with it."""
    registry = labels()
    for label in {c.label for c in COMPARISONS}:
        own = [c for c in COMPARISONS if c.label == label and not c.analogue]
        assert len(own) == 1 and own[0].position is not None, label
        entry = registry[label]
        assert (entry.position, entry.ours, entry.needs) == (own[0].position, own[0].ours, own[0].needs)
        analogues = [c for c in COMPARISONS if c.label == label and c.analogue]
        assert all(c.position is None and not c.ours for c in analogues)
        named = [c for c in analogues if c.name is None]
        assert len(entry.files) == 1 + len(named) and (not named or entry.files[1].endswith("_digits_analogue.md"))
