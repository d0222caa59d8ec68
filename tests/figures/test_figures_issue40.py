"""Issue 40: portable file names, tables as the paper prints them, the ablation's gain and legend, the
digits analogues, and one verdict vocabulary with the reproduce summary."""

from __future__ import annotations

import pytest

from noisymix_figures.registry import UNPORTABLE, portable
from noisymix_figures.report import _sign_verdict
from noisymix_figures.tables import ABLATION_LEGEND, COMPARISONS, build_tables, compare_table, paper_values


def test_portable_names():
    assert portable("fig:toy_example") == "toy_example" and portable("tab:ablation") == "ablation"
    assert portable('a:b*c?d"e') == "a_b_c_d_e"
    # every table the figures step can write, with no runs and with runs of every analogue
    names = [t.name for t in build_tables({})]
    assert all(not UNPORTABLE.search(portable(n)) for n in names)


class _Run:
    def __init__(self, seed, clean, corrupted):
        self.config = {"seed": seed}
        self.evals = {"clean": {"summary": {"accuracy": clean}},
                      "digits-c": {"summary": {"mean_accuracy": corrupted}}}


def _ablation_groups():
    base = [_Run(s, 0.95, 0.80 + 0.01 * s) for s in range(3)]
    full = [_Run(s, 0.94, 0.90 + 0.01 * s) for s in range(3)]
    return {("digits", "preactresnet18", "baseline"): base, ("digits", "preactresnet18", "noisymix"): full}


def test_ablation_analogue_keeps_the_gain_and_explains_its_codes():
    comp = next(c for c in COMPARISONS if c.label == "tab:ablation" and c.analogue)
    table = compare_table(comp, paper_values(), _ablation_groups())
    assert table.header[-2:] == ["Robustness Gain (%) (paper)", "ours"]
    first = next(r for r in table.rows if r[0].startswith("----"))
    assert first[1] == "79.0"  # printed as the paper prints it, not "79"
    full = next(r for r in table.rows if r[0].startswith("AFNJ"))
    assert full[-2] == "24.4" and full[-1].startswith("10.0")  # 90..92 minus Baseline's 81: +10
    assert ABLATION_LEGEND in table.notes and "J = the Jensen-Shannon" in table.markdown()
    tex = table.latex()
    assert "----" not in tex and "-{}-{}-{}-" in tex  # TeX would print an em dash and a hyphen
    assert "↑" not in tex and "$\\uparrow$" in tex


def test_the_cifar_ablation_table_keeps_the_gain_column_too():
    comp = next(c for c in COMPARISONS if c.label == "tab:ablation" and not c.analogue)
    table = compare_table(comp, paper_values(), {})
    assert "Robustness Gain (%) paper" in table.header


def test_digits_analogues_of_the_per_corruption_and_p_tables():
    labels = {c.label for c in COMPARISONS if c.analogue}
    assert {"tab:results_cifar10_c", "tab:results_cifar_p", "tab:ablation"} <= labels
    comp = next(c for c in COMPARISONS if c.label == "tab:results_cifar_p" and c.analogue)
    table = compare_table(comp, paper_values(), {})
    assert table.header[1:3] == ["White (paper)", "White (ours, Digits-P)"]  # the tables' names, not snake_case


@pytest.mark.parametrize(("ours", "base", "sign", "verdict"), [
    ([91.0, 92.0, 93.0], [84.0, 85.5, 86.0], 1, "holds"),
    ([91.0, 92.0, 93.0], [84.0, 85.5, 86.0], -1, "fails"),
    ([91.0, 85.0, 93.0], [90.0, 86.0, 92.0], 1, "within noise"),
    ([91.0], [84.0], 1, "not enough seeds"),
])
def test_one_vocabulary_with_the_summary(ours, base, sign, verdict):
    """The report's check of the paper's sign uses the summary's paired interval and its words."""
    from noisymix_infra.stats import adjusted_verdict, paired, two_sided_p

    seeds = list(range(len(ours)))
    got = _sign_verdict({"values": ours, "seeds": seeds}, {"values": base, "seeds": seeds}, sign)
    assert got == verdict
    if len(ours) > 1:  # the reproduce summary's verdict of the same claim, on the same seeds
        d = paired(dict(zip(seeds, [sign * v for v in ours], strict=True)),
                   dict(zip(seeds, [sign * v for v in base], strict=True)))
        assert adjusted_verdict(d, 0.0, two_sided_p(d)) == verdict  # a claim tested alone at 5 %


def test_digits_c_per_corruption_analogue_reads_our_runs():
    from fullscale.vocabulary import CORRUPTIONS

    class Run:
        def __init__(self, seed, acc):
            self.config = {"seed": seed}
            self.evals = {"digits-c": {"summary": {"per_corruption": {c: acc for c in CORRUPTIONS}}}}

    comp = next(c for c in COMPARISONS if c.label == "tab:results_cifar10_c" and c.analogue)
    groups = {("digits", "preactresnet18", "noisymix"): [Run(0, 0.9), Run(1, 0.92)]}
    table = compare_table(comp, paper_values(), groups)
    row = next(r for r in table.rows if r[0].startswith("NoisyMix"))
    assert table.header[1:3] == ["White (paper)", "White (ours, Digits-C)"]
    assert row[2].startswith("91.0") and len(row) == len(table.header)
