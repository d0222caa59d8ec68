"""``noisymix toy`` end to end through the front door, its files, and its errors."""

from __future__ import annotations

import argparse
import json

import pytest
from PIL import Image

from noisymix_app.cli import main
from toy import cli as toy_cli
from toy.schemes import PAPER_SCHEMES


def _args(tmp_path, **overrides):
    parser = argparse.ArgumentParser()
    toy_cli.add_arguments(parser)
    args = parser.parse_args(["--out", str(tmp_path / "out")])
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


def test_end_to_end_few_seeds_few_epochs(tmp_path, capsys):
    out = tmp_path / "toy"
    assert main(["toy", "--seeds", "3", "--epochs", "4", "--out", str(out)]) == 0
    report = json.loads((out / "toy.json").read_text())
    assert set(report["schemes"]) == set(PAPER_SCHEMES)          # keys sorted in the file
    assert report["experiment"]["schemes"] == list(PAPER_SCHEMES)  # the order is kept here
    for name, entry in report["schemes"].items():
        acc = entry["accuracy"]
        assert len(acc["values"]) == 3 and all(0 <= a <= 1 for a in acc["values"])
        # an accuracy on 250 test points is a multiple of 1/250
        assert all(abs(a * 250 - round(a * 250)) < 1e-9 for a in acc["values"])
        assert acc["ci95"][0] <= acc["mean"] <= acc["ci95"][1]
        assert set(entry["smoothness"]) == {"grad_norm", "hessian_norm", "contour_length"}
        if name != "baseline":
            assert set(entry["paired_vs_baseline"]["accuracy"]) >= {"mean_difference", "ci95", "win_rate"}
    assert "paper_accuracy" in report["schemes"]["noisymix"]
    assert report["hyperparameters"]["strengths"].keys() == {"mix", "noise", "jsd"}
    assert report["hyperparameters"]["tuning"]["protocol"]["seed_namespace"] == "tune"
    assert {c["id"] for c in report["claims"]} >= {"accuracy_ordering", "noisymix_smoothest",
                                                   "jsd_helps_manifold_mixup"}
    assert report["experiment"]["representative_seed"] in range(3)
    md = (out / "toy.md").read_text()
    assert "| NoisyMix | 88.8 |" in md and "## The paper's claims" in md
    for name, size in (("decision_boundaries.png", (1200, 800)), ("toy_data.png", (1000, 500))):
        path = out / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(path) as image:
            assert image.format == "PNG" and image.size == size
            image.verify()
    printed = capsys.readouterr().out
    assert "NoisyMix" in printed and "toy.json" in printed


def test_same_seed_same_accuracies_and_seed_prefix(tmp_path):
    """Twice the same run: identical numbers.  Fewer seeds: the same first seeds."""
    runs = []
    for k, seeds in enumerate((2, 2, 3)):
        out = tmp_path / f"run{k}"
        assert main(["toy", "--seeds", str(seeds), "--epochs", "3", "--schemes", "baseline,noisymix",
                     "--out", str(out)]) == 0
        runs.append(json.loads((out / "toy.json").read_text())["schemes"])
    for name in ("baseline", "noisymix"):
        assert runs[0][name]["accuracy"]["values"] == runs[1][name]["accuracy"]["values"]
        assert runs[0][name]["smoothness"] == runs[1][name]["smoothness"]
        assert runs[2][name]["accuracy"]["values"][:2] == runs[0][name]["accuracy"]["values"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--seeds", "0"], "--seeds must be >= 1, got 0"),
    (["--seeds", "-3"], "--seeds must be >= 1"),
    (["--schemes", "baseline,augmix"], "unknown scheme 'augmix'"),
    (["--schemes", "nfm,nfm"], "must not repeat"),
    (["--epochs", "0"], "--epochs must be >= 1"),
    (["--set", "mix.beta=2"], "unknown config key 'mix.beta'; valid keys: mix.alpha, noise.noise_add"),
    (["--set", "mix.alpha=much"], "mix.alpha must be a number, got 'much'"),
    (["--set", "alpha"], "override 'alpha' is not of the form key=value"),
    (["--tuning-seeds", "3"], "only applies with --retune"),
    (["--device", "tpu:banana"], "--device must be a torch device"),
    (["--threads", "-1"], "--threads must be >= 1 (or 0"),
])
def test_bad_arguments_are_one_line_errors(tmp_path, capsys, argv, message):
    assert main(["toy", "--out", str(tmp_path / "x"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("noisymix toy: error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "x" / "toy.json").exists()


def test_bad_arguments_raise_value_error_from_run(tmp_path):
    with pytest.raises(ValueError, match="--seeds must be >= 1"):
        toy_cli.run(_args(tmp_path, seeds=0))
    with pytest.raises(ValueError, match="unknown scheme 'bogus'; known schemes: baseline"):
        toy_cli.run(_args(tmp_path, schemes="bogus"))


def test_overrides_are_applied_and_recorded(tmp_path):
    out = tmp_path / "o"
    assert main(["toy", "--seeds", "2", "--epochs", "2", "--schemes", "manifold_mixup",
                 "--set", "mix.alpha=1", "--out", str(out)]) == 0
    report = json.loads((out / "toy.json").read_text())
    assert report["schemes"]["manifold_mixup"]["strengths"]["alpha"] == 1.0
    assert report["hyperparameters"]["overrides"] == ["mix.alpha=1"]
    assert "--set mix.alpha=1" in report["command"]
    assert report["claims"] == []                     # no claim can be checked with one scheme


def test_retune_with_tiny_settings_writes_and_uses_its_tuning(tmp_path):
    out = tmp_path / "r"
    assert main(["toy", "--seeds", "2", "--epochs", "2", "--schemes", "baseline,nfm", "--retune",
                 "--tuning-seeds", "1", "--out", str(out)]) == 0
    tuned = json.loads((out / "tuned.json").read_text())
    report = json.loads((out / "toy.json").read_text())
    assert tuned["protocol"]["seeds"] == 1 and tuned["protocol"]["train"]["epochs"] == 2
    assert report["hyperparameters"]["strengths"] == tuned["strengths"]
    assert report["hyperparameters"]["source"].startswith("retuned in this run")
    nfm = report["schemes"]["nfm"]["strengths"]
    assert nfm["alpha"] == tuned["strengths"]["mix"]["alpha"]
    assert nfm["noise_add"] == tuned["strengths"]["noise"]["noise_add"]


def test_extra_scheme_and_seven_panels(tmp_path):
    out = tmp_path / "s"
    schemes = "baseline,noise,manifold_mixup,nfm,manifold_mixup_jsd,noisymix,stability"
    assert main(["toy", "--seeds", "2", "--epochs", "2", "--schemes", schemes, "--out", str(out)]) == 0
    with Image.open(out / "decision_boundaries.png") as image:
        assert image.size == (1200, 1200)                     # three rows of three panels
    report = json.loads((out / "toy.json").read_text())
    assert "paper_accuracy" not in report["schemes"]["stability"]
    assert report["schemes"]["stability"]["strengths"]["jsd_weight"] > 0
