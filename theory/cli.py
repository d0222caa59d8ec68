"""``noisymix verify --out DIR``: every lemma, proposition and theorem of the appendix, held
against the exact loss; writes DIR/theory.json, DIR/theory.md and DIR/convergence.png."""

from __future__ import annotations

import argparse

from theory.verify import CHECKS, VerifyConfig, verify

__all__ = ["THREADS", "add_arguments", "run"]

THREADS = 1
"""``--threads`` default: the checks are thousands of small tensor ops; a second intra-op
thread buys nothing, and on a busy 2-core machine its spin-waiting made the run 10-20x slower."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--points", type=int, default=13, help="eps grid points (default 13)")
    parser.add_argument("--eps-low", type=float, default=1e-4, help="smallest eps (default 1e-4)")
    parser.add_argument("--eps-high", type=float, default=1e-1, help="largest eps (default 1e-1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random models and data (default 0)")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=list(CHECKS),
        default=None,
        metavar="ID",
        help=f"run only these ids ({', '.join(CHECKS)})",
    )
    parser.add_argument("--no-sympy", action="store_true", help="skip the sympy witnesses")


def run(args: argparse.Namespace) -> int:
    config = VerifyConfig(
        points=args.points,
        eps_low=args.eps_low,
        eps_high=args.eps_high,
        seed=args.seed,
        ids=tuple(args.only) if args.only else tuple(CHECKS),
        symbolic=not args.no_sympy,
    )
    summary = verify(args.out, config, threads=getattr(args, "threads", THREADS))
    print(
        f"noisymix verify: {summary['checks']} checks, {summary['fails']} failing (as printed, by design "
        f"where the paper is wrong), {summary['seconds']:.1f} s -> {args.out}/theory.md"
    )
    return 0
