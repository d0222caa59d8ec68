"""The screen's page (issue 59, goal 2): ``DIR/screen.json`` (the numbers), ``DIR/SCREEN.md`` (the words,
generated from them; the terminal prints it too) and one figure, ``DIR/screen.png``.

What it says, in order: the screened method's Digits-C accuracy and Digits-P mean flip probability with
their 95 % t-intervals over the seeds; its place among the eight reference methods (their numbers as the
summary holds them, never re-run); its paired differences with the Baseline and NoisyMix seed by seed
(``noisymix_infra.stats.paired``); its predicted CIFAR-10-C accuracy and CIFAR-10-P mFR with their
prediction intervals, and beside them the proxy's validity measured as prediction (each reference method
left out in turn: ``noisymix_app.screen.predict``), which sets the intervals' width; where the proxy
misses by as much as the eight paper values spread, the page says it cannot place the method.

Issue 64: every count the page says ("eight", "the other seven") is the reference's real count of methods
(``_words``), and the page says whether the reference's Digits-C/-P sets were verified to be the screen's
(``record["sets_identity"]``, set by the command).

Issue 65: the page says where it cannot see.  Per CIFAR-10-C family and per corruption (``by_family``:
``noisymix_app.screen.families``) the method's accuracy, its paired differences with the Baseline and
NoisyMix and the reference methods' means on the same sets, each beside the analogue's multiplier of CIFAR's
strength; where the gain over the Baseline lies in corruptions the proxy scales beyond 2x or below 0.5x, the
finding says so before any prediction.  With ``--also-published`` (``published``: ``published_view``) the same
models at the published CIFAR rows, and where the two views disagree, also before any prediction.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from noisymix_app.analogue.methods import PER_SEED_DECIMALS
from noisymix_app.screen.families import (
    analogue_scale,
    analogue_scale_p,
    breakdown,
    family_members,
    multiplier_text,
    pretty,
    reference_breakdown,
)
from noisymix_app.screen.paired import interval_entry, paired_difference, reads
from noisymix_app.screen.predict import map_record, predict
from noisymix_app.screen.reference import PER_SEED_ROUNDING, Reference
from noisymix_infra.io import write_files

__all__ = ["BENCHMARKS", "page_record", "published_view", "render_markdown", "write_page"]

#: ``page_record``'s default scale: the frozen fit of the plan's -C parameters
_PLAN_SCALE = object()

#: our measure -> (its name on the proxy, the paper's benchmark it maps to, the paper's column, lower is better)
BENCHMARKS: dict[str, tuple[str, str, str, bool]] = {
    "corrupted": ("Digits-C accuracy", "CIFAR-10-C accuracy", "paper_corrupted", False),
    "mean_flip": ("Digits-P mean flip probability", "CIFAR-10-P mFR", "paper_mfr", True),
}
_NAMES = {"clean": "clean accuracy", "corrupted": "Digits-C accuracy", "mean_flip": "Digits-P mean flip probability"}


def _pm(entry: dict, digits: int = 1) -> str:
    hw = entry.get("half_width")
    return f"{entry['mean']:.{digits}f}" + ("" if hw is None else f" ± {hw:.{digits}f}")


def _place(value: float, others: dict[str, float], lower_better: bool) -> dict:
    """Where ``value`` ranks among the reference ``others`` (1: best), and its neighbours."""
    ordered = sorted(others.items(), key=lambda kv: kv[1], reverse=not lower_better)
    better = [m for m, v in ordered if (v < value if lower_better else v > value)]
    rank = len(better) + 1
    worse = [m for m, _ in ordered if m not in better]
    return {"rank": rank, "of": len(others) + 1, "above": better[-1] if better else None,
            "below": worse[0] if worse else None}


def page_record(spec, reference: Reference, ours: dict, *, plan: dict, runs: dict, wall_seconds: float | None,
                scale: dict | object | None = _PLAN_SCALE, published: dict | None = None) -> dict:
    """Everything the page shows, as data: ``ours`` are the screened method's per-seed numbers (measure ->
    values aligned with ``reference.seeds``; with ``per_corruption`` and ``per_family``, the page's per-family
    part), ``plan`` the recipe it was trained with, ``runs`` each run's recorded seconds; ``scale`` the
    analogue's multipliers (``families.analogue_scale``; default: the frozen fit of ``plan``'s
    ``corruption_params``, digits-matched where it does not say); ``published`` the second view's inputs
    (``published_view``'s keyword arguments but ``ours``/``reference``), None without ``--also-published``."""
    seeds = reference.seeds
    own = {m: interval_entry(ours[m]) for m in ("clean", "corrupted", "mean_flip")}
    same = spec.method if spec.builtin and spec.method in reference.methods else None
    others = [r for r in reference.rows if r["method"] != same]
    record: dict = {
        "spec": {"given": spec.given, "method": spec.method, "label": spec.label, "title": spec.title,
                 "form": spec.form, "source": spec.source, "source_sha256": spec.source_sha256},
        "seeds": list(seeds), "ours": own,
        "reference": {"summary": str(reference.path), "sha256": reference.sha256, "plan": reference.plan_name,
                      "methods": list(reference.methods), "seeds": list(reference.summary_seeds or seeds)},
        "plan": plan, "runs": runs, "wall_seconds": wall_seconds,
    }
    if same is not None:  # a built-in screened by name: the same code on the same seeds as its committed row
        committed = reference.row(same)["per_seed"]
        record["reproduces"] = {
            "method": same,
            "max_abs_difference": {m: max(abs(a - b) for a, b in zip(ours[m], committed[m], strict=True))
                                   for m in ("clean", "corrupted", "mean_flip")}}
    record["place"] = {m: _place(own[m]["mean"], {r["method"]: r[m]["mean"] for r in others}, BENCHMARKS[m][3])
                       for m in BENCHMARKS}
    record["paired"] = []
    for against in ("baseline", "noisymix"):
        if against == same:
            continue
        row = reference.row(against)
        for m in ("clean", "corrupted", "mean_flip"):
            diff = paired_difference(ours[m], row["per_seed"][m], seeds)
            record["paired"].append({"against": against, "row": row.get("row", against), "measure": m,
                                     "difference": diff, "reads": reads(diff, m == "mean_flip")})
    record["maps"] = {}
    for m, (_, _, paper_key, _) in BENCHMARKS.items():
        names = [r["method"] for r in reference.rows]
        fitted = map_record(names, [r[m]["mean"] for r in reference.rows], [r[paper_key] for r in reference.rows])
        fitted["rows"] = {r["method"]: r.get("row", r["method"]) for r in reference.rows}
        record["maps"][m] = {**fitted, "prediction": predict(fitted, own[m]["mean"], leave_out=same)}
    if "per_corruption" in ours:
        if scale is _PLAN_SCALE:
            scale = analogue_scale(plan.get("corruption_params", "digits-matched"))
        members = family_members(plan.get("corruptions"))
        record["by_family"] = breakdown(ours, reference.rows, seeds, members, scale, same=same)
        if published is not None:
            record["published"] = published_view(ours=ours, reference=reference, members=members, same=same,
                                                 scale=scale, **published)
    record["finding"] = finding(record)
    return record


def published_view(*, ours: dict, published_ours: dict, published_reference, reference: Reference,
                   members: dict, same: str | None, scale: dict | None, sets: dict | None = None,
                   scale_p: dict | object | None = _PLAN_SCALE) -> dict:
    """The second view (issue 65, goal 3): the same models at the published CIFAR rows.  ``published_ours``:
    the screened method's per-seed numbers there (``published.published_numbers``); ``published_reference``:
    the committed reference there (``published.read_published``), None where there is none (then only our
    numbers, and the line saying how it is made).  Per family: both views' accuracy, and where both gains over
    the Baseline can be measured, their comparison (``published.compare_views``)."""
    from noisymix_app.screen.published import compare_views, missing_line

    seeds = reference.seeds
    if scale_p is _PLAN_SCALE:
        scale_p = analogue_scale_p("digits-matched")
    view: dict = {
        "ours": {"corrupted": interval_entry(published_ours["corrupted"]),
                 "mean_flip": interval_entry(published_ours["mean_flip"]),
                 "per_family": {f: interval_entry(v) for f, v in published_ours["per_family"].items()},
                 "per_corruption": {c: interval_entry(v) for c, v in published_ours["per_corruption"].items()}},
        "reference": None, "missing": None, "sets": sets, "scale_p": scale_p, "families": [], "disagree": []}
    if published_reference is None:
        view["missing"] = missing_line()
    else:
        view["reference"] = {"path": str(published_reference.path), "sha256": published_reference.sha256,
                             "methods": [r["method"] for r in published_reference.rows]}
    theirs_p = ({r["method"]: reference_breakdown(r, members) for r in published_reference.rows}
                if published_reference is not None else {})
    base_m = reference_breakdown(reference.row("baseline"), members)
    values = scale["values"] if scale else None
    for f, group in members.items():
        entry = {"name": f, "multiplier": None, "matched": float(np.mean(ours["per_family"][f])),
                 "published": view["ours"]["per_family"][f], "reference": {}, "comparison": None}
        if values is not None and all(c in values for c in group):
            factors = [values[c] for c in group]
            entry["multiplier"] = {"low": min(factors), "high": max(factors)}
        for m, found in theirs_p.items():
            if found is not None:
                entry["reference"][m] = float(np.mean(found["per_family"][f]))
        base_p = theirs_p.get("baseline")
        entry["published_gain"] = None
        if base_p is not None and same != "baseline":  # its gain at the published rows, with or without the other
            entry["published_gain"] = paired_difference(list(published_ours["per_family"][f]),
                                                        list(base_p["per_family"][f]), seeds)
        if base_p is not None and base_m is not None and same != "baseline":
            entry["comparison"] = compare_views(
                {"ours": list(ours["per_family"][f]), "baseline": list(base_m["per_family"][f])},
                {"ours": list(published_ours["per_family"][f]), "baseline": list(base_p["per_family"][f])}, seeds)
            if entry["comparison"]["disagree"]:
                view["disagree"].append(f)
        view["families"].append(entry)
    if published_reference is not None and same == "baseline":
        view["not_compared"] = "it is the Baseline: there is no gain over it to compare"
    elif published_reference is not None and base_m is None:
        view["not_compared"] = ("the eight-method summary has no per-family numbers (the matched view's Baseline by "
                                "family), so where the two views disagree is not said")
    else:
        view["not_compared"] = view["missing"]
    view["words"] = _published_words(view)
    return view


def _published_words(view: dict) -> str:
    """The second view in one or two sentences, every number the data's."""
    own = view["ours"]
    head = (f"At the published CIFAR strengths (the same models, sets of `--params cifar`) it scores "
            f"{_pm(own['corrupted'])} % on Digits-C and flips on {_pm(own['mean_flip'])} % of Digits-P frames")
    compared = [e for e in view["families"] if e["comparison"] is not None]
    if not compared:
        gains = [e for e in view["families"] if e.get("published_gain") is not None]
        if gains:
            by = ", ".join(f"{e['name']} {e['published_gain']['mean']:+.1f}" for e in gains)
            return f"{head}; its gain over the Baseline there, by family: {by} points; {view['not_compared']}."
        by = ", ".join(f"{e['name']} {e['published']['mean']:.1f}" for e in view["families"])
        return (f"{head} (by family: {by} %); its gain over the Baseline there is not measured: "
                f"{view['not_compared']}.")
    gains = ", ".join(f"{e['name']} {e['comparison']['published_gain']['mean']:+.1f} "
                      f"(matched {e['comparison']['matched_gain']['mean']:+.1f})" for e in compared)
    text = f"{head}; its gain over the Baseline there, by family: {gains} points."
    if view["disagree"]:
        def scaled(e: dict) -> str:  # the family's multiplier on the matched sets, beside why the views disagree
            return (f"{multiplier_text(e['multiplier'])} CIFAR's strength on the matched sets; " if e["multiplier"]
                    else "")

        where = "; ".join(f"{e['name']} ({scaled(e)}{e['comparison']['why']})" for e in compared
                          if e["comparison"]["disagree"])
        return f"{text}  The two views disagree on {where}."
    return (f"{text}  The two views agree on every family (no sign flip beyond noise, no change beyond its "
            "95 % interval).")


_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve")


def _word(n: int) -> str:
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


def _words(record: dict) -> tuple[str, str]:
    """The reference's count of methods and that count less one, as words (issue 64: a 7-method summary's page
    said "the eight reference methods")."""
    n = len(record["reference"]["methods"])
    return _word(n), _word(n - 1)


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def finding(record: dict) -> str:
    """The page's first sentence, from the numbers alone."""
    title = record["spec"]["title"]
    own, place = record["ours"], record["place"]
    parts = [f"On the digits proxy, {title} scores {_pm(own['corrupted'])} % on Digits-C "
             f"({_ordinal(place['corrupted']['rank'])} of {place['corrupted']['of']}) and flips on "
             f"{_pm(own['mean_flip'])} % of Digits-P frames ({_ordinal(place['mean_flip']['rank'])} of "
             f"{place['mean_flip']['of']}, fewest first)."]
    said = []
    eight, _ = _words(record)
    for m, (_, benchmark, _, _) in BENCHMARKS.items():
        fitted = record["maps"][m]
        p = fitted["prediction"]
        if not fitted["placeable"]:
            said.append(f"the proxy cannot place it on {benchmark.split(' ')[0]} (its leave-one-out error, "
                        f"{fitted['rmse']:.1f}, is as large as the {eight} methods' spread, {fitted['spread']:.1f})")
        else:
            said.append(f"{benchmark} {p['value']:.1f} [{p['low']:.1f}, {p['high']:.1f}]"
                        + (f" (outside the {eight}'s range: extrapolated)" if p["extrapolated"] else "")
                        + (" (cut to 0-100 %)" if p["clipped"] else ""))
    # before any prediction (issue 65): where the proxy's strengths are far from CIFAR's, and the second view
    scale = (record.get("by_family") or {}).get("finding") or {}
    if scale.get("words"):
        parts.append(scale["words"])
    elif scale:
        parts.append(_scale_reminder(record["by_family"], scale))
    if record.get("published"):
        parts.append(record["published"]["words"])
    return " ".join(parts) + " Predicted: " + "; ".join(said) + "."


def _scale_reminder(by_family: dict, scale: dict) -> str:
    """Where the gain is not concentrated in the corruptions the proxy scales far from CIFAR's (no warning), the
    scale itself, before any prediction (issue 65: a noise augmentation at CIFAR's strength gained little against
    the proxy's 6-12x noise, so no warning fired, and nothing told its user the proxy's noise is not CIFAR's)."""
    ranges = ", ".join(f"{e['name']} {multiplier_text(e['multiplier'])}" for e in by_family["families"]
                       if e.get("multiplier"))
    return (f"The proxy's corruptions are CIFAR's scaled ({ranges} CIFAR's strength), and "
            f"{round(100 * scale['share'])} % of its gain lies in those scaled beyond 2× or below 0.5×: a benefit "
            "meant for those (an augmentation written at CIFAR's strength is that many times weaker here against "
            "the ones above 1×) is not what this proxy measures.")


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _fmt(value: float | None, digits: int = 1, sign: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def render_markdown(record: dict) -> str:
    """The page as Markdown (every word generated from ``record``)."""
    spec, own, seeds = record["spec"], record["ours"], record["seeds"]
    eight, seven = _words(record)
    rows_named = record["maps"]["corrupted"]["rows"]
    seed_words = f"{_count(len(seeds), 'seed')} ({', '.join(map(str, seeds))})"
    every = record["reference"].get("seeds", seeds)
    share = (f" (of their {len(every)}: the others by `--set seeds=...`; their overall means below are over all "
             f"{len(every)}, their means per family and corruption over these {len(seeds)}, as every paired "
             "difference)") if len(every) != len(seeds) else ""
    lines = [f"# Screen: {spec['title']} (`{spec['given']}`)", "", f"**{record['finding']}**", ""]
    what = {"built-in": "a built-in method, by name",
            "function": "an input-space batch function (images, labels, generator) -> (images, targets)",
            "method": "a fullscale.training.methods.Method (the trainer's own method record)"}[spec["form"]]
    lines.append(f"What was screened: {what}" + (f"; source `{spec['source']}`, sha256 {spec['source_sha256'][:16]}…"
                                                  if spec["source"] else "") + ".")
    plan = record["plan"]
    overrides = ", ".join(plan["train_overrides"]) or "no overrides"
    lines += ["", f"Trained with the reference methods' recipe (`{plan['name']}`: {plan['model']} width "
              f"{plan['width']}, {_count(plan['epochs'], 'epoch')}, {overrides}) on {seed_words} of theirs{share}, "
              f"evaluated on the difficulty-matched Digits-C and Digits-P ({plan['perturbed_limit'] or 'all'} "
              "sequences).", ""]
    lines += ["## Its numbers", "", f"Mean ± 95 % t-interval over the {seed_words}, %.", "",
              "| clean | Digits-C | Digits-P mean flip probability |", "|---:|---:|---:|",
              f"| {_pm(own['clean'])} | {_pm(own['corrupted'])} | {_pm(own['mean_flip'])} |", ""]
    if "reproduces" in record:
        rep = record["reproduces"]
        worst = max(rep["max_abs_difference"].values())
        equal = worst <= PER_SEED_ROUNDING + 1e-9
        lines += [f"{rows_named.get(rep['method'], rep['method'])} is one of the reference methods: screened by name "
                  f"it runs the same code on the same seeds, and its per-seed numbers "
                  # the summary's per-seed values are rounded: within half their last place is equal
                  + (f"equal the summary's (to its {PER_SEED_DECIMALS} decimals)." if equal else
                     f"differ from the summary's by up to {worst:.3g} points (another machine or code version"
                     + (")." if record.get("sets_identity", {}).get("verified") else
                        ", or other Digits-C/-P sets: the summary does not say which it measured).")), ""]
    sets = record.get("sets_identity")
    if sets is not None and not sets.get("verified"):
        lines += ["The reference's Digits-C/-P sets are unverified: its summary carries no identity of its sets "
                  "(`sets`), so they may not be the ones this screen evaluated on (rerun the eight-method plan to "
                  "bind them).", ""]
    lines += [f"## Among the {eight} reference methods", "",
              f"Their numbers are the summary's (`{record['reference']['summary']}`, sha256 "
              f"{record['reference']['sha256'][:12]}…), never re-run.  Sorted by Digits-C accuracy.", "",
              "| method | Digits-C | Digits-P mean flip | the paper's CIFAR-10-C | the paper's CIFAR-10-P mFR |",
              "|---|---:|---:|---:|---:|"]
    entries = [(r["method"], rows_named.get(r["method"], r["method"]), r["proxy"], r["truth"]) for r in
               record["maps"]["corrupted"]["loo"]]
    flips = {r["method"]: (r["proxy"], r["truth"]) for r in record["maps"]["mean_flip"]["loo"]}
    table = [(name, c, flips[m][0], pc, flips[m][1], False) for m, name, c, pc in entries
             if m != record.get("reproduces", {}).get("method")]
    table.append((f"**{spec['title']} (screened)**", own["corrupted"]["mean"], own["mean_flip"]["mean"], None, None,
                  True))
    for name, c, f, pc, pf, _ in sorted(table, key=lambda t: -t[1]):
        lines.append(f"| {name} | {c:.1f} | {f:.1f} | {_fmt(pc)} | {_fmt(pf)} |")
    lines += ["", "## Paired with the Baseline and NoisyMix on the same seeds", "",
              "The screened method minus the reference method, seed by seed (mean ± 95 % t-interval, points); "
              "MDD: the difference 80 % power detects at 5 %.", "",
              "| against | measure | difference | MDD | reads |", "|---|---|---:|---:|---|"]
    for p in record["paired"]:
        d = p["difference"]
        hw = "" if d["half_width"] is None else f" ± {d['half_width']:.1f}"
        lines.append(f"| {p['row']} | {_NAMES[p['measure']]} | {d['mean']:+.1f}{hw} | {_fmt(d['mdd80'])} | "
                     f"{p['reads']} |")
    lines += _family_lines(record)
    lines += _published_lines(record)
    lines += ["", "## Predicted standing on CIFAR-10", "",
              f"A straight line from our mean to the paper's number, fitted on the {eight} reference methods; the "
              f"interval is {round(100 * record['maps']['corrupted']['level'])} % and calibrated on the line's "
              "leave-one-out errors (below), not on its residuals.", "",
              f"| benchmark | predicted | interval | from | the {eight}'s range (proxy) | can the proxy place it? |",
              "|---|---:|---|---|---|---|"]
    for m, (proxy_name, benchmark, _, _) in BENCHMARKS.items():
        fitted = record["maps"][m]
        p = fitted["prediction"]
        low, high = fitted["proxy_range"]
        place = ("yes" if fitted["placeable"] else
                 f"**no**: leave-one-out RMSE {fitted['rmse']:.1f} ≥ the {eight} paper values' sd "
                 f"{fitted['spread']:.1f}")
        lines.append(f"| {benchmark} | {p['value']:.1f} | [{p['low']:.1f}, {p['high']:.1f}] | {proxy_name} "
                     f"{own[m]['mean']:.1f}{' (extrapolated)' if p['extrapolated'] else ''}"
                     f"{' (cut to 0-100 %)' if p['clipped'] else ''} | "
                     f"{low:.1f} – {high:.1f} | {place} |")
    if record.get("reproduces"):
        lines += ["", f"The prediction for {rows_named.get(record['reproduces']['method'])} is its leave-one-out "
                  f"one: the line and the interval's width come from the other {seven} methods alone."]
    lines += ["", "## The proxy's validity: each reference method left out", "",
              f"Each method predicted by the line fitted to the other {seven}; its interval's width from the "
              f"leave-one-out errors of those {seven} alone (so neither the line nor the width saw it).", ""]
    for m, (_, benchmark, _, _) in BENCHMARKS.items():
        fitted = record["maps"][m]
        lines += [f"**{benchmark}** (line: paper = {fitted['intercept']:.2f} + {fitted['slope']:.3f} × ours): "
                  f"mean absolute error {fitted['mae']:.1f}, RMSE {fitted['rmse']:.1f}, the {eight} paper values' "
                  f"sd {fitted['spread']:.1f}; {fitted['covered']} of {fitted['n']} intervals hold the paper's "
                  f"value (nominal {round(100 * fitted['level'])} %).", "",
                  "| method | ours | the paper's | predicted | error | interval | holds it? |",
                  "|---|---:|---:|---:|---:|---|---|"]
        for r in fitted["loo"]:
            lines.append(f"| {fitted['rows'].get(r['method'], r['method'])} | {r['proxy']:.1f} | {r['truth']:.1f} | "
                         f"{r['predicted']:.1f} | {r['error']:+.1f} | [{r['predicted'] - r['half_width']:.1f}, "
                         f"{r['predicted'] + r['half_width']:.1f}] | {'yes' if r['covered'] else 'no'} |")
        lines.append("")
    lines += ["How the interval is made: the leave-one-out errors' root mean square times t(0.975, n), n the "
              "number of errors (taken as draws of a new method's error, the next one over their RMS is "
              f"t-distributed with n degrees of freedom).  With {eight} methods this is a rough instrument: the "
              "coverage above is what it achieved on the methods we have.", "",
              f"![the screened method on the map of the {eight}](screen.png)", ""]
    runs = record["runs"]
    if runs:
        seconds = [v["seconds"] for v in runs.values() if isinstance(v.get("seconds"), int | float)]
        if seconds:
            spread = (_duration(min(seconds)) if _duration(min(seconds)) == _duration(max(seconds))
                      else f"{_duration(min(seconds))} to {_duration(max(seconds))}")
            lines.append(f"Runs: {len(runs)}, {spread} each (training and evaluation, one torch thread, as recorded "
                         "when each ran)"
                         + (f"; this invocation {_duration(record['wall_seconds'])} wall"
                            if record.get("wall_seconds") is not None else "") + ".")
    return "\n".join(lines) + "\n"


def _diff_cell(entry: dict, against: str) -> str:
    found = entry["paired"].get(against)
    if found is None:
        return "–"
    d = found["difference"]
    return f"{d['mean']:+.1f}" + ("" if d["half_width"] is None else f" ± {d['half_width']:.1f}")


def _family_lines(record: dict) -> list[str]:
    """``## By family and corruption``: per family and corruption the analogue's multiplier, our accuracy,
    the paired differences and the reference methods' means (issue 65, goals 1-2)."""
    found = record.get("by_family")
    if not found:
        return []
    rows_named = record["maps"]["corrupted"]["rows"]
    scale = found["scale"]
    lines = ["", "## By family and corruption", ""]
    if scale is not None:
        lines += [f"×: the analogue's multiplier of CIFAR's published strength for each corruption (the frozen fit, "
                  f"`{scale['source']}`; a family: its members' range).  An augmentation written at CIFAR's strength "
                  "is that many times weaker against the corruption here than against CIFAR-10-C's (below 1×: "
                  "stronger), so its gain there is measured at another ratio than on CIFAR.", ""]
    else:
        lines += ["The plan's Digits-C is at no scale of CIFAR's strengths: no multiplier.", ""]
    scale_finding = found.get("finding") or {}
    if scale_finding.get("words"):
        lines += [f"**{scale_finding['words']}**", ""]
    elif scale_finding:
        lines += [f"{round(100 * scale_finding['share'])} % of its summed positive per-corruption gain over the "
                  f"Baseline ({scale_finding['far_gain']:+.1f} of {scale_finding['positive_gain']:+.1f} points) lies "
                  "in corruptions the proxy scales beyond 2× or below 0.5×: not concentrated there.", ""]
    if found["reference"] is not None:
        lines += [f"The {found['reference']}.  Only the screened method's own numbers are shown.", ""]
    methods = list(found["families"][0]["reference"]) if found["families"] else []
    head = ["", "×", "ours", "− Baseline", "− NoisyMix", *(rows_named.get(m, m) for m in methods)]
    lines += ["Ours: mean ± 95 % t-interval over the seeds, %; − Baseline / − NoisyMix: the paired difference seed "
              "by seed (points); then each reference method's mean on the same sets.", ""]
    for kind, title in (("families", "family"), ("corruptions", "corruption")):
        lines += ["| " + " | ".join([title, *head[1:]]) + " |", "|---|" + "---:|" * (len(head) - 1)]
        for e in found[kind]:
            name = e["name"] if kind == "families" else pretty(e["name"])
            cells = [name, multiplier_text(e["multiplier"]), _pm(e["ours"]), _diff_cell(e, "baseline"),
                     _diff_cell(e, "noisymix"), *(f"{e['reference'][m]:.1f}" for m in methods)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _published_lines(record: dict) -> list[str]:
    """``## A second view at the published strengths`` (``--also-published``; issue 65, goal 3)."""
    view = record.get("published")
    if not view:
        return []
    rows_named = record["maps"]["corrupted"]["rows"]
    lines = ["", "## A second view at the published strengths", "",
             "The same trained models (no new training) on Digits-C and Digits-P made at the published CIFAR rows "
             "(`noisymix corrupt --params cifar`), beside the matched view above.", "", view["words"], ""]
    if view["missing"]:
        lines += [f"The reference methods: {view['missing']}.", ""]
    else:
        ref = view["reference"]
        lines += [f"The reference methods' numbers at the published rows are the committed run's (`{ref['path']}`, "
                  f"sha256 {ref['sha256'][:12]}…), never re-run"
                  + ("." if (view.get("sets") or {}).get("verified") else
                     "; its sets are unverified (the file carries no `sets`)."), ""]
    methods = list(view["families"][0]["reference"]) if view["families"] else []
    head = ["family", "× (matched)", "ours, matched", "ours, published", "gain over Baseline, matched",
            "gain, published", "change", "the views", *(f"{rows_named.get(m, m)}, published" for m in methods)]
    lines += ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for e in view["families"]:
        c = e["comparison"]

        def cell(d):
            return "–" if d is None else f"{d['mean']:+.1f}" + ("" if d["half_width"] is None
                                                               else f" ± {d['half_width']:.1f}")
        verdict = "–" if c is None else (f"**disagree**: {c['why']}" if c["disagree"] else "agree")
        lines.append("| " + " | ".join([e["name"], multiplier_text(e["multiplier"]), f"{e['matched']:.1f}",
                                        _pm(e["published"]), cell(c and c["matched_gain"]),
                                        cell(e.get("published_gain")), cell(c and c["change"]), verdict,
                                        *(f"{e['reference'][m]:.1f}" for m in methods)]) + " |")
    lines.append("")
    scale_p = view.get("scale_p")
    if scale_p:
        lines += ["Digits-P's multipliers of CIFAR-10-P's strengths (the frozen fit, "
                  f"`{scale_p['source']}`): "
                  + ", ".join(f"{pretty(n)} {multiplier_text({'low': v, 'high': v})}"
                              for n, v in scale_p["values"].items()) + ".", ""]
    return lines


def figure(record: dict):
    """Two panels, Digits-C -> CIFAR-10-C and Digits-P -> CIFAR-10-P: the eight reference methods (ours
    against the paper's, each in its colour), the fitted line, and the screened method at its proxy value
    with its prediction interval (a black bar) and its seed interval (horizontal)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from noisymix_figures.methods import method_color, method_label

    found = record.get("by_family")
    if found:  # issue 65: a second row, per family and per corruption
        fig = plt.figure(figsize=(12, 9.6))
        grid = fig.add_gridspec(2, 1)
        top, bottom = grid[0].subgridspec(1, 2), grid[1].subgridspec(1, 2, width_ratios=(1, 2.2))
        axes = [fig.add_subplot(top[0, 0]), fig.add_subplot(top[0, 1])]
        _family_panels(record, fig.add_subplot(bottom[0, 0]), fig.add_subplot(bottom[0, 1]))
    else:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4.9))
    for ax, (m, (proxy_name, benchmark, _, _)) in zip(axes, BENCHMARKS.items(), strict=True):
        fitted = record["maps"][m]
        for r in fitted["loo"]:
            row = fitted["rows"].get(r["method"], r["method"])
            ax.plot(r["proxy"], r["truth"], "o", color=method_color(row, "tab:blue"), ms=7, label=method_label(row))
        xs = np.array([r["proxy"] for r in fitted["loo"]] + [record["ours"][m]["mean"]])
        grid = np.linspace(xs.min(), xs.max(), 50)
        ax.plot(grid, fitted["intercept"] + fitted["slope"] * grid, "-", color="0.6", lw=1, label="the line")
        p, own = fitted["prediction"], record["ours"][m]
        ax.errorbar(own["mean"], p["value"], yerr=p["half_width"], xerr=own["half_width"] or 0.0, fmt="*",
                    color="black", ms=13, capsize=4, label=f"{record['spec']['title']} (screened)")
        ax.set_xlabel(f"{proxy_name}, ours (%)")
        ax.set_ylabel(f"{benchmark}, the paper's (%)")
        ax.set_title(f"leave-one-out RMSE {fitted['rmse']:.1f}; {fitted['covered']}/{fitted['n']} intervals hold",
                     fontsize=9)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, frameon=False, fontsize=8)
    fig.suptitle(f"{record['spec']['title']} screened on the digits proxy: its predicted CIFAR-10 standing "
                 f"({round(100 * record['maps']['corrupted']['level'])} % prediction intervals)", fontsize=10)
    fig.tight_layout(rect=(0, 0.12 if not found else 0.06, 1, 1))
    return fig


def _family_panels(record: dict, left, right) -> None:
    """Per family (``left``) and per corruption (``right``), each labelled with the analogue's multiplier: the
    screened method's gain over the Baseline (black star, its 95 % interval), the reference methods' mean gains
    (their colours), and with ``--also-published`` its gain at the published rows (open star); its accuracies
    where the reference has no per-family numbers."""
    from noisymix_figures.methods import method_color

    found = record["by_family"]
    rows_named = record["maps"]["corrupted"]["rows"]
    view = record.get("published") or {}
    gains = found["reference"] is None and all("baseline" in e["paired"] for e in found["corruptions"])
    for ax, kind in ((left, "families"), (right, "corruptions")):
        entries = found[kind]
        xs = np.arange(len(entries))
        for i, e in enumerate(entries):
            base = e["reference"].get("baseline") if gains else 0.0
            for m, mean in e["reference"].items():
                row = rows_named.get(m, m)
                ax.plot(i, mean - base if gains else mean, "o", ms=5, alpha=0.8, color=method_color(row, "tab:blue"))
            if gains:
                d = e["paired"]["baseline"]["difference"]
                ax.errorbar(i, d["mean"], yerr=d["half_width"] or 0.0, fmt="*", color="black", ms=11, capsize=3,
                            label=f"{record['spec']['title']} (screened)" if i == 0 else None)
            else:
                ax.errorbar(i, e["ours"]["mean"], yerr=e["ours"]["half_width"] or 0.0, fmt="*", color="black", ms=11,
                            capsize=3, label=f"{record['spec']['title']} (screened)" if i == 0 else None)
            if kind == "families":
                pub = next((p for p in view.get("families", ()) if p["name"] == e["name"]), None)
                if pub is not None and (pub["comparison"] is not None or not gains):
                    y = pub["comparison"]["published_gain"]["mean"] if gains else pub["published"]["mean"]
                    ax.plot(i + 0.2, y, "*", mfc="none", color="black", ms=11,
                            label="at the published rows" if i == 0 else None)
        names = [e["name"] if kind == "families" else pretty(e["name"]) for e in entries]
        ax.set_xticks(xs, [f"{n}\n{multiplier_text(e['multiplier'])}" for n, e in zip(names, entries, strict=True)],
                      fontsize=7 if kind == "corruptions" else 8, rotation=0 if kind == "families" else 60)
        if gains:
            ax.axhline(0.0, color="0.6", lw=0.8)
        ax.set_ylabel("gain over the Baseline (points)" if gains else "Digits-C accuracy (%)")
        ax.set_title(f"per {'family' if kind == 'families' else 'corruption'}, with the analogue's multiplier of "
                     "CIFAR's strength", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    left.legend(fontsize=6, frameon=False, loc="best")


def write_page(out: Path, record: dict) -> str:
    """Write ``screen.png``, ``SCREEN.md`` and ``screen.json``, all or none (``write_files``: every file
    rendered first, then each replaced atomically, the JSON last); return the Markdown."""
    import matplotlib.pyplot as plt

    fig = figure(record)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    text = render_markdown(record)
    # all or none (issue 65: the page grew; a failure rendering one file writes none of them)
    write_files({out / "screen.png": buffer.getvalue(), out / "SCREEN.md": text, out / "screen.json": record})
    return text
