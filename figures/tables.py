"""The paper's tables with our values beside them, and our own summary tables: building them all
(``build_tables``) and registering each paper table's generator (``noisymix_figures.registry``).

The parts, one job each: the paper's printed values (``noisymix_figures.paper``), the seed statistics
(``noisymix_figures.seed_stats``), what a column reads of a run (``noisymix_figures.run_metrics``), the
tables as data, one ``Comparison`` record per table (``noisymix_figures.table_defs``), and the writing
of a table (``noisymix_figures.render``).  Their public names are re-exported here.
"""

from __future__ import annotations

from pathlib import Path

from fullscale.vocabulary import METHOD_ROWS, TRANSFER_MODEL
from noisymix_figures.methods import method_order
from noisymix_figures.paper import footnotes, paper_mce, paper_text, paper_values
from noisymix_figures.registry import NEEDS_IMAGENET, register, table_files
from noisymix_figures.render import TRANSFER_LABEL, Table, compare_table, ours_tables, transfer_table
from noisymix_figures.seed_stats import seed_stats
from noisymix_figures.table_defs import ABLATION_LEGEND, COMPARISONS, IMAGENET_MODEL, Comparison

__all__ = ["ABLATION_LEGEND", "COMPARISONS", "IMAGENET_MODEL", "METHOD_ROWS", "TRANSFER_LABEL", "Comparison", "Table",
           "build_tables", "compare_table", "comparison_tables", "method_order", "ours_tables", "paper_mce",
           "paper_values", "seed_stats", "transfer_table"]


def _wanted(comp: Comparison, settings: set) -> bool:
    """Whether ``comp`` is written: always, unless it is a second analogue of a table (``name``),
    written only when runs of its own (dataset, model) exist."""
    return comp.name is None or any((d, m) in settings for d, m, _ in comp.columns)


def comparison_tables(label: str, paper: dict, groups: dict) -> list[Table]:
    """The tables of the paper table ``label`` beside our runs (itself, then its analogues), as
    ``build_tables`` writes them."""
    settings = {key[:2] for key in groups}
    return [compare_table(c, paper, groups) for c in COMPARISONS if c.label == label and _wanted(c, settings)]


def build_tables(groups: dict) -> list[Table]:
    """Every table ``noisymix figures`` writes: our own per (dataset, model), each paper table of
    ``COMPARISONS`` beside our runs, tab:results_transfer (fine-tuned, then frozen), and the rest of the
    paper's tables as printed (NoisyMix, Erichson, Lim et al.; ``paper_values.json``)."""
    paper = paper_values()
    settings = {key[:2] for key in groups}  # (dataset, model) of every run
    tables = ours_tables(groups) + [compare_table(c, paper, groups) for c in COMPARISONS if _wanted(c, settings)]
    tables.append(transfer_table(paper, groups))
    tables.append(transfer_table(paper, groups, f"{TRANSFER_MODEL}-freeze4"))  # the fixed-feature variant
    covered = {c.label for c in COMPARISONS} | {TRANSFER_LABEL}
    for label, table in paper.items():  # the rest of the paper, shown as printed (no runs of ours map there)
        if label in covered:
            continue
        header = ["Row", *table["columns"]]
        marks, notes = footnotes(label, paper)
        rows = [[name + marks.get(name, ""), *(paper_text(c) for c in cells)] for name, cells in table["rows"]]
        # titled "no matching runs of ours" until the label's account says otherwise (fig:toy_example with a
        # toy.json: ``noisymix_figures.coverage.retitle``)
        tables.append(Table(label.replace("tab:", ""), f"{label} (paper values; no matching runs of ours)",
                            header, rows, {}, notes, label=label))
    return tables


# ---------------------------------------------------------------------------- the registry
# Each paper table: its generator (``comparison_tables``, or ``transfer_tables``) and what REPORT.md's
# label-by-label section says of it (``noisymix_figures.registry``), read from its ``Comparison`` record.

def register_comparison(comp: Comparison) -> None:
    """Register the tables of ``comp.label`` (``comp``: the table itself, which says what the report
    says of it); the files named are the table's and those of its analogues written whenever it is."""
    label = comp.label
    suffixes = ("_digits_analogue" if c.analogue else "" for c in COMPARISONS if c.label == label and c.name is None)
    register(label, position=comp.position, files=table_files(label, *suffixes), ours=comp.ours, needs=comp.needs)(
        lambda results, out: comparison_tables(label, paper_values(), results.groups()))


for _comp in COMPARISONS:
    if _comp.position is not None:
        register_comparison(_comp)
del _comp


@register(TRANSFER_LABEL, position=6, files=table_files(TRANSFER_LABEL, "", "_frozen"),
          ours="resnet50_transfer runs fine-tuned on cifar10 / cifar100 from each source row's ImageNet model",
          needs="the source models of tab:results_imagenet (" + NEEDS_IMAGENET + ") fine-tuned on CIFAR-10/100 with "
                "their -C sets (data; `noisymix sweep results_transfer --source ROW=WEIGHTS`)")
def transfer_tables(results, out: Path) -> list[Table]:
    """tab:results_transfer beside our runs: fully fine-tuned, then the fixed-feature variant."""
    paper, groups = paper_values(), results.groups()
    return [transfer_table(paper, groups), transfer_table(paper, groups, f"{TRANSFER_MODEL}-freeze4")]
