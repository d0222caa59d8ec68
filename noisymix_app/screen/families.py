"""Where a screened method's gain lies, and how far the proxy's strengths are from CIFAR's there (issue 65,
goals 1-2).

**Per family and per corruption.**  One Digits-C accuracy says nothing of which corruptions a method
helps.  The page gives, for each CIFAR-10-C family (noise, blur, weather, digital:
``fullscale.vocabulary.CATEGORIES``) and each corruption, the screened method's accuracy, its paired
differences with the Baseline and NoisyMix seed by seed (``noisymix_infra.stats.paired``, 95 % t-interval),
and the reference methods' means on the same sets.  A family's accuracy is, per seed, the mean over its
corruptions that the plan evaluates (as ``noisymix analogue`` writes ``per_seed.per_family``).  The
reference's numbers are its summary's ``per_seed.per_corruption`` / ``per_family``; a summary written
before issue 65 has neither, and the page says so in one line instead.

**The strength scale.**  The difficulty-matched Digits-C matches the Baseline's drops by scaling each
corruption's published CIFAR strength (the frozen fit, ``fullscale.corruptions.matched.matched_fit``): from
0.21x (fog) to 12.1x (shot noise).  An augmentation written at CIFAR's strengths keeps them, so against a
corruption scaled by 6x it is six times weaker here than against CIFAR-10-C's.  Each family and corruption
shows its multiplier (a family: the range of its members' and their geometric mean).

**Where the gain lies.**  A method's gain over the Baseline is *concentrated off CIFAR's scale* when more
than half (``CONCENTRATED``) of its summed positive per-corruption gain (each corruption's mean paired
difference, the positive ones summed) lies in corruptions scaled by more than ``FAR_ABOVE`` or less than
``FAR_BELOW``.  The page then says so in words, before any prediction, with the factors from the fit: its
strength relative to those corruptions differs from CIFAR's by that factor, and the prediction for them is the
least trustworthy.  The words name the far corruptions that carry it (each at least ``NAMED`` of the far
gain); the share counts them all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from fullscale.vocabulary import CATEGORIES, CORRUPTIONS
from noisymix_app.screen.paired import interval_entry, paired_difference, reads

__all__ = ["CONCENTRATED", "FAR_ABOVE", "FAR_BELOW", "analogue_scale", "breakdown", "family_members", "fold",
           "multiplier_text", "pretty", "scale_finding"]

#: a corruption the proxy scales by more than this (or less than ``FAR_BELOW``) is far from CIFAR's strength
FAR_ABOVE = 2.0
FAR_BELOW = 0.5
#: the share of the summed positive per-corruption gain that makes a gain "concentrated" there
CONCENTRATED = 0.5
#: the words name a far corruption carrying at least this share of the far gain
NAMED = 0.1
#: the two reference methods every screened one is paired with
AGAINST = ("baseline", "noisymix")


def pretty(name: str) -> str:
    """A corruption's name in words (``gaussian_noise`` -> ``Gaussian noise``)."""
    words = name.replace("_", " ")
    return "Gaussian" + words[len("gaussian"):] if words.startswith("gaussian") else words


def family_members(corruptions: Sequence[str] | None) -> dict[str, tuple[str, ...]]:
    """Each CIFAR-10-C family with its members among ``corruptions`` (None: all 15), families without any
    left out, in the vocabulary's order."""
    have = set(CORRUPTIONS if corruptions is None else corruptions)
    return {f: tuple(c for c in members if c in have) for f, members in CATEGORIES.items()
            if any(c in have for c in members)}


def fold(per_corruption: Mapping[str, Sequence[float]], members: Mapping[str, Sequence[str]]) -> dict[str, list[float]]:
    """Per seed, each family's mean over its ``members`` (as ``noisymix analogue`` computes ``per_family``)."""
    return {f: [float(v) for v in np.mean([per_corruption[c] for c in names], axis=0)]
            for f, names in members.items()}


def analogue_scale(params: str | None) -> dict | None:
    """The multipliers of CIFAR's strengths the plan's Digits-C was made with: the frozen fit's for
    ``digits-matched`` (``{"params", "source", "values": {corruption: multiplier}}``), 1 for the published
    rows (``cifar``), None for another table (no scale of CIFAR's)."""
    if params == "cifar":
        return {"params": "cifar", "source": "the published CIFAR rows", "values": dict.fromkeys(CORRUPTIONS, 1.0)}
    if params != "digits-matched":
        return None
    from fullscale.corruptions.matched import MATCHED_FILE, matched_fit

    return {"params": params, "source": f"fullscale/corruptions/{MATCHED_FILE.name}",
            "values": {c: float(v) for c, v in matched_fit()["strengths"].items()}}


def analogue_scale_p(params: str | None) -> dict | None:
    """As ``analogue_scale``, for the Digits-P perturbations (``matched_p_fit``)."""
    if params != "digits-matched":
        return None
    from fullscale.corruptions.matched_p import MATCHED_P_FILE, matched_p_fit

    return {"params": params, "source": f"fullscale/corruptions/{MATCHED_P_FILE.name}",
            "values": {c: float(v) for c, v in matched_p_fit()["strengths"].items()}}


def _number(value: float) -> str:
    """A multiplier to the precision the fit's words use: 12.1, 6.4, 0.21, 0.51."""
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def multiplier_text(entry: Mapping[str, float] | None) -> str:
    """``{"low", "high", "geomean"}`` as ``6.4–12.1×`` (one member: ``0.21×``); ``n/a`` without a scale."""
    if not entry:
        return "n/a"
    low, high = _number(entry["low"]), _number(entry["high"])
    return f"{low}×" if low == high else f"{low}–{high}×"


def _multiplier(values: Mapping[str, float] | None, names: Sequence[str]) -> dict | None:
    if values is None or not all(c in values for c in names):
        return None
    found = [float(values[c]) for c in names]
    return {"low": min(found), "high": max(found), "geomean": float(math.exp(np.mean(np.log(found))))}


def reference_breakdown(row: Mapping, members: Mapping[str, Sequence[str]]) -> dict | None:
    """A reference row's per-seed numbers per corruption of ``members`` and per family, or None where its
    summary has no ``per_seed.per_corruption`` covering them (a summary written before issue 65).  A family
    whose members are all 15's own is the summary's ``per_family`` where it has one; otherwise the mean of
    its members, as ``fold``."""
    per_seed = row.get("per_seed") or {}
    per_c = per_seed.get("per_corruption")
    names = [c for group in members.values() for c in group]
    if not isinstance(per_c, Mapping) or not all(c in per_c for c in names):
        return None
    per_f = per_seed.get("per_family") if isinstance(per_seed.get("per_family"), Mapping) else {}
    families = fold(per_c, members)
    for f, group in members.items():
        if tuple(group) == CATEGORIES[f] and f in per_f:
            families[f] = [float(v) for v in per_f[f]]
    return {"per_corruption": {c: [float(v) for v in per_c[c]] for c in names}, "per_family": families}


def breakdown(ours: Mapping[str, Mapping[str, Sequence[float]]], rows: Sequence[Mapping], seeds: Sequence[int],
              members: Mapping[str, Sequence[str]], scale: dict | None, *, same: str | None = None) -> dict:
    """The per-family and per-corruption record of the page: ``ours`` holds the screened method's
    ``per_corruption`` and ``per_family`` (per seed, aligned with ``seeds``), ``rows`` the reference's rows,
    ``scale`` the analogue's multipliers (``analogue_scale``), ``same`` the reference method the screened one
    is (a built-in by name: not paired with itself).

    Returns ``{"scale", "reference": None or the line saying why there is none, "families": [...],
    "corruptions": [...], "finding": scale_finding(...)}``; each entry ``{"name", "members", "multiplier",
    "ours", "paired": {against: {"difference", "reads"}}, "reference": {method: mean}}``."""
    theirs = {r["method"]: reference_breakdown(r, members) for r in rows}
    missing = [m for m, found in theirs.items() if found is None]
    why = None
    if missing:
        why = ("the per-family reference is not in this summary (its rows carry no per_seed.per_corruption: "
               "written before issue 65; rerun `noisymix analogue --results DIR` on the eight-method runs)")
    values = scale["values"] if scale else None
    entries: dict[str, list[dict]] = {"families": [], "corruptions": []}
    for kind, key, groups in (("families", "per_family", {f: tuple(g) for f, g in members.items()}),
                              ("corruptions", "per_corruption", {c: (c,) for g in members.values() for c in g})):
        for name, group in groups.items():
            entry = {"name": name, "members": list(group), "multiplier": _multiplier(values, group),
                     "ours": interval_entry(ours[key][name]), "paired": {}, "reference": {}}
            if why is None:
                for m, found in theirs.items():
                    entry["reference"][m] = float(np.mean(found[key][name]))
                for against in AGAINST:
                    if against == same or against not in theirs:
                        continue
                    diff = paired_difference(list(ours[key][name]), list(theirs[against][key][name]), tuple(seeds))
                    entry["paired"][against] = {"difference": diff, "reads": reads(diff, False)}
            entries[kind].append(entry)
    record = {"scale": scale, "reference": why, **entries}
    gains = {e["name"]: e["paired"]["baseline"]["difference"]["mean"] for e in entries["corruptions"]
             if "baseline" in e["paired"]}
    record["finding"] = scale_finding(gains, values, members) if gains and values else None
    return record


def scale_finding(gains: Mapping[str, float], values: Mapping[str, float], members: Mapping[str, Sequence[str]]
                  ) -> dict:
    """Whether the gain over the Baseline (``gains``: each corruption's mean paired difference, points) is
    concentrated in corruptions the proxy scales far from CIFAR's strength (module docstring), and the words
    that say so (None where it is not).  Every number in the words is the data's."""
    positive = {c: g for c, g in gains.items() if g > 0}
    total = float(sum(positive.values()))
    far = {c: g for c, g in positive.items() if values[c] > FAR_ABOVE or values[c] < FAR_BELOW}
    share = float(sum(far.values())) / total if total > 0 else 0.0
    record = {"positive_gain": total, "far_gain": float(sum(far.values())), "share": share,
              "far": sorted(far, key=lambda c: -far[c]), "concentrated": share > CONCENTRATED, "words": None}
    if not record["concentrated"]:
        return record
    # the words name the corruptions that carry it: a far one with a sliver of the gain (a noise-level +0.1 on
    # fog beside +27 on the noises) is in the share, not in the words
    named = [c for c in record["far"] if far[c] >= NAMED * record["far_gain"]]
    record["named"] = named
    groups = []
    for f, group in members.items():
        here = [c for c in group if c in named]
        if here:
            groups.append((f, here))
    above = [c for c in named if values[c] > FAR_ABOVE]
    below = [c for c in named if values[c] < FAR_BELOW]
    where = []
    for f, here in groups:
        listed = ", ".join(f"{pretty(c)} {_number(values[c])}×" for c in here)
        factors = [values[c] for c in here]
        where.append(f"{f} corruptions the proxy makes {multiplier_text({'low': min(factors), 'high': max(factors)})} "
                     f"CIFAR's strength ({listed})")
    parts = []
    for names, factors, how in ((above, [values[c] for c in above], "weaker"),
                                (below, [1 / values[c] for c in below], "stronger")):
        if names:
            whom = ("them" if len(names) > 1 else "it") if not (above and below) else \
                ", ".join(pretty(c) for c in names)
            parts.append(f"{multiplier_text({'low': min(factors), 'high': max(factors)})} {how} against {whom} here "
                         "than against CIFAR-10-C's")
    record["words"] = (f"Its gain over the Baseline lies in corruptions whose strength the proxy scales far from "
                       f"CIFAR's ({round(100 * share)} % of its summed per-corruption gain, {record['far_gain']:+.1f} "
                       f"of {total:+.1f} points): {'; '.join(where)}.  An augmentation at CIFAR's strength is "
                       f"{' and '.join(parts)}, and the prediction for them is the least trustworthy.")
    return record
