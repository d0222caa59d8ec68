"""The paper's tables with our values beside them, and our own summary tables.

Which of our measurements fills which paper cell is data (``COMPARISONS``): a paper table, the
(dataset, model) of our runs that reproduce it, and per column the metric.  Digits runs are shown
as a *small-scale analogue* of the CIFAR-10 table, never as CIFAR numbers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fullscale.vocabulary import ABLATION_ROWS, CORRUPTIONS, METHOD_ROWS, P_COLUMNS, TRANSFER_MODEL, TRANSFER_ROWS
from noisymix_figures.results import Run

__all__ = ["COMPARISONS", "METHOD_ROWS", "Comparison", "Table", "build_tables", "paper_values", "seed_stats"]

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


@dataclass(frozen=True)
class Comparison:
    """A paper table and where our matching numbers come from (one (dataset, model) per column)."""

    label: str
    title: str
    columns: tuple[tuple[str, str, Metric], ...]  # (dataset, model, metric) per paper column
    rows: dict[str, str | None]
    analogue: bool = False


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

COMPARISONS: tuple[Comparison, ...] = (
    Comparison("tab:results_cifar10", "PreActResNet-18 on CIFAR-10/100 (-C); ours: preactresnet18",
               _clean_c("preactresnet18"), METHOD_ROWS),
    Comparison("tab:results_cifar100", f"Wide-ResNet-28 on CIFAR-10/100 (-C) ({_WRN_NOTE})", _clean_c(_WRN),
               METHOD_ROWS),
    Comparison("tab:ablation", f"Ablation, Wide-ResNet-28 on CIFAR-100 ({_WRN_NOTE})",
               (("cifar100", _WRN, _summary("clean", "accuracy")),
                ("cifar100", _WRN, _summary("cifar100-c", "mean_accuracy"))), ABLATION_ROWS),
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
)


def seed_stats(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"mean": float(np.mean(values)), "min": float(np.min(values)), "max": float(np.max(values)),
            "n": len(values)}


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
    return f"{cell:g}"


@dataclass
class Table:
    name: str
    title: str
    header: list[str]
    rows: list[list[str]]
    numbers: dict  # {row: {column: {"paper": x, "ours": stats}}}, for the report

    def markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.header) + " |",
                 "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows]
        return "\n".join(lines) + "\n"

    def latex(self) -> str:
        def esc(t: str) -> str:
            return t.replace("%", "\\%").replace("_", "\\_").replace("—", "--").replace("Δ", "$\\Delta$")
        cols = "l" + "c" * (len(self.header) - 1)
        body = [" & ".join(esc(c) for c in self.header) + " \\\\", "\\midrule"]
        body += [" & ".join(esc(c) for c in r) + " \\\\" for r in self.rows]
        return ("% " + self.title + "\n\\begin{tabular}{" + cols + "}\n\\toprule\n" + "\n".join(body)
                + "\n\\bottomrule\n\\end{tabular}\n")


def _compare(comp: Comparison, paper: dict, groups: dict) -> Table:
    table = paper[comp.label]
    columns = table["columns"]
    header = ["Method"]
    for col in columns[:len(comp.columns)]:
        header += [f"{col} paper", "ours", "Δ"] if not comp.analogue else [f"{col} (paper)"]
    if comp.analogue:
        header += ["Digits (ours)", "Digits-C (ours)"]
    rows, numbers = [], {}
    for name, cells in table["rows"]:
        method = comp.rows.get(name)
        row, numbers[name] = [name if method else f"{name} (not implemented)"], {}
        ours_cells = []
        for i, (dataset, model, metric) in enumerate(comp.columns):
            runs = groups.get((dataset, model, method), []) if method else []
            stats = seed_stats([v for v in (metric(r) for r in runs) if v is not None])
            paper_cell = cells[i] if i < len(cells) else None
            p = _paper_number(paper_cell)
            numbers[name][header[1 + (i if comp.analogue else 3 * i)]] = {"paper": p, "ours": stats}
            if comp.analogue:
                row.append(_paper_text(paper_cell))
                ours_cells.append(_fmt(stats))
            else:
                delta = "—" if stats is None or p is None else f"{stats['mean'] - p:+.1f}"
                row += [_paper_text(paper_cell), _fmt(stats), delta]
        rows.append(row + ours_cells)
    name = comp.label.replace("tab:", "") + ("_digits_analogue" if comp.analogue else "")
    return Table(name, f"{comp.title} ({comp.label})", header, rows, numbers)


def _ours_table(groups: dict) -> list[Table]:
    """Our own numbers per (dataset, model): every method, mean (min / max) over seeds."""
    out = []
    by_setting: dict[tuple[str, str], dict] = {}
    for (dataset, model, method), runs in groups.items():
        by_setting.setdefault((dataset, model), {})[method] = runs
    for (dataset, model), methods in by_setting.items():
        metrics = [("clean", _summary("clean", "accuracy")),
                   (f"{dataset}-C", _summary(f"{dataset}-c", "mean_accuracy")),
                   (f"{dataset}-C w/o noise", _summary(f"{dataset}-c", "mean_accuracy_no_noise")),
                   *((f"-C {cat}", _category(f"{dataset}-c", cat)) for cat in ("noise", "blur", "weather", "digital")),
                   ("RMS calib. err.", _summary("calibration", "rms_calibration_error")),
                   ("ECE", _summary("calibration", "ece")),
                   ("FGSM 8/255", _fgsm(8 / 255))]
        header = ["Method", "seeds", "epochs", *(m for m, _ in metrics)]
        rows, numbers = [], {}
        for method, runs in sorted(methods.items(), key=lambda kv: _method_order(kv[0])):
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


_ORDER = ["baseline", "mixup", "manifold_mixup", "cutmix", "noise", "nfm", "augmix", "augmix_jsd", "noisymix"]


def _method_order(method: str) -> tuple[int, str]:
    return (_ORDER.index(method) if method in _ORDER else len(_ORDER), method)


def build_tables(groups: dict) -> list[Table]:
    paper = paper_values()
    tables = _ours_table(groups) + [_compare(c, paper, groups) for c in COMPARISONS]
    tables.append(transfer_table(paper, groups))
    tables.append(transfer_table(paper, groups, f"{TRANSFER_MODEL}-freeze4"))  # the fixed-feature variant
    covered = {c.label for c in COMPARISONS} | {TRANSFER_LABEL}
    for label, table in paper.items():  # the rest of the paper, shown as printed (no runs of ours map there)
        if label in covered:
            continue
        header = ["Row", *table["columns"]]
        rows = [[name, *(_paper_text(c) for c in cells)] for name, cells in table["rows"]]
        tables.append(Table(label.replace("tab:", ""), f"{label} (paper values; no matching runs of ours)",
                            header, rows, {}))
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
