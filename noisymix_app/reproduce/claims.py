"""What the main job's claims can and cannot say (issues 46 and 52): the paper's claims, each once, in
one Holm family; each claim's MDD at the level it is tested at beside the paper's effect in the
matching setting; descriptive breakdowns apart; and whether the small-scale -C set bites where
CIFAR-10-C bites.

* **The claims are the paper's** (``claims_of``; issue 52, goal 1).  NoisyMix more robust than
  Baseline on the corrupted set is the **primary** claim (``PRIMARY``), declared before any run and
  tested alone at 5 %.  The **secondary** claims, each once: NoisyMix more robust than each other
  method (tab:results_cifar10's ranking), NoisyMix improves clean accuracy (one claim: "keeps" and
  "improves" were the same paired difference twice), each other method's row of tab:results_cifar10
  (more robust than Baseline, keeps clean accuracy), NoisyMix better calibrated than *every* other
  method (App., tab:results_imagenet_r_calibration: the RMS error after the clean-fitted temperature,
  averaged over severities 1-5, as the field measures calibration under shift, Ovadia et al. 2019;
  the unscaled error, the paper's own metric, beside it) and NoisyMix flips less than each other
  method (tab:results_cifar_p).  Holm's step-down procedure adjusts the secondary family's two-sided
  paired-t p-values (``holm``); a claim *holds* / *fails* when its adjusted p is below 5 % (by the side
  of its mean), else it is *within noise* (``adjusted_verdict``).  That adjusted verdict is the one
  the report states (``stated``).
* **Descriptive, outside the family** (``descriptive_of``, ``category_claims``): the clean-image
  calibration before and after scaling (no claim of the paper: it makes none on clean images) and
  NoisyMix's gain per corruption group; shown with their intervals, never quoted as results.
* **The paper's effect** (``paper_effects``) from the paper's matching setting: tab:results_cifar10's
  ResNet-18 CIFAR-10 / CIFAR-10-C columns and tab:results_cifar_p's ResNet-18 CIFAR-10-P mFR.  Where
  the paper claims an effect only in another setting it is named and only the direction is tested
  (``direction_only``): the clean-accuracy gain (CIFAR-10: +0.0; the paper's gain is +1.5 on ImageNet,
  tab:results_imagenet, and +2.0 on CIFAR-100, tab:results_cifar10) and calibration (ImageNet-R only).
* **MDD at the claim's level** (``level_of``): the primary claim's at 5 %; a secondary claim's at
  alpha / m, Holm's first-step level, for all m claims of the family.  Conservative by choice: the
  level at a claim's Holm rank depends on the observed p-values of the others and so is unknown
  before the run, while a claim whose p is below alpha / m is rejected by Holm whatever the others
  give (every smaller p is below it too).  A run *can decide* a claim (``decidable``) when that MDD is
  at most the distance from the paper's effect to the claim's boundary.
* **The analogue's profile** (``analogue_profile``): the Baseline's drop from clean accuracy per
  corruption (mean of the five severities, mean over seeds) beside the paper's Baseline drop on
  CIFAR-10-C: the rank correlation, and each drop within 40 % or 5 points of the paper's, each >= 3.
"""

from __future__ import annotations

import math
from pathlib import Path

from fullscale.training.methods import METHODS
from fullscale.vocabulary import CATEGORIES, CORRUPTIONS
from noisymix_app.reproduce.headline import _interval, _signed
from noisymix_infra.io import read_json
from noisymix_infra.stats import UNJUDGED, mdd, paired  # UNJUDGED: no verdict from rounding (issue 54)

__all__ = ["ABLATION_CODES", "ALPHA", "CLEAN_TOLERANCE", "LABELS", "PRIMARY", "PROFILE_AIMS", "SHIFT_METRICS",
           "UNJUDGED", "adjusted_verdict", "analogue_lines", "analogue_profile", "beats_others", "category_claims",
           "category_lines", "claims_of", "correct", "decidable", "descriptive_of", "holm", "level_of",
           "paper_effects", "shift_values", "stated", "two_sided_p", "verdict"]

ALPHA = 0.05
# method names as the paper writes them: the one label map, the methods' own titles (fullscale.training.methods)
LABELS = {name: method.title for name, method in METHODS.items()}
PRIMARY = "robust_noisymix"
#: the analogue's aims (issue 46): rank correlation with CIFAR-10-C's Baseline drops, each drop's
#: tolerance (relative, or absolute in points), the least drop
PROFILE_AIMS = {"rank_correlation": 0.8, "relative": 0.4, "absolute": 5.0, "least_drop": 3.0}


def two_sided_p(difference: dict | None, threshold: float) -> float | None:
    """The paired t-test's two-sided p-value of mean difference = ``threshold``: None below 2 seeds,
    and None for a spread below the measurement's resolution, zero included (issue 54: equal
    differences over two seeds, one test image each, gave p = 2e-14; ``noisymix_infra.stats``)."""
    if not difference or difference.get("sd") is None or difference.get("n", 0) < 2:
        return None
    if difference.get("below_resolution") or difference["sd"] == 0:
        return None
    from scipy.stats import t

    shift = difference["mean"] - threshold
    statistic = shift / (difference["sd"] / math.sqrt(difference["n"]))
    return float(2 * t.sf(abs(statistic), difference["n"] - 1))


def holm(pvalues: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values of a family: sorted ascending, the i-th (from 0) of m is
    multiplied by m - i, made monotone by a running maximum, capped at 1 (Holm 1979).  A p-value
    that is not a number in [0, 1] is refused in one line (issue 54: a NaN sorted where the dict
    order put it, so the family's verdicts depended on that order; p = -0.5 was taken)."""
    for key, p in pvalues.items():
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"holm: p-value of {key!r} must be a number in [0, 1], got {p!r}")
    order = sorted(pvalues, key=lambda k: pvalues[k])
    m, running, adjusted = len(order), 0.0, {}
    for i, key in enumerate(order):
        running = max(running, min(1.0, (m - i) * pvalues[key]))
        adjusted[key] = running
    return adjusted


def adjusted_verdict(difference: dict, threshold: float, p_adjusted: float) -> str:
    """*holds* / *fails* where the adjusted p is below ``ALPHA`` (by the side of the mean), else *within noise*."""
    if p_adjusted >= ALPHA:
        return "within noise"
    return "holds" if difference["mean"] > threshold else "fails"


def stated(claim: dict) -> str | None:
    """The verdict the report states for a claim: after Holm for a secondary claim, the primary's own
    (issue 52: the opening and the detail must say the same)."""
    return claim.get("verdict_adjusted") or claim.get("verdict")


def level_of(claim: dict, m: int) -> float:
    """The level a claim's MDD and "cannot decide" are taken at: 5 % for the primary claim, alpha / m
    (Holm's first step) for each of the m secondary claims (the module doc says why)."""
    return ALPHA if claim.get("role") == "primary" else ALPHA / max(m, 1)


def correct(claims: list[dict]) -> None:
    """Mark each claim (in place) primary or secondary, with its p-value and, for the secondary
    family, Holm's adjusted p and verdict (the primary keeps its own: ``p_adjusted`` = ``p``); and
    each claim's test level (``level``) with its MDD there (``mdd``)."""
    pvalues = {}
    for claim in claims:
        claim["role"] = "primary" if claim["id"] == PRIMARY else "secondary"
        claim["p"] = two_sided_p(claim.get("difference"), claim["threshold"])
        if claim["role"] == "secondary" and claim["p"] is not None:
            pvalues[claim["id"]] = claim["p"]
    adjusted = holm(pvalues)
    m = sum(c["role"] == "secondary" and c.get("difference") is not None for c in claims)
    for claim in claims:
        d = claim.get("difference") or {}
        claim["level"] = level_of(claim, m)
        # no MDD from a spread below the measurement's resolution (issue 54): it would read as certainty
        claim["mdd"] = (None if d.get("sd") is None or d.get("n", 0) < 2 or d.get("below_resolution")
                        else mdd(d["sd"], d["n"], alpha=claim["level"]))
        if claim["p"] is None:
            claim["p_adjusted"], claim["verdict_adjusted"] = None, claim.get("verdict")
            continue
        claim["p_adjusted"] = claim["p"] if claim["role"] == "primary" else adjusted[claim["id"]]
        claim["verdict_adjusted"] = adjusted_verdict(claim["difference"], claim["threshold"], claim["p_adjusted"])
        if claim.get("within_floor"):  # both errors inside the estimator's noise floor: no ranking (issue 52)
            claim["verdict_adjusted"] = "within noise"


def _paper_rows(table: dict) -> dict[str, list]:
    from noisymix_figures.paper import paper_number

    return {name: [paper_number(c) for c in cells] for name, cells in table["rows"]}


def _row(rows: dict[str, list], label: str) -> list | None:
    return rows.get(label) or next((v for k, v in rows.items() if k.startswith(label + " ")), None)


def paper_effects(labels: dict[str, str]) -> dict[str, dict]:
    """Per claim id, the paper's effect for it from the matching setting (issue 52):
    ``{"effect": points, "source": where}`` (the difference in the claim's own direction: a method's
    number minus Baseline's, or the other method's error minus NoisyMix's), with
    ``"direction_only": True`` where the paper makes the claim only in another setting (then only the
    claim's direction is tested, and the effect is not held against the run's MDD)."""
    from noisymix_figures.paper import paper_number, paper_values

    values = paper_values()
    cifar = _paper_rows(values["tab:results_cifar10"])  # ResNet-18 (its caption); WRN is tab:results_cifar100
    flips = _paper_rows(values["tab:results_cifar_p"])  # ResNet-18, CIFAR-10-P
    calib = _paper_rows(values["tab:results_imagenet_r_calibration"])
    imagenet = _paper_rows(values["tab:results_imagenet"])
    effects: dict[str, dict] = {}
    base = _row(cifar, "Baseline")
    noisymix = _row(cifar, labels["noisymix"])

    def add(cid: str, effect: float | None, source: str, **extra) -> None:
        if effect is not None:
            effects[cid] = {"effect": round(effect, 2), "source": source, **extra}

    for method, label in labels.items():
        row = _row(cifar, label)
        if row is None or base is None or method in ("baseline", "noisymix"):
            continue
        add(f"robust_{method}", row[1] - base[1], "CIFAR-10-C, ResNet-18, tab:results_cifar10")
        add(f"clean_{method}", row[0] - base[0], "CIFAR-10, ResNet-18, tab:results_cifar10")
        if noisymix is not None:
            add(f"noisymix_beats_{method}", noisymix[1] - row[1], "CIFAR-10-C, ResNet-18, tab:results_cifar10")
    if noisymix is not None and base is not None:
        add("robust_noisymix", noisymix[1] - base[1], "CIFAR-10-C, ResNet-18, tab:results_cifar10")
        # the clean gain: none on CIFAR-10 (95.3 = 95.3); the paper claims it on ImageNet and CIFAR-100
        base_in, nm_in = _row(imagenet, "Baseline"), _row(imagenet, labels["noisymix"])
        gain = None if base_in is None or nm_in is None else nm_in[0] - base_in[0]
        add("clean_noisymix", gain,
            f"ImageNet, tab:results_imagenet (CIFAR-100 {noisymix[2] - base[2]:+.1f}, tab:results_cifar10; "
            f"CIFAR-10 {noisymix[0] - base[0]:+.1f})", direction_only=True)
    nm_flips = _row(flips, labels["noisymix"])
    for method, label in labels.items():
        row = _row(flips, label)
        if row is not None and nm_flips is not None and method != "noisymix":
            add(f"stable_noisymix_vs_{method}", row[-1] - nm_flips[-1],
                "CIFAR-10-P mFR, ResNet-18, tab:results_cifar_p")
    # tab:ablation (WRN-28x2, CIFAR-100-C; its only setting): full NoisyMix (AFNJ) minus the row without one
    # component, for the ablation plan's rows
    ablation = dict(values["tab:ablation"]["rows"])
    for method, code in ABLATION_CODES.items():
        if code in ablation and "AFNJ" in ablation:
            add(f"noisymix_beats_{method}", paper_number(ablation["AFNJ"][1]) - paper_number(ablation[code][1]),
                "CIFAR-100-C, WRN-28x2, tab:ablation")
    nm_r = _row(calib, labels["noisymix"])
    for method, label in labels.items():
        row = _row(calib, label)
        if row is not None and nm_r is not None and method != "noisymix":
            add(f"calibrated_noisymix_vs_{method}", row[0] - nm_r[0],
                "ImageNet-R RMS calibration error, tab:results_imagenet_r_calibration", direction_only=True)
    return effects


def decidable(claim: dict, effect: dict | None) -> bool | None:
    """Whether the run's MDD at the claim's level (``correct``) reaches the paper's effect (its
    distance from the claim's boundary); None where there is no effect of the matching setting."""
    d = claim.get("difference") or {}
    size = claim.get("mdd", d.get("mdd80"))
    if effect is None or effect.get("direction_only") or size is None:
        return None
    return size <= abs(effect["effect"] - claim["threshold"])


def category_claims(values: dict[str, dict[str, dict[int, float]]], labels: dict[str, str]) -> list[dict]:
    """NoisyMix against Baseline and AugMix per corruption category (``corrupted_<category>`` values
    per method and seed, points), paired over seeds, Holm-adjusted within these comparisons."""
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
                         "statement": f"NoisyMix minus {labels.get(other, other)} on {category} corruptions",
                         "difference": d, "threshold": 0.0, "p": two_sided_p(d, 0.0)})
    adjusted = holm({r["id"]: r["p"] for r in rows if r["p"] is not None})
    for r in rows:
        r["p_adjusted"] = adjusted.get(r["id"])
        if r["difference"].get("below_resolution"):  # no p-value, no verdict from rounding (issue 54)
            r["verdict_adjusted"] = UNJUDGED
        else:
            r["verdict_adjusted"] = (None if r["p_adjusted"] is None
                                     else adjusted_verdict(r["difference"], 0.0, r["p_adjusted"]))
    return rows


def _spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rank correlation; None where it is undefined (fewer than 3 pairs, a constant side)."""
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def _per_corruption(out: Path, method: str, seed: int, suite: str) -> tuple[float | None, dict[str, float]]:
    run = out / "runs" / f"{method}-seed{seed}" / "eval"
    clean_path, c_path = run / "clean.json", run / f"{suite}.json"
    if not (clean_path.exists() and c_path.exists()):
        return None, {}
    clean = read_json(clean_path).get("summary", {}).get("accuracy")
    return clean, read_json(c_path).get("summary", {}).get("per_corruption", {})


def _paper_gains(label: str) -> dict[str, float] | None:
    """A method's per-corruption gain over Baseline on CIFAR-10-C (tab:results_cifar10_c), points."""
    from noisymix_figures.paper import paper_number, paper_values

    rows = dict(paper_values()["tab:results_cifar10_c"]["rows"])
    row = rows.get(label) or next((v for k, v in rows.items() if k.startswith(label + " ")), None)
    if row is None:
        return None
    return {name: float(paper_number(row[i])) - float(paper_number(rows["Baseline"][i]))
            for i, name in enumerate(CORRUPTIONS)}


def analogue_profile(out: Path, plan: dict, corrupted_suite: str) -> dict | None:
    """The Baseline's drop per corruption on the plan's -C set against the paper's Baseline on
    CIFAR-10-C, and the aims it meets (``PROFILE_AIMS``); and each method's per-corruption gain over
    Baseline against the paper's (``methods``: rank correlation).  The Baseline's profile is what the
    difficulty-matched set was fitted to, the methods' are not (issue 51, item 4: the report says which).
    None without Baseline runs."""
    from noisymix_app.analogue.fit_c import paper_drops

    drops: dict[str, list[float]] = {name: [] for name in CORRUPTIONS}
    base_acc: dict[int, dict[str, float]] = {}
    measured_on = None  # the -C set the Baseline's drops were measured on (its manifest names its strengths)
    for seed in plan["seeds"]:
        clean, per = _per_corruption(out, "baseline", seed, corrupted_suite)
        c_path = out / "runs" / f"baseline-seed{seed}" / "eval" / f"{corrupted_suite}.json"
        if measured_on is None and clean is not None and c_path.exists():
            measured_on = read_json(c_path).get("data_root")
        if clean is None:
            continue
        base_acc[seed] = per
        for name in CORRUPTIONS:
            if name in per:
                drops[name].append(100 * (clean - per[name]))
    ours = {name: sum(v) / len(v) for name, v in drops.items() if v}
    if len(ours) < 2:
        return None
    _, paper = paper_drops()
    described = _fit_described(plan, measured_on)
    fit = described["residuals"] if described else {}
    rows = {}
    for name, drop in ours.items():
        tolerance = max(PROFILE_AIMS["relative"] * paper[name], PROFILE_AIMS["absolute"])
        rows[name] = {"ours": round(drop, 2), "paper": paper[name], "seeds": len(drops[name]),
                      "within_tolerance": abs(drop - paper[name]) <= tolerance,
                      "at_least": drop >= PROFILE_AIMS["least_drop"], "fit_residual": fit.get(name)}
    names = list(rows)
    rho = _spearman([rows[n]["ours"] for n in names], [rows[n]["paper"] for n in names])
    methods = {}
    for method in (m for m in plan["methods"] if m != "baseline"):
        gains: dict[str, list[float]] = {name: [] for name in CORRUPTIONS}
        for seed, base in base_acc.items():
            _, per = _per_corruption(out, method, seed, corrupted_suite)
            for name in CORRUPTIONS:
                if name in per and name in base:
                    gains[name].append(100 * (per[name] - base[name]))
        theirs = _paper_gains(LABELS.get(method, method))
        mine = {n: sum(v) / len(v) for n, v in gains.items() if v}
        if theirs is None or len(mine) < 3:
            continue
        keys = [n for n in CORRUPTIONS if n in mine]
        r = _spearman([mine[n] for n in keys], [theirs[n] for n in keys])
        methods[method] = {"rank_correlation": None if r is None else round(r, 3), "fitted": False,
                           "corruptions": len(keys)}
    return {"params": plan.get("corruption_params", "cifar"), "per_corruption": rows, "fit": described,
            "rank_correlation": None if rho is None else round(rho, 3), "aims": PROFILE_AIMS,
            "methods": methods,
            "met": {"rank_correlation": rho is not None and rho >= PROFILE_AIMS["rank_correlation"],
                    "within_tolerance": sum(r["within_tolerance"] for r in rows.values()),
                    "at_least": sum(r["at_least"] for r in rows.values()), "of": len(rows)}}


def _fit_described(plan: dict, measured_on: str | None) -> dict | None:
    """The frozen fit as the report describes it (``noisymix_app.analogue.fit_c.fit_summary``: its seeds,
    recipe, command and, only where the set the drops were measured on holds its strengths, its residuals;
    issue 54), for a plan on the difficulty-matched set; None otherwise."""
    if plan.get("corruption_params") != "digits-matched":
        return None
    from fullscale.corruptions.matched import matched_fit
    from noisymix_app.analogue.fit_c import fit_summary

    return fit_summary(matched_fit(), measured_on)


def category_lines(summary: dict) -> list[str]:
    """Which corruption groups carry NoisyMix's gain over Baseline and over AugMix, in words and a table."""
    rows = summary.get("categories") or []
    if not rows:
        return []
    labels = {"baseline": "Baseline", "augmix_jsd": "AugMix"}
    by: dict[str, dict[str, dict]] = {}
    for r in rows:
        by.setdefault(r["category"], {})[r["against"]] = r
    against = [a for a in ("baseline", "augmix_jsd") if any(a in v for v in by.values())]

    def cell(r: dict | None) -> str:
        if r is None or not r.get("difference"):
            return "—"
        d = r["difference"]
        return _interval(d) if d.get("half_width") is None else f"{_interval(d)} {r.get('verdict_adjusted') or '—'}"

    words = []
    for a in against:
        gains = [c for c, v in by.items() if a in v and v[a].get("verdict_adjusted") == "holds"]
        losses = [c for c, v in by.items() if a in v and v[a].get("verdict_adjusted") == "fails"]
        text = (f"over {labels[a]}, NoisyMix's gain is carried by "
                + (", ".join(gains) if gains else "no group (none holds after Holm)"))
        if losses:
            text += f", and it loses on {', '.join(losses)}"
        words.append(text)
    lines = ["**Where the gain comes from** (mean corrupted accuracy per corruption group, NoisyMix minus the other "
             "method, points, paired over seeds, 95 % interval, verdict after Holm's correction over these "
             f"{len(rows)} comparisons; descriptive, no claim of the paper): " + "; ".join(words) + ".", "",
             "| group | " + " | ".join(f"NoisyMix − {labels[a]}" for a in against) + " |",
             "|---|" + "---|" * len(against)]
    for category in CATEGORIES:
        if category in by:
            lines.append(f"| {category} | " + " | ".join(cell(by[category].get(a)) for a in against) + " |")
    return lines


def analogue_lines(summary: dict) -> list[str]:
    """The -C set's method in one paragraph and the Baseline's per-corruption drop beside the paper's."""
    profile = summary.get("analogue")
    if not profile:
        return []
    aims, met, rows = profile["aims"], profile["met"], profile["per_corruption"]
    if profile["params"] == "digits-matched":
        from noisymix_app.analogue.fit_c import MIN_DROP

        # a summary written before issue 54 records no "fit": the words it was rendered with then
        who, how = (_made_by(profile["fit"]) if "fit" in profile
                    else ("(100–102, the main job's recipe)", "`noisymix fit-analogue --out fit --freeze`"))
        intro = ("**The corrupted set: a difficulty-matched Digits-C.** At the published CIFAR-10-C rows the digits' "
                 "Baseline lost 2.5 points or less on 10 of the 15 corruptions (noise and blur among them) and 20–61 "
                 "on frost, fog, brightness and contrast: the reverse of CIFAR-10-C (rank correlation −0.44), so the "
                 "paper's noise claims could not show. Each corruption's CIFAR rows are therefore applied at one "
                 "strength k (every damage field moved k times as far from its no-corruption value: noise sd × k, "
                 "contrast 1 − k(1 − c), zoom 1 + k(z − 1), ...; snow and JPEG, without such a field, their difference "
                 "from the clean image times k; the five severities keep their spacing), "
                 "fitted once by bisection so that Baseline models of seeds the main job never evaluates "
                 f"{who} on corruption draws of another seed lose the paper's Baseline drop on "
                 f"CIFAR-10-C (at least {MIN_DROP:g} points): {how}, frozen in "
                 "`fullscale/corruptions/digits_matched.json` with every evaluation of the fit. "
                 "The published-rows set stays `noisymix corrupt --params cifar` (`--plan laptop-published-rows`).")
    else:
        intro = (f"**The corrupted set** (`--params {profile['params']}`): the published rows, not difficulty-matched "
                 "(`noisymix corrupt --params digits-matched` makes the matched one).")
    rho = profile["rank_correlation"]
    fitted = profile["params"] == "digits-matched"
    verdict = ("Our Baseline's drop per corruption against the paper's Baseline on CIFAR-10-C "
               + ("(fitted: the matched set's strengths were chosen to reproduce it)" if fitted else "(not fitted)")
               + ": rank correlation "
               + ("undefined (fewer than 3 corruptions, or equal drops)" if rho is None else f"{rho:+.2f}")
               + f" (aim ≥ {aims['rank_correlation']:g}: {'met' if met['rank_correlation'] else 'not met'}); "
               f"{met['within_tolerance']} of {met['of']} drops "
               f"within {100 * aims['relative']:g} % or {aims['absolute']:g} points of the paper's; {met['at_least']} "
               f"of {met['of']} at least {aims['least_drop']:g} points.")
    methods = profile.get("methods")
    if methods:
        verdict += (" Each method's gain over Baseline per corruption against the paper's (tab:results_cifar10_c), "
                    "rank correlation: " + "; ".join(
                        f"{LABELS.get(m, m)} − Baseline (not fitted) "
                        + ("undefined" if r["rank_correlation"] is None
                           else f"{r['rank_correlation']:+.2f}".replace("-", "−")) for m, r in methods.items()) + ".")
    elif methods is None:
        verdict += " The method rows (not fitted) are not in this summary: a rerun of the main job adds them."
    lines = [intro, "", verdict, "",
             "| corruption | our Baseline's drop | the paper's | within tolerance | fit residual (fit's models) |",
             "|---|---:|---:|---|---:|"]
    for name in (n for n in CORRUPTIONS if n in rows):  # the benchmark's order (a JSON round trip sorts keys)
        r = rows[name]
        residual = "—" if r.get("fit_residual") is None else _signed(r["fit_residual"])
        lines.append(f"| {name} | {r['ours']:.1f} | {r['paper']:.1f} | {'yes' if r['within_tolerance'] else 'no'} | "
                     f"{residual} |")
    return lines


def _made_by(fit: dict | None) -> tuple[str, str]:
    """(the fit's seeds and recipe, its command) in words, from its record (``fit_summary``; issue 54: this
    was fixed text whatever was run), with a warning where the -C set the drops were measured on was
    made with other strengths than the record's."""
    if not fit or not fit.get("fits"):
        return "(the fit's record does not say which)", "`noisymix fit-analogue --freeze`"

    def recipe(group: dict) -> str:
        return ("the main job's recipe" if group["main_recipe"]
                else f"{group['epochs']} epochs, not the main job's recipe")

    groups = fit["fits"]
    if len(groups) == 1:
        who, how = f"({groups[0]['seed_words']}, {recipe(groups[0])})", f"`{groups[0]['command']}`"
    else:
        who = "(" + "; ".join(f"{', '.join(g['corruptions'])}: {g['seed_words']}, {recipe(g)}" for g in groups) + ")"
        how = ", ".join(f"`{g['command']}`" for g in groups)
    if fit.get("matches_set") is False:
        how += (" (but the -C set these drops were measured on was made with other strengths, an older fit's: "
                "the fit's residuals are not shown; rerun `noisymix reproduce` to remake the set)")
    return who, how


CLEAN_TOLERANCE = 1.0  # points of clean accuracy a method may lose and still "keep" it
#: the calibration-under-shift metrics per seed (``shift_values``): the RMS error after the clean-fitted
#: temperature and before it, each averaged over severities 1-5 (Ovadia et al. 2019), and the estimator's
#: noise floor (95th percentile) averaged the same way
SHIFT_METRICS = {"after": "rms_calibration_error_shift_scaled", "before": "rms_calibration_error_shift",
                 "floor": "rms_calibration_floor_shift"}
SHIFT_SEVERITIES = ("1", "2", "3", "4", "5")
#: the ablation plan's rows by tab:ablation's switches (AugMix, Feature mixing, Noise, JSD)
ABLATION_CODES = {"augmix_noise_jsd": "A-NJ", "augmix_manifold_jsd": "AF-J", "augmix_nfm": "AFN-"}


def verdict(diff: dict | None, threshold: float) -> str:
    """Claimed: difference > threshold.  holds / within noise / fails, by the 95 % interval;
    ``UNJUDGED`` where the spread is below the measurement's resolution (issue 54)."""
    if diff is None or diff["half_width"] is None:
        return "not enough seeds"
    if diff.get("below_resolution"):
        return UNJUDGED
    lo, hi = diff["mean"] - diff["half_width"], diff["mean"] + diff["half_width"]
    return "holds" if lo > threshold else "fails" if hi < threshold else "within noise"


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
        for key, field in (("after", "after"), ("before", "before")):
            per[SHIFT_METRICS[key]] = {seed: sum(c[field]["values"][i] for c in cells) / len(cells)
                                       for i, seed in enumerate(seeds)}
        floor = sum(c["noise_floor"]["p95"] for c in cells) / len(cells)
        per[SHIFT_METRICS["floor"]] = {seed: floor for seed in seeds}
        out[method] = per
    return out


def _calibration_claims(values: dict, methods: list[str]) -> list[dict]:
    """NoisyMix better calibrated under shift than each other method (the paper: "as compared to standard
    training or training with other data augmentation methods"): the other's RMS error after the
    clean-fitted temperature minus NoisyMix's, averaged over severities 1-5; the unscaled difference (the
    paper's own metric) and both methods' noise floors beside it.  Without the after-scaling numbers (a
    record made before issue 46) the unscaled error on the corrupted sets is the metric."""
    claims = []
    nm = values["noisymix"]
    after, before, floor = SHIFT_METRICS["after"], SHIFT_METRICS["before"], SHIFT_METRICS["floor"]
    for m in (m for m in methods if m != "noisymix"):
        other = values[m]
        if nm.get(after) and other.get(after):
            metric, words = after, "RMS calibration error after the clean-fitted temperature, severities 1–5"
        elif nm.get("rms_calibration_error_corrupted") and other.get("rms_calibration_error_corrupted"):
            metric, words = "rms_calibration_error_corrupted", "RMS calibration error on the corrupted sets, unscaled"
        else:
            continue
        d = paired(other[metric], nm[metric])
        claim = {"id": f"calibrated_noisymix_vs_{m}", "metric": metric,
                 "statement": f"NoisyMix is better calibrated than {LABELS.get(m, m)} under corruption ({words}, "
                              f"{LABELS.get(m, m)}'s minus NoisyMix's)",
                 "difference": d, "threshold": 0.0, "verdict": verdict(d, 0.0)}
        if metric == after:
            if nm.get(before) and other.get(before):
                claim["unscaled"] = paired(other[before], nm[before])
            if nm.get(floor) and other.get(floor):
                claim["floor"] = {k: sum(v[floor].values()) / len(v[floor]) for k, v in (("noisymix", nm), (m, other))}
                means = {k: sum(v[after].values()) / len(v[after]) for k, v in (("noisymix", nm), (m, other))}
                # both errors inside the estimator's noise floor: nothing to rank (issue 52, goal 2)
                claim["within_floor"] = all(means[k] <= claim["floor"][k] for k in means)
        claims.append(claim)
    return claims


def descriptive_of(values: dict) -> list[dict]:
    """The clean-image calibration, NoisyMix against Baseline before and after temperature scaling:
    descriptive (the paper claims nothing of clean images), outside the Holm family (issue 52)."""
    rows = []
    if "noisymix" not in values or "baseline" not in values:
        return rows
    for cid, metric, where in (("calibrated_clean_noisymix", "rms_calibration_error", "as evaluated"),
                               ("calibrated_scaled_noisymix", "rms_calibration_error_scaled",
                                "after temperature scaling")):
        a, b = values["baseline"].get(metric), values["noisymix"].get(metric)
        if a and b:
            d = paired(a, b)
            rows.append({"id": cid, "metric": metric, "role": "descriptive",
                         "statement": f"RMS calibration error on the clean test images {where}, Baseline's minus "
                                      "NoisyMix's", "difference": d, "threshold": 0.0, "verdict": verdict(d, 0.0)})
    return rows


def claims_of(values: dict, methods: list[str]) -> list[dict]:
    """The paper's claims, each once (the module doc lists them)."""
    claims = []
    if "baseline" not in values:  # a plan without a Baseline (the ablation's): NoisyMix against each row
        if "noisymix" in values:
            claims += beats_others(values, methods)
        return claims
    base = values["baseline"]
    for m in (m for m in methods if m != "baseline"):
        d = paired(values[m]["corrupted"], base["corrupted"])
        claims.append({"id": f"robust_{m}", "statement": f"{LABELS.get(m, m)} is more robust than Baseline",
                       "difference": d, "threshold": 0.0, "verdict": verdict(d, 0.0)})
        if m == "noisymix":
            # one clean claim: the paper's gain (its matching CIFAR-10 row shows none: direction only)
            d = paired(values[m]["clean"], base["clean"])
            claims.append({"id": "clean_noisymix", "statement": "NoisyMix improves clean accuracy over Baseline",
                           "difference": d, "threshold": 0.0, "verdict": verdict(d, 0.0)})
            continue
        d = paired(values[m]["clean"], base["clean"])
        claims.append({"id": f"clean_{m}",
                       "statement": f"{LABELS.get(m, m)} keeps clean accuracy (loses < {CLEAN_TOLERANCE:g} point)",
                       "difference": d, "threshold": -CLEAN_TOLERANCE, "verdict": verdict(d, -CLEAN_TOLERANCE)})
    if "noisymix" in values:
        claims += beats_others(values, methods)
        claims += _calibration_claims(values, methods)
        # stability (the paper's CIFAR-P tables): a lower mean flip probability is better, so the
        # difference is the other method's minus NoisyMix's, in points of probability
        for m in (m for m in ("baseline", "augmix_jsd", "nfm") if m in methods):
            if values["noisymix"].get("flip_probability") and values[m].get("flip_probability"):
                d = paired(values[m]["flip_probability"], values["noisymix"]["flip_probability"])
                claims.append({"id": f"stable_noisymix_vs_{m}",
                               "statement": f"NoisyMix flips less than {LABELS.get(m, m)} (mean flip probability on "
                                            f"the perturbed sequences, {LABELS.get(m, m)}'s minus NoisyMix's)",
                               "difference": d, "threshold": 0.0, "verdict": verdict(d, 0.0)})
    return claims


def beats_others(values: dict, methods: list[str]) -> list[dict]:
    """NoisyMix more robust than each other method but the Baseline (the paper's ranking; with the
    ablation plan's rows, tab:ablation's "all components are needed")."""
    claims = []
    for m in (m for m in methods if m not in ("baseline", "noisymix")):
        d = paired(values["noisymix"]["corrupted"], values[m]["corrupted"])
        claims.append({"id": f"noisymix_beats_{m}", "statement": f"NoisyMix is more robust than {LABELS.get(m, m)}",
                       "difference": d, "threshold": 0.0, "verdict": verdict(d, 0.0)})
    return claims
