"""Every labelled table and figure of the paper: what `noisymix figures` writes for it, where our
numbers come from, and, where these results do not fill it, what filling it takes (data or hardware).

``LABELS`` holds one entry per ``\\label{tab:...}`` / ``\\label{fig:...}`` of the paper's source
(tests/figures/test_label_coverage.py walks the LaTeX and holds the two lists equal); the report's
coverage section (``coverage_section``) is one line per label, decided from the tables and the runs
actually found, never from what a run *should* have produced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from noisymix_figures.plots import CATEGORY_FIGURES, _imagenet_points
from noisymix_figures.results import Results
from noisymix_figures.tables import TRANSFER_LABEL, Table

__all__ = ["LABELS", "Coverage", "coverage_section", "label_status"]

_IMAGENET = ("ImageNet-1k (data: licensed, about 150 GB, not downloadable by this toolkit) with ImageNet-C, -R "
             "and -P (data), and ResNet-50s trained 200 epochs (hardware: one run on 8 GPUs each; "
             "`noisymix sweep results_imagenet`)")
_CIFAR = ("CIFAR-10/100 (data) with CIFAR-10-C/100-C (data: the released sets, or `noisymix corrupt`) and "
          "200-epoch runs, 5 seeds x 8 methods (hardware: GPUs; `noisymix sweep {sweep}`)")
_CIFAR_P = ("CIFAR-10 (data) with CIFAR-10-P (data: the released set, or `noisymix corrupt --kind p`) and 200-epoch "
            "runs (hardware: GPUs; `noisymix sweep {sweep}` with `--suite-root cifar10-p=DIR`)")
_TOY = "`noisymix toy` (a laptop CPU, minutes); no toy.json in these results"


@dataclass(frozen=True)
class Coverage:
    """One label: the files written for it, where our numbers come from, and what filling it takes."""

    label: str
    files: tuple[str, ...]  # written under the report folder
    ours: str
    needs: str


def _table_files(label: str, *suffixes: str) -> tuple[str, ...]:
    return tuple(f"tables/{label.replace('tab:', '')}{s}.md" for s in suffixes or ("",))


def _labels() -> dict[str, Coverage]:
    entries = [
        Coverage("fig:robustCvsR", ("robust_c_vs_r.png", "robust_c_vs_r.csv"),
                 "imagenet runs evaluated on imagenet-c and imagenet-r (open markers)", _IMAGENET),
        Coverage("tab:results_imagenet", _table_files("tab:results_imagenet"),
                 "imagenet / resnet50 runs: clean, imagenet-c, imagenet-r, imagenet-p (mFR with AlexNet's flip "
                 "probabilities, figures/alexnet_flip.json)", _IMAGENET),
        Coverage("fig:robust10vs100", ("robust_c.png",), "cifar10-c / cifar100-c runs of every model (digits-c runs "
                 "drawn as the small-scale analogue)", _CIFAR.format(sweep="results_cifar10")),
        Coverage("tab:results_cifar10", _table_files("tab:results_cifar10", "", "_digits_analogue"),
                 "cifar10 / cifar100 preactresnet18 runs (clean, -C); the digits runs fill an analogue table",
                 _CIFAR.format(sweep="results_cifar10")),
        Coverage("tab:results_cifar100", _table_files("tab:results_cifar100"),
                 "cifar10 / cifar100 wrn28_4 runs (clean, -C)", _CIFAR.format(sweep="results_cifar100")),
        Coverage("tab:ablation", _table_files("tab:ablation"), "cifar100 / wrn28_4 runs of the ten switch rows",
                 _CIFAR.format(sweep="ablation")),
        Coverage(TRANSFER_LABEL, _table_files(TRANSFER_LABEL, "", "_frozen"),
                 "resnet50_transfer runs fine-tuned on cifar10 / cifar100 from each source row's ImageNet model",
                 "the source models of tab:results_imagenet (" + _IMAGENET + ") fine-tuned on CIFAR-10/100 with "
                 "their -C sets (data; `noisymix sweep results_transfer --source ROW=WEIGHTS`)"),
        Coverage("fig:toy_data", ("toy_data.png",), "`noisymix toy` (toy.json)", _TOY),
        Coverage("fig:toy_example", ("toy_accuracy.png", "toy_decision_boundaries.png"),
                 "`noisymix toy` (toy.json, seeds)", _TOY),
        Coverage("fig:cimages", ("corruption_examples.png",), "our own corruptions (fullscale.corruptions, ImageNet-C "
                 "parameters) on a bundled photograph; no runs needed", "`noisymix figures` without --no-examples"),
        Coverage("tab:results_imagenet_c", _table_files("tab:results_imagenet_c"),
                 "imagenet / resnet50 runs: imagenet-c per corruption, mean and mCE (AlexNet's errors)", _IMAGENET),
        Coverage("tab:results_cifar10_c", _table_files("tab:results_cifar10_c"),
                 "cifar10 / preactresnet18 runs: cifar10-c per corruption", _CIFAR.format(sweep="results_cifar10")),
        Coverage("tab:results_cifar100_c", _table_files("tab:results_cifar100_c"),
                 "cifar100 / preactresnet18 runs: cifar100-c per corruption", _CIFAR.format(sweep="results_cifar10")),
        Coverage("tab:results_wrs_cifar10_c", _table_files("tab:results_wrs_cifar10_c"),
                 "cifar10 / wrn28_4 runs: cifar10-c per corruption", _CIFAR.format(sweep="results_cifar100")),
        Coverage("tab:results_wrs_cifar100_c", _table_files("tab:results_wrs_cifar100_c"),
                 "cifar100 / wrn28_4 runs: cifar100-c per corruption", _CIFAR.format(sweep="results_cifar100")),
        Coverage("tab:results_imagenet_r_calibration", _table_files("tab:results_imagenet_r_calibration"),
                 "imagenet / resnet50 runs: the imagenet-r suite's RMS calibration error and AURRA (on ImageNet-R)",
                 _IMAGENET),
        Coverage("tab:results_imagenet_p", _table_files("tab:results_imagenet_p"),
                 "imagenet / resnet50 runs: imagenet-p flip probabilities over AlexNet's", _IMAGENET),
        Coverage("tab:results_cifar_p", _table_files("tab:results_cifar_p"),
                 "cifar10 / preactresnet18 runs: cifar10-p flip probabilities",
                 _CIFAR_P.format(sweep="results_cifar10")),
        Coverage("tab:results_cifar_p_wrs", _table_files("tab:results_cifar_p_wrs"),
                 "cifar10 / wrn28_4 runs: cifar10-p flip probabilities", _CIFAR_P.format(sweep="results_cifar100")),
    ]
    for label, (source, dataset, model, _) in CATEGORY_FIGURES.items():
        needs = _IMAGENET if dataset == "imagenet" else _CIFAR.format(sweep="results_cifar100")
        entries.append(Coverage(label, (f"{label.replace('fig:', '')}.png", f"{label.replace('fig:', '')}.csv"),
                                f"{dataset} / {model} runs: {dataset}-c per category (beside {source})", needs))
    return {e.label: e for e in entries}


LABELS: dict[str, Coverage] = _labels()


def _filled_table(tables: list[Table], names: tuple[str, ...]) -> str | None:
    """Which rows of the named tables hold a number of ours, as a phrase; None when none does."""
    rows = sorted({row for t in tables if t.name in names for row, cells in t.numbers.items()
                   if any(c.get("ours") for c in cells.values() if isinstance(c, dict))})
    return f"{len(rows)} row(s): {', '.join(rows)}" if rows else None


def _has_suite(results: Results, datasets: tuple[str, ...], suite: str, model: str | None = None) -> list[str]:
    """The cells ("dataset/model/method") of runs of ``datasets`` (and ``model``) evaluated on ``suite``."""
    return sorted({"/".join(r.key) for r in results.runs if r.key[0] in datasets
                   and (model is None or r.key[1] == model) and suite.format(r.key[0]) in r.evals})


def label_status(entry: Coverage, results: Results, tables: list[Table], out: Path) -> tuple[bool, str]:
    """(filled from runs, what to say): for a table, the rows holding our numbers; for a figure,
    the runs it draws; otherwise what filling it takes."""
    label = entry.label
    if label.startswith("tab:"):
        names = tuple(Path(f).stem for f in entry.files)
        main = _filled_table(tables, names[:1])
        if main:
            return True, f"ours filled: {main}"
        analogue = _filled_table(tables, names[1:]) if label == "tab:results_cifar10" else None
        extra = f" (only its small-scale Digits analogue is filled: {analogue})" if analogue else ""
        frozen = _filled_table(tables, names[1:]) if label == TRANSFER_LABEL else None
        if frozen:
            return True, f"ours filled only in the fixed-feature variant: {frozen}"
        return False, f"not filled from these results{extra}; needs {entry.needs}"
    drawn = any((out / f).is_file() for f in entry.files)
    checks: dict[str, Callable[[], list[str]]] = {
        "fig:robustCvsR": lambda: [f"{p['method']} ({p['model']})" for p in _imagenet_points(results.groups())],
        "fig:robust10vs100": lambda: _has_suite(results, ("cifar10", "cifar100"), "{}-c"),
        "fig:toy_data": lambda: ["toy.json"] if results.toy else [],
        "fig:toy_example": lambda: ["toy.json"] if results.toy else [],
        "fig:cimages": lambda: ["our corruption code"] if drawn else [],
        **{lab: (lambda d=d, m=m: _has_suite(results, (d,), "{}-c", m))
           for lab, (_, d, m, _) in CATEGORY_FIGURES.items()},
    }
    found = checks[label]()
    if found and drawn:
        return True, f"ours drawn: {', '.join(found)}"
    if found:
        return False, f"not drawn although {', '.join(found[:3])} exist(s): see the warnings below"
    how = "drawn with the paper's values only" if drawn else "not drawn"
    analogue = _has_suite(results, ("digits",), "{}-c") if label == "fig:robust10vs100" else []
    extra = f" (the small-scale Digits analogue is drawn: {len(analogue)} cell(s))" if analogue and drawn else ""
    return False, f"{how}{extra}; ours needs {entry.needs}"


def coverage_section(results: Results, tables: list[Table], out: Path) -> list[str]:
    """REPORT.md's label-by-label account of the paper (``LABELS``)."""
    lines = ["## The paper, label by label", "",
             "Every labelled table and figure of the paper: what this report wrote for it, where our numbers come "
             "from, and whether these results fill them; where they do not, what it takes (data or hardware).", "",
             "| label | written | ours from | status |", "|---|---|---|---|"]
    for entry in LABELS.values():
        filled, status = label_status(entry, results, tables, out)
        written = ", ".join(f"`{f}`" for f in entry.files if (out / f).is_file()) or "nothing"
        lines.append(f"| `{entry.label}` | {written} | {entry.ours} | {'**filled** — ' if filled else ''}{status} |")
    return [*lines, ""]
