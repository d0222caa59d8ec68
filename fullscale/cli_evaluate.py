"""``noisymix evaluate RUN --suite SUITE [--data-root DIR] [--checkpoint FILE]`` -> ``RUN/eval/SUITE.json``
(docs/results-schema.md); ``noisymix evaluate FILE --model resnet50 --out DIR --suite SUITE`` for a
bare checkpoint (``--model torchvision:NAME``, ``timm:NAME``, ``package.module:factory``: any model;
``--protocol robustbench``: the leaderboard's images and preprocessing).  The command line only: the
flags become ``EvalOptions`` and one call of ``fullscale.evaluation.evaluate``
(``fullscale/evaluation/evaluate_run.py``: which model, where the JSON goes, resuming, the checks of
issue 32), then one line of its summary.
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from pathlib import Path

import torch

from fullscale.data import Preprocess
from fullscale.evaluation import FGSM_EPSILONS, SUITES, EvalOptions, evaluate
from fullscale.evaluation.context import PROTOCOLS
from fullscale.vocabulary import P_WEATHER_CHOICES
from noisymix_infra.config import add_set_argument, apply_overrides
from noisymix_infra.io import printable

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN", help="a run directory of `noisymix train` (config.json, final.pt); "
                        "with --model: a bare state_dict file")
    parser.add_argument("--model", default=None,
                        help="evaluate RUN as a bare state_dict of this model; needs --out: one of ours "
                        "(resnet50, ...), torchvision:NAME, timm:NAME, or package.module:factory, "
                        "which IMPORTS AND RUNS that code "
                        "(yours: only name code you trust). Classes: the suite's data set (ImageNet: 1000). "
                        "RobustBench files (normalize.mean/std, model.*) load as they are, with their mean/std")
    parser.add_argument("--out", default=None, help="with --model: the directory for eval/SUITE.json")
    parser.add_argument("--suite", required=True, choices=sorted(SUITES))
    parser.add_argument("--data-root", default=None,
                        help="the -C/-P/-R set; for clean/calibration/fgsm the dataset (default: the run's)")
    parser.add_argument("--checkpoint", default=None, help="a state_dict other than RUN/final.pt")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch-size", type=int, default=EvalOptions.batch_size,
                        help="images per model call (0: 64 on the CPU, 500 elsewhere)")
    parser.add_argument("--workers", type=int, default=EvalOptions.workers, help="image/video decoding processes")
    parser.add_argument("--rms-estimator", choices=("exact", "public"), default="exact",
                        help="RMS calibration error: exact, or the public calib_err (skips the last bin)")
    parser.add_argument("--epsilons", default=",".join(f"{round(e * 255)}/255" for e in FGSM_EPSILONS),
                        help="FGSM epsilons in pixel scale [0, 1], comma-separated, fractions allowed")
    parser.add_argument("--corruptions", default=None,
                        help="comma-separated -C/-P names (default: every standard one present)")
    parser.add_argument("--partial", action="store_true",
                        help="evaluate a -C set that lacks some of the 15 corruptions (its means say how many)")
    parser.add_argument("--weather", choices=P_WEATHER_CHOICES, default="snow",
                        help="-P weather column: snow (the paper's tables) or spatter (public cifar-p-eval.py)")
    parser.add_argument("--alexnet-flip", default=None, metavar="JSON",
                        help='AlexNet flip probabilities {"<perturbation>": fraction, ...} for mFR (-P suites)')
    parser.add_argument("--protocol", choices=PROTOCOLS, default="ours",
                        help="robustbench: the leaderboard's images and preprocessing (ImageNet: the 5,000 images of "
                        "--image-list, Res224 for -C, Res256Crop224 clean; CIFAR-C: all 15 x 5), float32")
    parser.add_argument("--image-list", default=None, metavar="FILE",
                        help="--protocol robustbench on ImageNet: robustbench's "
                        "robustbench/helper_files/imagenet_test_image_ids.txt (from its repository or package)")
    parser.add_argument("--resize", type=int, default=256, help="image folders: shorter side (0: keep)")
    parser.add_argument("--crop", type=int, default=224, help="image folders: centre crop")
    add_set_argument(parser, "--set batch_size=200 --set weather=spatter --set preprocess.crop=224",
                     "the evaluation options (fullscale.evaluation.EvalOptions; after the flags)")


def _epsilons(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(Fraction(part.strip())) for part in text.split(",") if part.strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"--epsilons expects numbers or fractions like 8/255, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    if args.out and not args.model:
        raise ValueError("--out is for a bare checkpoint (with --model); a run's results go to RUN/eval/")
    corruptions = tuple(c.strip() for c in args.corruptions.split(",") if c.strip()) if args.corruptions else None
    options = EvalOptions(batch_size=args.batch_size, workers=args.workers, rms_estimator=args.rms_estimator,
                          epsilons=_epsilons(args.epsilons), corruptions=corruptions, weather=args.weather,
                          alexnet_flip=args.alexnet_flip, preprocess=Preprocess(args.resize, args.crop),
                          partial=args.partial, protocol=args.protocol, image_list=args.image_list)
    options = apply_overrides(options, args.overrides)
    record = evaluate(args.run_dir, args.suite, data_root=args.data_root, checkpoint=args.checkpoint,
                      device=args.device, options=options, model=args.model, out=args.out)
    summary = {k: v for k, v in record["summary"].items() if not isinstance(v, dict | list)}
    where = record.get("path") or Path(args.out if args.model else args.run_dir) / "eval" / f"{args.suite}.json"
    print(f"{args.suite}: {_percent(summary)} -> {printable(str(where))}")
    return 0


def _percent(summary: dict) -> str:
    """The summary's accuracies and errors in %, as the reports print them (fractions in the JSON)."""
    parts = []
    for key, value in summary.items():
        if isinstance(value, float) and ("accuracy" in key or "error" in key or key in ("ece", "mce")) \
                and "corruption_error" not in key:
            parts.append(f"{key} {100 * value:.1f} %")
        elif isinstance(value, (int, float, str)):
            parts.append(f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}")
    return ", ".join(parts)
