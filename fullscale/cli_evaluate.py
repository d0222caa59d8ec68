"""``noisymix evaluate RUN --suite SUITE [--data-root DIR] [--checkpoint FILE]`` -> ``RUN/eval/SUITE.json``
(docs/results-schema.md).

The model is rebuilt from ``RUN/config.json`` with ``RUN/final.pt`` (or ``--checkpoint``, any
``state_dict``, loaded with ``weights_only=True``).  clean / calibration / fgsm use the run's own
dataset's test split (``--data-root`` overrides the run's data root; for ``dataset: imagenet`` it is
the validation class folders).  -C/-P suites are resumable: after each corruption the partial JSON
is written atomically (``"complete": false``) and a rerun with the same checkpoint and options
skips the corruptions already in it.
"""

from __future__ import annotations

import argparse
import datetime
import time
from fractions import Fraction
from pathlib import Path

import torch

from fullscale.data import Preprocess
from fullscale.evaluation import FGSM_EPSILONS, RESUMABLE, SUITES, Context, EvalOptions, run_suite
from fullscale.runs import load_run_model
from fullscale.vocabulary import P_WEATHER_CHOICES
from infra.config import add_set_argument, apply_overrides
from infra.io import read_json, sha256_file, write_json

__all__ = ["add_arguments", "evaluate", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN", help="a run directory of `noisymix train` (config.json, final.pt)")
    parser.add_argument("--suite", required=True, choices=sorted(SUITES))
    parser.add_argument("--data-root", default=None,
                        help="the -C/-P/-R set; for clean/calibration/fgsm the dataset (default: the run's)")
    parser.add_argument("--checkpoint", default=None, help="a state_dict other than RUN/final.pt")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch-size", type=int, default=EvalOptions.batch_size)
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
    parser.add_argument("--threads", type=int, default=0,
                        help="torch CPU threads (0: torch's default; 1 is faster for small models on a busy CPU)")
    parser.add_argument("--resize", type=int, default=256, help="image folders: shorter side (0: keep)")
    parser.add_argument("--crop", type=int, default=224, help="image folders: centre crop")
    add_set_argument(parser, "--set batch_size=200 --set weather=spatter --set preprocess.crop=224",
                     "the evaluation options (fullscale.evaluation.EvalOptions; after the flags)")


def _epsilons(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(Fraction(part.strip())) for part in text.split(",") if part.strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"--epsilons expects numbers or fractions like 8/255, got {text!r}") from None


def evaluate(run_dir: str | Path, suite: str, *, data_root: str | None = None, checkpoint: str | None = None,
             device: str = "cpu", options: EvalOptions | None = None) -> dict:
    """Evaluate the run on ``suite`` and write (and return) ``RUN/eval/SUITE.json``."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; available: {', '.join(SUITES)}")
    options = options or EvalOptions()
    run_dir = Path(run_dir)
    try:
        dev = torch.device(device)
        torch.empty(0, device=dev)  # a device name torch knows but cannot use here fails now
    except (RuntimeError, AssertionError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"--device {device!r} is not usable here ({detail[:160]}); use cpu or cuda[:N]") from None
    model, config = load_run_model(run_dir, checkpoint, dev)
    if dev.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    weights = Path(checkpoint) if checkpoint else run_dir / "final.pt"
    digest = sha256_file(weights)
    target = run_dir / "eval" / f"{suite}.json"
    record = {"suite": suite, "run": str(run_dir), "checkpoint": {"path": str(weights), "sha256": digest},
              "model": config["model"], "dataset": config.get("dataset", ""), "device": str(dev),
              "options": options.as_dict(), "complete": False}
    done = {}
    if suite in RESUMABLE and target.is_file():
        previous = read_json(target)
        if (not previous.get("complete", True) and previous.get("checkpoint", {}).get("sha256") == digest
                and previous.get("options") == record["options"]):
            done = dict(previous.get("results", {}))
    started = time.perf_counter()

    def on_result(name: str, entry: dict) -> None:
        done[name] = entry
        write_json(target, {**record, "results": done, "created": _now(), "seconds": time.perf_counter() - started})

    ctx = Context(model, dev, config, Path(data_root) if data_root else None, options, dict(done), on_result,
                  _clean_accuracy(run_dir, digest) if suite != "clean" else None)
    results, summary, files = run_suite(suite, ctx)
    root = data_root or config.get("data_root") or f"built-in {config.get('dataset')}"
    record.update({"results": results, "summary": summary, "complete": True, "created": _now(),
                   "seconds": time.perf_counter() - started, "data": {"root": str(root), "files": files}})
    write_json(target, record)
    return record


def _clean_accuracy(run_dir: Path, digest: str) -> float | None:
    """The same checkpoint's clean accuracy from RUN/eval/clean.json, if evaluated (for relative mCE)."""
    path = run_dir / "eval" / "clean.json"
    if not path.is_file():
        return None
    clean = read_json(path)
    if clean.get("complete") and clean.get("checkpoint", {}).get("sha256") == digest:
        return clean.get("summary", {}).get("accuracy")
    return None


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def run(args: argparse.Namespace) -> int:
    if args.threads < 0:
        raise ValueError(f"--threads must be >= 0, got {args.threads}")
    if args.threads:
        torch.set_num_threads(args.threads)
    corruptions = tuple(c.strip() for c in args.corruptions.split(",") if c.strip()) if args.corruptions else None
    options = EvalOptions(batch_size=args.batch_size, workers=args.workers, rms_estimator=args.rms_estimator,
                          epsilons=_epsilons(args.epsilons), corruptions=corruptions, weather=args.weather,
                          alexnet_flip=args.alexnet_flip, preprocess=Preprocess(args.resize, args.crop),
                          partial=args.partial)
    options = apply_overrides(options, args.overrides)
    record = evaluate(args.run_dir, args.suite, data_root=args.data_root, checkpoint=args.checkpoint,
                      device=args.device, options=options)
    summary = {k: v for k, v in record["summary"].items() if not isinstance(v, dict | list)}
    print(f"{args.suite}: {summary} -> {Path(args.run_dir) / 'eval' / (args.suite + '.json')}")
    return 0
