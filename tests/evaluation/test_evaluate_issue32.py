"""Issue 32 (parts 4 and 5), `noisymix evaluate`: the suite must fit its set and the run; partial
results are bound to the files they read; another checkpoint's results never overwrite the run's;
one evaluate of a run at a time; NaN weights and empty test sets are one line, not a traceback."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import torch
from PIL import Image

import fullscale.evaluation.own_split as own_split
from fullscale.data import ImageSet, imagenet_wnids, load_dataset
from fullscale.evaluation import cpu_inference_model
from fullscale.models import create_model
from noisymix_app.cli import main
from noisymix_infra.io import directory_lock, read_json, save_npy, save_torch, sha256_file, write_json


def _run(tmp_path, dataset="digits", classes=10, seed=0, name=None):
    """A run folder of a PreActResNet-18 (width 4) with weights drawn from a generator."""
    run = tmp_path / (name or f"run-{dataset}")
    model = create_model("preactresnet18", classes, width=4)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * (2 / p[0].numel()) ** 0.5)
    save_torch(run / "final.pt", model.state_dict())
    write_json(run / "config.json", {"model": "preactresnet18", "model_kwargs": {"width": 4}, "num_classes": classes,
                                     "dataset": dataset, "method": "baseline", "preset": "baseline", "seed": 0})
    return run


@pytest.fixture(scope="module")
def made_sets(tmp_path_factory):
    """A Digits-C and a Digits-P set made by `noisymix corrupt` (with their manifest.json)."""
    root = tmp_path_factory.mktemp("sets")
    assert main(["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(root / "digits-c"),
                 "--corruptions", "brightness", "--limit", "10"]) == 0
    assert main(["corrupt", "--dataset", "digits", "--kind", "p", "--out", str(root / "digits-p"),
                 "--corruptions", "rotate", "--limit", "4"]) == 0
    return root / "digits-c", root / "digits-p"


# --- part 4: the suite must match the set's manifest and the run's data set ------------------------


@pytest.mark.parametrize("suite", ["cifar10-c", "cifar100-c", "imagenet-c"])
def test_a_set_of_another_data_set_is_refused_by_its_manifest(tmp_path, one_line_error, made_sets, suite):
    digits_c, _ = made_sets
    run = _run(tmp_path, "cifar10")  # a CIFAR-10 model: only the set's manifest tells
    assert main(["evaluate", str(run), "--suite", suite, "--data-root", str(digits_c), "--partial"]) == 2
    line = one_line_error()
    assert "manifest.json" in line and "--suite digits-c" in line
    assert not (run / "eval").exists()


def test_a_suite_of_another_data_set_than_the_runs_is_refused(tmp_path, one_line_error, made_sets):
    digits_c, _ = made_sets
    # a CIFAR-10-C set as released (no manifest) given to a Digits run: 10 classes and 32 x 32 both,
    # so nothing else would tell; the run's config.json does
    released = tmp_path / "CIFAR-10-C"
    released.mkdir()
    shutil.copy(digits_c / "brightness.npy", released / "brightness.npy")
    shutil.copy(digits_c / "labels.npy", released / "labels.npy")
    run = _run(tmp_path, "digits")
    assert main(["evaluate", str(run), "--suite", "cifar10-c", "--data-root", str(released), "--partial"]) == 2
    line = one_line_error()
    assert "trained on digits" in line and "--suite digits-c" in line
    assert not (run / "eval").exists()
    # the matching suite is accepted, on the manifest's set and on one made elsewhere
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(digits_c), "--partial"]) == 0
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(released), "--partial"]) == 0


def test_a_folder_of_another_kind_is_refused_as_data_or_run(tmp_path, one_line_error, made_sets):
    digits_c, digits_p = made_sets
    run = _run(tmp_path, "digits")
    cases = [
        (["--suite", "digits-p", "--data-root", str(digits_c)], "--data-root"),  # a -C set for a -P suite
        (["--suite", "digits-c", "--data-root", str(digits_p)], "--data-root"),
        (["--suite", "clean", "--data-root", str(digits_c)], "--data-root"),  # not the test split
        (["--suite", "digits-c", "--data-root", str(run), "--partial"], "--data-root"),  # a run as data
    ]
    for args, what in cases:
        assert main(["evaluate", str(run), *args]) == 2
        assert what in one_line_error()
    assert main(["evaluate", str(digits_c), "--suite", "clean"]) == 2  # a -C set as RUN
    assert "RUN" in one_line_error()
    assert not (run / "eval").exists()


def test_a_p_set_of_another_resolution_is_refused(tmp_path, one_line_error):
    run = _run(tmp_path, "digits")
    root = tmp_path / "big-p"
    save_npy(root / "rotate.npy", np.zeros((2, 3, 64, 64, 3), np.uint8))
    assert main(["evaluate", str(run), "--suite", "digits-p", "--data-root", str(root)]) == 2
    assert "64x64" in one_line_error()


# --- part 5: partial results bound to the files they read ------------------------------------------


def _sentinel_partial(run, suite, name, entry):
    """The complete result rewritten as a partial one whose ``name`` holds an impossible value:
    kept on resume only if the evaluation believes the set unchanged."""
    result = read_json(run / "eval" / f"{suite}.json")
    write_json(run / "eval" / f"{suite}.json", {**result, "complete": False, "results": {name: entry}})


def test_a_p_set_replaced_in_place_is_evaluated_anew(tmp_path):
    run = _run(tmp_path, "digits")
    digits = load_dataset("digits", "test")
    root = tmp_path / "digits-p"
    frames = torch.stack([digits.images[:6], digits.images[6:12], digits.images[:6]], 1).permute(0, 1, 3, 4, 2)
    for name in ("rotate", "gaussian_noise"):
        save_npy(root / f"{name}.npy", frames.numpy())
    args = ["evaluate", str(run), "--suite", "digits-p", "--data-root", str(root)]
    assert main(args) == 0
    sentinel = {"flip_probability": -1.0, "n_sequences": 6, "frames": 3}
    _sentinel_partial(run, "digits-p", "rotate", sentinel)
    assert main(args) == 0
    assert read_json(run / "eval" / "digits-p.json")["results"]["rotate"] == sentinel  # same set: resumed
    # the set made anew in the same folder: rotate is another file now, its old result is not kept
    _sentinel_partial(run, "digits-p", "rotate", sentinel)
    save_npy(root / "rotate.npy", np.zeros_like(frames.numpy()))
    assert main(args) == 0
    redone = read_json(run / "eval" / "digits-p.json")["results"]["rotate"]
    assert redone["flip_probability"] == 0.0  # constant frames never flip


def _png(path, image_u8):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image_u8.permute(1, 2, 0).numpy()).save(path)


def test_an_imagenet_c_folder_replaced_in_place_is_evaluated_anew(tmp_path):
    run = _run(tmp_path, "imagenet", 1000)
    digits = load_dataset("digits", "test")
    wnid = imagenet_wnids()[0]
    root = tmp_path / "imagenet-c"
    for c in ("fog", "contrast"):
        for s in range(1, 6):
            _png(root / c / str(s) / wnid / "x.png", digits.images[s])
    args = ["evaluate", str(run), "--suite", "imagenet-c", "--data-root", str(root), "--partial",
            "--resize", "0", "--crop", "32", "--workers", "0"]
    assert main(args) == 0
    sentinel = {str(s): {"accuracy": -1.0, "n": 1} for s in range(1, 6)}
    _sentinel_partial(run, "imagenet-c", "fog", sentinel)
    assert main(args) == 0
    assert read_json(run / "eval" / "imagenet-c.json")["results"]["fog"] == sentinel  # same folders: resumed
    # one image replaced in place (same name, same folder): fog is evaluated again
    _sentinel_partial(run, "imagenet-c", "fog", sentinel)
    image = root / "fog" / "3" / wnid / "x.png"
    _png(image, digits.images[40])
    os.utime(image, ns=(image.stat().st_atime_ns, image.stat().st_mtime_ns + 10**9))  # coarse-clock file systems
    assert main(args) == 0
    redone = read_json(run / "eval" / "imagenet-c.json")["results"]["fog"]
    assert all(redone[str(s)]["accuracy"] in (0.0, 1.0) for s in range(1, 6))


# --- part 5: another checkpoint's results go elsewhere ---------------------------------------------


def test_another_checkpoint_does_not_overwrite_the_runs_results(tmp_path, capsys):
    run = _run(tmp_path, "digits")
    assert main(["evaluate", str(run), "--suite", "clean"]) == 0
    own = read_json(run / "eval" / "clean.json")
    other_run = _run(tmp_path, "digits", seed=1, name="other")
    other = tmp_path / "other.pt"
    shutil.copy(other_run / "final.pt", other)
    capsys.readouterr()
    assert main(["evaluate", str(run), "--suite", "clean", "--checkpoint", str(other)]) == 0
    out = capsys.readouterr().out
    assert read_json(run / "eval" / "clean.json") == own  # the run's own result is untouched
    digest = sha256_file(other)
    apart = run / "eval" / f"other-{digest[:12]}" / "clean.json"
    assert read_json(apart)["checkpoint"]["sha256"] == digest
    assert str(apart) in out
    # the run's own final.pt, named or copied, is the run's result
    copy = tmp_path / "copy.pt"
    shutil.copy(run / "final.pt", copy)
    (run / "eval" / "clean.json").unlink()
    assert main(["evaluate", str(run), "--suite", "clean", "--checkpoint", str(copy)]) == 0
    assert read_json(run / "eval" / "clean.json")["checkpoint"]["sha256"] == own["checkpoint"]["sha256"]
    assert sorted(p.name for p in (run / "eval").iterdir()) == ["clean.json", apart.parent.name]


# --- part 5: one evaluate of a run at a time ------------------------------------------------------


def test_a_second_evaluate_of_a_run_in_use_is_refused(tmp_path, one_line_error):
    run = _run(tmp_path, "digits")
    with directory_lock(run, "evaluating"):  # another evaluate (or train) of this run is under way
        assert main(["evaluate", str(run), "--suite", "clean"]) == 2
        assert "in use" in one_line_error()
    assert not (run / "eval" / "clean.json").exists()
    assert main(["evaluate", str(run), "--suite", "clean"]) == 0  # free again


# --- part 5: NaN weights and empty test sets: one line ---------------------------------------------


def test_nan_weights_on_a_c_set_are_one_line_naming_the_checkpoint(tmp_path, one_line_error, made_sets):
    digits_c, _ = made_sets
    run = _run(tmp_path, "digits")
    state = torch.load(run / "final.pt", weights_only=True)
    key = next(k for k in state if k.endswith("weight") and state[k].ndim == 4)
    state[key][0, 0, 0, 0] = float("nan")
    save_torch(run / "final.pt", state)
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(digits_c), "--partial"]) == 2
    line = one_line_error()
    assert "final.pt" in line and "non-finite" in line
    assert not (run / "eval" / "digits-c.json").exists()


def test_the_cpu_inference_model_of_a_nan_model_is_the_eager_model():
    """Nothing to compare the traced model against: the eager model, whose NaN logits the suites refuse."""
    model = create_model("preactresnet18", 10, width=4).eval()
    with torch.no_grad():
        model.linear.weight.fill_(float("nan"))
    images = torch.zeros(2, 3, 32, 32, dtype=torch.uint8)
    assert cpu_inference_model(model, images) is model


@pytest.mark.parametrize("suite", ["clean", "calibration", "fgsm"])
def test_an_empty_test_set_is_one_line(tmp_path, one_line_error, monkeypatch, suite):
    run = _run(tmp_path, "digits")
    empty = ImageSet(torch.zeros(0, 3, 32, 32, dtype=torch.uint8), torch.zeros(0, dtype=torch.long), 10, "digits",
                     "an empty test batch")
    monkeypatch.setattr(own_split, "load_dataset", lambda *args, **kwargs: empty)
    assert main(["evaluate", str(run), "--suite", suite]) == 2
    assert "no images" in one_line_error()
    assert not (run / "eval" / f"{suite}.json").exists()

