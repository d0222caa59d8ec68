"""The eight reference methods of a screen, read from the eight-method summary (issue 59): the one place
a screen reads them (``read_reference``).

The summary is what ``noisymix analogue --results DIR`` wrote from the runs of ``noisymix reproduce --plan
analogue-methods`` (the committed one: ``docs/analogue-methods-summary.json``).  Its methods are never re-run
by a screen: their per-seed numbers (``per_seed``, aligned with ``plan.seeds``) are the other side of every
paired difference, their means and the paper's values the points of the map to CIFAR-10-C and -P.  The
recipe they were trained with is the plan named in ``plan.name`` (``analogue-methods --set k=v ...``), which
the screen trains its method with (``noisymix_app.screen.command``); seeds, counts and numbers all come from
the file, none is written here.

Issue 64: the paper's numbers are the package's (``noisymix_figures.paper.method_columns``, the one home of
them), never the summary's copy (a copy of +10 moved every prediction by 10); every count the page says is
the summary's real count of methods; and a summary's ``sets`` (``{"c": sha256, "p": sha256}``: the identity
of the Digits-C and -P sets its methods were evaluated on, as ``docs/reproduce-summary.json`` has them) is
read, so the screen can refuse sets other than its own (``sets.check_sets``).
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from noisymix_app.analogue.methods import PER_SEED_DECIMALS
from noisymix_infra.io import printable

__all__ = ["DEFAULT_SEEDS", "DEFAULT_SUMMARY", "EXECUTION_FIELDS", "MEASURES", "PER_SEED_ROUNDING", "Reference",
           "cut_per_seed", "read_reference"]

#: the committed eight-method summary (a source checkout's; ``--summary`` names another)
DEFAULT_SUMMARY = Path(__file__).resolve().parents[2] / "docs" / "analogue-methods-summary.json"
#: how far a per-seed value written by `noisymix analogue` may be from the unrounded one: half its last
#: place (it writes them to ``PER_SEED_DECIMALS`` decimals, the means beside them from the unrounded values)
PER_SEED_ROUNDING = 0.5 * 10.0 ** -PER_SEED_DECIMALS
#: the plan that trains the reference methods (``noisymix_app.reproduce.plans.PLANS``)
PLAN = "analogue-methods"
#: our three measures (points, %) and the paper's column each is read against (None: no map)
MEASURES: dict[str, str | None] = {"clean": None, "corrupted": "paper_corrupted", "mean_flip": "paper_mfr"}
#: plan fields that say how the runs execute, not what they compute (issue 40: one torch thread per run
#: whatever the count side by side), and the fields a screen sets itself (its seeds are the summary's,
#: its method its own)
EXECUTION_FIELDS = frozenset({"workers", "members", "seeds", "methods", "perturbed_methods"})
#: how many of the summary's seeds a screen trains unless ``--set seeds=...`` names them (issue 65, goal 6: the
#: summary went from 5 seeds to 10, and a screen of all of them took twice the 2.5-3 minutes of its five): the
#: first five, paired seed by seed with the reference's runs of the same seeds
DEFAULT_SEEDS = 5


@dataclass(frozen=True)
class Reference:
    """The summary as a screen uses it: where it is, its sha256, the plan's overrides (``--set`` items
    of the recipe, execution fields left out), the seeds, and one row per method (as in the file)."""

    path: Path
    sha256: str
    plan_name: str
    overrides: tuple[str, ...]
    seeds: tuple[int, ...]
    rows: tuple[dict, ...]
    #: the identity of the sets its methods were evaluated on (None: the summary does not say)
    sets: dict | None = None
    #: every seed of the summary, where ``seeds`` is a screen's share of them (``on_seeds``; None: the same)
    summary_seeds: tuple[int, ...] | None = None

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(r["method"] for r in self.rows)

    def row(self, method: str) -> dict:
        return next(r for r in self.rows if r["method"] == method)

    def on_seeds(self, seeds: tuple[int, ...]) -> Reference:
        """The reference a screen of ``seeds`` (some of the summary's) is paired with: every per-seed list cut
        to those seeds (``cut_per_seed``); each row's mean and interval stay the summary's, over all its seeds
        (the place among the eight and the map to the paper are the best estimates there are)."""
        return dataclasses.replace(self, seeds=tuple(seeds), summary_seeds=self.summary_seeds or self.seeds,
                                   rows=tuple(cut_per_seed(r, self.seeds, seeds) for r in self.rows))


def cut_per_seed(row: dict, have: tuple[int, ...], keep: tuple[int, ...]) -> dict:
    """``row`` with its ``per_seed`` lists (and those of its ``per_corruption``/``per_family`` maps), aligned
    with ``have``, cut to the seeds ``keep`` in that order; every other key as it is."""
    at = [have.index(s) for s in keep]

    def cut(value):
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        return [value[i] for i in at]

    return {**row, "per_seed": cut(row["per_seed"])}


def _refuse(path: Path, why: str) -> ValueError:
    return ValueError(f"{printable(str(path))}: {why}")


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _plan_overrides(path: Path, name: object, seeds: tuple[int, ...]) -> tuple[str, ...]:
    """The recipe's ``--set`` items of ``analogue-methods --set k=v ...`` (execution fields left out;
    a ``seeds`` item must name the plan's seeds)."""
    if not isinstance(name, str):
        raise _refuse(path, "plan.name is not the plan's name")
    try:
        words = shlex.split(name)
    except ValueError:
        raise _refuse(path, f"plan.name {printable(repr(name))} is not a command line's plan") from None
    if not words or words[0] != PLAN:
        raise _refuse(path, f"its runs are of plan {printable(repr(words[0] if words else name))}, not {PLAN}: a "
                            f"screen compares with the eight methods of `noisymix reproduce --plan {PLAN}`")
    overrides = []
    rest = words[1:]
    while rest:
        if rest[0] != "--set" or len(rest) < 2 or "=" not in rest[1]:
            raise _refuse(path, f"plan.name {printable(repr(name))}: expected {PLAN} followed by --set key=value items")
        key, _, value = rest[1].partition("=")
        if key == "seeds":
            from noisymix_infra.config import parse_value

            if tuple(parse_value(value, tuple[int, ...], "seeds")) != seeds:
                raise _refuse(path, f"plan.name says seeds={value}, plan.seeds {list(seeds)}")
        elif key not in EXECUTION_FIELDS:
            overrides.append(rest[1])
        rest = rest[2:]
    return tuple(overrides)


def _check_row(path: Path, i: int, row: object, seeds: int, *, paper: bool = True) -> dict:
    """One row of the table checked (``paper``: with the paper's columns, which the map reads); its
    ``per_seed.per_corruption`` and ``per_family`` (issue 65), where it has them, are ``seeds`` numbers per
    known corruption and family, else one line."""
    where = f"table[{i}]"
    if not isinstance(row, dict) or not isinstance(row.get("method"), str):
        raise _refuse(path, f"{where} is not a method's row (an object with its method)")
    where = f"table[{i}] ({printable(row['method'])})"
    for key in ("paper_corrupted", "paper_mfr") if paper else ():
        if not _number(row.get(key)):
            raise _refuse(path, f"{where}.{key} is not a number")
    per_seed = row.get("per_seed")
    if not isinstance(per_seed, dict):
        raise _refuse(path, f"{where} has no per-seed numbers (per_seed), which a screen pairs with: rerun "
                            "`noisymix analogue --results DIR` on the eight-method runs to write them")
    for key in MEASURES:
        values = per_seed.get(key)
        if not isinstance(values, list) or len(values) != seeds or not all(_number(v) for v in values):
            raise _refuse(path, f"{where}.per_seed.{key} is not {seeds} numbers (one per seed of plan.seeds)")
        entry = row.get(key)
        if not isinstance(entry, dict) or not _number(entry.get("mean")):
            raise _refuse(path, f"{where}.{key}.mean is not a number")
        # the mean printed beside the per-seed values is theirs (to their rounding): a file assembled from two
        # runs is refused
        if abs(sum(values) / seeds - entry["mean"]) > PER_SEED_ROUNDING + 1e-9 * max(1.0, abs(entry["mean"])):
            raise _refuse(path, f"{where}.{key}.mean {entry['mean']} is not the mean of its per_seed values")
    _check_breakdown(path, where, per_seed, seeds)
    return row


def _check_breakdown(path: Path, where: str, per_seed: dict, seeds: int) -> None:
    """``per_seed.per_corruption`` ({corruption: per seed}) and ``per_family`` ({family: per seed}), where a
    summary has them (written since issue 65; absent in older ones, which the page says): known names, each
    ``seeds`` numbers."""
    from fullscale.vocabulary import CATEGORIES, CORRUPTIONS

    for key, known in (("per_corruption", CORRUPTIONS), ("per_family", tuple(CATEGORIES))):
        found = per_seed.get(key)
        if found is None:
            continue
        if not isinstance(found, dict) or not found:
            raise _refuse(path, f"{where}.per_seed.{key} is not an object of names to per-seed numbers")
        for name, values in found.items():
            if name not in known:
                raise _refuse(path, f"{where}.per_seed.{key} names {printable(repr(name))[:60]}, none of "
                                    f"{', '.join(known)}")
            if not isinstance(values, list) or len(values) != seeds or not all(_number(v) for v in values):
                raise _refuse(path, f"{where}.per_seed.{key}.{name} is not {seeds} numbers (one per seed of "
                                    "plan.seeds)")


def read_reference(path: str | Path | None = None) -> Reference:
    """The eight-method summary at ``path`` (default ``DEFAULT_SUMMARY``), checked whole: one line for
    a missing or unreadable file, a plan other than ``analogue-methods``, seeds that are not distinct
    numbers, a table without the Baseline or NoisyMix or with fewer than five methods, and a row
    without per-seed numbers aligned with the seeds (the schema: module docstring)."""
    from noisymix_infra.io import read_json, sha256_file

    path = Path(DEFAULT_SUMMARY if path is None else path)
    if not path.is_file():
        raise ValueError(f"no eight-method summary at {printable(str(path))}: give --summary FILE, the "
                         "analogue.json that `noisymix analogue --results DIR` wrote")
    try:
        data = read_json(path)
    except ValueError as error:
        raise _refuse(path, f"not a readable summary ({str(error).splitlines()[0][:200]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("plan"), dict) or not isinstance(data.get("table"), list):
        raise _refuse(path, "not an eight-method summary (an object with plan and table)")
    seeds = data["plan"].get("seeds")
    if (not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                            for s in seeds) or len(set(seeds)) != len(seeds)):
        raise _refuse(path, "plan.seeds is not a list of distinct seeds")
    seeds_t = tuple(seeds)
    overrides = _plan_overrides(path, data["plan"].get("name"), seeds_t)
    rows = tuple(_check_row(path, i, row, len(seeds_t)) for i, row in enumerate(data["table"]))
    methods = [r["method"] for r in rows]
    repeated = next((m for i, m in enumerate(methods) if m in methods[:i]), None)
    if repeated is not None:
        raise _refuse(path, f"method {printable(repeated)} has two rows")
    for needed in ("baseline", "noisymix"):
        if needed not in methods:
            raise _refuse(path, f"no {needed} row: a screen is paired with the Baseline and NoisyMix")
    if len(rows) < 5:  # the nested leave-one-out fits a line to the n - 2 others: at least three
        raise _refuse(path, f"{len(rows)} methods: the map and its leave-one-out check need at least five")
    for key in ("corrupted", "mean_flip"):  # a line through one x is no map: refused before any training (issue 64)
        if len({round(float(r[key]["mean"]), 9) for r in rows}) < 2:
            raise _refuse(path, f"every method has the same {key} mean: no line maps it to the paper's")
    return Reference(path, sha256_file(path), data["plan"]["name"], overrides, seeds_t, _paper_values(path, rows),
                     _sets(path, data.get("sets")))


def _paper_values(path: Path, rows: tuple[dict, ...]) -> tuple[dict, ...]:
    """Each row with the paper's numbers of the package in place of the summary's copy (module docstring)."""
    from noisymix_figures.paper import method_columns

    out = []
    for row in rows:
        try:
            paper = method_columns([row["method"]])[row["method"]]
        except KeyError:
            raise _refuse(path, f"method {printable(row['method'])} has no row of the paper's tables here: a screen "
                                "maps the paper's methods") from None
        out.append({**row, "paper_clean": paper["clean"], "paper_corrupted": paper["corrupted"],
                    "paper_mfr": paper["mfr"]})
    return tuple(out)


def _sets(path: Path, sets: object) -> dict | None:
    """The summary's ``sets``, ``{"c": sha256, "p": sha256}``, or None where it has none."""
    import re

    if sets is None:
        return None
    if not (isinstance(sets, dict) and all(isinstance(sets.get(k), str) and re.fullmatch(r"[0-9a-f]{64}", sets[k])
                                           for k in ("c", "p"))):
        raise _refuse(path, 'sets is not {"c": sha256, "p": sha256}, the identity of its Digits-C and -P sets')
    return {"c": sets["c"], "p": sets["p"]}


def compare_sets(ours: dict, theirs: dict | None, path: Path, what: str, remedy: str) -> dict:
    """``ours`` (the sets a screen made: {"c", "p"} identities) against a reference's ``theirs``: one line where
    they differ (its numbers are of other sets; issue 64), ``verified`` False where the reference does not say."""
    if theirs is not None:
        differ = [k for k in ("c", "p") if theirs.get(k) != ours[k]]
        if differ:
            raise ValueError(f"{printable(str(path))}: {what} (sets.{differ[0]} "
                             f"{printable(str(theirs.get(differ[0])))[:16]}..., this screen's "
                             f"{str(ours[differ[0]])[:16]}...); {remedy}")
    return {**ours, "verified": theirs is not None}
