"""How far a reproduce verdict would move on another CPU (issues 32, 40, 52, 57): each metric's
cross-machine margin (the largest shift of a paired mean measured between two CPUs running the same plan,
seeds **and sets**), whether the verdict the report states is *firm* or *fragile* against it (``firmness``),
and where the steps that made the numbers ran.  Read by ``noisymix_app.reproduce.summary``.

A margin is bound to the identity of the sets it was measured on (issue 57, goal 5: the flip claims'
margin came from runs of the published -P sequences, made before the matched Digits-P existed, whose
effect was then 0.3 points and is now 7.3): ``docs/cross-machine-margins.json`` holds one measurement per
identity (``sets``: each set's manifest digest, ``noisymix_app.reproduce.summary.set_identity``), and
``read_margins(sets)`` gives only the margins measured on the sets a summary used.  A verdict without one
is marked *margin unknown*, never firm, until ``python -m noisymix_app.reproduce.summary --margins A.json
B.json`` measures it on two summaries of the same plan, seeds and sets from two CPUs (each re-derived by
the current code from its per-seed values).
"""

from __future__ import annotations

import json
from pathlib import Path

from noisymix_infra.io import read_json
from noisymix_infra.stats import adjusted_verdict, holm, two_sided_p

__all__ = ["MARGINS", "METRIC_WORDS", "cross_machine_margins", "firmness", "fragile_note", "made_commits", "made_on",
           "merge_margins", "ran_on", "read_margins", "read_pairs"]

ROOT = Path(__file__).resolve().parents[2]
MARGINS = ROOT / "docs" / "cross-machine-margins.json"


def _measurement(sets: dict | None, path: Path = MARGINS) -> dict:
    """The margins file's measurement made on ``sets`` (a summary's ``sets``); empty where none was (another
    identity, a file of the old form without ``sets``, or none at all)."""
    if not sets or not path.is_file():
        return {}
    data = read_json(path)
    entries = (data.get("measurements") or []) if isinstance(data, dict) else []
    return next((e for e in entries if isinstance(e, dict) and e.get("sets") == sets), {})


def read_pairs(sets: dict | None, path: Path = MARGINS) -> list:
    """The machines the margins of ``sets`` were measured between (``cross_machine_margins``' ``pairs``)."""
    return _measurement(sets, path).get("pairs") or []


def read_margins(sets: dict | None, path: Path = MARGINS) -> dict[str, float]:
    """Each metric's cross-machine margin in points, measured on ``sets``; empty where none was."""
    return {k: float(v) for k, v in sorted((_measurement(sets, path).get("margins") or {}).items())}


def made_commits(summary: dict) -> list[str]:
    """The commits a summary's runs were trained and evaluated at (its ``made_at``), sorted."""
    made = summary.get("made_at") or {}
    return sorted(set(made.get("training") or []) | set(made.get("evaluation") or []))


def cross_machine_margins(summaries: list[dict]) -> dict:
    """Per metric, the largest shift of a paired mean between two of ``summaries`` made with the same plan
    and sets on different CPUs (claims and descriptive rows matched by id, each of its own metric); the
    sets they were measured on.  A ``ValueError`` where no two summaries make such a pair."""
    margins: dict[str, float] = {}
    pairs, sets = [], None
    for i, a in enumerate(summaries):
        for b in summaries[i + 1:]:
            if json.dumps(a["plan"], sort_keys=True) != json.dumps(b["plan"], sort_keys=True):
                continue
            if not a.get("sets") or a.get("sets") != b.get("sets"):
                continue
            if (a.get("machine") or {}).get("cpu_model") == (b.get("machine") or {}).get("cpu_model"):
                continue
            sets = a["sets"]
            pairs.append([_where(s) for s in (a, b)])
            theirs = {c["id"]: c for c in [*b["claims"], *(b.get("descriptive") or [])] if c.get("difference")}
            for claim in [*a["claims"], *(a.get("descriptive") or [])]:
                other = theirs.get(claim["id"])
                if not claim.get("difference") or other is None or not claim.get("metric"):
                    continue
                shift = abs(claim["difference"]["mean"] - other["difference"]["mean"])
                margins[claim["metric"]] = round(max(margins.get(claim["metric"], 0.0), shift), 3)
    if not pairs:
        raise ValueError("--margins needs two summaries of the same plan, seeds and sets made on different CPUs")
    return {"sets": sets, "margins": dict(sorted(margins.items())), "pairs": pairs}


def _where(summary: dict) -> list:
    """[the commits its runs were made at, CPU, torch's kernel path] of a summary: its steps' own record (``ran_on``,
    ``made_at``), not the machine that summarized it (a summary made elsewhere named that one's kernels)."""
    commits = made_commits(summary) or [(summary.get("git") or {}).get("commit")]
    kernels = sorted({r.get("cpu_capability") for r in summary.get("ran_on") or [] if r.get("cpu_capability")}) \
        or [(summary.get("machine") or {}).get("cpu_capability")]
    return [",".join(c[:12] for c in commits if c), (summary.get("machine") or {}).get("cpu_model"), "/".join(
        str(k) for k in kernels)]


def merge_margins(measurement: dict, path: Path = MARGINS) -> dict:
    """The margins file with ``measurement`` in place of any earlier one of the same sets (others kept)."""
    data = read_json(path) if path.is_file() else {}
    kept = [e for e in (data.get("measurements") or []) if isinstance(e, dict) and e.get("sets") != measurement["sets"]]
    return {"measurements": [*kept, measurement]}


def firmness(claims: list[dict], margins: dict[str, float]) -> None:
    """Mark each claim (in place) ``firm`` True / False / None against the verdict the report states
    (after Holm for a secondary claim; issue 52, goal 3): *fragile* when moving its paired mean by its
    metric's cross-machine margin, up or down, with the family's other p-values as measured, changes that
    verdict; None (*margin unknown*) without a p-value or without a margin measured on these sets.  The
    verdict is monotone in the shift, so the two ends decide."""
    family = {c["id"]: c["p"] for c in claims if c.get("role") == "secondary" and c.get("p") is not None}
    for claim in claims:
        margin = margins.get(claim.get("metric") or "")
        claim["margin"] = margin
        if claim.get("p") is None or margin is None:
            claim["firm"] = None
            continue
        moved = set()
        for delta in (-margin, margin):
            d = {**claim["difference"], "mean": claim["difference"]["mean"] + delta}
            p = two_sided_p(d)
            if claim.get("role") == "secondary":
                p = holm({**family, claim["id"]: p})[claim["id"]]
            moved.add(adjusted_verdict(d, 0.0, p))
        claim["firm"] = moved == {claim["verdict"]}


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


def fragile_note(summary: dict) -> str:
    """What holds of the marks, and nothing more: measured on two CPUs, so "firm" is no promise for a third."""
    margins = summary.get("margins") or {}
    if not margins:
        return ("No cross-machine margin has been measured on these sets (a margin is bound to the sets it was "
                "measured on, and these were made since): every verdict is marked *margin unknown*; `python -m "
                "noisymix_app.reproduce.summary --margins A.json B.json` measures them from this plan's summaries on "
                "two CPUs.")
    pairs = "; ".join(" against ".join(f"{side[1]}" + (f" ({side[2]} kernels)" if len(side) > 2 else "")
                                       + f" at `{side[0] or '?'}`" for side in pair)
                      for pair in summary.get("margin_pairs") or [])
    return ("A verdict marked fragile changes (after Holm's correction, the verdict stated) when its paired mean "
            "moves by its metric's cross-machine margin, so it may differ on another CPU; each margin is the largest "
            "shift of a paired mean measured on that metric between two runs of the main job, same plan, seeds and "
            "sets, on different CPUs and kernel paths" + (f" ({pairs})" if pairs else "") + ": "
            + ", ".join(f"{METRIC_WORDS.get(k, k)} {v:g} points" for k, v in margins.items())
            + " (docs/cross-machine-margins.json). It is the shift of a 9-seed mean, held against claims whose means "
            "pool more seeds; measured on one pair, so a firm verdict is no promise for a third machine; a metric "
            "without a measured margin is marked *margin unknown*.")


METRIC_WORDS = {"corrupted": "corrupted accuracy", "clean": "clean accuracy",
                 "aurra_corrupted": "AURRA (corrupted)",
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
