"""How well the difficulty-matched sets match the paper's Baseline **out of sample** (issue 57, goal 4).

The fits (``fit_c``, ``fit_p``) chose each strength so that the fit's own Baseline models (seeds 100+), on the
digits' fit split, lose on Digits-C what the paper's Baseline loses on CIFAR-10-C and flip on Digits-P as
often as it flips on CIFAR-10-P: *in sample*, that match holds by construction. What the report can claim of
the analogue is the same profile measured on what the fit never saw: a run's own Baseline seeds (the main
job's 0-8, the eight-method plan's 10-19) on the evaluated sets, made from the test split. For each set this
gives, per corruption (or perturbation), our Baseline's drop (or flip rate) out of sample, the paper's, and
the fit's in-sample value (only where the evaluated set was made with the frozen record's strengths), the rank
correlation with the paper's (scipy), and how many lie within tolerance (Digits-C: 40 % of the paper's or 5
points, each at least 3; Digits-P: 40 % or 0.5 points); and for Digits-C each severity's out-of-sample
accuracy with its flags (``severities``). Read from the runs' evaluation records; written into the summary by
``noisymix_app.reproduce.summary`` and worded by ``lines``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fullscale.vocabulary import CORRUPTIONS, P_COLUMNS
from noisymix_app.analogue.fit_c import MIN_DROP, PROFILE_AIMS, residual_tolerance
from noisymix_app.analogue.fit_p import within_tolerance
from noisymix_app.analogue.severities import CHANCE_FLOOR, severity_flags
from noisymix_app.reproduce.words import join
from noisymix_infra.io import read_json
from noisymix_infra.stats import rank_correlation

__all__ = ["lines", "made_words", "profiles"]


def _spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rank correlation to 3 decimals; None where undefined (fewer than 3 pairs, a constant side)."""
    rho = rank_correlation(a, b)
    return None if rho is None else round(rho, 3)


def _order(vocabulary, name: str) -> tuple[int, str]:
    """A row's place: its index in the paper's order, names the vocabulary lacks after them."""
    return (list(vocabulary).index(name), "") if name in vocabulary else (len(vocabulary), name)


def _record(path: Path) -> dict | None:
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("summary"), dict) else None


def _manifest_strengths(folder: str | None) -> dict | None:
    try:
        manifest = read_json(Path(folder) / "manifest.json") if folder else None
    except (OSError, ValueError):
        return None
    return manifest.get("strengths") if isinstance(manifest, dict) else None


def _in_sample(kind: str, measured_on: str | None) -> tuple[dict[str, float], dict | None, dict | None]:
    """The frozen fit's in-sample value per name (drop or flip), where the evaluated set was made with its
    strengths (a refit's are never shown beside values measured on an older set); the record; what the record
    says made it (``fit_c.fit_summary``: seeds, recipe, command; issue 54)."""
    from noisymix_app.analogue.fit_c import fit_summary

    if kind == "c":
        from fullscale.corruptions.matched import matched_fit as fit
        key, names = "drop", CORRUPTIONS
    else:
        from fullscale.corruptions.matched_p import matched_p_fit as fit
        key, names = "flip", P_COLUMNS
    try:
        record = fit()
    except (OSError, ValueError):
        return {}, None, None
    made = fit_summary(record, None, names)
    if _manifest_strengths(measured_on) != record.get("strengths"):
        return {}, record, made
    return {n: e[key] for n, e in record["fit"].items()}, record, made


def _c_profile(out: Path, seeds: list[int], suite: str) -> dict | None:
    from noisymix_figures.paper import baseline_drops

    drops: dict[str, list[float]] = {n: [] for n in CORRUPTIONS}
    severity: dict[str, list[list[float]]] = {n: [] for n in CORRUPTIONS}
    measured_on = None
    for seed in seeds:
        folder = out / "runs" / f"baseline-seed{seed}" / "eval"
        clean, c = _record(folder / "clean.json"), _record(folder / f"{suite}.json")
        if clean is None or c is None or "accuracy" not in clean["summary"]:
            continue
        measured_on = measured_on or c.get("data_root")
        for name in CORRUPTIONS:
            entry = (c.get("results") or {}).get(name)
            if isinstance(entry, dict) and all(str(s) in entry for s in range(1, 6)):
                accuracies = [100 * entry[str(s)]["accuracy"] for s in range(1, 6)]
                drops[name].append(100 * clean["summary"]["accuracy"] - float(np.mean(accuracies)))
                severity[name].append(accuracies)
    names = [n for n in CORRUPTIONS if drops[n]]
    if len(names) < 2:
        return None
    _, paper = baseline_drops()
    fitted, record, made = _in_sample("c", measured_on)
    rows = {}
    for n in names:
        ours = float(np.mean(drops[n]))
        per_severity = [round(float(v), 2) for v in np.mean(severity[n], axis=0)]
        strength = (record or {}).get("strengths", {}).get(n) if fitted else None
        rows[n] = {"ours": round(ours, 2), "paper": paper[n], "in_sample": fitted.get(n), "seeds": len(drops[n]),
                   "within_tolerance": abs(ours - paper[n]) <= residual_tolerance(paper[n]),
                   "at_least": ours >= PROFILE_AIMS["least_drop"], "severities": per_severity,
                   "flags": None if strength is None else severity_flags(n, per_severity, strength)}
    return {"rows": rows, "rank_correlation": _spearman([rows[n]["ours"] for n in names], [paper[n] for n in names]),
            "in_sample_rank_correlation": (_spearman([fitted[n] for n in names], [paper[n] for n in names])
                                           if fitted else None),
            "within_tolerance": sum(r["within_tolerance"] for r in rows.values()),
            "at_least": sum(r["at_least"] for r in rows.values()), "of": len(rows),
            "seeds": max(r["seeds"] for r in rows.values()), "fitted_set": bool(fitted), "made": made}


def _p_profile(out: Path, seeds: list[int], suite: str) -> dict | None:
    from noisymix_figures.paper import baseline_flips

    flips: dict[str, list[float]] = {n: [] for n in P_COLUMNS}
    measured_on = None
    for seed in seeds:
        p = _record(out / "runs" / f"baseline-seed{seed}" / "eval" / f"{suite}.json")
        if p is None:
            continue
        measured_on = measured_on or p.get("data_root")
        for name in P_COLUMNS:
            entry = (p.get("results") or {}).get(name)
            if isinstance(entry, dict) and "flip_probability" in entry:
                flips[name].append(100 * entry["flip_probability"])
    names = [n for n in P_COLUMNS if flips[n]]
    if len(names) < 2:
        return None
    paper = baseline_flips()
    fitted, _, made = _in_sample("p", measured_on)
    rows = {}
    for n in names:
        values = np.asarray(flips[n])
        rows[n] = {"ours": round(float(values.mean()), 2), "sd": round(float(values.std(ddof=1)), 2)
                   if len(values) > 1 else None, "paper": paper[n], "in_sample": fitted.get(n), "seeds": len(values),
                   "within_tolerance": within_tolerance(float(values.mean()), paper[n])}
    return {"rows": rows, "rank_correlation": _spearman([rows[n]["ours"] for n in names], [paper[n] for n in names]),
            "in_sample_rank_correlation": (_spearman([fitted[n] for n in names], [paper[n] for n in names])
                                           if fitted else None),
            "within_tolerance": sum(r["within_tolerance"] for r in rows.values()), "of": len(rows),
            "seeds": max(r["seeds"] for r in rows.values()), "fitted_set": bool(fitted), "made": made}


def profiles(out: str | Path, plan: dict) -> dict | None:
    """The Baseline's out-of-sample profile on the plan's -C set (``c``) and -P set (``p``), for a plan on the
    difficulty-matched sets with Baseline runs; None otherwise."""
    if "baseline" not in plan.get("methods", ()) or plan.get("corruption_params") != "digits-matched":
        return None
    out, seeds = Path(out), list(plan["seeds"])
    found = {"c": _c_profile(out, seeds, plan["corrupted_suite"])}
    if plan.get("perturbed_suite") and plan.get("perturbation_params") == "digits-matched":
        found["p"] = _p_profile(out, seeds, plan["perturbed_suite"])
    return found if any(found.values()) else None


def _num(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _rho(x: float | None) -> str:
    return "undefined" if x is None else f"{x:+.2f}".replace("-", "−")


def made_words(made: dict | None) -> str:
    """What made a fit, from its record (issue 54: the report's paragraph was fixed text whatever was run): each
    command with its seeds and recipe, and the entries it made where several commands made them."""
    if not made or not made.get("fits"):
        return "a fit whose record does not say what made it"

    def one(group: dict, named: bool) -> str:
        recipe = ("the main job's recipe" if group["main_recipe"]
                  else f"{group['epochs']} epochs, not the main job's recipe")
        where = f" for {', '.join(group['corruptions'])}" if named else ""
        return f"`{group['command']}`{where} (Baseline seeds {group['seed_words']}, {recipe})"

    groups = made["fits"]
    return "; ".join(one(g, len(groups) > 1) for g in groups)


#: a step between neighbouring severities (clean to s1 included) that costs this many points is a cliff
CLIFF = 25.0


def _flags(row: dict) -> list[str]:
    """A row's severity flags as measured (``severities``' chance, clip, backwards) and its cliffs."""
    steps = [row["ours"] + float(np.mean(row["severities"])), *row["severities"]]  # clean, then s1-s5
    cliffs = [f"s{s} cliff" for s in range(1, 6) if steps[s - 1] - steps[s] >= CLIFF]
    return [*(row.get("flags") or []), *cliffs]


def _relative(row: dict) -> str:
    """The miss relative to the paper's drop: ``yes`` within 40 %, else the signed percentage."""
    miss = (row["ours"] - row["paper"]) / row["paper"]
    return "yes" if abs(miss) <= PROFILE_AIMS["relative"] else f"no ({100 * miss:+.0f} %)".replace("-", "−")


def _c_words(c: dict, fresh: dict | None) -> str:
    """The -C fidelity in words from the measured numbers (issue 63, goal 6): the floored targets, the misses
    beyond 40 % (those the 5-point floor passes named), the severities at chance, clipped, backwards or at a
    cliff, and the fresh seeds' check."""
    rows = sorted(c["rows"].items(), key=lambda item: _order(CORRUPTIONS, item[0]))
    floored = [f"{n} (the paper's {r['paper']:.1f})" for n, r in rows if r["paper"] < MIN_DROP]
    relative = [n for n, r in rows if _relative(r) == "yes"]
    loose = [f"{n} ({_relative(r)[4:-1]})" for n, r in rows if r["within_tolerance"] and _relative(r) != "yes"]
    missed = [f"{n} ({_relative(r)[4:-1]})" for n, r in rows if not r["within_tolerance"]]
    flagged = [f"{n} ({', '.join(_flags(r))})" for n, r in rows if _flags(r)]
    return (f"The strengths were fitted on held-out digits by {made_words(c.get('made'))}, each to the paper's "
            f"Baseline drop floored at {MIN_DROP:g} points" + (f" (floored: {join(floored)})" if floored else "")
            + f"; on the fit's own models and digits the rank correlation with the paper's drops was "
            f"{_rho(c['in_sample_rank_correlation'])}. On this run's {c['seeds']} Baseline seeds and the evaluated "
            f"set, our Baseline's drop per corruption (clean minus the mean of the five severities) against the "
            f"paper's on CIFAR-10-C: rank correlation {_rho(c['rank_correlation'])} (aim ≥ "
            f"{PROFILE_AIMS['rank_correlation']:g})"
            + ("" if not fresh else f", on the {fresh['seeds']} fresh seeds of the eight-method plan (trained after "
                                    f"the fits were frozen) {_rho(fresh['rank_correlation'])}")
            + f"; {len(relative)} of {c['of']} within 40 % of the paper's"
            + (f", {len(loose)} more only within the 5-point floor ({join(loose)})" if loose else "")
            + (f", {len(missed)} beyond both ({join(missed)})" if missed else "")
            + f"; {c['at_least']} of {c['of']} cost at least {PROFILE_AIMS['least_drop']:g} points"
            + ("" if c["fitted_set"] else "; the evaluated set was not made with the frozen fit's strengths, so no "
               "in-sample column") + "."
            + (f" Per severity: {'; '.join(flagged)} (*chance*: at most {CHANCE_FLOOR:g} %; *cliff*: one step, clean "
               f"to s1 included, costs at least {CLIFF:g} points)." if flagged else ""))


def lines(found: dict | None) -> list[str]:
    """The two fidelity tables, each with its sentence: out of sample first, the fit's in-sample beside it."""
    if not found:
        return []
    text = []
    c, fresh = found.get("c"), (found.get("fresh") or {}).get("c")
    if c:
        text += ["**Is Digits-C as hard as CIFAR-10-C, out of sample?** " + _c_words(c, fresh), "",
                 "| corruption | ours, out of sample | " + ("" if not fresh else f"fresh seeds ({fresh['seeds']}) | ")
                 + "the paper's | fitted to | the fit's, in sample | within 40 % | s1–s5 accuracy (ours) | flags |",
                 "|---|---:|" + ("---:|" if fresh else "") + "---:|---:|---:|---|---|---|"]
        # in the vocabulary's order: a record read back from its JSON has its keys sorted
        for name, r in sorted(c["rows"].items(), key=lambda item: _order(CORRUPTIONS, item[0])):
            again = "" if not fresh else f"{_num((fresh['rows'].get(name) or {}).get('ours'))} | "
            text.append(f"| {name} | {r['ours']:.1f} | {again}{r['paper']:.1f} | {max(r['paper'], MIN_DROP):.1f} | "
                        f"{_num(r['in_sample'])} | {_relative(r)} | "
                        f"{' / '.join(f'{a:.0f}' for a in r['severities'])} | {', '.join(_flags(r)) or '—'} |")
    p, fresh_p = found.get("p"), (found.get("fresh") or {}).get("p")
    if p:
        missed_p = [n for n, r in p["rows"].items() if not r["within_tolerance"]]
        text += (["", ""] if text else []) + [
            "**Does Digits-P flip as CIFAR-10-P does, out of sample?** The strengths were fitted on held-out digits "
            f"by {made_words(p.get('made'))}. Our Baseline's flip probability per "
            f"perturbation (%, mean and sd over this run's {p['seeds']} Baseline seeds) against the paper's "
            f"Baseline on CIFAR-10-P: rank correlation {_rho(p['rank_correlation'])} (in sample "
            f"{_rho(p['in_sample_rank_correlation'])}" + ("" if not fresh_p else f"; on the {fresh_p['seeds']} fresh "
                                                         f"seeds {_rho(fresh_p['rank_correlation'])}")
            + f"); {p['within_tolerance']} of {p['of']} within 40 % or 0.5 points of the paper's"
            + (f" (beyond: {join(missed_p)})" if missed_p else "") + ".", "",
            "| perturbation | ours, out of sample | sd over seeds | the paper's | the fit's, in sample | "
            "within tolerance |",
            "|---|---:|---:|---:|---:|---|"]
        for name, r in sorted(p["rows"].items(), key=lambda item: _order(P_COLUMNS, item[0])):
            text.append(f"| {name} | {r['ours']:.1f} | {_num(r['sd'])} | {r['paper']:.1f} | {_num(r['in_sample'])} | "
                        f"{'yes' if r['within_tolerance'] else 'no'} |")
    return text
