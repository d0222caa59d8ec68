"""Evaluating a run folder: ``evaluate(RUN, SUITE)`` -> ``RUN/eval/SUITE.json``
(docs/results-schema.md), the library function behind ``noisymix evaluate`` (``fullscale.cli_evaluate``)
and the sweeps.  A bare checkpoint without a run directory (a torchvision-format state dict, as public
ImageNet checkpoints are distributed): ``evaluate(FILE, SUITE, model="resnet50", out=DIR)`` ->
``DIR/eval/SUITE.json`` (a 1000-class ImageNet model).

The model is rebuilt from ``RUN/config.json`` with ``RUN/final.pt`` (or ``checkpoint``, any
``state_dict``, loaded with ``weights_only=True``).  clean / calibration / fgsm use the run's own
dataset's test split (``data_root`` overrides the run's data root; for ``dataset: imagenet`` it is
the validation class folders).  -C/-P suites are resumable: after each corruption the partial JSON
is written atomically (``"complete": false``) and a rerun with the same checkpoint and options
skips the corruptions already in it, each entry bound to the files it read (a set replaced in place
is evaluated anew).

Issue 32: the suite must fit its data and the run: a -C/-P set made by ``noisymix corrupt`` says in
its ``manifest.json`` which data set and kind it is (``--suite cifar10-c --data-root DIGITS-C`` is
refused), and a CIFAR/Digits suite is for a run of that data set.  One ``evaluate`` (or ``train``)
at a time per run: the run's lock, as ``train`` takes it.  A ``checkpoint`` other than the run's
``final.pt`` writes to ``RUN/eval/<checkpoint stem>-<sha256[:12]>/SUITE.json``, so the run's own
results (which ``figures`` reads) are never overwritten by another model's.
"""

from __future__ import annotations

import contextlib
import datetime
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import torch

from fullscale.data import DATASETS
from fullscale.data.registry import IMAGE_SIDE
from fullscale.evaluation.context import Context, EvalOptions
from fullscale.evaluation.robustbench import check_protocol
from fullscale.evaluation.suites import RESUMABLE, SUITES, run_suite
from fullscale.run_model import load_bare_model, load_run_model
from fullscale.run_record import config_sha256
from fullscale.runs import split_run_record
from noisymix_infra.folder_kind import KINDS, check_out_path, folder_kind, require_kind
from noisymix_infra.io import (
    data_fingerprint,
    directory_lock,
    printable,
    read_json,
    read_json_object,
    sha256_file,
    write_json,
)
from noisymix_infra.provenance import provenance
from noisymix_infra.validate import check_device_name

__all__ = ["Float32", "bare_dataset", "check_output_width", "evaluate", "evaluate_model", "removed_if_refused",
           "usable_device"]


def evaluate(run_dir: str | Path, suite: str, *, data_root: str | None = None, checkpoint: str | None = None,
             device: str = "cpu", options: EvalOptions | None = None, model: str | None = None,
             out: str | Path | None = None) -> dict:
    """Evaluate the run on ``suite`` and write (and return) ``RUN/eval/SUITE.json``; with ``model``,
    ``run_dir`` (or ``checkpoint``) is a bare state dict and the result goes to ``out/eval/SUITE.json``;
    a ``checkpoint`` other than the run's ``final.pt`` goes to ``RUN/eval/<stem>-<sha256[:12]>/``.
    The returned record's ``path`` says where it was written."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; available: {', '.join(SUITES)}")
    options = options or EvalOptions()
    run_dir = Path(run_dir)
    check_device_name(str(device), key="--device")
    dev = usable_device(device)
    if data_root is not None:
        _check_data_root(suite, Path(data_root))  # the set's kind and manifest, before the model is loaded
    check_protocol(suite, options.protocol, options.image_list,
                   suite == "imagenet-c" or (suite == "clean" and model is not None))
    if model is not None:
        if out is None:
            raise ValueError("--model (a bare checkpoint) needs --out DIR for the results")
        check_out_path(out, "--out")  # the root, a file, a folder inside a run or a set (issue 41)
        require_kind(out, "run", "--out")
        weights = Path(checkpoint) if checkpoint else run_dir
        dataset, num_classes = bare_dataset(suite)
        net, config = load_bare_model(weights, model, num_classes, dev, dataset)
        digest = sha256_file(weights)
        with removed_if_refused(out):
            return evaluate_model(net, config, suite, Path(out), weights=str(weights), digest=digest, own_run=True,
                                  data_root=data_root, device=dev, options=options)
    else:
        require_kind(run_dir, "run", "RUN")
        net, config = load_run_model(run_dir, checkpoint, dev)
        weights = Path(checkpoint) if checkpoint else run_dir / "final.pt"
        if not weights.is_absolute() and not weights.exists() and (run_dir / weights).exists():
            weights = run_dir / weights  # as load_run_model reads it: a file of the run named relative to it
    digest = sha256_file(weights)
    own_run = checkpoint is None or _is_final(run_dir, weights, digest)
    return evaluate_model(net, config, suite, run_dir, weights=str(weights), digest=digest, own_run=own_run,
                          data_root=data_root, device=dev, options=options)


def usable_device(device: str | torch.device, what: str = "--device") -> torch.device:
    """``device`` as a ``torch.device``, refused (one line) when torch knows the name but cannot use
    it here (``cuda`` on a CPU build, ``cuda:7`` on a machine with one GPU)."""
    try:
        dev = torch.device(device)
        torch.empty(0, device=dev)  # a device name torch knows but cannot use here fails now
    except (RuntimeError, AssertionError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{what} {printable(str(device))!r} is not usable here ({detail[:160]}); "
                         "use cpu or cuda[:N]") from None
    return dev


def evaluate_model(net: torch.nn.Module, config: dict, suite: str, run_dir: Path, *, weights: str, digest: str,
                   own_run: bool = True, data_root: str | None = None, device: torch.device | str = "cpu",
                   options: EvalOptions | None = None) -> dict:
    """``net`` (eval mode, on ``device``; ``config``: its ``model``, ``num_classes``, ``dataset``) on
    ``suite`` -> ``run_dir/eval/SUITE.json`` (``own_run`` False: under ``eval/<stem>-<sha256[:12]>/``);
    ``weights`` and ``digest`` name the weights in the record and bind a resume to them (``own_run``:
    the run's own model, or a bare one whose ``run_dir`` is its ``--out``)."""
    options = options or EvalOptions()
    dev = torch.device(device)
    if data_root is not None:
        _check_data_root(suite, Path(data_root))  # as evaluate does (a model in memory comes here directly)
    check_protocol(suite, options.protocol, options.image_list,
                   suite == "imagenet-c" or (suite == "clean" and config.get("dataset") == "imagenet"))
    _check_finite(net, weights)
    _check_suite_fits_run(suite, config, run_dir)
    check_output_width(net, int(config["num_classes"]), _input_side(config, options), dev,
                       config.get("dataset") or suite)
    if dev.type == "cuda":
        net = net.to(memory_format=torch.channels_last)
        if options.protocol == "robustbench":  # the leaderboard's float32, not our bf16 autocast
            net = Float32(net)
    eval_dir = run_dir / "eval"
    if not own_run:
        # another model than the run's: its results beside the run's, never over them (issue 32)
        eval_dir = eval_dir / _checkpoint_folder(Path(weights), digest)
    target = eval_dir / f"{suite}.json"
    if target.exists() and not _is_eval_record(target):  # a file of the user's own, never written over
        raise ValueError(f"{printable(str(target))} exists and is not an evaluation of noisymix: it is not "
                         "replaced; move it away")
    record = {"suite": suite, "run": str(run_dir), "checkpoint": {"path": str(weights), "sha256": digest},
              "model": config["model"], "dataset": config.get("dataset", ""), "device": str(dev),
              "options": options.as_dict(), "complete": False, "provenance": provenance()}
    if folder_kind(run_dir) == "run":  # the config the weights came from, by content: the report checks it (issue 41)
        record["config_sha256"] = config_sha256(split_run_record(read_json(run_dir / "config.json"))[0])
    root = data_root or config.get("data_root") or f"built-in {config.get('dataset')}"
    record["data_root"] = str(Path(root).resolve()) if data_root else str(root)
    if data_root and Path(data_root).is_dir():  # the sweep compares it before reusing the result (issue 23)
        record["data_fingerprint"] = data_fingerprint(data_root)
    # One writer per run, as for `train`: a second evaluate of the run fails at once instead of
    # both finishing and one result being lost (issue 32)
    with directory_lock(run_dir, "evaluating"):
        done, identity = {}, {}
        if suite in RESUMABLE and target.is_file():
            try:  # a partial result it cannot read is started anew
                previous = read_json_object(target, "an evaluation of noisymix", {"checkpoint.sha256": "string",
                                                                                  "results": "object"})
            except ValueError:
                previous = None
            # a partial result resumes only on the same checkpoint, options and data folder; within it,
            # each entry also carries the identity of the files it read (Context.done_identity)
            if (previous is not None and not previous.get("complete", True)
                    and isinstance(previous.get("data_identity") or {}, dict)
                    and previous["checkpoint"]["sha256"] == digest
                    and previous.get("config_sha256") == record.get("config_sha256")
                    and previous.get("options") == record["options"]
                    and previous.get("data_root") == record["data_root"]):
                done = dict(previous.get("results") or {})
                identity = dict(previous.get("data_identity") or {})
        started = time.perf_counter()

        def on_result(name: str, entry: dict, data_identity: str | None = None) -> None:
            done[name] = entry
            if data_identity is not None:
                identity[name] = data_identity
            write_json(target, {**record, "results": done, "data_identity": identity, "created": _now(),
                                "seconds": time.perf_counter() - started})

        clean_accuracy, clean_from = (_clean_accuracy(eval_dir, digest, options, config.get("dataset") == "imagenet")
                                      if suite != "clean" else (None, None))
        ctx = Context(net, dev, config, Path(data_root) if data_root else None, options, dict(done), dict(identity),
                      on_result, clean_accuracy, clean_from)
        results, summary, files = run_suite(suite, ctx)
        record["data_identity"] = identity
        record.update({"results": results, "summary": summary, "complete": True, "created": _now(),
                       "seconds": time.perf_counter() - started, "data": {"root": str(root), "files": files}})
        write_json(target, record)
    return {**record, "path": str(target)}


@contextlib.contextmanager
def removed_if_refused(out: str | Path) -> Iterator[None]:
    """Inside: a refusal or failure removes ``out`` again when this call made it and it holds
    nothing but the lock (issue 48: a refused ``evaluate --model`` left a folder with only ``.lock``).
    A folder that existed before, or one holding any result (a partial -C evaluation resumes), is kept.
    Any exception, not only ``ValueError`` (issue 54: an image list naming files that are not there,
    or a name too long for the file system, is an ``OSError`` and left ``.lock`` behind)."""
    made = not Path(out).exists()
    try:
        yield
    except BaseException:
        if made and Path(out).is_dir() and all(p.name == ".lock" for p in Path(out).rglob("*") if not p.is_dir()):
            shutil.rmtree(out, ignore_errors=True)
        raise


def check_output_width(net: torch.nn.Module, num_classes: int, side: int, device: torch.device | str,
                       data: str) -> None:
    """Refuse (one line) a model whose forward does not give ``num_classes`` logits per image,
    probed once on two grey ``side`` x ``side`` images before any work: a 5-way model scored on a
    10-class set reported 9.8 % instead of an error, and a forward returning a tuple was a
    traceback (issue 48).  Eval mode and ``inference_mode``: no weight, statistic or draw changes."""
    with torch.inference_mode():
        logits = net(torch.full((2, 3, side, side), 0.5, device=device))
    if not isinstance(logits, torch.Tensor):
        raise ValueError(f"the model's forward returns {type(logits).__name__}, not a tensor of logits "
                         f"(images, classes): make it return the logits alone")
    if logits.ndim != 2 or logits.shape[0] != 2:
        raise ValueError(f"the model gives outputs of shape {tuple(logits.shape)} for 2 images; expected "
                         f"(2, {num_classes}): one row of logits per image")
    if logits.shape[1] != num_classes:
        raise ValueError(f"the model gives {logits.shape[1]} outputs per image, the data set has {num_classes} "
                         f"classes ({printable(data)}): give a model with {num_classes} outputs")


def _input_side(config: dict, options: EvalOptions) -> int:
    """The side of the images the suite gives the model: an in-memory set's own, else the crop."""
    return IMAGE_SIDE.get(str(config.get("dataset")), options.preprocess.crop or 224)


class Float32(torch.nn.Module):
    """``model`` with autocast off inside (float32 logits whatever the caller's autocast)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(x.device.type, enabled=False):
            return self.model(x.float())


#: the classes of a bare model by the data set of its suite
_CLASSES = {"cifar10": 10, "cifar100": 100, "digits": 10, "digits16": 10, "imagenet": 1000}


def bare_dataset(suite: str) -> tuple[str, int]:
    """(data set, classes) of a model without a run: its -C/-P suite's, else ImageNet's 1000."""
    dataset = _suite_dataset(suite) or "imagenet"
    return dataset, _CLASSES[dataset]


def _is_eval_record(path: Path) -> bool:
    """Whether ``path`` is a result this function wrote, of any version (``{"suite", "checkpoint"
    or "summary", ...}``)."""
    try:
        record = read_json(path)
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and "suite" in record and ("checkpoint" in record or "summary" in record)


def _suite_dataset(suite: str) -> str | None:
    """The data set a suite is of (``None``: clean, calibration and FGSM are of the run's own)."""
    if suite.startswith("imagenet-"):
        return "imagenet"
    return suite[:-2] if suite.endswith(("-c", "-p")) else None


def _set_manifest(root: Path) -> dict | None:
    """The ``manifest.json`` of a set made by ``noisymix corrupt`` in ``root``, or ``None`` (a set
    made elsewhere: the released CIFAR-10-C, ImageNet-C, ImageNet-R)."""
    path = root / "manifest.json"
    if not path.is_file():
        return None
    manifest = read_json(path)
    if not isinstance(manifest, dict) or manifest.get("kind") not in ("c", "p") or "names" not in manifest:
        return None  # not ours (folder_kind does not take it for a set either)
    return manifest


def _check_data_root(suite: str, root: Path) -> None:
    """Refuse (one line) a ``--data-root`` that is not the suite's data: a folder of ours of another
    kind (a run, a -P set for a -C suite, ...), or a set whose manifest names another data set or
    kind (``--suite cifar10-c`` on a Digits-C set would write cifar10-c.json of digits images)."""
    if not root.is_dir():
        return  # the suite says what it needs there
    letter = suite.rsplit("-", 1)[-1] if suite.endswith(("-c", "-p")) else None
    if letter is not None:
        require_kind(root, f"{letter}-set", "--data-root")
    else:
        found = folder_kind(root)
        if found is not None:
            raise ValueError(f"--data-root: {printable(str(root))} is {KINDS[found]}, not the data of --suite {suite}")
    manifest = _set_manifest(root)
    if manifest is None:
        return
    made_of, made_kind = str(manifest.get("dataset")), manifest["kind"]
    # a tree of class folders made ImageNet-C (fullscale.cli_corrupt); a named data set its own -C/-P
    made_as = made_of if made_of in DATASETS else "imagenet"
    if (made_as, made_kind) != (_suite_dataset(suite), letter):
        raise ValueError(f"--data-root {printable(str(root))} is a -{made_kind.upper()} set of "
                         f"{printable(made_of)} (its manifest.json), not the data of --suite {suite}: "
                         f"use --suite {made_as}-{made_kind}")
    if made_as == "imagenet" and manifest.get("params") != "imagenet":
        raise ValueError(f"--data-root {printable(str(root))}: its manifest.json says parameters "
                         f"{printable(manifest.get('params'))!r}, ImageNet-C is made with 'imagenet' (224 x 224)")


def _check_suite_fits_run(suite: str, config: dict, run_dir: Path) -> None:
    """A CIFAR/Digits suite is for a model of that data set: a Digits model scored on CIFAR-10-C
    (both 10 classes, 32 x 32) would give a cifar10-c.json that means nothing."""
    wanted, have = _suite_dataset(suite), config.get("dataset")
    if wanted is None or not have or have == wanted:
        return
    if wanted == "imagenet" and have not in DATASETS:
        return  # a 1000-class model of another ImageNet-like set: the suite checks the classes
    hint = f"--suite {have}-{suite[-1]}" if have in DATASETS or have == "imagenet" else "a suite of its data set"
    raise ValueError(f"--suite {suite} is for a model of {wanted}; {printable(str(run_dir))} was trained on "
                     f"{printable(have)} (its config.json): use {hint}")


def _check_finite(net: torch.nn.Module, weights: Path) -> None:
    """Refuse a model with NaN/inf weights before any image goes through it (a diverged run): its
    logits would be NaN, and a NaN argmax is class 0 everywhere."""
    for name, tensor in net.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"{printable(str(weights))} has non-finite weights (NaN/inf, in {printable(name)}): "
                             "a diverged run? nothing evaluated")


def _is_final(run_dir: Path, weights: Path, digest: str) -> bool:
    """Whether ``weights`` is the run's own ``final.pt`` (the same file, or the same bytes)."""
    final = run_dir / "final.pt"
    if not final.is_file():
        return False
    return weights.resolve() == final.resolve() or sha256_file(final) == digest


def _checkpoint_folder(weights: Path, digest: str) -> str:
    """``<stem>-<sha256[:12]>``: the folder under ``RUN/eval`` for the results of another checkpoint;
    the stem kept to safe characters (a file name may hold anything), the hash telling apart two
    files of one name."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", weights.stem).strip("._")[:40] or "checkpoint"
    return f"{stem}-{digest[:12]}"


def _clean_accuracy(eval_dir: Path, digest: str, options: EvalOptions,
                    folders: bool) -> tuple[float | None, dict | None]:
    """(accuracy, where it was read) of ``eval_dir/clean.json`` for relative mCE, or (None, None): it
    must be of the same checkpoint and, for image ``folders`` (ImageNet; in-memory sets are not
    preprocessed), of images preprocessed alike (the same resize and crop; issue 23: a clean
    accuracy at another crop is the accuracy of other images).  Its data root and file digests go
    into the summary beside it, so the reader sees which test set it came from."""
    path = eval_dir / "clean.json"
    if not path.is_file():
        return None, None
    try:  # a file it cannot use is as none (issue 60: ``"checkpoint": null`` was a traceback)
        clean = read_json_object(path, "an evaluation of noisymix", {"checkpoint.sha256": "string",
                                                                     "summary.accuracy": "number"})
    except ValueError:
        return None, None
    if clean.get("complete") is not True or clean["checkpoint"]["sha256"] != digest:
        return None, None
    preprocess = options.as_dict()["preprocess"]
    used, data = clean.get("options"), clean.get("data")
    if folders and (used.get("preprocess") if isinstance(used, dict) else None) != preprocess:
        return None, None
    where = {"path": str(path), "data_root": clean.get("data_root"), "options": {"preprocess": preprocess},
             "files": data.get("files") if isinstance(data, dict) else None}
    return clean["summary"]["accuracy"], where


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
