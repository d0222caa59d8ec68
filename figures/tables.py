"""The paper's tables with our values beside them, and our own summary tables.

Which of our measurements fills which paper cell is data (``COMPARISONS``): a paper table, the
(dataset, model) of our runs that reproduce it, and per column the metric.  Digits runs are shown
as a *small-scale analogue* of the CIFAR-10 table, never as CIFAR numbers.  The four ImageNet tables
read ``resnet50`` runs of ``dataset=imagenet``: ImageNet-P flip rates are normalised by AlexNet's
flip probabilities (``noisymix_figures.alexnet``), mCE by its errors (``ALEXNET_ERR``), and the
calibration table reads the ``imagenet-r`` suite (ImageNet-R, as the paper), not ``calibration``
(the clean test split).  Where the paper contradicts itself, a table carries numbered footnotes
(``noisymix_figures.consistency``); every calibration number of ours names its data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fullscale.vocabulary import (
    ABLATION_ROWS,
    ALEXNET_ERR,
    CORRUPTIONS,
    METHOD_ROWS,
    P_COLUMNS,
    TRANSFER_MODEL,
    TRANSFER_ROWS,
)
from noisymix_figures.alexnet import flip_rates, mean_flip_rate
from noisymix_figures.consistency import findings_for
from noisymix_figures.methods import method_order
from noisymix_figures.registry import NEEDS_IMAGENET, needs_cifar, needs_cifar_p, register, table_files
from noisymix_figures.results import Run

__all__ = ["COMPARISONS", "IMAGENET_MODEL", "METHOD_ROWS", "Comparison", "Table", "build_tables", "compare_table",
           "comparison_tables", "method_order", "ours_tables", "paper_mce", "paper_values", "seed_stats"]

Metric = Callable[[Run], float | None]

def paper_values() -> dict:
    return json.loads((Path(__file__).with_name("paper_values.json")).read_text())


def _at(suite: str, *path: str) -> Metric:
    """The percentage at ``evals[suite][path...]`` of a run, or None where it is missing."""
    def metric(run: Run) -> float | None:
        value = run.evals.get(suite, {})
        for key in path:
            value = value.get(key, {}) if isinstance(value, dict) else {}
        return None if isinstance(value, dict) else 100 * float(value)
    return metric


def _summary(suite: str, key: str) -> Metric:
    return _at(suite, "summary", key)


def _corruption(suite: str, name: str) -> Metric:
    return _at(suite, "summary", "per_corruption", name)


def _flip(suite: str, name: str) -> Metric:
    return _at(suite, "results", name, "flip_probability")


def _with_paren(metric: Metric, paren: Metric) -> Metric:
    """``metric``, carrying ``paren``: the value the paper prints in parentheses beside it (the
    mean without the noise corruptions of tab:results_imagenet); ours is shown the same way."""
    metric.paren = paren  # type: ignore[attr-defined]
    return metric


def _imagenet_p_rates(run: Run) -> dict[str, float]:
    """The run's ImageNet-P flip rates per paper column, normalised by AlexNet's flip
    probabilities (``noisymix_figures.alexnet``), the weather column on the set it was evaluated on."""
    record = run.evals.get("imagenet-p", {})
    summary = record.get("summary", {}) if isinstance(record.get("summary"), dict) else {}
    results = record.get("results", {})
    return flip_rates(results if isinstance(results, dict) else {}, summary.get("weather_perturbation", "snow"))


def _flip_rate(column: str) -> Metric:
    """100 FR of one column of tab:results_imagenet_p."""
    def metric(run: Run) -> float | None:
        rate = _imagenet_p_rates(run).get(column)
        return None if rate is None else 100 * rate
    return metric


def _mfr(no_noise: bool = False) -> Metric:
    """100 mFR over the ten columns (``no_noise``: without the two noise columns); None unless all ten."""
    def metric(run: Run) -> float | None:
        value = mean_flip_rate(_imagenet_p_rates(run), no_noise=no_noise)
        return None if value is None else 100 * value
    return metric


def _paper_mean(columns: tuple[int, ...]) -> Callable[[list], float | None]:
    """The mean of a paper row's ``columns``, as the paper would print it beside them."""
    def compute(cells: list) -> float | None:
        values = [_paper_number(cells[i]) for i in columns if i < len(cells)]
        return None if len(values) < len(columns) or None in values else float(np.mean(values))
    return compute


def paper_mce(cells: list) -> float | None:
    """mCE (%) of a paper row of 15 ImageNet-C accuracies: mean_c (100 - acc_c) / (100 E^AlexNet_c),
    ``fullscale.metrics.mean_corruption_error`` on accuracies averaged over severities."""
    accs = [_paper_number(c) for c in cells[:len(CORRUPTIONS)]]
    if len(accs) < len(CORRUPTIONS) or None in accs:
        return None
    return float(100 * np.mean([(100 - a) / (100 * ALEXNET_ERR[c]) for a, c in zip(accs, CORRUPTIONS, strict=True)]))


@dataclass(frozen=True)
class Comparison:
    """A paper table and where our matching numbers come from (one (dataset, model) per column).

    ``extra``: columns the paper does not print, after its own, each with how the paper's value is
    computed from its row (a mean of its columns, mCE) and ours in ``columns`` after the paper's."""

    label: str
    title: str
    columns: tuple[tuple[str, str, Metric], ...]  # (dataset, model, metric) per paper column, then per extra
    rows: dict[str, str | None]
    analogue: bool = False
    extra: tuple[tuple[str, Callable[[list], float | None]], ...] = ()
    unimplemented: str = "not implemented"  # what a row without a method is
    # the file name when it is not the label's (a second analogue of one table); such a table is
    # written only when runs of its own exist
    name: str | None = None
    # an analogue's own column names, each beside the paper's column it stands for (None: the digits
    # clean / -C pair after the paper's columns)
    ours_names: tuple[str, ...] | None = None
    # or each paper column's own name followed by this ("(ours, Digits-C)"): the tables' names, not ours
    ours_suffix: str = ""
    # tab:ablation's third column, the -C accuracy gain over the "----" row (Baseline): the paper's as
    # printed, ours as each row's -C mean minus the Baseline row's (issue 40: it was dropped)
    gain: bool = False
    # a legend printed under the table (the ablation's row codes)
    legend: str = ""


def _c_columns(dataset: str, model: str) -> tuple:
    return tuple((dataset, model, _corruption(f"{dataset}-c", c)) for c in CORRUPTIONS)



def _p_columns(dataset: str, model: str) -> tuple:
    return (*((dataset, model, _flip(f"{dataset}-p", n)) for n in P_COLUMNS),
            (dataset, model, _summary(f"{dataset}-p", "mean_flip_probability")))


def _clean_c(model: str) -> tuple:
    return (("cifar10", model, _summary("clean", "accuracy")),
            ("cifar10", model, _summary("cifar10-c", "mean_accuracy")),
            ("cifar100", model, _summary("clean", "accuracy")),
            ("cifar100", model, _summary("cifar100-c", "mean_accuracy")))


# The paper's "Wide-ResNet-28x2" rows were trained by the public code's ``wideresnet28``, which is
# WRN-28-4 with dropout 0.1 (RobustBench lists the NoisyMix CIFAR model as WRN-28-4): our runs
# for those rows are ``wrn28_4`` runs, and every such table says so in its title.
_WRN = "wrn28_4"
_WRN_NOTE = "paper's Wide-ResNet-28x2 rows; ours: wrn28_4 = WRN-28-4, dropout 0.1, the public code's model"

#: the paper's ImageNet rows are ResNet-50s; ours are ``resnet50`` runs of ``dataset=imagenet``
IMAGENET_MODEL = "resnet50"
_IMAGENET_ROWS = {**METHOD_ROWS, "Baseline ResNet-50": "baseline"}  # tab:results_imagenet_r_calibration's name
_PUBLIC = "a public checkpoint in the paper; not trained here"
_IM = ("imagenet", IMAGENET_MODEL)
_P_NOTE = ("flip rates FR = FP / FP(AlexNet), AlexNet's flip probabilities from Hendrycks & Dietterich (2019), "
           "App. E (figures/alexnet_flip.json); the Snow column reads the set the run was evaluated on")
_IMAGENET_COMPARISONS: tuple[Comparison, ...] = (
    Comparison("tab:results_imagenet", f"ResNet-50 on ImageNet, ImageNet-C, ImageNet-R and ImageNet-P (mFR, %); "
                                       f"in parentheses without the noise corruptions; ours: {IMAGENET_MODEL}",
               ((*_IM, _summary("clean", "accuracy")),
                (*_IM, _with_paren(_summary("imagenet-c", "mean_accuracy"),
                                   _summary("imagenet-c", "mean_accuracy_no_noise"))),
                (*_IM, _summary("imagenet-r", "accuracy")),
                (*_IM, _with_paren(_mfr(), _mfr(no_noise=True)))), _IMAGENET_ROWS, unimplemented=_PUBLIC),
    Comparison("tab:results_imagenet_c", f"ResNet-50, ImageNet-C accuracy per corruption (%), then the mean and "
                                         f"mCE (AlexNet-normalised, %); ours: {IMAGENET_MODEL}",
               (*_c_columns("imagenet", IMAGENET_MODEL), (*_IM, _summary("imagenet-c", "mean_accuracy")),
                (*_IM, _summary("imagenet-c", "mce"))), _IMAGENET_ROWS,
               extra=(("mean", _paper_mean(tuple(range(len(CORRUPTIONS))))), ("mCE", paper_mce)),
               unimplemented=_PUBLIC),
    Comparison("tab:results_imagenet_p", f"ResNet-50, ImageNet-P {_P_NOTE}; ours: {IMAGENET_MODEL}",
               (*((*_IM, _flip_rate(c)) for c in P_COLUMNS), (*_IM, _mfr())), _IMAGENET_ROWS, unimplemented=_PUBLIC),
    Comparison("tab:results_imagenet_r_calibration",
               f"Calibration on ImageNet-R (the renditions, logits of its 200 classes), not on the clean validation "
               f"set: RMS calibration error (%, bins of 100) and AURRA (%); ours: {IMAGENET_MODEL}, suite imagenet-r",
               ((*_IM, _summary("imagenet-r", "rms_calibration_error")), (*_IM, _summary("imagenet-r", "aurra"))),
               _IMAGENET_ROWS, unimplemented=_PUBLIC),
)

#: tab:ablation's row codes (the paper's table names its switches in its caption only)
ABLATION_LEGEND = ("Row codes: A = AugMix views, F = feature (manifold) mixing, N = noise injection, J = the "
                   "Jensen-Shannon stability loss; a dash: that component off (`----`: the Baseline, `AFNJ`: "
                   "NoisyMix).  Robustness gain: -C accuracy minus the Baseline row's.")


COMPARISONS: tuple[Comparison, ...] = (
    Comparison("tab:results_cifar10", "PreActResNet-18 on CIFAR-10/100 (-C); ours: preactresnet18",
               _clean_c("preactresnet18"), METHOD_ROWS),
    Comparison("tab:results_cifar100", f"Wide-ResNet-28 on CIFAR-10/100 (-C) ({_WRN_NOTE})", _clean_c(_WRN),
               METHOD_ROWS),
    Comparison("tab:ablation", f"Ablation, Wide-ResNet-28 on CIFAR-100 ({_WRN_NOTE})",
               (("cifar100", _WRN, _summary("clean", "accuracy")),
                ("cifar100", _WRN, _summary("cifar100-c", "mean_accuracy"))), ABLATION_ROWS,
               gain=True, legend=ABLATION_LEGEND),
    Comparison("tab:results_cifar10_c", "PreActResNet-18, CIFAR-10-C per corruption; ours: preactresnet18",
               _c_columns("cifar10", "preactresnet18"), METHOD_ROWS),
    Comparison("tab:results_cifar100_c", "PreActResNet-18, CIFAR-100-C per corruption; ours: preactresnet18",
               _c_columns("cifar100", "preactresnet18"), METHOD_ROWS),
    Comparison("tab:results_wrs_cifar10_c", f"Wide-ResNet-28, CIFAR-10-C per corruption ({_WRN_NOTE})",
               _c_columns("cifar10", _WRN), METHOD_ROWS),
    Comparison("tab:results_wrs_cifar100_c", f"Wide-ResNet-28, CIFAR-100-C per corruption ({_WRN_NOTE})",
               _c_columns("cifar100", _WRN), METHOD_ROWS),
    Comparison("tab:results_cifar_p", "PreActResNet-18, CIFAR-10-P flip probabilities; ours: preactresnet18",
               _p_columns("cifar10", "preactresnet18"), METHOD_ROWS),
    Comparison("tab:results_cifar_p_wrs", f"Wide-ResNet-28, CIFAR-10-P flip probabilities ({_WRN_NOTE})",
               _p_columns("cifar10", _WRN), METHOD_ROWS),
    Comparison("tab:results_cifar10", "Small-scale analogue: Digits / Digits-C (ours: preactresnet18, reduced) vs the "
               "paper's CIFAR-10 / CIFAR-10-C", (("digits", "preactresnet18", _summary("clean", "accuracy")),
                                                 ("digits", "preactresnet18", _summary("digits-c", "mean_accuracy"))),
               METHOD_ROWS, analogue=True),
    # the digits at 16x16 and their Digits-C (`noisymix reproduce --plan digits16`, issue 34)
    Comparison("tab:results_cifar10", "Small-scale analogue: Digits 16x16 / Digits-C 16x16 (ours: preactresnet18, "
               "reduced) vs the paper's CIFAR-10 / CIFAR-10-C",
               (("digits16", "preactresnet18", _summary("clean", "accuracy")),
                ("digits16", "preactresnet18", _summary("digits16-c", "mean_accuracy"))),
               METHOD_ROWS, analogue=True, name="results_cifar10_digits16_analogue"),
    # the digits analogues of the per-corruption, -P and ablation tables (issue 40): our Digits-C
    # per corruption, Digits-P flip probabilities (the laptop plan evaluates every method on it) and
    # the ablation plan's rows (`noisymix reproduce --plan ablation`), each column beside the paper's
    Comparison("tab:results_cifar10_c", "Small-scale analogue: Digits-C per corruption (ours: preactresnet18, "
               "reduced) vs the paper's CIFAR-10-C", _c_columns("digits", "preactresnet18"), METHOD_ROWS,
               analogue=True, ours_suffix="(ours, Digits-C)"),
    Comparison("tab:results_cifar_p", "Small-scale analogue: Digits-P flip probabilities (ours: preactresnet18, "
               "reduced) vs the paper's CIFAR-10-P", _p_columns("digits", "preactresnet18"), METHOD_ROWS,
               analogue=True, ours_suffix="(ours, Digits-P)"),
    Comparison("tab:ablation", "Small-scale analogue: ablation on Digits / Digits-C (ours: preactresnet18, reduced; "
               "`--plan ablation`) vs the paper's Wide-ResNet-28 on CIFAR-100",
               (("digits", "preactresnet18", _summary("clean", "accuracy")),
                ("digits", "preactresnet18", _summary("digits-c", "mean_accuracy"))), ABLATION_ROWS,
               analogue=True, ours_names=("Digits (ours)", "Digits-C (ours)"), gain=True, legend=ABLATION_LEGEND),
    *_IMAGENET_COMPARISONS,
)


def seed_stats(values: list[float], *, std: bool = False) -> dict | None:
    """Mean, min, max and n over seeds (None for no values); ``std``: also the sample std (ddof 1;
    0.0 for one seed).  The one seed statistic of every table, figure and sweep table."""
    if not values:
        return None
    stats = {"mean": float(np.mean(values)), "min": float(np.min(values)), "max": float(np.max(values)),
             "n": len(values), "values": [float(v) for v in values]}
    if std:
        stats["std"] = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return stats


def _fmt(stats: dict | None, with_range: bool = True) -> str:
    if stats is None:
        return "—"
    if stats["n"] > 1 and with_range:
        return f"{stats['mean']:.1f} ({stats['min']:.1f} / {stats['max']:.1f})"
    return f"{stats['mean']:.1f}"


def _paper_number(cell) -> float | None:
    if isinstance(cell, dict):
        return cell.get("mean", cell.get("value"))
    if isinstance(cell, list):
        return cell[0]
    return cell


def _paper_text(cell) -> str:
    if cell is None:
        return "—"
    if isinstance(cell, dict) and "mean" in cell:
        return f"{cell['mean']:.1f} ({cell['min']:.1f} / {cell['max']:.1f})"
    if isinstance(cell, dict):
        return f"{cell['value']:.1f} ({cell['paren']:.1f})"
    if isinstance(cell, list):
        return " / ".join(f"{v:.1f}" for v in cell)
    return f"{cell:.1f}" if round(cell, 1) == cell else f"{cell:g}"  # 79.0 as the paper prints it, not 79


@dataclass
class Table:
    name: str
    title: str
    header: list[str]
    rows: list[list[str]]
    numbers: dict  # {row: {column: {"paper": x, "ours": stats}}}, for the report
    # footnotes: where the paper contradicts itself (``noisymix_figures.consistency``), marked [n] on their rows
    notes: list[str] = field(default_factory=list)

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


def _footnotes(label: str, paper: dict) -> tuple[dict[str, str], list[str]]:
    """Row name -> its marks (" [1]", " [1, 3]") and the numbered notes of the paper's
    contradictions that concern ``label`` (``noisymix_figures.consistency``)."""
    marks: dict[str, list[int]] = {}
    notes = []
    for i, finding in enumerate(findings_for(label, paper), 1):
        notes.append(f"[{i}] {finding.text}")
        for row in finding.rows[label]:
            marks.setdefault(row, []).append(i)
    return {row: f" [{', '.join(map(str, ns))}]" for row, ns in marks.items()}, notes


def _ours_text(stats: dict | None, paren: dict | None, with_paren: bool) -> str:
    """Our cell as the paper prints it: "mean (min / max)", or with a parenthesised value
    "mean (paren)" followed by the seeds' range of the mean in brackets."""
    if not with_paren:
        return _fmt(stats)
    if stats is None:
        return "—"
    text = f"{stats['mean']:.1f} ({_fmt(paren, with_range=False)})"
    return text + (f" [{stats['min']:.1f} / {stats['max']:.1f}]" if stats["n"] > 1 else "")


def compare_table(comp: Comparison, paper: dict, groups: dict) -> Table:
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
    marks, notes = _footnotes(comp.label, paper)
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
            p = _paper_number(paper_cell)
            key = header[1 + (2 * i if interleaved else i if comp.analogue else 3 * i)]
            numbers[name][key] = {"paper": p, "ours": stats}
            if paren_metric is not None:
                numbers[name][header[1 + 3 * i]].update(paper_paren=_paren_of(paper_cell), ours_paren=paren)
            if interleaved:
                row += [_paper_text(paper_cell), _fmt(stats)]
            elif comp.analogue:
                row.append(_paper_text(paper_cell))
                ours_cells.append(_fmt(stats))
            else:
                delta = "—" if stats is None or p is None else f"{stats['mean'] - p:+.1f}"
                paper_text = _paper_text(paper_cell) if i < n_paper or p is None else f"{p:.1f}"
                row += [paper_text, _ours_text(stats, paren, paren_metric is not None), delta]
        rows.append(row + ours_cells)
    if comp.gain:
        _gain_column(comp, table, header, rows, numbers, groups)
    name = comp.name or comp.label.replace("tab:", "") + ("_digits_analogue" if comp.analogue else "")
    notes = [*notes, comp.legend] if comp.legend else notes
    return Table(name, f"{comp.title} ({comp.label})", header, rows, numbers, notes)


def _gain_column(comp: Comparison, table: dict, header: list, rows: list, numbers: dict, groups: dict) -> None:
    """tab:ablation's Robustness Gain: the paper's printed value and ours, each row's -C accuracy over
    its seeds minus the Baseline row's mean (None without Baseline runs: the ablation plan has none)."""
    dataset, model, c_metric = comp.columns[1]
    base_runs = groups.get((dataset, model, comp.rows.get("----")), [])
    base = seed_stats([v for v in (c_metric(r) for r in base_runs) if v is not None])
    column = table["columns"][2] if len(table["columns"]) > 2 else "Robustness Gain (%)"
    header += [f"{column} (paper)", "ours"] if comp.analogue else [f"{column} paper", "ours", "Δ"]
    for (name, cells), row in zip(table["rows"], rows, strict=True):
        p = _paper_number(cells[2]) if len(cells) > 2 else None
        method = comp.rows.get(name)
        runs = groups.get((dataset, model, method), []) if method else []
        values = [v - base["mean"] for v in (c_metric(r) for r in runs) if v is not None] if base else []
        stats = seed_stats(values)
        row += [_paper_text(p), _fmt(stats)]
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
        metrics = [("clean", _summary("clean", "accuracy")),
                   (f"{dataset}-C", _summary(f"{dataset}-c", "mean_accuracy")),
                   (f"{dataset}-C w/o noise", _summary(f"{dataset}-c", "mean_accuracy_no_noise")),
                   *((f"-C {cat}", _category(f"{dataset}-c", cat)) for cat in ("noise", "blur", "weather", "digital")),
                   ("RMS calib. err. (clean test set)", _summary("calibration", "rms_calibration_error")),
                   ("ECE (clean test set)", _summary("calibration", "ece")),
                   (f"RMS calib. err. ({dataset}-C)", _at(f"{dataset}-c", "summary", "calibration",
                                                          "rms_calibration_error")),
                   ("FGSM 8/255", _fgsm(8 / 255))]
        if dataset == "imagenet":
            metrics += [("mCE", _summary("imagenet-c", "mce")), ("ImageNet-R", _summary("imagenet-r", "accuracy")),
                        ("RMS calib. err. (ImageNet-R)", _summary("imagenet-r", "rms_calibration_error")),
                        ("AURRA (ImageNet-R)", _summary("imagenet-r", "aurra")), ("ImageNet-P mFR", _mfr())]
        header = ["Method", "seeds", "epochs", *(m for m, _ in metrics)]
        rows, numbers = [], {}
        for method, runs in sorted(methods.items(), key=lambda kv: method_order(kv[0])):
            epochs = sorted({r.config.get("epochs") for r in runs})
            row = [method, str(len(runs)), ",".join(map(str, epochs))]
            numbers[method] = {}
            for label, metric in metrics:
                stats = seed_stats([v for v in (metric(r) for r in runs) if v is not None])
                numbers[method][label] = {"ours": stats}
                row.append(_fmt(stats))
            rows.append(row)
        out.append(Table(f"ours_{dataset}_{model}", f"Our runs: {dataset}, {model} (%, mean (min / max) over seeds)",
                         header, rows, numbers))
    return out


def _category(suite: str, category: str) -> Metric:
    return _at(suite, "summary", "per_category", category)


def _fgsm(eps: float) -> Metric:
    def metric(run: Run) -> float | None:
        summary = run.evals.get("fgsm", {}).get("summary", {})
        for e, a in zip(summary.get("epsilons", []), summary.get("accuracy", []), strict=False):
            if abs(e - eps) < 1e-9:
                return 100 * a
        return None
    return metric


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
        marks, notes = _footnotes(label, paper)
        rows = [[name + marks.get(name, ""), *(_paper_text(c) for c in cells)] for name, cells in table["rows"]]
        tables.append(Table(label.replace("tab:", ""), f"{label} (paper values; no matching runs of ours)",
                            header, rows, {}, notes))
    return tables


TRANSFER_LABEL = "tab:results_transfer"
_TRANSFER_PARTS = ("all", "noise", "other")


def _transfer_metric(suite: str, part: str) -> Metric:
    return _at(suite, "summary", "transfer", part)


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
            clean = seed_stats([v for v in (_summary("clean", "accuracy")(r) for r in runs) if v is not None])
            parts = {p: seed_stats([v for v in (_transfer_metric(f"{dataset}-c", p)(r) for r in runs) if v is not None])
                     for p in (*_TRANSFER_PARTS, "mean_15")}
            paper_clean, paper_c = cells[2 * i], cells[2 * i + 1]
            numbers[row_name][dataset] = {"paper": paper_clean, "ours": clean}
            numbers[row_name][f"{dataset}-c"] = {"paper": paper_c[0], "ours": parts["all"],
                                                 "paper_noise": paper_c[1], "ours_noise": parts["noise"],
                                                 "paper_other": paper_c[2], "ours_other": parts["other"]}
            ours_c = ("—" if any(parts[p] is None for p in _TRANSFER_PARTS)
                      else " / ".join(_fmt(parts[p], with_range=False) for p in _TRANSFER_PARTS))
            row += [f"{paper_clean:.1f}", _fmt(clean), _delta(clean, paper_clean),
                    _paper_text(paper_c), ours_c, _delta(parts["all"], paper_c[0]), _fmt(parts["mean_15"])]
        rows.append(row)
    frozen = model != TRANSFER_MODEL
    how = ("only the classifier trained (freeze_level 4), not the paper's recipe for this table" if frozen
           else "every layer trained")
    title = (f"Transfer: ImageNet ResNet-50s fine-tuned on CIFAR-10/100 ({TRANSFER_LABEL}); ours: {model}, "
             f"{how}; 'all' = mean of the four group means, as the paper")
    return Table(TRANSFER_LABEL.replace("tab:", "") + ("_frozen" if frozen else ""), title, header, rows, numbers)


def _delta(stats: dict | None, paper: float | None) -> str:
    return "—" if stats is None or paper is None else f"{stats['mean'] - paper:+.1f}"


# ---------------------------------------------------------------------------- the registry
# Each paper table: its generator (``comparison_tables``, or ``transfer_tables``) and what REPORT.md's
# label-by-label section says of it (``noisymix_figures.registry``); ``position``: its line there.

def register_comparison(label: str, position: int, ours: str, needs: str, *suffixes: str) -> None:
    """Register the ``COMPARISONS`` of ``label``; ``suffixes``: the file names' endings of the tables
    the report names (the table itself: "")."""
    register(label, position=position, files=table_files(label, *suffixes), ours=ours, needs=needs)(
        lambda results, out: comparison_tables(label, paper_values(), results.groups()))


register_comparison("tab:results_imagenet", 1, "imagenet / resnet50 runs: clean, imagenet-c, imagenet-r, imagenet-p "
                    "(mFR with AlexNet's flip probabilities, figures/alexnet_flip.json)", NEEDS_IMAGENET)
register_comparison("tab:results_cifar10", 3, "cifar10 / cifar100 preactresnet18 runs (clean, -C); the digits runs "
                    "fill an analogue table", needs_cifar("results_cifar10"), "", "_digits_analogue")
register_comparison("tab:results_cifar100", 4, "cifar10 / cifar100 wrn28_4 runs (clean, -C)",
                    needs_cifar("results_cifar100"))
register_comparison("tab:ablation", 5, "cifar100 / wrn28_4 runs of the ten switch rows; the digits runs of "
                    "`reproduce --plan ablation` fill an analogue table", needs_cifar("ablation"), "",
                    "_digits_analogue")
register_comparison("tab:results_imagenet_c", 10, "imagenet / resnet50 runs: imagenet-c per corruption, mean and mCE "
                    "(AlexNet's errors)", NEEDS_IMAGENET)
register_comparison("tab:results_cifar10_c", 11, "cifar10 / preactresnet18 runs: cifar10-c per corruption; the "
                    "digits runs fill an analogue table (Digits-C)", needs_cifar("results_cifar10"), "",
                    "_digits_analogue")
register_comparison("tab:results_cifar100_c", 12, "cifar100 / preactresnet18 runs: cifar100-c per corruption",
                    needs_cifar("results_cifar10"))
register_comparison("tab:results_wrs_cifar10_c", 13, "cifar10 / wrn28_4 runs: cifar10-c per corruption",
                    needs_cifar("results_cifar100"))
register_comparison("tab:results_wrs_cifar100_c", 14, "cifar100 / wrn28_4 runs: cifar100-c per corruption",
                    needs_cifar("results_cifar100"))
register_comparison("tab:results_imagenet_r_calibration", 15, "imagenet / resnet50 runs: the imagenet-r suite's RMS "
                    "calibration error and AURRA (on ImageNet-R)", NEEDS_IMAGENET)
register_comparison("tab:results_imagenet_p", 16, "imagenet / resnet50 runs: imagenet-p flip probabilities over "
                    "AlexNet's", NEEDS_IMAGENET)
register_comparison("tab:results_cifar_p", 17, "cifar10 / preactresnet18 runs: cifar10-p flip probabilities; "
                    "the digits runs fill an analogue table (Digits-P)", needs_cifar_p("results_cifar10"), "",
                    "_digits_analogue")
register_comparison("tab:results_cifar_p_wrs", 18, "cifar10 / wrn28_4 runs: cifar10-p flip probabilities",
                    needs_cifar_p("results_cifar100"))


@register(TRANSFER_LABEL, position=6, files=table_files(TRANSFER_LABEL, "", "_frozen"),
          ours="resnet50_transfer runs fine-tuned on cifar10 / cifar100 from each source row's ImageNet model",
          needs="the source models of tab:results_imagenet (" + NEEDS_IMAGENET + ") fine-tuned on CIFAR-10/100 with "
                "their -C sets (data; `noisymix sweep results_transfer --source ROW=WEIGHTS`)")
def transfer_tables(results, out: Path) -> list[Table]:
    """tab:results_transfer beside our runs: fully fine-tuned, then the fixed-feature variant."""
    paper, groups = paper_values(), results.groups()
    return [transfer_table(paper, groups), transfer_table(paper, groups, f"{TRANSFER_MODEL}-freeze4")]
