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
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from noisymix_app.analogue.methods import PER_SEED_DECIMALS
from noisymix_app.screen.predict import map_record, predict
from noisymix_app.screen.reference import PER_SEED_ROUNDING, Reference
from noisymix_infra.io import write_bytes, write_json, write_text

__all__ = ["BENCHMARKS", "page_record", "render_markdown", "write_page"]

#: our measure -> (its name on the proxy, the paper's benchmark it maps to, the paper's column, lower is better)
BENCHMARKS: dict[str, tuple[str, str, str, bool]] = {
    "corrupted": ("Digits-C accuracy", "CIFAR-10-C accuracy", "paper_corrupted", False),
    "mean_flip": ("Digits-P mean flip probability", "CIFAR-10-P mFR", "paper_mfr", True),
}
_NAMES = {"clean": "clean accuracy", "corrupted": "Digits-C accuracy", "mean_flip": "Digits-P mean flip probability"}


def _interval(values: list[float]) -> dict:
    from noisymix_infra.stats import interval

    found = interval(values)
    return {"mean": found["mean"], "half_width": found["half_width"], "sd": found["sd"], "values": found["values"]}


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


def _paired(ours: list[float], theirs: list[float], seeds: tuple[int, ...]) -> dict:
    from noisymix_infra.stats import Seeds, paired

    found = paired(Seeds(zip(seeds, ours, strict=True)), Seeds(zip(seeds, theirs, strict=True)))
    return {k: found[k] for k in ("n", "mean", "sd", "half_width", "mdd80", "below_resolution", "values")}


def _reads(diff: dict, lower_better: bool) -> str:
    """A paired difference in words: which side its 95 % interval lies on, or that it lies across 0."""
    from noisymix_infra.stats import UNJUDGED

    if diff["below_resolution"]:
        return UNJUDGED
    hw = diff["half_width"]
    if hw is None:
        return "one seed: no interval"
    if diff["mean"] - hw > 0:
        return "higher (flips more)" if lower_better else "higher"
    if diff["mean"] + hw < 0:
        return "lower (flips less)" if lower_better else "lower"
    return (f"not distinguishable with {diff['n']} seeds (80 % power from ±{diff['mdd80']:.1f})"
            if diff["mdd80"] is not None else f"not distinguishable with {diff['n']} seeds")


def page_record(spec, reference: Reference, ours: dict[str, list[float]], *, plan: dict, runs: dict,
                wall_seconds: float | None) -> dict:
    """Everything the page shows, as data: ``ours`` are the screened method's per-seed numbers (measure ->
    values aligned with ``reference.seeds``), ``plan`` the recipe it was trained with, ``runs`` each run's
    recorded seconds."""
    seeds = reference.seeds
    own = {m: _interval(ours[m]) for m in ("clean", "corrupted", "mean_flip")}
    same = spec.method if spec.builtin and spec.method in reference.methods else None
    others = [r for r in reference.rows if r["method"] != same]
    record: dict = {
        "spec": {"given": spec.given, "method": spec.method, "label": spec.label, "title": spec.title,
                 "form": spec.form, "source": spec.source, "source_sha256": spec.source_sha256},
        "seeds": list(seeds), "ours": own,
        "reference": {"summary": str(reference.path), "sha256": reference.sha256, "plan": reference.plan_name,
                      "methods": list(reference.methods)},
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
            diff = _paired(ours[m], row["per_seed"][m], seeds)
            record["paired"].append({"against": against, "row": row.get("row", against), "measure": m,
                                     "difference": diff, "reads": _reads(diff, m == "mean_flip")})
    record["maps"] = {}
    for m, (_, _, paper_key, _) in BENCHMARKS.items():
        names = [r["method"] for r in reference.rows]
        fitted = map_record(names, [r[m]["mean"] for r in reference.rows], [r[paper_key] for r in reference.rows])
        fitted["rows"] = {r["method"]: r.get("row", r["method"]) for r in reference.rows}
        record["maps"][m] = {**fitted, "prediction": predict(fitted, own[m]["mean"], leave_out=same)}
    record["finding"] = finding(record)
    return record


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
    return " ".join(parts) + " Predicted: " + "; ".join(said) + "."


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
    lines = [f"# Screen: {spec['title']} (`{spec['given']}`)", "", f"**{record['finding']}**", ""]
    what = {"built-in": "a built-in method, by name",
            "function": "an input-space batch function (images, labels, generator) -> (images, targets)",
            "method": "a fullscale.training.methods.Method (the trainer's own method record)"}[spec["form"]]
    lines.append(f"What was screened: {what}" + (f"; source `{spec['source']}`, sha256 {spec['source_sha256'][:16]}…"
                                                  if spec["source"] else "") + ".")
    plan = record["plan"]
    overrides = ", ".join(plan["train_overrides"]) or "no overrides"
    lines += ["", f"Trained with the reference methods' recipe (`{plan['name']}`: {plan['model']} width "
              f"{plan['width']}, {_count(plan['epochs'], 'epoch')}, {overrides}) on their {seed_words}, evaluated on "
              f"the difficulty-matched Digits-C and Digits-P ({plan['perturbed_limit'] or 'all'} sequences).", ""]
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


def figure(record: dict):
    """Two panels, Digits-C -> CIFAR-10-C and Digits-P -> CIFAR-10-P: the eight reference methods (ours
    against the paper's, each in its colour), the fitted line, and the screened method at its proxy value
    with its prediction interval (a black bar) and its seed interval (horizontal)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from noisymix_figures.methods import method_color, method_label

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
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def write_page(out: Path, record: dict) -> str:
    """Write ``screen.png``, ``SCREEN.md`` and ``screen.json`` (each atomically; the JSON last, so its
    presence says the page is whole); return the Markdown."""
    import matplotlib.pyplot as plt

    fig = figure(record)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    write_bytes(out / "screen.png", buffer.getvalue())
    text = render_markdown(record)
    write_text(out / "SCREEN.md", text)
    write_json(out / "screen.json", record)
    return text
