"""How far a reproduce verdict would move on another CPU (issues 32, 40 and 52): each metric's
cross-machine margin (the largest shift of a paired mean measured between two CPUs running the same plan
and seeds, ``docs/cross-machine-margins.json``), whether the verdict the report states is *firm* or
*fragile* against it (``firmness``), and where the steps that made the numbers ran.  Read by
``noisymix_app.reproduce.summary``.

The margins are recomputed from the committed summaries by one command (``MARGINS_COMMAND``; the
claims of each summary re-derived by the current code from its per-seed values, so a claim added since
is measured too): the published-rows pair (Intel Xeon at 3612aa7 against AMD EPYC at 69bd1e0, issue 32)
and the difficulty-matched pair (the README's AMD EPYC run, 47aa50d's docs/reproduce-summary.json,
against a fresh clone of 5f9bece on an Intel Xeon, docs/runs/intel-xeon-5f9bece-summary.json; issue 52)."""

from __future__ import annotations

import json
from pathlib import Path

from noisymix_infra.io import read_json

__all__ = ["ACCURACY_METRICS", "CROSS_MACHINE_MARGIN", "MARGINS", "MARGINS_COMMAND", "MARGIN_SOURCES",
           "METRIC_WORDS", "claim_metric", "cross_machine_margins", "firmness", "fragile_note", "made_on",
           "margins_of", "ran_on", "read_margins", "robustness"]

ROOT = Path(__file__).resolve().parents[2]
MARGINS = ROOT / "docs" / "cross-machine-margins.json"
#: the summaries the margins are measured on: two pairs of the laptop plan on two CPUs each
MARGIN_SOURCES = ("c2f72cf:docs/reproduce-summary.json", "843c98a:docs/reproduce-summary.json",
                  "47aa50d:docs/reproduce-summary.json", "docs/runs/intel-xeon-5f9bece-summary.json")
MARGINS_COMMAND = "python -m noisymix_app.reproduce.summary --margins " + " ".join(MARGIN_SOURCES)


#: points: the largest measured shift of a paired mean between two CPUs running the same code, plan and
#: seeds.  Source: issue 32, part 6, the laptop plan (9 seeds) on an AMD EPYC (README) and an Intel Xeon
#: (AVX-512) machine: "NoisyMix is more robust than AugMix" +0.4 on AMD EPYC vs -1.05 on Intel Xeon, a
#: shift of 1.45 points ("AugMix keeps clean accuracy" moved -0.0 -> +0.6).  Measured on two machines
#: only: a third may move further, so a *firm* verdict is one no measured shift would change, not a promise.
CROSS_MACHINE_MARGIN = 1.45


#: the metrics whose margin is at least the issue-32 shift above (it was measured on accuracy)
ACCURACY_METRICS = ("corrupted", "clean")


#: each claim's metric, by its id's prefix (issue 40: each metric's margin measured on that metric)
_CLAIM_METRICS = (("robust_", "corrupted"), ("noisymix_beats_", "corrupted"), ("clean_", "clean"),
                  ("calibrated_clean_", "rms_calibration_error"),
                  ("calibrated_scaled_", "rms_calibration_error_scaled"),
                  ("calibrated_", "rms_calibration_error_corrupted"), ("stable_", "flip_probability"))


def claim_metric(claim: dict) -> str | None:
    """The metric a claim's difference is of (``None``: a claim this module did not make)."""
    if claim.get("metric"):
        return claim["metric"]
    cid = claim.get("id") or ""
    return next((metric for prefix, metric in _CLAIM_METRICS if cid.startswith(prefix)), None)


def read_margins(path: Path = MARGINS) -> dict[str, float]:
    """Each metric's cross-machine margin in points: the largest shift of a paired mean measured on
    that metric between two CPUs (``cross_machine_margins``, written to docs/cross-machine-margins.json
    by ``python -m noisymix_app.reproduce.summary --margins A.json B.json``); the accuracy metrics at
    least ``CROSS_MACHINE_MARGIN`` (issue 32's measurement, on accuracy).  A metric never measured
    across machines has no margin (its verdicts are marked neither firm nor fragile)."""
    measured = read_json(path).get("margins", {}) if path.is_file() else {}
    margins = {k: float(v) for k, v in measured.items()}
    for metric in ACCURACY_METRICS:
        margins[metric] = max(margins.get(metric, 0.0), CROSS_MACHINE_MARGIN)
    return dict(sorted(margins.items()))


def cross_machine_margins(summaries: list[dict]) -> dict:
    """Per metric, the largest shift of a paired mean between two of ``summaries`` made with the same
    plan on different CPUs (claims matched by id, each claim's metric by ``claim_metric``)."""
    margins: dict[str, float] = {}
    pairs = []
    for i, a in enumerate(summaries):
        for b in summaries[i + 1:]:
            if json.dumps(a["plan"], sort_keys=True) != json.dumps(b["plan"], sort_keys=True):
                continue
            if (a.get("machine") or {}).get("cpu_model") == (b.get("machine") or {}).get("cpu_model"):
                continue
            pairs.append([(s.get("git") or {}).get("commit"), (s.get("machine") or {}).get("cpu_model")]
                         for s in (a, b))
            theirs = {c["id"]: c for c in b["claims"] if c.get("difference")}
            # the descriptive differences count too: each is a paired mean of a metric
            theirs.update({c["id"]: c for c in b.get("descriptive") or [] if c.get("difference")})
            for claim in [*a["claims"], *(a.get("descriptive") or [])]:
                other = theirs.get(claim["id"])
                metric = claim_metric(claim)
                if not claim.get("difference") or other is None or metric is None:
                    continue
                shift = abs(claim["difference"]["mean"] - other["difference"]["mean"])
                margins[metric] = round(max(margins.get(metric, 0.0), shift), 3)
    return {"margins": dict(sorted(margins.items())), "pairs": [list(p) for p in pairs]}


def firmness(claims: list[dict], margins: dict[str, float]) -> None:
    """Mark each claim (in place) ``firm`` True / False / None against the verdict the report states
    (after Holm for a secondary claim; issue 52, goal 3): *fragile* when moving its paired mean by its
    metric's cross-machine margin, up or down, with the family's other p-values as measured, changes that
    verdict; None without a p-value (one seed, or a verdict that cannot be judged) or without a margin.
    The verdict is monotone in the shift, so the two ends decide."""
    from noisymix_app.reproduce.claims import adjusted_verdict, holm, stated, two_sided_p

    family = {c["id"]: c["p"] for c in claims if c.get("role") == "secondary" and c.get("p") is not None}
    for claim in claims:
        metric = claim_metric(claim)
        margin = None if metric is None else margins.get(metric)
        claim["margin"] = margin
        if claim.get("p") is None or margin is None or stated(claim) not in ("holds", "within noise", "fails"):
            claim["firm"] = None
            continue
        moved = set()
        for delta in (-margin, margin):
            d = {**claim["difference"], "mean": claim["difference"]["mean"] + delta}
            p = two_sided_p(d, claim["threshold"])
            if p is None:  # the merge's "cannot be judged" (a spread below the quantisation step)
                moved.add("cannot be judged")
                continue
            if claim.get("role") == "secondary":
                p = holm({**family, claim["id"]: p})[claim["id"]]
            moved.add("within noise" if claim.get("within_floor") else adjusted_verdict(d, claim["threshold"], p))
        claim["firm"] = moved == {stated(claim)}


def robustness(claim: dict, margin: float | None = None,
               margins: dict[str, float] | None = None) -> bool | None:
    """Whether a claim's verdict is *firm* (True) or *fragile* (False) on another CPU: the distance between its
    95 % interval and the claim's boundary, against ``margin`` (the largest shift of a paired mean measured
    between two machines; by default the claim's metric's, ``read_margins``). *holds*: how far the interval's
    low end clears the boundary; *fails*: how far its high end stays below it; *within noise*: how far the
    interval reaches beyond the boundary on its nearer side, so it is firm only when a shift of the mean by
    ``margin`` could reach neither side (neither *holds* nor *fails*). Firm when that distance exceeds
    ``margin``. None: no interval to judge (one seed), or no margin measured on the metric.  A claim
    marked by ``firmness`` (the stated verdict, after Holm) answers with that mark."""
    if "firm" in claim and margin is None:
        return claim["firm"]
    d = claim.get("difference")
    if not d or d.get("half_width") is None:
        return None
    if margin is None:
        metric = claim_metric(claim)
        table = read_margins() if margins is None else margins
        margin = CROSS_MACHINE_MARGIN if metric is None else table.get(metric)
        if margin is None:
            return None
    lo, hi, boundary = d["mean"] - d["half_width"], d["mean"] + d["half_width"], claim["threshold"]
    verdict = claim["verdict"]
    distance = (lo - boundary if verdict == "holds" else boundary - hi if verdict == "fails"
                else min(hi - boundary, boundary - lo))
    return distance > margin


def made_on(summary: dict) -> str:
    """Where the steps that made the numbers ran (each step's own record; issue 32: a resumed
    invocation described itself), and what holds of the verdicts on another CPU."""
    v = (summary.get("machine") or {}).get("versions") or {}
    places = []
    for where in summary.get("ran_on") or []:
        if where.get("cpu_model") is None and where.get("torch_threads") is None:
            places.append(f"{where['steps']} step(s) ran before machines were recorded")
            continue
        places.append(f"{where['steps']} step(s) ({where['seconds'] / 60:.1f} min) on {where['cpu_model']} "
                      f"(torch's CPU kernels: {where['cpu_capability']}) with {where['torch_threads']} torch "
                      f"thread(s), torch {where['torch']}")
    return ("Made on: " + ("; ".join(places) or "not recorded")
            + f" (numpy {v.get('numpy')}, Python {v.get('python')} when summarized). " + fragile_note(summary))


def margins_of(summary: dict) -> dict[str, float]:
    return summary.get("margins") or read_margins()


def fragile_note(summary: dict) -> str:
    """What holds of the marks, and nothing more: measured on two CPUs, so "firm" is no promise for a third."""
    margins = margins_of(summary)
    return ("A verdict marked fragile changes (after Holm's correction, the verdict stated) when its paired mean "
            "moves by its metric's cross-machine margin, so it may differ on another CPU; each margin is the largest "
            "shift of a paired mean measured on that metric between two CPUs running the same plan and seeds ("
            + ", ".join(f"{METRIC_WORDS.get(k, k)} {v:g} points" for k, v in margins.items())
            + f"; docs/cross-machine-margins.json, remade by `{MARGINS_COMMAND}`, and for accuracy at least issue "
            "32's 1.45); measured on two pairs of CPUs only, so a firm verdict is no promise for a third; a metric "
            "without a measured margin is marked neither.")


METRIC_WORDS = {"corrupted": "corrupted accuracy", "clean": "clean accuracy",
                 "rms_calibration_error": "RMS calibration error (clean)",
                 "rms_calibration_error_corrupted": "RMS calibration error (corrupted)",
                 "rms_calibration_error_scaled": "RMS calibration error after scaling",
                 "rms_calibration_error_shift_scaled": "RMS calibration error under shift after scaling",
                 "flip_probability": "flip probability"}


def ran_on(log: dict) -> list[dict]:
    """Where the steps that made the numbers ran, as recorded by each step (``ran_on``): one entry
    per (CPU, torch kernels, threads, torch version) with the steps' count and seconds; steps of a
    log written before the record count under ``None``."""
    groups: dict[tuple, dict] = {}
    for entry in log.get("steps", []):
        where = entry.get("ran_on") or {}
        key = tuple(where.get(k) for k in ("cpu_model", "cpu_capability", "torch_threads", "torch"))
        group = groups.setdefault(key, {"cpu_model": key[0], "cpu_capability": key[1], "torch_threads": key[2],
                                        "torch": key[3], "steps": 0, "seconds": 0.0})
        group["steps"] += 1
        group["seconds"] = round(group["seconds"] + float(entry.get("seconds") or 0), 2)
    return list(groups.values())
