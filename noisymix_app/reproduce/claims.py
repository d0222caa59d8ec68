"""The paper's claims decided on our runs (issues 46, 52, 57): one Holm family per plan, each claim
read from the registry and measured with the paper's own metric.

* **The claims are data** (``figures/paper_claims.json``, ``noisymix_figures.paper.paper_claims``; issue
  57, goal 1): each entry quotes the paper, names the table cells its number is read from, our metric
  that stands for the paper's, the paper's setting and the family that decides it.  Adding a claim is one
  entry; nothing here names a claim.  A plan decides its family's entries whose methods it ran
  (``family_of``): the main job's (laptop and its variants) ``main``, ``--plan analogue-methods``
  ``eight-method`` (Mixup, Manifold Mixup, CutMix, Puzzle Mix), ``--plan ablation`` ``ablation``.
* **The test** (``decide``).  Per claim, the paired difference over seeds in the claim's direction
  (NoisyMix minus the other for a higher-is-better metric, the other minus NoisyMix for a lower one), its
  95 % t-interval and two-sided paired-t p-value against 0, the spread at least one image's worth
  (``noisymix_infra.stats``).  The primary claim is tested alone at 5 %; the secondary claims form one
  family whose p-values Holm's step-down procedure adjusts; the verdict stated is the adjusted one:
  *holds* / *fails* below 5 % by the side of the mean, else *within noise*.
* **Intervals at the verdict's level** (issue 63, goal 5): each claim's interval is taken at ``1 - 5 % p /
  p_adjusted`` (``noisymix_infra.stats.verdict_alpha``): 95 % for the primary, 1 - 5 % / m for Holm's first of
  m, so it holds 0 exactly where the verdict is *within noise*.  Where the paper's number is an effect of the
  analogue's setting (``matching``) the interval also says where it lies: *smaller* / *larger* than the
  paper's, or *cannot tell* (0 and the paper's number both inside: too small to decide).  The MDD (80 % power,
  noncentral t) at 5 % / m is kept as the plan's yardstick.
* **Firm / fragile / margin unknown** (``noisymix_app.reproduce.margins``): against the cross-machine
  margins measured on the same sets.
* **Descriptive, outside the family and the opening** (``descriptive_of``, ``category_claims``): what the
  paper's tables show but its text does not claim (AugMix and NFM against Baseline, robust and clean), the
  calibration after a temperature fitted on clean images (the diagnostic that explains the calibration
  verdict, never the verdict: issue 57, goal 3) and NoisyMix's gain per corruption group.
"""

from __future__ import annotations

from fullscale.vocabulary import CATEGORIES
from noisymix_app.reproduce.words import label
from noisymix_infra.stats import (
    ALPHA,
    UNJUDGED,
    adjusted_verdict,
    holm,
    level_interval,
    mdd,
    paired,
    two_sided_p,
    verdict_alpha,
)

__all__ = ["ALPHA", "CLEAN_TOLERANCE", "FAMILY_OF_PLAN", "POOLED_FAMILIES", "SHIFT_METRICS", "UNJUDGED",
           "against_paper", "cannot_decide", "category_claims", "decide", "descriptive_of", "family_of", "shift_values",
           "stated"]

#: the family each plan decides (by the plan's name; every other plan: the main job's)
FAMILY_OF_PLAN = {"analogue-methods": "eight-method", "ablation": "ablation", "central": "central"}
#: the families of plans whose runs the main job pools (``noisymix_app.reproduce.pool``): they decide no claim
POOLED_FAMILIES = frozenset({"eight-method", "central"})
CLEAN_TOLERANCE = 1.0  # points of clean accuracy a method may lose and still "keep" it (descriptive rows)
#: the calibration-under-shift metrics per seed (``shift_values``): the RMS error after the clean-fitted
#: temperature and before it, each averaged over severities 1-5 (Ovadia et al. 2019), and the estimator's
#: noise floor (95th percentile) averaged the same way
SHIFT_METRICS = {"after": "rms_calibration_error_shift_scaled", "before": "rms_calibration_error_shift",
                 "floor": "rms_calibration_floor_shift"}
SHIFT_SEVERITIES = ("1", "2", "3", "4", "5")


def family_of(plan_name: str) -> str:
    """The claims family a plan decides, by its name (``laptop --set seeds=...`` is the laptop plan's)."""
    return FAMILY_OF_PLAN.get(str(plan_name).split(" ")[0], "main")


def stated(claim: dict) -> str | None:
    """The verdict the report states: after Holm for a secondary claim, the primary's own."""
    return claim.get("verdict")


def cannot_decide(claim: dict) -> bool:
    """Within noise, and the interval at the verdict's level holds both 0 and the paper's number (an effect
    size of the analogue's setting): the run cannot tell the paper's effect from none (issue 63, goal 2)."""
    return claim.get("verdict") == "within noise" and claim.get("against_paper") == "cannot tell"


def against_paper(claim: dict) -> str | None:
    """Where the paper's number (an effect of the analogue's setting) lies against the interval at the verdict's
    level: ``smaller`` (above the interval), ``larger`` (below it), ``cannot tell`` (inside, with 0 inside too)
    or ``consistent`` (inside, 0 outside); None where the setting is another or no interval exists."""
    if not claim.get("matching") or not claim.get("interval"):
        return None
    lo, hi = claim["interval"]
    if claim["paper"] == 0.0 and lo <= 0.0 <= hi:  # the paper's own effect is none (clean accuracy, CIFAR-10)
        return "consistent"
    if claim["paper"] > hi:
        return "smaller"
    if claim["paper"] < lo:
        return "larger"
    return "cannot tell" if lo <= 0.0 <= hi else "consistent"


def _difference(values: dict, entry: dict) -> dict | None:
    """The claim's paired difference in its own direction: NoisyMix better is positive."""
    ours, other = entry["methods"]
    a, b = (values.get(ours) or {}).get(entry["metric"]), (values.get(other) or {}).get(entry["metric"])
    if not a or not b:
        return None
    return paired(a, b) if entry["better"] == "higher" else paired(b, a)


def decide(values: dict, methods: list[str], family: str, margins: dict[str, float] | None = None) -> list[dict]:
    """The family's claims whose methods were run, each decided on ``values`` (method -> metric -> seed ->
    value, points; the module doc): the registry entry with ``difference``, ``p``, ``p_adjusted``,
    ``verdict``, ``level``, ``mdd``, ``decidable`` and, against ``margins`` (metric -> points, measured on
    these sets), ``margin`` and ``firm``.  An entry whose data is missing keeps ``difference: None``."""
    from noisymix_app.reproduce.margins import firmness
    from noisymix_figures.paper import paper_claims

    claims = [dict(e) for e in paper_claims(family) if all(m in methods for m in e["methods"])]
    for claim in claims:
        claim["difference"] = _difference(values, claim)
        claim["p"] = two_sided_p(claim["difference"])
    secondary = {c["id"]: c["p"] for c in claims if c["role"] == "secondary" and c["p"] is not None}
    adjusted = holm(secondary)
    m = sum(c["role"] == "secondary" and c["difference"] is not None for c in claims)
    for claim in claims:
        d = claim["difference"]
        claim["level"] = ALPHA if claim["role"] == "primary" else ALPHA / max(m, 1)
        claim["mdd"] = None if not d or not d.get("spread") else mdd(d["spread"], d["n"], alpha=claim["level"])
        claim["decidable"] = None if claim["mdd"] is None or not claim["matching"] else claim["mdd"] <= claim["paper"]
        claim["interval"], claim["interval_level"] = None, None
        if d is None:
            claim["p_adjusted"], claim["verdict"] = None, None
        elif claim["p"] is None:
            claim["p_adjusted"] = None
            claim["verdict"] = "not enough seeds" if d["n"] < 2 else UNJUDGED
        else:
            claim["p_adjusted"] = claim["p"] if claim["role"] == "primary" else adjusted[claim["id"]]
            claim["verdict"] = adjusted_verdict(d, 0.0, claim["p_adjusted"])
            # the interval at the verdict's level (issue 63, goal 5): it holds 0 exactly where the verdict is
            # within noise, where a 95 % interval beside a Holm verdict said otherwise for three claims
            alpha = verdict_alpha(claim["p"], claim["p_adjusted"], ALPHA)
            bounds = level_interval(d, alpha)
            claim["interval"] = None if bounds is None else list(bounds)
            claim["interval_level"] = None if claim["interval"] is None else 1 - alpha
        claim["against_paper"] = against_paper(claim)
    firmness(claims, margins or {})
    return claims


def shift_values(shift: dict | None) -> dict[str, dict[str, dict[int, float]]]:
    """Per method, ``SHIFT_METRICS``' per-seed values from the calibration-under-shift summary
    (``report_calibration.calibration_shift_summary``; points): each seed's mean over severities 1-5.
    Only seeds measured at all five severities count."""
    out: dict[str, dict[str, dict[int, float]]] = {}
    for method, row in ((shift or {}).get("methods") or {}).items():
        seeds = row.get("seeds") or []
        cells = [row["per_severity"].get(s) for s in SHIFT_SEVERITIES]
        if not seeds or any(c is None or len(c["after"].get("values") or []) != len(seeds) for c in cells):
            continue
        per = {}
        for key in ("after", "before"):
            per[SHIFT_METRICS[key]] = {seed: sum(c[key]["values"][i] for c in cells) / len(cells)
                                       for i, seed in enumerate(seeds)}
        floor = sum(c["noise_floor"]["p95"] for c in cells) / len(cells)
        per[SHIFT_METRICS["floor"]] = {seed: floor for seed in seeds}
        out[method] = per
    return out


def _row(cid: str, statement: str, d: dict | None, metric: str, threshold: float = 0.0, **extra) -> dict:
    """A descriptive difference: its interval and where that lies against ``threshold`` (no test, no family)."""
    return {"id": cid, "statement": statement, "metric": metric, "role": "descriptive", "difference": d,
            "threshold": threshold, **extra}


def descriptive_of(values: dict, methods: list[str]) -> list[dict]:
    """What the paper's tables show but its text does not claim, and the diagnostic beside the calibration
    verdict (the module doc): each a paired difference with its interval, outside the Holm family."""
    rows = []
    base = values.get("baseline") or {}
    for m in (m for m in methods if m not in ("baseline", "noisymix")):
        mine = values.get(m) or {}
        if base.get("corrupted") and mine.get("corrupted"):
            rows.append(_row(f"robust_{m}_vs_baseline", f"{label(m)} minus Baseline, corrupted accuracy",
                             paired(mine["corrupted"], base["corrupted"]), "corrupted"))
        if base.get("clean") and mine.get("clean"):
            rows.append(_row(f"clean_{m}_vs_baseline", f"{label(m)} minus Baseline, clean accuracy (\"keeps\" it: "
                             f"above −{CLEAN_TOLERANCE:g})", paired(mine["clean"], base["clean"]), "clean",
                             threshold=-CLEAN_TOLERANCE))
    nm = values.get("noisymix") or {}
    after, floor = SHIFT_METRICS["after"], SHIFT_METRICS["floor"]
    for m in (m for m in methods if m != "noisymix"):
        other = values.get(m) or {}
        if nm.get(after) and other.get(after):
            means = {k: sum(v[after].values()) / len(v[after]) for k, v in (("noisymix", nm), (m, other))}
            floors = {k: sum(v[floor].values()) / len(v[floor]) for k, v in (("noisymix", nm), (m, other))
                      if v.get(floor)}
            rows.append(_row(f"scaled_noisymix_vs_{m}", f"{label(m)}'s RMS calibration error minus NoisyMix's after a "
                             "temperature fitted on clean images (the diagnostic), severities 1–5",
                             paired(other[after], nm[after]), after,
                             within_floor=bool(floors) and all(means[k] <= floors.get(k, -1) for k in means)))
    for cid, metric, where in (("clean_calibration_noisymix_vs_baseline", "rms_calibration_error", "as evaluated"),
                               ("clean_scaled_noisymix_vs_baseline", "rms_calibration_error_scaled",
                                "after temperature scaling")):
        if base.get(metric) and nm.get(metric):
            rows.append(_row(cid, "Baseline's RMS calibration error minus NoisyMix's on the clean test images, "
                             + where, paired(base[metric], nm[metric]), metric))
    return rows


def category_claims(values: dict[str, dict[str, dict[int, float]]]) -> list[dict]:
    """NoisyMix against Baseline and AugMix per corruption category (``corrupted_<category>`` values per
    method and seed, points), paired over seeds, Holm-adjusted within these comparisons (descriptive)."""
    rows = []
    for other in ("baseline", "augmix_jsd"):
        if "noisymix" not in values or other not in values:
            continue
        for category in CATEGORIES:
            key = f"corrupted_{category}"
            a, b = values["noisymix"].get(key), values[other].get(key)
            if not a or not b:
                continue
            d = paired(a, b)
            rows.append({"id": f"category_{category}_noisymix_vs_{other}", "category": category, "against": other,
                         "statement": f"NoisyMix minus {label(other)} on {category} corruptions",
                         "difference": d, "p": two_sided_p(d)})
    adjusted = holm({r["id"]: r["p"] for r in rows if r["p"] is not None})
    for r in rows:
        r["p_adjusted"] = adjusted.get(r["id"])
        r["verdict_adjusted"] = (UNJUDGED if r["p_adjusted"] is None and r["difference"]["n"] > 1
                                 else None if r["p_adjusted"] is None
                                 else adjusted_verdict(r["difference"], 0.0, r["p_adjusted"]))
    return rows
