"""``toy.json`` and ``toy.md``: the many-seed results beside the paper's single-seed figure.

``toy.json`` (docs/results-schema.md, "Theory and toy"): per scheme the per-seed test
accuracies with mean, std and 95% CI, the smoothness measures likewise, the paired comparison
against the Baseline, plus the chosen strengths, the tuning protocol and the claims' verdicts.
``toy.md`` renders the same numbers for people.
"""

from __future__ import annotations

import dataclasses
import platform
from typing import Any

import torch

import noisymix
from noisymix_infra.provenance import provenance
from toy.claims import evaluate_claims
from toy.experiment import MEASURES, ExperimentResult
from toy.schemes import PAPER_ACCURACY, SCHEMES
from toy.smoothness import GRID_LIMIT
from toy.stats import paired, summarize

__all__ = ["build_report", "markdown"]

_MEASURE_TEXT = {
    "grad_norm": "mean ‖∇ₓp‖₂",
    "hessian_norm": "mean ‖∇²ₓp‖_F",
    "contour_length": "length of p = 0.5",
}
REPRESENTATIVE_RULE = ("the medoid seed: its accuracies across schemes are closest (squared "
                       "distance) to the per-scheme means")


def build_report(result: ExperimentResult, hyper: dict[str, Any], *, command: str,
                 device: str) -> dict[str, Any]:
    """The ``toy.json`` object."""
    cfg = result.config
    metrics = {name: {"accuracy": result.accuracy[name], **result.smoothness[name]}
               for name in cfg.schemes}
    schemes: dict[str, Any] = {}
    for name in cfg.schemes:
        entry: dict[str, Any] = {
            "label": SCHEMES[name].label,
            "components": list(SCHEMES[name].components),
            "strengths": dataclasses.asdict(result.scheme_configs[name]),
            "accuracy": summarize(result.accuracy[name]),
            "smoothness": {m: summarize(result.smoothness[name][m]) for m in MEASURES},
        }
        if name in PAPER_ACCURACY:
            entry["paper_accuracy"] = PAPER_ACCURACY[name]
        if "baseline" in cfg.schemes and name != "baseline":
            entry["paired_vs_baseline"] = {
                m: paired(metrics[name][m], metrics["baseline"][m]) for m in ("accuracy", *MEASURES)}
        schemes[name] = entry
    data = dataclasses.asdict(cfg.data)
    data["polygon"] = [list(v) for v in cfg.data.polygon]
    return {
        "command": command,
        "experiment": {
            "schemes": list(cfg.schemes),
            "seeds": cfg.seeds,
            "seed_namespace": cfg.namespace,
            "train": dataclasses.asdict(cfg.train),
            "data": data,
            "smoothness_grid": {"size": cfg.grid_size, "limit": GRID_LIMIT,
                                "measures": dict(_MEASURE_TEXT)},
            "representative_seed": result.representative_seed,
            "representative_rule": REPRESENTATIVE_RULE,
            "views": ("JSD views: the clean batch and two copies x + view_sd * eps, eps ~ N(0, I) "
                      "(AugMix operations have no meaning in 2-D)"),
        },
        "hyperparameters": hyper,
        "schemes": schemes,
        "claims": evaluate_claims(metrics),
        "seconds": {k: round(v, 3) for k, v in result.seconds.items()},
        "device": device,
        "versions": {"noisymix": noisymix.__version__, "torch": torch.__version__,
                     "python": platform.python_version()},
        "provenance": provenance(),
    }


# ------------------------------------------------------------------------------ markdown
def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _pm(summary: dict[str, Any], scale: float = 100.0, digits: int = 1) -> str:
    text = f"{scale * summary['mean']:.{digits}f}"
    return text + (f" ± {scale * summary['std']:.{digits}f}" if "std" in summary else "")


def _ci(interval: list[float] | None, scale: float = 100.0, digits: int = 1, sign: bool = False) -> str:
    if interval is None:
        return "–"
    f = f"{{:{'+' if sign else ''}.{digits}f}}"
    return f"[{f.format(scale * interval[0])}, {f.format(scale * interval[1])}]"


def _diff(comparison: dict[str, Any] | None, scale: float = 100.0, digits: int = 1) -> str:
    if comparison is None:
        return "–"
    return (f"{scale * comparison['mean_difference']:+.{digits}f} "
            f"{_ci(comparison.get('ci95'), scale, digits, sign=True)}")


def _wtl(comparison: dict[str, Any] | None) -> str:
    if comparison is None:
        return "–"
    return f"{comparison['wins']}/{comparison['ties']}/{comparison['losses']}"


def markdown(report: dict[str, Any]) -> str:
    """``toy.md``: tables, verdicts, chosen strengths and protocol, in plain words."""
    exp, hyper, schemes = report["experiment"], report["hyperparameters"], report["schemes"]
    n = exp["seeds"]
    lines = [
        "# Toy experiment: decision boundaries over many seeds",
        "",
        f"`{report['command']}` — {len(schemes)} schemes × {n} seeds "
        f"(seed namespace \"{exp['seed_namespace']}\"), trained together in "
        f"{report['seconds']['train']:.1f} s, measured in {report['seconds']['measure']:.1f} s "
        f"on {report['device']}.",
        "",
        "Setup (App. \"Illustration of the Regularizing Effects ...\"): 500 points, 250 train / 250 "
        "test, concave polygon with a buffer band of half-width "
        f"{exp['data']['band_halfwidth']}, noise sd {exp['data']['noise_sd']}, scale "
        f"{exp['data']['scale']}; MLP with one hidden layer of {exp['train']['hidden']} ReLU units, "
        f"Adam lr {exp['train']['lr']}, batch {exp['train']['batch_size']}, "
        f"{exp['train']['epochs']} epochs, 2 softmax outputs. Each seed is one data set, one "
        "initialization and one batch order shared by every scheme, so comparisons are paired.",
        "",
        "## Test accuracy (%)",
        "",
        f"Paper: one seed. Ours: mean ± std over {n} seeds, 95% CI of the mean (Student t); "
        "Δ vs Baseline: mean paired difference with its paired bootstrap 95% CI "
        "(10 000 resamples of seeds); W/T/L: seeds on which the scheme beats / ties / loses to "
        "the Baseline.",
        "",
        "| Scheme | Paper | Ours | 95% CI | Δ vs Baseline [95% CI] | W/T/L | win rate |",
        "|---|---:|---:|---|---|---:|---:|",
    ]
    for entry in schemes.values():
        comp = entry.get("paired_vs_baseline", {}).get("accuracy")
        paper = _pct(entry["paper_accuracy"]) if "paper_accuracy" in entry else "–"
        rate = f"{comp['win_rate']:.2f}" if comp else "–"
        lines.append(f"| {entry['label']} | {paper} | {_pm(entry['accuracy'])} | "
                     f"{_ci(entry['accuracy'].get('ci95'))} | {_diff(comp)} | {_wtl(comp)} | {rate} |")
    lines += [
        "",
        "## Boundary smoothness",
        "",
        f"On a {exp['smoothness_grid']['size']}² grid over [-{exp['smoothness_grid']['limit']}, "
        f"{exp['smoothness_grid']['limit']}]² (where the data lie), p = predicted probability of "
        "class 1: mean input-gradient norm, mean input-Hessian Frobenius norm (the quantities "
        "Theorems 1–2 say NFM and the JSD regularize), and the length of the 0.5 contour. "
        "Smaller is smoother. Mean ± std over seeds; Δ vs Baseline with paired bootstrap 95% CI.",
        "",
        "| Scheme | " + " | ".join(f"{_MEASURE_TEXT[m]} | Δ vs Baseline" for m in MEASURES) + " |",
        "|---|" + "---:|---|" * len(MEASURES),
    ]
    flat = []
    for entry in schemes.values():
        cells = []
        for m in MEASURES:
            comp = entry.get("paired_vs_baseline", {}).get(m)
            cells.append(f"{_pm(entry['smoothness'][m], 1.0, 3)} | {_diff(comp, 1.0, 3)}")
        lines.append(f"| {entry['label']} | " + " | ".join(cells) + " |")
        constant = sum(v == 0 for v in entry["smoothness"]["contour_length"]["values"])
        if constant:
            flat.append(f"{entry['label']} on {constant} of {n} seeds")
    if flat:
        lines += ["", "No decision boundary at all on the grid (one class predicted everywhere — "
                  "\"smooth\" by every measure, but degenerate): " + "; ".join(flat) + "."]
    lines += ["", "## The paper's claims", "",
              "Verdict per comparison: *holds* if the paired 95% CI of the difference lies on the "
              "claimed side of 0, *fails* if it lies on the other side, *within noise* if "
              "it contains 0. A claim holds if all its comparisons hold, fails if any is "
              "contradicted, and is within noise otherwise. Each CI is a 95% interval on its "
              "own (no multiple-comparison correction).", ""]
    labels = {name: entry["label"] for name, entry in schemes.items()}
    for claim in report["claims"]:
        lines.append(f"- **{claim['statement']}** — **{claim['verdict']}**.")
        for part in claim["parts"]:
            scale, digits = (100.0, 1) if part["metric"] == "accuracy" else (1.0, 3)
            what = "accuracy (pp)" if part["metric"] == "accuracy" else _MEASURE_TEXT[part["metric"]]
            sign = ">" if part["claimed"] == "greater" else "<"
            lines.append(f"  - {labels[part['a']]} {sign} {labels[part['b']]} on {what}: "
                         f"Δ = {_diff(part, scale, digits)}, W/T/L {_wtl(part)} → {part['verdict']}")
    if not report["claims"]:
        lines.append("(No claim can be checked: it needs all six schemes of fig:toy_example.)")
    lines += ["", "## Strengths and how they were chosen", "",
              f"Source: {hyper['source']}.", ""]
    strengths = hyper["strengths"]
    for component, values in strengths.items():
        text = ", ".join(f"{k} = {v:g}" for k, v in values.items())
        lines.append(f"- `{component}`: {text}")
    tuning = hyper.get("tuning", {})
    protocol = tuning.get("protocol")
    if protocol:
        lines += ["", f"Rule: {protocol['rule']}. Tuning seeds: {protocol['seeds']} in namespace "
                  f"\"{protocol['seed_namespace']}\" (disjoint from the reported seeds); each trains on "
                  f"{protocol['n_fit']} points and validates on {protocol['n_validation']} held out "
                  "from its training split. Tuning schemes: "
                  + ", ".join(f"`{c}` on {SCHEMES[s].label}" for c, s in protocol["tuning_scheme"].items())
                  + ".", ""]
        if "baseline" in tuning:
            lines.append(f"Baseline validation accuracy on the tuning seeds (context, not selected): "
                         f"{_pct(tuning['baseline']['validation_accuracy'])}%.")
            lines.append("")
        for component, rows in tuning.get("grids", {}).items():
            lines.append(f"| `{component}` grid point | validation acc. (%) | validation CE |")
            lines.append("|---|---:|---:|")
            for row in rows:
                point = ", ".join(f"{k} = {v:g}" for k, v in row["strengths"].items())
                chosen = " (chosen)" if row["strengths"] == strengths.get(component) else ""
                lines.append(f"| {point}{chosen} | {_pct(row['validation_accuracy'])} | "
                             f"{row['validation_cross_entropy']:.4f} |")
            lines.append("")
    lines += ["## Figures", "",
              f"`decision_boundaries.png`: seed {exp['representative_seed']} ({exp['representative_rule']}); "
              "each panel the predicted probability of class 1, its 0.5 contour (black) and the "
              "test points, accuracy in the title. `toy_data.png`: that seed's data, all points "
              "and test points, with the noise-free polygon dashed.", ""]
    return "\n".join(lines)
