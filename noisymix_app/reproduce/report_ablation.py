"""Why NoisyMix is under-confident (issue 46, item 4): the ablation plan's rows, each NoisyMix without
one component, against full NoisyMix on clean and shifted calibration.

The rows (``noisymix_app.reproduce.plans.PLANS["ablation"]``, tab:ablation's): *AugMix + noise + JSD* drops the
feature mixing and so its mixed soft labels; *AugMix + Manifold Mixup + JSD* drops the noise; *AugMix +
NFM (no JSD)* drops the Jensen-Shannon term (gamma = 12).  For each, the paired difference over seeds
(the row minus NoisyMix, points, 95 % t-interval) of the signed confidence gap (mean confidence minus
accuracy: < 0 under-confident) and the RMS calibration error, on the clean test images and on the
corrupted sets.  The component whose removal moves the gap furthest towards 0 is the one that makes
NoisyMix under-confident.  The numbers come from the ablation plan's ``summary.json``, kept as
``docs/ablation-summary.json`` with its command and wall time.
"""

from __future__ import annotations

from pathlib import Path

from noisymix_app.reproduce.words import AGAINST_PAPER, level_text
from noisymix_infra.io import read_json
from noisymix_infra.stats import mdd, paired

__all__ = ["ABLATION_SUMMARY", "COMPONENT_OF", "ablation_answer", "ablation_calibration", "ablation_lines",
           "is_ablation", "read_ablation", "seeds_to_decide"]

ROOT = Path(__file__).resolve().parents[2]
ABLATION_SUMMARY = ROOT / "docs" / "ablation-summary.json"
#: the component each ablation row lacks
COMPONENT_OF = {"augmix_noise_jsd": "the feature mixing (its mixed soft labels)",
                "augmix_manifold_jsd": "the noise", "augmix_nfm": "the JSD term"}
#: (metric, words): the summary table's metrics this section pairs
MEASURES = (("confidence_gap", "signed gap, clean"), ("confidence_gap_corrupted", "signed gap, corrupted"),
            ("rms_calibration_error", "RMS error, clean"),
            ("rms_calibration_error_corrupted", "RMS error, corrupted"))


#: the most seeds ``seeds_to_decide`` looks at
MAX_SEEDS = 200


def is_ablation(summary: dict) -> bool:
    """A summary of the ablation plan: NoisyMix against its rows, no Baseline."""
    methods = (summary.get("plan") or {}).get("methods") or []
    return "baseline" not in methods and any(m in COMPONENT_OF for m in methods)


def _row_of(claim: dict) -> str | None:
    """The ablation row a claim of the ablation family holds NoisyMix against (``robust_noisymix_vs_<row>``)."""
    row = claim["id"].removeprefix("robust_noisymix_vs_")
    return row if row in COMPONENT_OF else None


def seeds_to_decide(claim: dict) -> int | None:
    """The fewest seeds whose MDD, at the claim's level and its measured spread, reaches the paper's
    effect (None: no spread, or more than ``MAX_SEEDS``)."""
    d = claim.get("difference") or {}
    if not d.get("spread") or claim.get("level") is None:
        return None
    return next((n for n in range(2, MAX_SEEDS + 1) if mdd(d["spread"], n, alpha=claim["level"]) <= claim["paper"]),
                None)


def ablation_answer(summary: dict) -> list[str]:
    """The ablation summary's opening (issue 52, goal 6): first which rows this scale can decide (each
    row's MDD at its Holm level against tab:ablation's effect) and what it would take to decide the
    others (seeds, and minutes from the recorded step times), then the verdicts after Holm."""
    plan = summary.get("plan") or {}
    methods, seeds = plan.get("methods") or [], plan.get("seeds") or []
    runs = len(methods) * len(seeds)
    per_run = (summary.get("seconds") or 0) / runs if runs else 0  # the steps' recorded seconds per run
    claims = [c for c in summary.get("claims", []) if _row_of(c) and c.get("difference")]
    if not claims:
        return ["No ablation row was measured."]
    can, cannot = [], []
    for c in claims:
        row = COMPONENT_OF[_row_of(c)]
        if c.get("mdd") is None:
            cannot.append(f"without {row} (no MDD)")
            continue
        words = f"without {row}: MDD {c['mdd']:.1f} against the paper's {c['paper']:+.1f}"
        if c.get("decidable"):  # the design's power before any data, not the verdict (that is the interval's)
            can.append(words)
        else:
            n = seeds_to_decide(c)
            need = ("more than " + str(MAX_SEEDS) + " seeds" if n is None else
                    f"{n} seeds, about {n * len(methods) * per_run / 60:.0f} min of steps for the plan's "
                    f"{len(methods)} rows ({per_run / 60:.1f} min per run as recorded)" if per_run else f"{n} seeds")
            cannot.append(words + f" (80 % power for it: {need})")
    level = claims[0].get("level")
    head = (f"**Are all of NoisyMix's components needed, at this scale (tab:ablation)?** Before any verdict, what "
            f"{len(seeds)} seeds can detect (each row's MDD, the smallest difference detected with 80 % power, at its "
            "test level" + ("" if level is None else f", {level:.3g} (5 % / {len(claims)}, Holm's first step)")
            + ", against the paper's effect, CIFAR-100-C, WRN-28x2): ")
    parts = []
    if can:
        parts.append("it has that power " + "; ".join(can))
    if cannot:
        parts.append("it has not " + "; ".join(cannot))
    sentences = [head + "; ".join(parts) + "."]
    verdicts: dict[str, list[str]] = {}
    for c in claims:  # the interval at the verdict's level, and where the paper's number lies (issue 63, goal 5)
        words = f"without {COMPONENT_OF[_row_of(c)]} ({level_text(c)}"
        if c.get("against_paper") in AGAINST_PAPER:
            words += "; " + AGAINST_PAPER[c["against_paper"]]
        verdicts.setdefault(c["verdict"], []).append(words + ")")
    sentences.append("NoisyMix against each row (corrupted accuracy, full NoisyMix minus the row, points; each "
                     "interval at its verdict's level), after Holm's correction: "
                     + ". ".join(f"**{v}**: " + "; ".join(rows) for v, rows in verdicts.items())
                     + ".")
    return sentences


def _seed_values(summary: dict, method: str, metric: str) -> dict[int, float] | None:
    cell = (summary.get("table", {}).get(method) or {}).get(metric)
    seeds = (summary.get("plan") or {}).get("seeds") or []
    if not cell or len(cell.get("values") or []) != len(seeds):
        return None  # not every seed measured: no pairing by position
    return dict(zip(seeds, cell["values"], strict=True))


def read_ablation(path: Path = ABLATION_SUMMARY) -> dict | None:
    """``ablation_calibration`` of the kept ablation summary (None without it)."""
    return ablation_calibration(read_json(path)) if path.is_file() else None


def ablation_calibration(summary: dict) -> dict | None:
    """Per ablation row and measure, the paired difference (row minus NoisyMix) over seeds; and the
    row whose clean-gap difference is the largest (the component that drives the under-confidence)."""
    rows = {}
    for method, component in COMPONENT_OF.items():
        entry = {}
        for metric, _ in MEASURES:
            a, b = _seed_values(summary, method, metric), _seed_values(summary, "noisymix", metric)
            if a and b:
                entry[metric] = paired(a, b)
        if entry:
            rows[method] = {"component": component, **entry}
    if not rows:
        return None
    driver = max((m for m in rows if rows[m].get("confidence_gap")), key=lambda m: rows[m]["confidence_gap"]["mean"],
                 default=None)
    return {"rows": rows, "driver": driver, "seeds": len((summary.get("plan") or {}).get("seeds") or []),
            "seconds": summary.get("seconds"),
            "commit": (summary.get("git") or {}).get("commit"), "seed_list": (summary.get("plan") or {}).get("seeds"),
            "sets": summary.get("sets"),
            "noisymix": {metric: (summary.get("table", {}).get("noisymix") or {}).get(metric, {}).get("mean")
                         for metric, _ in MEASURES}}


def _cell(d: dict | None) -> str:
    if not d:
        return "—"
    if d.get("half_width") is None:
        return f"{d['mean']:+.1f} (no spread: cannot be judged)" if d.get("n", 0) > 1 else f"{d['mean']:+.1f}"
    return f"{d['mean']:+.1f} [{d['mean'] - d['half_width']:+.1f}, {d['mean'] + d['half_width']:+.1f}]"


def ablation_lines(data: dict | None, current_sets: dict | None = None) -> list[str]:
    """The section "Why is NoisyMix under-confident?" from ``read_ablation``'s dict (none without it)."""
    if not data:
        return []
    seeds = data.get("seed_list") or []
    lines = ["**Why is NoisyMix under-confident?** Each row of tab:ablation drops one NoisyMix component; the table "
             "gives the row minus full NoisyMix (points, paired over "
             f"{data['seeds']} seeds, 95 % t-interval; a positive gap difference means the row is less "
             "under-confident). Made by `noisymix reproduce --plan ablation --set seeds="
             + ",".join(map(str, seeds)) + " --out ablation` "
             + (f"(its steps took {data['seconds'] / 60:.1f} min; " if data.get("seconds") else "(")
             + f"commit `{(data.get('commit') or 'unknown')[:12]}`), kept as `docs/ablation-summary.json`"
             # issue 63, goal 8: a table of another set says so
             + ("" if data.get("sets") and data.get("sets", {}).get("c") == (current_sets or {}).get("c") else
                "; made on an earlier Digits-C than this report's (its summary records no set identity, or another: "
                "before issue 57's refit), so its numbers are of that set") + ".", "",
             "| row (without) | " + " | ".join(words for _, words in MEASURES) + " |",
             "|---|" + "---:|" * len(MEASURES)]
    for method in (m for m in COMPONENT_OF if m in data["rows"]):  # the plan's order (a JSON round trip sorts keys)
        row = data["rows"][method]
        lines.append(f"| {row['component']} | " + " | ".join(_cell(row.get(m)) for m, _ in MEASURES) + " |")
    nm = data["noisymix"]
    if data["driver"] is not None and nm.get("confidence_gap") is not None:
        d = data["rows"][data["driver"]]["confidence_gap"]
        low = d["mean"] - (d["half_width"] or 0)
        others = [f"without {data['rows'][m]['component']} {_cell(data['rows'][m]['confidence_gap'])}"
                  for m in COMPONENT_OF if m in data["rows"] and m != data["driver"]
                  and data["rows"][m].get("confidence_gap")]
        lines += ["", f"Full NoisyMix's clean gap is {nm['confidence_gap']:+.1f} points. Removing "
                  f"{data['rows'][data['driver']]['component']} moves it furthest towards 0 ({_cell(d)})"
                  + ("" if low > 0 else ", though its interval reaches 0")
                  + ": that component is what makes NoisyMix under-confident at this scale"
                  + (f" (the others: {'; '.join(others)}; an interval that covers 0 cannot be told apart from "
                     "no change)" if others else "") + "."]
    return lines
