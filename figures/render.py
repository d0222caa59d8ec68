"""Our numbers as tables: a ``Table`` (Markdown and LaTeX), a paper table beside our runs
(``compare_table``, from its ``Comparison`` record in ``noisymix_figures.table_defs``), our own summary per
(dataset, model) (``ours_tables``) and tab:results_transfer beside our fine-tuned runs (``transfer_table``).

Every number of ours is mean (min / max) over seeds (``noisymix_figures.seed_stats``), beside the paper's
as printed; where the paper contradicts itself, a table carries numbered footnotes
(``noisymix_figures.consistency``); every calibration number of ours names its data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fullscale.vocabulary import TRANSFER_MODEL, TRANSFER_ROWS
from noisymix_figures.methods import method_order
from noisymix_figures.paper import footnotes, paper_number, paper_text
from noisymix_figures.run_metrics import at, category, fgsm, mfr, summary, transfer_metric
from noisymix_figures.seed_stats import delta, fmt, ours_text, seed_stats
from noisymix_figures.table_defs import Comparison

__all__ = ["TRANSFER_LABEL", "Table", "compare_table", "ours_tables", "transfer_table"]


@dataclass
class Table:
    name: str
    title: str
    header: list[str]
    rows: list[list[str]]
    numbers: dict  # {row: {column: {"paper": x, "ours": stats}}}, for the report
    # footnotes: where the paper contradicts itself (``noisymix_figures.consistency``), marked [n] on their rows
    notes: list[str] = field(default_factory=list)
    # the paper label it stands for, and whether it is a small-scale analogue of it: the label-by-label
    # account (``noisymix_figures.coverage.account``) reads them, and titles the table from its account
    label: str = ""
    analogue: bool = False

    def markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.header) + " |",
                 "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows]
        if self.notes:
            lines += ["", "Where the paper contradicts itself (found by recomputing its printed numbers):", ""]
            lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines) + "\n"

    def latex(self) -> str:
        def esc(t: str) -> str:
            # a row code's dashes stay dashes (TeX turns -- and --- into en and em dashes), the arrows math
            t = re.sub(r"-(?=-)", "-{}", t)
            return (t.replace("%", "\\%").replace("_", "\\_").replace("—", "--").replace("Δ", "$\\Delta$")
                    .replace("↑", "$\\uparrow$").replace("↓", "$\\downarrow$").replace("`", ""))
        cols = "l" + "c" * (len(self.header) - 1)
        body = [" & ".join(esc(c) for c in self.header) + " \\\\", "\\midrule"]
        body += [" & ".join(esc(c) for c in r) + " \\\\" for r in self.rows]
        notes = "".join(f"\\par\\footnotesize {esc(n)}\n" for n in self.notes)
        return ("% " + self.title + "\n\\begin{tabular}{" + cols + "}\n\\toprule\n" + "\n".join(body)
                + "\n\\bottomrule\n\\end{tabular}\n" + notes)


def compare_table(comp: Comparison, paper: dict, groups: dict) -> Table:
    """The paper table ``comp.label`` (NoisyMix, Erichson, Lim et al.: tab:results_cifar10 and the others of
    ``paper_values.json``) beside our runs of its (dataset, model) columns: per column the paper's cell as
    printed, ours (mean (min / max) over seeds) and Δ; an analogue's columns interleaved or after."""
    table = paper[comp.label]
    names = [*table["columns"], *(f"{name} (computed)" for name, _ in comp.extra)]
    header = ["Method"]
    interleaved = bool(comp.ours_names or comp.ours_suffix)
    for i, col in enumerate(names[:len(comp.columns)]):
        if interleaved:
            header += [f"{col} (paper)", comp.ours_names[i] if comp.ours_names else f"{col} {comp.ours_suffix}"]
        else:
            header += [f"{col} paper", "ours", "Δ"] if not comp.analogue else [f"{col} (paper)"]
    if comp.analogue and not interleaved:
        header += ["Digits (ours)", "Digits-C (ours)"]
    marks, notes = footnotes(comp.label, paper)
    rows, numbers = [], {}
    for name, cells in table["rows"]:
        method = comp.rows.get(name)
        row = [(name if method else f"{name} ({comp.unimplemented})") + marks.get(name, "")]
        numbers[name] = {}
        ours_cells = []
        for i, (dataset, model, metric) in enumerate(comp.columns):
            runs = groups.get((dataset, model, method), []) if method else []
            measured = [(r.config.get("seed"), v) for r in runs if (v := metric(r)) is not None]
            stats = seed_stats([v for _, v in measured])
            if stats is not None:  # the seeds, so that two rows' differences pair as the summary's do
                stats["seeds"] = [seed for seed, _ in measured]
            paren_metric = getattr(metric, "paren", None)
            paren = None if paren_metric is None else seed_stats(
                [v for v in (paren_metric(r) for r in runs) if v is not None])
            n_paper = len(table["columns"])
            if i < n_paper:
                paper_cell = cells[i] if i < len(cells) else None
            else:  # a column the paper does not print: computed from its row
                paper_cell = comp.extra[i - n_paper][1](cells)
            p = paper_number(paper_cell)
            key = header[1 + (2 * i if interleaved else i if comp.analogue else 3 * i)]
            numbers[name][key] = {"paper": p, "ours": stats}
            if paren_metric is not None:
                numbers[name][header[1 + 3 * i]].update(paper_paren=_paren_of(paper_cell), ours_paren=paren)
            if interleaved:
                row += [paper_text(paper_cell), fmt(stats)]
            elif comp.analogue:
                row.append(paper_text(paper_cell))
                ours_cells.append(fmt(stats))
            else:
                diff = "—" if stats is None or p is None else f"{stats['mean'] - p:+.1f}"
                printed = paper_text(paper_cell) if i < n_paper or p is None else f"{p:.1f}"
                row += [printed, ours_text(stats, paren, paren_metric is not None), diff]
        rows.append(row + ours_cells)
    if comp.gain:
        _gain_column(comp, table, header, rows, numbers, groups)
    name = comp.name or comp.label.replace("tab:", "") + ("_digits_analogue" if comp.analogue else "")
    notes = [*notes, comp.legend] if comp.legend else notes
    return Table(name, f"{comp.title} ({comp.label})", header, rows, numbers, notes, label=comp.label,
                 analogue=comp.analogue)


def _gain_column(comp: Comparison, table: dict, header: list, rows: list, numbers: dict, groups: dict) -> None:
    """tab:ablation's Robustness Gain: the paper's printed value and ours, each row's -C accuracy over
    its seeds minus the Baseline row's mean (None without Baseline runs: the ablation plan has none)."""
    dataset, model, c_metric = comp.columns[1]
    base_runs = groups.get((dataset, model, comp.rows.get("----")), [])
    base = seed_stats([v for v in (c_metric(r) for r in base_runs) if v is not None])
    column = table["columns"][2] if len(table["columns"]) > 2 else "Robustness Gain (%)"
    header += [f"{column} (paper)", "ours"] if comp.analogue else [f"{column} paper", "ours", "Δ"]
    for (name, cells), row in zip(table["rows"], rows, strict=True):
        p = paper_number(cells[2]) if len(cells) > 2 else None
        method = comp.rows.get(name)
        runs = groups.get((dataset, model, method), []) if method else []
        values = [v - base["mean"] for v in (c_metric(r) for r in runs) if v is not None] if base else []
        stats = seed_stats(values)
        row += [paper_text(p), fmt(stats)]
        if not comp.analogue:
            row.append("—" if stats is None or p is None else f"{stats['mean'] - p:+.1f}")
        numbers[name][header[-2 if comp.analogue else -3]] = {"paper": p, "ours": stats}


def _paren_of(cell) -> float | None:
    return cell.get("paren") if isinstance(cell, dict) else None


def ours_tables(groups: dict) -> list[Table]:
    """Our own numbers per (dataset, model): every method, mean (min / max) over seeds."""
    out = []
    by_setting: dict[tuple[str, str], dict] = {}
    for (dataset, model, method), runs in groups.items():
        by_setting.setdefault((dataset, model), {})[method] = runs
    for (dataset, model), methods in by_setting.items():
        # every calibration number names its data: the clean test split (suite calibration), the
        # corrupted sets (the -C suite's pooled measure) or ImageNet-R
        metrics = [("clean", summary("clean", "accuracy")),
                   (f"{dataset}-C", summary(f"{dataset}-c", "mean_accuracy")),
                   (f"{dataset}-C w/o noise", summary(f"{dataset}-c", "mean_accuracy_no_noise")),
                   *((f"-C {cat}", category(f"{dataset}-c", cat)) for cat in ("noise", "blur", "weather", "digital")),
                   ("RMS calib. err. (clean test set)", summary("calibration", "rms_calibration_error")),
                   ("ECE (clean test set)", summary("calibration", "ece")),
                   (f"RMS calib. err. ({dataset}-C)", at(f"{dataset}-c", "summary", "calibration",
                                                          "rms_calibration_error")),
                   ("FGSM 8/255", fgsm(8 / 255))]
        if dataset == "imagenet":
            metrics += [("mCE", summary("imagenet-c", "mce")), ("ImageNet-R", summary("imagenet-r", "accuracy")),
                        ("RMS calib. err. (ImageNet-R)", summary("imagenet-r", "rms_calibration_error")),
                        ("AURRA (ImageNet-R)", summary("imagenet-r", "aurra")), ("ImageNet-P mFR", mfr())]
        header = ["Method", "seeds", "epochs", *(m for m, _ in metrics)]
        rows, numbers = [], {}
        for method, runs in sorted(methods.items(), key=lambda kv: method_order(kv[0])):
            epochs = sorted({r.config.get("epochs") for r in runs})
            row = [method, str(len(runs)), ",".join(map(str, epochs))]
            numbers[method] = {}
            for label, metric in metrics:
                stats = seed_stats([v for v in (metric(r) for r in runs) if v is not None])
                numbers[method][label] = {"ours": stats}
                row.append(fmt(stats))
            rows.append(row)
        out.append(Table(f"ours_{dataset}_{model}", f"Our runs: {dataset}, {model} (%, mean (min / max) over seeds)",
                         header, rows, numbers))
    return out


TRANSFER_LABEL = "tab:results_transfer"
_TRANSFER_PARTS = ("all", "noise", "other")


def transfer_table(paper: dict, groups: dict, model: str = TRANSFER_MODEL) -> Table:
    """tab:results_transfer beside our fully fine-tuned ``model`` runs (rows: the source model,
    ``source_row``).  Per target data set: clean accuracy (paper, ours, Δ) and the -C cell as the
    paper prints it, all / noise / other (``fullscale.metrics.transfer_summary``: "all" is the mean
    of the four group means), then ours the same way, Δ of "all", and our 15-corruption mean."""
    table = paper[TRANSFER_LABEL]
    header = ["Source model"]
    for dataset in ("cifar10", "cifar100"):
        name = dataset.upper().replace("CIFAR", "CIFAR-")
        header += [f"{name} paper", "ours", "Δ", f"{name}-C paper (all / noise / other)", "ours (all / noise / other)",
                   "Δ all", "ours 15-corruption mean"]
    rows, numbers = [], {}
    for row_name, cells in table["rows"]:
        source = TRANSFER_ROWS.get(row_name)
        row, numbers[row_name] = [row_name], {}
        for i, dataset in enumerate(("cifar10", "cifar100")):
            runs = groups.get((dataset, model, source), []) if source else []
            clean = seed_stats([v for v in (summary("clean", "accuracy")(r) for r in runs) if v is not None])
            parts = {p: seed_stats([v for v in (transfer_metric(f"{dataset}-c", p)(r) for r in runs) if v is not None])
                     for p in (*_TRANSFER_PARTS, "mean_15")}
            paper_clean, paper_c = cells[2 * i], cells[2 * i + 1]
            numbers[row_name][dataset] = {"paper": paper_clean, "ours": clean}
            numbers[row_name][f"{dataset}-c"] = {"paper": paper_c[0], "ours": parts["all"],
                                                 "paper_noise": paper_c[1], "ours_noise": parts["noise"],
                                                 "paper_other": paper_c[2], "ours_other": parts["other"]}
            ours_c = ("—" if any(parts[p] is None for p in _TRANSFER_PARTS)
                      else " / ".join(fmt(parts[p], with_range=False) for p in _TRANSFER_PARTS))
            row += [f"{paper_clean:.1f}", fmt(clean), delta(clean, paper_clean),
                    paper_text(paper_c), ours_c, delta(parts["all"], paper_c[0]), fmt(parts["mean_15"])]
        rows.append(row)
    frozen = model != TRANSFER_MODEL
    how = ("only the classifier trained (freeze_level 4), not the paper's recipe for this table" if frozen
           else "every layer trained")
    title = (f"Transfer: ImageNet ResNet-50s fine-tuned on CIFAR-10/100 ({TRANSFER_LABEL}); ours: {model}, "
             f"{how}; 'all' = mean of the four group means, as the paper")
    return Table(TRANSFER_LABEL.replace("tab:", "") + ("_frozen" if frozen else ""), title, header, rows, numbers,
                 label=TRANSFER_LABEL)
