"""``noisymix bench verify``: how long ``noisymix verify`` takes, against its budget.

The headline is the wall time of the real command in a fresh process (interpreter start, imports,
every check, the report and the figure), repeated; the must-reach budget is 60 s on the project's
2-core CPU, the aim 20 s.  A second, in-process run gives the seconds of each check id.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from theory.verify import VerifyConfig, run_checks

BUDGET_S = 60.0
AIM_S = 20.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeats", type=int, default=3, help="fresh-process runs (default 3)")
    parser.add_argument("--points", type=int, default=13, help="eps grid points (default 13, as the command)")


def run(args: argparse.Namespace) -> dict:
    if args.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {args.repeats}")
    walls = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "noisymix_app.cli", "verify", "--out", out, "--points", str(args.points)],
                check=True,
                capture_output=True,
                env={**os.environ, "NOISYMIX_PROGRESS": "0"},
            )
            walls.append(time.perf_counter() - start)
    start = time.perf_counter()
    checks, timings = run_checks(VerifyConfig(points=args.points), progress=lambda steps, **_: steps)
    in_process = time.perf_counter() - start
    median = statistics.median(walls)
    return {
        "command": f"noisymix verify --out DIR --points {args.points}",
        "wall_s": [round(w, 2) for w in walls],
        "median_wall_s": round(median, 2),
        "budget_s": BUDGET_S,
        "aim_s": AIM_S,
        "fraction_of_budget": round(median / BUDGET_S, 3),
        "meets_budget": median < BUDGET_S,
        "meets_aim": median < AIM_S,
        "checks": len(checks),
        "failing_as_printed": sum(c.verdict == "fails" for c in checks),
        "in_process_checks_s": round(in_process, 2),
        "per_id_s": {k: round(v, 2) for k, v in timings.items()},
    }
