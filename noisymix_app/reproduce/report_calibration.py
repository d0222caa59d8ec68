"""The report's "Calibration under shift" section (issue 46, item 3): from the main job's -C records
(``RUN/eval/<corrupted suite>.json``, ``summary.calibration_under_shift``: a temperature fitted on
clean images, applied unchanged to every corrupted set; ``fullscale.evaluation.shift_calibration``)
the per-method numbers over seeds and the Markdown lines.

``calibration_shift_summary(out)`` reads the runs as ``noisymix_app.reproduce.summary.summarize`` does
and returns what goes into ``summary.json``; ``calibration_shift_lines(data)`` renders it.  Numbers in
points (RMS calibration error x 100); per severity 0 (the clean test images) to 5 the mean over seeds
and its 95 % t-interval, before and after scaling, beside the estimator's noise floor (the error a
perfectly calibrated model with the same confidences reads: its mean and 95th percentile, each
averaged over seeds).  The verdict compares NoisyMix's after-scaling error at severity 5 with
Baseline's, paired over seeds, and says nothing it did not measure.
"""

from __future__ import annotations

from pathlib import Path

from fullscale.metrics import TEMPERATURE_BOUNDS
from fullscale.training.methods import METHODS
from noisymix_figures.results import stale_evaluation
from noisymix_infra.io import read_json
from noisymix_infra.stats import UNJUDGED, interval, paired

__all__ = ["FIGURE", "calibration_shift_lines", "calibration_shift_summary", "report"]

#: where ``noisymix figures`` (the job's last step) draws the reliability diagrams, relative to OUT
FIGURE = "figures/calibration_shift.png"
SEVERITIES = tuple(str(s) for s in range(6))
#: the severity of the verdict and of the shifted reliability diagram
SHIFTED = "5"


def _label(method: str) -> str:
    return METHODS[method].title if method in METHODS else method


def _seed_records(out: Path, suite: str, method: str, seeds: list[int]) -> tuple[dict[int, dict], list[str]]:
    """The ``calibration_under_shift`` block of each seed's -C record (reported ones only, as the
    summary reads them), and the runs whose record lacks it (made before issue 46, or not measured)."""
    found, lacking = {}, []
    for seed in seeds:
        run = out / "runs" / f"{method}-seed{seed}"
        path = run / "eval" / f"{suite}.json"
        if not path.is_file():
            continue
        record = read_json(path)
        if not isinstance(record, dict) or stale_evaluation(run, record):
            continue
        block = (record.get("summary") or {}).get("calibration_under_shift") or {}
        if "per_severity" in block:
            found[seed] = block
        else:
            why = f" ({block['not_measured']})" if block.get("not_measured") else ""
            lacking.append(f"{method}-seed{seed}{why}")
    return found, lacking


def _points(blocks: dict[int, dict], severity: str, *path: str) -> dict[int, float]:
    values = {}
    for seed, block in blocks.items():
        value = block["per_severity"].get(severity)
        for key in path:
            value = None if value is None else value.get(key)
        if value is not None:
            values[seed] = 100 * float(value)
    return values


def calibration_shift_summary(out: str | Path) -> dict:
    """Per method and severity 0..5: the RMS calibration error before and after the clean-fitted
    temperature (mean and 95 % t-interval over seeds, points), the noise floor (mean over seeds of its
    mean and of its 95th percentile), the temperature fitted on all clean images (display); the paired
    NoisyMix - Baseline after-scaling difference at severity 5; the runs whose records predate it."""
    out = Path(out)
    log = read_json(out / "reproduce.json")
    plan = log["plan"]
    suite = plan["corrupted_suite"]
    methods, lacking, after5 = {}, [], {}
    for method in plan["methods"]:
        blocks, missing = _seed_records(out, suite, method, list(plan["seeds"]))
        lacking += missing
        if not blocks:
            continue
        row = {"seeds": sorted(blocks), "per_severity": {}}
        for s in SEVERITIES:
            before = _points(blocks, s, "rms_calibration_error")
            after = _points(blocks, s, "rms_calibration_error_scaled")
            floor_mean = _points(blocks, s, "noise_floor", "mean")
            floor_p95 = _points(blocks, s, "noise_floor", "p95")
            if not after:
                continue
            row["per_severity"][s] = {
                "before": interval(list(before.values())), "after": interval(list(after.values())),
                "noise_floor": {"mean": sum(floor_mean.values()) / len(floor_mean),
                                "p95": sum(floor_p95.values()) / len(floor_p95)}}
        row["temperature_all_clean_images"] = interval([float(b["temperature"]["all_clean_images"])
                                                        for b in blocks.values()])
        methods[method] = row
        after5[method] = _points(blocks, SHIFTED, "rms_calibration_error_scaled")
    verdict = None
    if after5.get("noisymix") and after5.get("baseline"):
        d = paired(after5["noisymix"], after5["baseline"])
        if d is not None:
            words = None
            if d["half_width"] is None and d["n"] > 1:  # no spread at all: no verdict (noisymix_infra.stats)
                words = UNJUDGED
            elif d["half_width"] is not None:
                lo, hi = d["mean"] - d["half_width"], d["mean"] + d["half_width"]
                words = "below" if hi < 0 else "above" if lo > 0 else "within noise of"
            verdict = {"severity": int(SHIFTED), "difference": d, "words": words,
                       "what": "NoisyMix's after-scaling RMS calibration error minus Baseline's, paired over seeds "
                               "(points; < 0: NoisyMix better calibrated)"}
    return {"suite": suite, "methods": methods, "method_order": list(methods), "verdict": verdict,
            "needs_rerun": lacking, "figure": FIGURE,
            "unit": "points (RMS calibration error x 100)"}


def _cell(d: dict) -> str:
    if d["half_width"] is None:
        return f"{d['mean']:.1f} (1 seed)"
    return f"{d['mean']:.1f} ± {d['half_width']:.1f}"


_METHOD = ("Method (Ovadia et al., 2019): a temperature fitted by negative log-likelihood on the clean test images "
           "(Guo et al., 2017) is applied unchanged to every corrupted set. It is cross-fitted: the clean images are "
           "split into two interleaved halves, each half's temperature fitted on the other half, and each image's "
           "corrupted copies are scaled by the temperature of the half that does not contain it, so no image is scaled "
           "by a temperature fitted on itself (the T column shows the temperature fitted on all clean images, for "
           "display only). Each set's RMS calibration error (bins of 100 images sorted by confidence) is taken before "
           "and after scaling and averaged over the corruptions per severity; severity 0 is the clean test images. "
           "The noise floor is the error the same estimator reads on a perfectly calibrated model with the same "
           "after-scaling confidences (each image correct with probability its confidence; 200 draws), its mean and "
           "95th percentile: an error within it cannot be told from perfect calibration at this size.")


def calibration_shift_lines(data: dict | None, figure: str | None = None) -> list[str]:
    """The Markdown of the section: the method in one paragraph, a table per severity (before, after,
    floor beside), the reliability figure's path and the verdict sentence; for results made before
    issue 46, the one line that says the section needs a rerun."""
    lines = ["**Calibration under shift.**", ""]
    if not data or not data.get("methods"):
        lacking = (data or {}).get("needs_rerun") or []
        suite = (data or {}).get("suite", "the -C suite")
        lines.append(f"Not measured in these results: the {suite} records predate calibration under shift "
                     f"(issue 46){' (' + str(len(lacking)) + ' run(s))' if lacking else ''}; this section needs a "
                     f"rerun of the {suite} evaluation (`noisymix evaluate RUN --suite {suite} --data-root SET`, or "
                     "`noisymix reproduce` after the evaluation code changed).")
        return lines
    methods = data["methods"]
    lines += [_METHOD, "",
              f"Ours ({data['suite']}; RMS calibration error in points, mean ± 95 % t-interval over seeds; the floor "
              "averaged over seeds):", "",
              "| severity | method | before scaling | after scaling | noise floor, mean | noise floor, 95th pct. | "
              "T (all clean images) |", "|---|---|---:|---:|---:|---:|---:|"]
    order = [m for m in data.get("method_order") or methods if m in methods]  # the plan's (JSON sorts keys)
    for s in SEVERITIES:
        for method in order:
            row = methods[method]
            cell = row["per_severity"].get(s)
            if cell is None:
                continue
            t = row["temperature_all_clean_images"]
            # a fit at the search's bound is no fitted temperature (a model near uniform, e.g. the quick plan's)
            bound = " (at the search's bound)" if not TEMPERATURE_BOUNDS[0] * 1.01 < t["mean"] < \
                TEMPERATURE_BOUNDS[1] * 0.99 else ""
            lines.append(f"| {'clean' if s == '0' else s} | {_label(method)} | {_cell(cell['before'])} | "
                         f"{_cell(cell['after'])} | {cell['noise_floor']['mean']:.1f} | "
                         f"{cell['noise_floor']['p95']:.1f} | {t['mean']:.2f}{bound} |")
    lines += ["", f"Reliability diagrams, clean and at severity {SHIFTED} (all corruptions pooled), as evaluated and "
              f"after scaling: {Path(figure or data.get('figure', FIGURE)).name} among the job's figures."]
    lacking = data.get("needs_rerun") or []
    if lacking:
        listed = ", ".join(lacking[:4]) + (", ..." if len(lacking) > 4 else "")
        lines += ["", f"Left out: {len(lacking)} run(s) whose records predate this section or could not measure it "
                  f"({listed})."]
    lines += ["", "Verdict: " + _verdict_sentence(data)]
    return lines


def _verdict_sentence(data: dict) -> str:
    v, methods = data.get("verdict"), data["methods"]
    if not v:
        return "no NoisyMix and Baseline runs with these records to compare."
    d = v["difference"]
    if v["words"] is None:
        return (f"at severity {v['severity']} after scaling, NoisyMix's RMS error minus Baseline's is "
                f"{d['mean']:+.1f} points on one seed: no interval, no verdict.")
    if v["words"] == UNJUDGED:
        return (f"at severity {v['severity']} after scaling, NoisyMix's RMS error minus Baseline's is "
                f"{d['mean']:+.1f} points at every one of {d['n']} seeds: {UNJUDGED}.")
    text = (f"at severity {v['severity']}, after the clean-fitted temperature, NoisyMix's RMS calibration error is "
            f"{v['words']} Baseline's (NoisyMix − Baseline {d['mean']:+.1f} points, 95 % interval "
            f"[{d['mean'] - d['half_width']:+.1f}, {d['mean'] + d['half_width']:+.1f}], paired over {d['n']} seeds)")
    floors = []
    for method in ("noisymix", "baseline"):
        cell = methods[method]["per_severity"].get(SHIFTED)
        if cell:
            side = "above" if cell["after"]["mean"] > cell["noise_floor"]["p95"] else "within"
            floors.append(f"{_label(method)}'s {cell['after']['mean']:.1f} is {side} its noise floor "
                          f"(95th percentile {cell['noise_floor']['p95']:.1f})")
    return text.replace("−", "-") + ("; " + " and ".join(floors) if floors else "") + "."


def report(out: str | Path) -> tuple[dict, list[str]]:
    """Both at once: the dict for ``summary.json`` and the section's lines."""
    data = calibration_shift_summary(out)
    return data, calibration_shift_lines(data)
