"""``noisymix fit-analogue --out DIR [--kind c|p] [--freeze]``: the command of the analogue's two fits.

``--kind c`` (the default) fits the difficulty-matched Digits-C (``noisymix_app.analogue.fit_c``), ``--kind p``
the difficulty-matched Digits-P (``noisymix_app.analogue.fit_p``); both into the same kind of folder (their
Baseline models are shared), both frozen through the same guard (``noisymix_app.analogue.freeze``: the package
file checked writable before the fit, a fit outside its tolerance refused unless ``--force-freeze``, the file
locked) and the same record of what made each entry (``fit_c.freeze``).  The command lives apart from the fits
so that each fit imports only what it shares (issue 57, goal 9: fit_c and fit_p imported each other).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from fullscale.corruptions import matched
from fullscale.vocabulary import CORRUPTIONS, P_COLUMNS
from noisymix_app.analogue.fit_c import FitOptions, _merged, check_models, fit, missed, typed_command
from noisymix_app.analogue.freeze import check_package_writable, freeze_guarded
from noisymix_infra.config import add_set_argument, apply_overrides
from noisymix_infra.folder_kind import check_claim, claim_folder
from noisymix_infra.io import directory_lock, write_json

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=("c", "p"), default="c",
                        help="c: the Digits-C corruption strengths (default; each entry records its five severities' "
                             "accuracies and flags, noisymix_app.analogue.severities); p: the Digits-P perturbation "
                             "strengths (noisymix_app.analogue.fit_p; issue 51)")
    parser.add_argument("--out", required=True, help="working folder: the fit's models and digits_matched.json")
    parser.add_argument("--freeze", action="store_true",
                        help="also write the fit into the package (digits_matched.json, or digits_p_matched.json "
                             "with --kind p: the suite's strengths); refused when a residual misses its tolerance "
                             "(40 %% of the target or 5 points)")
    parser.add_argument("--force-freeze", action="store_true",
                        help="with --freeze: freeze even a fit whose residuals miss their tolerance")
    add_set_argument(parser, "steps=6", "the fit (FitOptions)")


def _check_freeze(package_file: Path, fitted: tuple[str, ...], every: tuple[str, ...], units: str,
                  read: Callable[[Path], dict]) -> None:
    """Before any work: the package file can be written and, for a fit of some of ``every`` (corruptions,
    perturbations), holds a whole fit of the others to keep, as ``read`` checks it (issue 54: both were
    found only after the whole fit).  Digits-C's and Digits-P's freezes alike."""
    check_package_writable(package_file)
    if set(fitted) != set(every):
        if not package_file.is_file():
            raise ValueError(f"--freeze of some {units} needs a frozen fit of the others to keep; "
                             f"{package_file} does not exist")
        read(package_file)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "kind", "c") == "p":
        return _run_p(args)
    options = apply_overrides(FitOptions(), args.overrides)
    out = Path(args.out)
    if args.force_freeze and not args.freeze:
        raise ValueError("--force-freeze goes with --freeze")
    check_claim(out, "fit")  # a run, a -C set, a report, or the user's own digits_matched.json: refused now
    if args.freeze:
        from fullscale.corruptions.matched import read_fit_file

        _check_freeze(matched.MATCHED_FILE, options.names(), CORRUPTIONS, "corruptions", read_fit_file)
    check_models(options, out)  # models of other options under out/models: refused before any training
    with directory_lock(out, "fitting"):
        claim_folder(out, "fit")
        result = fit(options, out, typed_command(args))
        write_json(out / "digits_matched.json", result)
    if args.freeze:
        from fullscale.corruptions.matched import matched_fit

        misses = missed(result)
        freeze_guarded(matched.MATCHED_FILE, result, tolerance_ok=not misses, force=args.force_freeze, merge=_merged,
                       missed=", ".join(misses[:3]) + (f" and {len(misses) - 3} more" if len(misses) > 3 else "")
                       + f"; the fit is in {out / 'digits_matched.json'}")
        matched_fit.cache_clear()
    worst = max(result["fit"].values(), key=lambda e: abs(e["residual"]))
    print(f"fitted {len(result['fit'])} strength(s) in {result['seconds'] / 60:.1f} min; largest residual "
          f"{worst['residual']:+.1f} points; written to {out / 'digits_matched.json'}"
          + (f" and {matched.MATCHED_FILE}" if args.freeze else ""))
    return 0


def _run_p(args: argparse.Namespace) -> int:
    """``--kind p``: the Digits-P strengths, into the same kind of folder (its Baseline models are shared),
    frozen through the same guard as Digits-C's (``noisymix_app.analogue.freeze``): the package file checked
    writable before the fit, a fit outside its tolerance refused unless ``--force-freeze``, the file locked."""
    from fullscale.corruptions.matched_p import MATCHED_P_FILE, matched_p_fit, read_matched_p
    from noisymix_app.analogue.fit_p import FitPOptions, fit_p, merge_p

    options = apply_overrides(FitPOptions(), args.overrides)
    out = Path(args.out)
    if args.force_freeze and not args.freeze:
        raise ValueError("--force-freeze goes with --freeze")
    check_claim(out, "fit")
    if args.freeze:
        _check_freeze(MATCHED_P_FILE, options.names(), P_COLUMNS, "perturbations", read_matched_p)
    check_models(options, out)
    with directory_lock(out, "fitting"):
        claim_folder(out, "fit")
        result = fit_p(options, out, typed_command(args))
        write_json(out / "digits_p_matched.json", result)
    misses = [n for n, e in result["fit"].items() if not e["within_tolerance"]]
    if args.freeze:
        freeze_guarded(MATCHED_P_FILE, result, tolerance_ok=not misses, force=args.force_freeze,
                       merge=lambda r, f: merge_p(r, read_matched_p(f) if f.is_file() else None),
                       missed=", ".join(misses) + f"; the fit is in {out / 'digits_p_matched.json'}")
        matched_p_fit.cache_clear()
    print(f"fitted {len(result['fit'])} -P strength(s) in {result['seconds'] / 60:.1f} min; "
          f"{len(misses)} outside the tolerance{': ' + ', '.join(misses) if misses else ''}; written to "
          f"{out / 'digits_p_matched.json'}" + (f" and {MATCHED_P_FILE}" if args.freeze else ""))
    return 0
