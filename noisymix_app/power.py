"""``python -m noisymix_app.power --out docs/central-power.json``: how many seeds decide the paper's
central comparison, NoisyMix against AugMix on Digits-C and Digits-P (issue 63, goal 2), fixed before
the runs that decide it.

The rule (``noisymix_infra.stats.seeds_to_decide``): the fewest pairs whose interval at the strictest
level Holm can test the claim at (``alpha / m``, two-sided) is no wider than the paper's effect with 80 %
assurance, at today's pooled paired sd.  Such an interval cannot hold both 0 and the paper's effect, so
the verdict is decided either way: NoisyMix better (or worse), or better by less than the paper says.
Today's pairs are every committed run of the laptop recipe on the matched sets: the main job's seeds
(``docs/reproduce-summary.json``) and the eight-method plan's (``docs/analogue-methods-summary.json``).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from noisymix_infra.io import read_json_object, write_json
from noisymix_infra.stats import ALPHA, seeds_to_decide

#: benchmark -> (the main job's metric, the eight-method summary's per-seed key, lower is better, paper's effect)
CENTRAL = {"c": ("corrupted", "corrupted", False, 2.4), "p": ("flip_probability", "mean_flip", True, 0.9)}
ASSURANCE = 0.80


def pooled_differences(main: dict, eight: dict) -> dict[str, dict[int, float]]:
    """NoisyMix minus AugMix per seed (NoisyMix better positive), from both committed summaries."""
    rows = {r["method"]: r for r in eight["table"]}
    out: dict[str, dict[int, float]] = {}
    for bench, (metric, key, lower, _) in CENTRAL.items():
        sign = -1.0 if lower else 1.0
        nm, am = main["table"]["noisymix"][metric], main["table"]["augmix_jsd"][metric]
        diffs = {s: sign * (a - b) for s, a, b in zip(nm["seeds"], nm["values"], am["values"], strict=True)}
        for s, a, b in zip(eight["seeds"], rows["noisymix"]["per_seed"][key], rows["augmix_jsd"]["per_seed"][key],
                           strict=True):
            if s in diffs:
                raise ValueError(f"seed {s} is in both summaries: no seed counted twice")
            diffs[s] = sign * (a - b)
        out[bench] = diffs
    return out


def plan(main: dict, eight: dict, family_size: int, first_new_seed: int, pooled_after: int) -> dict:
    """The committed answer: per benchmark today's pairs, their sd, the seeds that decide, and the seeds to add
    beyond ``pooled_after`` pairs the runs already planned will hold."""
    alpha = ALPHA / family_size
    out: dict = {"rule": "fewest pairs whose two-sided t-interval at alpha/m is no wider than the paper's effect "
                         f"with {ASSURANCE:.0%} assurance at today's pooled paired sd",
                 "alpha": alpha, "family_size": family_size, "assurance": ASSURANCE, "benchmarks": {}}
    for bench, diffs in pooled_differences(main, eight).items():
        sd = statistics.stdev(diffs.values())
        out["benchmarks"][bench] = {"pairs": len(diffs), "seeds": sorted(diffs), "sd": sd,
                                    "mean": statistics.fmean(diffs.values()), "paper": CENTRAL[bench][3],
                                    "pairs_needed": seeds_to_decide(sd, CENTRAL[bench][3], alpha, ASSURANCE)}
    needed = max(b["pairs_needed"] for b in out["benchmarks"].values())
    add = max(0, needed - pooled_after)
    out.update(pairs_needed=needed, pooled_before_new=pooled_after,
               new_seeds=list(range(first_new_seed, first_new_seed + add)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--main", default="docs/reproduce-summary.json")
    parser.add_argument("--eight", default="docs/analogue-methods-summary.json")
    parser.add_argument("--family-size", type=int, default=16, help="m of the main family at its planned size")
    parser.add_argument("--pooled-after", type=int, default=19,
                        help="pairs the planned runs hold before the new seeds (main 0-8, eight-method 10-19)")
    parser.add_argument("--first-new-seed", type=int, default=20)
    args = parser.parse_args(argv)
    main_summary = read_json_object(Path(args.main), "the main job's summary", required=("table",))
    eight = read_json_object(Path(args.eight), "the eight-method summary", required=("table", "seeds"))
    write_json(Path(args.out), plan(main_summary, eight, args.family_size, args.first_new_seed, args.pooled_after))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
