"""``noisymix bench main-job``: the main job's cost and decisiveness, two plans side by side (issue 34).

``noisymix reproduce`` is what every user runs first, and its time depends on the machine far more
than on anything else, so a plan is judged by the *ratio* of its cost to a reference plan's, both
run here one after the other as whole ``noisymix reproduce --plan NAME`` processes (the thread
default decided per process, as a user meets it).  Per plan it records the wall time, the sum of the
steps' times and where they went (training, evaluation, the rest), and from the plan's own
``summary.json``: every claim's verdict and MDD, and each method's clean-accuracy seed sd.  Then it
compares: the cost ratio (new / reference), the headline's MDD (NoisyMix vs Baseline on the
corrupted sets), the largest clean sd, and the verdicts of the claims both plans make (by claim id;
a changed verdict is listed, to be explained in writing).  Machine facts (CPU model, torch's kernel
capability, load average before and after each plan) come with the numbers.

``--plans REF,NEW`` (default ``laptop,digits16``: the main job's plan and the same protocol on the
16x16 digits, issue 34);
``--quick`` runs ``quick`` and resumes it as the second plan (the path end to end in seconds, for the tests).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["add_arguments", "run"]

HEADLINE = "robust_noisymix_vs_baseline"  # the primary claim (figures/paper_claims.json)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plans", default="laptop,digits16", help="REFERENCE,NEW: two `noisymix reproduce` plans")
    parser.add_argument("--workdir", default="main-job", help="the reproduce folders (kept: a rerun resumes them)")
    parser.add_argument("--fresh", action="store_true", help="rerun both plans from scratch (the timing needs it)")
    parser.add_argument("--quick", action="store_true", help="--plans quick,quick (a smoke run of the path)")


def _load() -> list[float] | None:
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


def _where(log: dict) -> dict[str, float]:
    """Seconds by kind of step: training, evaluation, and the other steps (verify, toy, corrupt, figures)."""
    out = {"train": 0.0, "evaluate": 0.0, "other": 0.0}
    for step in log.get("steps", []):
        kind = step["name"].split(" ")[0]
        out[kind if kind in out else "other"] += float(step.get("seconds") or 0)
    return {k: round(v, 1) for k, v in out.items()}


def _one(plan: str, folder: Path, fresh: bool) -> dict:
    from noisymix_infra.io import read_json_object

    command = [sys.executable, "-m", "noisymix_app.cli", "reproduce", "--plan", plan, "--out", str(folder),
               *(("--fresh",) if fresh else ())]
    load_before = _load()
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"noisymix reproduce --plan {plan} failed (exit {done.returncode}): {last[:300]}")
    log = read_json_object(folder / "reproduce.json", "the log of noisymix reproduce", {"steps": "list"})
    summary = read_json_object(folder / "summary.json", "a summary.json of noisymix reproduce",
                               {"claims": "list", "table": "object"})
    claims = {c["id"]: {"verdict": c["verdict"], "mean": _round(c, "mean"), "mdd80": _round(c, "mdd80")}
              for c in summary["claims"]}
    clean_sd = {m: round(row["clean"]["sd"], 2) for m, row in summary["table"].items()
                if row.get("clean", {}).get("sd") is not None}
    return {"plan": plan, "wall_s": round(wall, 1), "steps_s": summary.get("seconds"), "where_s": _where(log),
            "load_before": load_before, "load_after": _load(), "claims": claims, "clean_sd": clean_sd,
            "machine": summary.get("machine")}


def _round(claim: dict, key: str) -> float | None:
    value = (claim.get("difference") or {}).get(key)
    return None if value is None else round(value, 2)


def run(args: argparse.Namespace) -> dict:
    plans = ["quick", "quick"] if args.quick else [p.strip() for p in args.plans.split(",")]
    from noisymix_app.reproduce.plans import PLANS

    if len(plans) != 2 or any(p not in PLANS for p in plans):
        raise ValueError(f"--plans must name two plans of {', '.join(PLANS)} as REFERENCE,NEW; got {args.plans!r}")
    work = Path(args.workdir).resolve()
    # --quick: the path end to end once, its second "plan" the first resumed in the same folder (a run kept is
    # what the comparison then reads twice: the test suite's seconds, not a second smoke run's)
    folders = [work / "0-quick"] * 2 if args.quick else [work / f"{i}-{p}" for i, p in enumerate(plans)]
    ref, new = (_one(p, folder, args.fresh) for p, folder in zip(plans, folders, strict=True))
    shared = sorted(set(ref["claims"]) & set(new["claims"]))
    changed = {c: (ref["claims"][c]["verdict"], new["claims"][c]["verdict"]) for c in shared
               if ref["claims"][c]["verdict"] != new["claims"][c]["verdict"]}
    headline = new["claims"].get(HEADLINE, {}).get("mdd80")
    worst_sd = max(new["clean_sd"].values(), default=None)
    return {
        "reference": ref, "new": new,
        "ratio_wall": round(new["wall_s"] / ref["wall_s"], 3),
        "ratio_steps": round(new["steps_s"] / ref["steps_s"], 3) if ref.get("steps_s") else None,
        "target_ratio": 0.4, "met_ratio": new["wall_s"] / ref["wall_s"] <= 0.4,
        "headline_mdd80": headline, "met_headline_mdd": headline is not None and headline <= 3.0,
        "max_clean_sd": worst_sd, "met_clean_sd": worst_sd is not None and worst_sd <= 1.5,
        "claims_both": shared, "verdicts_changed": changed,
        "claims_new_only": sorted(set(new["claims"]) - set(ref["claims"])),
    }
