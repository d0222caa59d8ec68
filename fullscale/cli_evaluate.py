"""``noisymix evaluate RUN --suite SUITE [--data-root DIR]`` -> ``RUN/eval/SUITE.json``.

Resumable: after each corruption the partial JSON is written atomically (``"complete": false``);
a rerun with the same checkpoint skips the corruptions already in it.
"""

from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

import torch

from fullscale.data import load_dataset
from fullscale.evaluation import SUITES, run_suite
from fullscale.runs import load_run_model
from noisymix.io import read_json, sha256_file, write_json

__all__ = ["add_arguments", "evaluate", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN", help="a run directory of `noisymix train`")
    parser.add_argument("--suite", required=True, choices=sorted(SUITES))
    parser.add_argument("--data-root", default=None, help="the -C/-P set (or the dataset for clean suites)")
    parser.add_argument("--checkpoint", default=None, help="weights other than RUN/final.pt")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")


def evaluate(run_dir: str | Path, suite: str, *, data_root: str | None = None, checkpoint: str | None = None,
             device: str = "cpu") -> dict:
    run_dir = Path(run_dir)
    dev = torch.device(device)
    model, config = load_run_model(run_dir, checkpoint, dev)
    if dev.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    weights = Path(checkpoint) if checkpoint else run_dir / "final.pt"
    digest = sha256_file(weights)
    target = run_dir / "eval" / f"{suite}.json"
    done = {}
    if target.exists():
        previous = read_json(target)
        if previous.get("checkpoint", {}).get("sha256") == digest and not previous.get("complete", True):
            done = previous.get("results", {})
    dataset = config["dataset"]
    test_root = config.get("data_root") or None
    test_set = load_dataset(dataset, "test", test_root)
    started = time.perf_counter()
    record = {"suite": suite, "run": str(run_dir), "checkpoint": {"path": str(weights), "sha256": digest},
              "model": config["model"], "dataset": dataset, "device": str(dev), "complete": False}

    def on_result(name: str, entry: dict) -> None:
        done[name] = entry
        write_json(target, {**record, "results": done, "created": _now(),
                            "seconds": time.perf_counter() - started})

    results, summary, files = run_suite(suite, model, dev, test_set, data_root, dict(done), on_result)
    record.update({"results": results, "summary": summary, "complete": True, "created": _now(),
                   "seconds": time.perf_counter() - started,
                   "data": {"root": str(data_root or test_set.source), "files": files}})
    write_json(target, record)
    return record


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def run(args: argparse.Namespace) -> int:
    torch.set_num_threads(max(1, torch.get_num_threads()))
    record = evaluate(args.run_dir, args.suite, data_root=args.data_root, checkpoint=args.checkpoint,
                      device=args.device)
    print(f"{args.suite}: {record['summary']}")
    return 0
