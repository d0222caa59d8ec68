"""The trainer end to end on the built-in digits: every method runs, resume is exact, errors are clear."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
import torch

from fullscale.models import create_model
from fullscale.run_model import load_run_model
from fullscale.training.checks import NonFiniteLoss
from fullscale.training.config import OptimConfig, TrainConfig
from fullscale.training.loop import train
from fullscale.training.methods import METHODS
from fullscale.training.presets import PRESETS, resolve_config
from fullscale.training.step import step_loss
from noisymix_app.cli import main
from noisymix_infra.io import load_state_dict

QUICK = ["dataset=digits", "width=4", "epochs=1", "batch_size=32", "train_subset=64"]
QUICK_ARGS = [a for kv in QUICK for a in ("--set", kv)]


def test_presets_cover_every_table_row_and_ablation_row():
    assert {f"ablation-{s}" for s in ("----", "--N-", "-F--", "-FN-", "A---", "A-NJ", "A--J", "AFN-", "AF-J",
                                      "AFNJ")} <= set(PRESETS)
    for dataset in ("cifar10", "cifar100"):
        for method in ("baseline", "mixup", "manifold_mixup", "cutmix", "nfm", "augmix_jsd", "noisymix"):
            assert f"{dataset}-preactresnet18-{method}" in PRESETS
    for name in PRESETS:  # every preset resolves to a valid config
        resolve_config(name, [])


def test_ablation_switches_match_the_methods():
    for name, (a, f, n, j) in {"ablation-A-NJ": "A-NJ", "ablation-AF-J": "AF-J"}.items():
        method = METHODS[resolve_config(name, []).method]
        assert method.augmentations == (a == "A") and method.feature_mixing == (f == "F")
        assert method.noise == (n == "N") and method.jsd == (j == "J")


def test_unknown_preset_and_key_name_the_valid_ones():
    with pytest.raises(ValueError, match="list-presets"):
        resolve_config("puzzle-mix", [])
    with pytest.raises(ValueError, match="valid keys"):
        resolve_config("baseline", ["learning_rate=0.1"])


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_gives_a_finite_loss_and_gradient(name):
    if METHODS[name].mixing == "puzzlemix":
        pytest.importorskip("gco", reason="Puzzle Mix needs gco-wrapper (pip install 'noisymix[puzzlemix]')")
    cfg = resolve_config(name, ["width=4"])
    model = create_model("preactresnet18", 10, width=4)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 10, (8,), generator=g)
    parts = step_loss(model, model, x, y, METHODS[name], cfg, 10, g, torch.Generator().manual_seed(1))
    assert torch.isfinite(parts.total)
    parts.total.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())
    if METHODS[name].jsd:
        assert parts.jsd > 0
        torch.testing.assert_close(parts.total, parts.cross_entropy + cfg.jsd_weight * parts.jsd)
    else:
        assert parts.jsd == 0


def test_end_to_end_cli_run_writes_the_run_directory(tmp_path):
    run = tmp_path / "run"
    assert main(["train", "--preset", "noisymix", "--out", str(run), *QUICK_ARGS]) == 0
    record = json.loads((run / "config.json").read_text())
    config, facts = record["config"], record["run"]  # the config grouped (issue 33)
    assert config["method"] == "noisymix" and config["data"]["dataset"] == "digits" and facts["num_classes"] == 10
    assert facts["model_kwargs"] == {"width": 4} and facts["provenance"]["versions"]["torch"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent)
    assert facts["provenance"]["commit"] == (head.stdout.strip() if head.returncode == 0 else None)
    assert facts["started"] <= facts["finished"]
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1
    assert {"loss", "cross_entropy", "jsd", "lr", "images_per_s"} <= set(json.loads(lines[0]))
    model, _ = load_run_model(run)
    assert model(torch.rand(2, 3, 32, 32)).shape == (2, 10)
    # a finished run is not overwritten silently
    assert main(["train", "--preset", "noisymix", "--out", str(run), *QUICK_ARGS]) == 2


@pytest.mark.parametrize("name", sorted(METHODS))
def test_short_digits_training_lowers_the_loss(name, tmp_path):
    # the cross-entropy part: with JSD the consistency term starts near 0 (near-uniform outputs
    # agree) and grows as the network commits, so the total is not monotone early on
    cfg = resolve_config(name, ["dataset=digits", "width=8", "epochs=4", "batch_size=32", "train_subset=256"])
    train(cfg, tmp_path / "r")
    records = [json.loads(line) for line in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    ce = [r["cross_entropy"] for r in records]
    assert len(ce) == 4 and all(map(math.isfinite, ce))
    assert ce[-1] < ce[0] - 0.15, ce  # margins seen: 0.27 to 0.99


def test_resume_gives_the_same_weights_as_a_straight_run(tmp_path, crash_then_resume):
    cfg = resolve_config("noisymix", [*QUICK, "epochs=2"])
    straight, resumed = crash_then_resume(cfg, tmp_path / "straight", tmp_path / "resumed")
    for key in straight:
        assert torch.equal(straight[key], resumed[key]), key
    # the resumed run restarted from epoch 1's checkpoint and wrote each epoch's metrics once
    assert len((tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()) == 2


def test_non_finite_loss_stops_naming_the_step_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch,
                                                                                   capsys):
    import fullscale.training.step as step_module
    cfg = resolve_config("noisymix", [*QUICK, "epochs=3"])
    calls = {"n": 0}
    original = step_module.noisymix_loss

    def nan_at_step_4(*args, **kwargs):  # 64 images / 32 = 2 steps per epoch: epoch 2, step 2
        calls["n"] += 1
        parts = original(*args, **kwargs)
        if calls["n"] == 4:
            return type(parts)(parts.total * float("nan"), parts.cross_entropy, parts.jsd * float("nan"))
        return parts
    monkeypatch.setattr(step_module, "noisymix_loss", nan_at_step_4)
    with pytest.raises(NonFiniteLoss, match=r"epoch 2, step 2: total=nan, cross_entropy=[0-9.]+, jsd=nan"):
        train(cfg, tmp_path / "r")
    state = load_state_dict(tmp_path / "r" / "checkpoint.pt")
    assert state["epoch"] == 1 and all(torch.isfinite(v).all() for v in state["model"].values()
                                       if v.is_floating_point())
    assert not (tmp_path / "r" / "final.pt").exists()
    assert len((tmp_path / "r" / "metrics.jsonl").read_text().splitlines()) == 1
    # the front door reports it in one line (exit status 1), not a traceback
    calls["n"] = 0
    quick = [a for kv in QUICK if not kv.startswith("epochs=") for a in ("--set", kv)]  # a key is given once
    assert main(["train", "--preset", "noisymix", "--out", str(tmp_path / "cli"), *quick,
                 "--set", "epochs=3"]) == 1
    assert "non-finite loss at epoch 2, step 2" in capsys.readouterr().err


def test_resume_refuses_a_changed_config_and_a_fresh_run_refuses_an_old_directory(tmp_path):
    cfg = resolve_config("baseline", QUICK)
    train(cfg, tmp_path / "r")
    changed = resolve_config("baseline", [*QUICK, "lr=0.05"])
    with pytest.raises(ValueError, match="lr"):
        train(changed, tmp_path / "r", resume=True)
    with pytest.raises(ValueError, match="--resume"):
        train(cfg, tmp_path / "r")
    # resuming a finished run with the same config is a no-op that keeps the result
    before = load_state_dict(tmp_path / "r" / "final.pt")
    train(cfg, tmp_path / "r", resume=True)
    after = load_state_dict(tmp_path / "r" / "final.pt")
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_heldout_split_is_reported_and_not_trained_on(tmp_path):
    cfg = resolve_config("baseline", [*QUICK, "heldout=32"])
    train(cfg, tmp_path / "r")
    record = json.loads((tmp_path / "r" / "metrics.jsonl").read_text().splitlines()[0])
    assert 0.0 <= record["heldout_accuracy"] <= 1.0
    assert json.loads((tmp_path / "r" / "config.json").read_text())["run"]["train_images"] == 32


def test_bad_config_values_are_refused():
    with pytest.raises(ValueError):
        TrainConfig(optim=OptimConfig(epochs=0))
    with pytest.raises(ValueError, match="JSD"):
        from fullscale.training.methods import Method
        Method("x", "x", jsd=True)


def test_load_run_model_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        load_run_model(tmp_path)
    run = tmp_path / "run"
    train(resolve_config("baseline", QUICK), run)
    model, config = load_run_model(run, "checkpoint.pt")  # a resumable checkpoint, named relative to the run
    assert config["model_kwargs"] == {"width": 4} and not model.training
    with pytest.raises(FileNotFoundError, match=r"nothere\.pt"):
        load_run_model(run, tmp_path / "nothere.pt")
    other = create_model("preactresnet18", 10, width=8).state_dict()
    torch.save(other, tmp_path / "wide.pt")
    with pytest.raises(ValueError, match="does not fit preactresnet18"):
        load_run_model(run, tmp_path / "wide.pt")


def test_cli_lists_presets_and_refuses_unknown_keys(tmp_path, capsys):
    assert main(["train", "--list-presets"]) == 0
    listing = capsys.readouterr().out
    assert "ablation-AFNJ" in listing and "cifar100-wrn28_4-noisymix" in listing
    assert main(["train", "--preset", "baseline", "--out", str(tmp_path / "r"), "--set", "lrate=1"]) == 2
    assert "valid keys" in capsys.readouterr().err
    assert main(["train", "--preset", "augmax", "--out", str(tmp_path / "r")]) == 2
    assert "not implemented" in capsys.readouterr().err


# --- hostile inputs and concurrent use (issue 10, item 8) -----------------------------------


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


def test_a_second_train_on_a_locked_run_directory_fails_at_once_and_writes_nothing(tmp_path, capsys):
    from noisymix_infra.io import directory_lock
    out = tmp_path / "r"
    with directory_lock(out, "training"):  # another process training into it
        assert main(["train", "--preset", "baseline", "--out", str(out), *QUICK_ARGS]) == 2
        assert "in use by another process" in _one_line_error(capsys)
        assert not (out / "config.json").exists()
    train(resolve_config("baseline", QUICK), out)  # released: the folder is usable again
    assert (out / "final.pt").exists()


def test_the_lock_is_held_by_a_separate_process(tmp_path):
    """flock conflicts between processes (the campaign's case: two shells on one --out)."""
    import subprocess
    import sys
    import time
    out = tmp_path / "r"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time; h = open(sys.argv[1], 'a+b'); fcntl.flock(h, fcntl.LOCK_EX); "
        "print('locked', flush=True); time.sleep(60)"), str(out / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.perf_counter()
        with pytest.raises(ValueError, match="in use by another process"):
            train(resolve_config("baseline", QUICK), out)
        assert time.perf_counter() - t0 < 5  # at once, not after waiting
    finally:
        holder.kill()
        holder.wait()


def test_a_last_update_that_makes_the_weights_nan_saves_no_final_pt(tmp_path, monkeypatch):
    """The loss of the last step is finite (checked) but its gradient is NaN, so the update
    poisons the weights: nothing may be saved from them."""
    import fullscale.training.step as step_module
    calls = {"n": 0}
    original = step_module.noisymix_loss

    def nan_gradient_on_the_last_step(*args, **kwargs):  # 64 images / 32 = 2 steps
        calls["n"] += 1
        parts = original(*args, **kwargs)
        if calls["n"] == 2:  # sqrt'(0) = inf times 0: value unchanged, gradient NaN
            return type(parts)(parts.total + torch.sqrt(parts.total * 0), parts.cross_entropy, parts.jsd)
        return parts
    monkeypatch.setattr(step_module, "noisymix_loss", nan_gradient_on_the_last_step)
    with pytest.raises(NonFiniteLoss, match="non-finite weights after epoch 1"):
        train(resolve_config("noisymix", QUICK), tmp_path / "r")
    assert not (tmp_path / "r" / "final.pt").exists()
    assert not (tmp_path / "r" / "checkpoint.pt").exists()


@pytest.fixture(scope="module")
def two_widths(tmp_path_factory):
    root = tmp_path_factory.mktemp("widths")
    train(resolve_config("baseline", QUICK), root / "w4")
    train(resolve_config("baseline", [*QUICK, "width=8"]), root / "w8")
    return root


@pytest.mark.parametrize("foreign", ["other_width", "plain_state_dict", "random_bytes", "truncated", "a_list"])
def test_resume_from_a_foreign_checkpoint_is_one_line_naming_it(two_widths, tmp_path, capsys, foreign):
    import shutil
    out = tmp_path / "r"
    shutil.copytree(two_widths / "w4", out)
    ckpt = out / "checkpoint.pt"
    if foreign == "other_width":
        shutil.copy(two_widths / "w8" / "checkpoint.pt", ckpt)
    elif foreign == "plain_state_dict":
        shutil.copy(out / "final.pt", ckpt)
    elif foreign == "random_bytes":
        ckpt.write_bytes(torch.randint(0, 256, (5000,), generator=torch.Generator().manual_seed(0),
                                       dtype=torch.uint8).numpy().tobytes())
    elif foreign == "truncated":
        ckpt.write_bytes(ckpt.read_bytes()[:300])
    else:
        torch.save([1, 2, 3], ckpt)
    assert main(["train", "--preset", "baseline", "--out", str(out), "--resume", *QUICK_ARGS]) == 2
    assert "checkpoint.pt" in _one_line_error(capsys)


def test_bad_device_nan_values_and_a_file_as_out_are_one_line(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["train", "--preset", "baseline", "--out", str(out), *QUICK_ARGS, "--set", "device=tpu"]) == 2
    assert "device='tpu'" in _one_line_error(capsys)
    assert not (out / "config.json").exists()
    for bad in ("lr=nan", "lr=inf", "weight_decay=-inf"):
        assert main(["train", "--preset", "baseline", "--out", str(out), *QUICK_ARGS, "--set", bad]) == 2
        assert bad.split("=")[0] in _one_line_error(capsys)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert main(["train", "--preset", "baseline", "--out", str(a_file), *QUICK_ARGS]) == 2
    assert "not a folder" in _one_line_error(capsys)
    assert a_file.read_text() == "x"


def test_a_full_disk_is_one_line(tmp_path, capsys, monkeypatch):
    import errno
    import os

    import noisymix_infra.io as nio

    def no_space(path, mode="wb"):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    monkeypatch.setattr(nio, "atomic_write", no_space)
    assert main(["train", "--preset", "baseline", "--out", str(tmp_path / "r"), *QUICK_ARGS]) == 2
    assert os.strerror(errno.ENOSPC) in _one_line_error(capsys)


def test_orphan_temporary_files_are_swept_and_a_late_config_error_leaves_no_config(tmp_path, monkeypatch):
    import fullscale.training.trainee as trainee_module
    out = tmp_path / "r"
    out.mkdir()
    orphan = out / ".checkpoint.pt.k1ll3d.tmp"  # what kill -9 leaves mid-write
    orphan.write_bytes(b"half")

    def late_error(*args, **kwargs):
        raise ValueError("a setting only the first step finds wrong")
    monkeypatch.setattr(trainee_module, "drawn_step_loss", late_error)
    with pytest.raises(ValueError, match="first step"):
        train(resolve_config("baseline", QUICK), out)
    assert not orphan.exists()
    assert not (out / "config.json").exists()
    monkeypatch.undo()
    train(resolve_config("baseline", QUICK), out)  # the folder is not "already a run"
    assert (out / "final.pt").exists()


def test_paper_wrn_rows_train_the_public_codes_wideresnet28():
    """The paper's "Wide-ResNet-28x2" rows (tab:results_cifar100 on both data sets, tab:ablation)
    were trained by the public code's ``wideresnet28``: WRN-28-4 with dropout 0.1."""
    model = create_model(resolve_config("ablation-AFNJ", []).model.name, 100)
    # widen factor 4: the last stage has 64 * 4 = 256 channels; dropout 0.1 as the public model
    assert model.linear.in_features == 256
    assert {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)} == {0.1}
    for switches in ("----", "--N-", "-F--", "-FN-", "A---", "A-NJ", "A--J", "AFN-", "AF-J", "AFNJ"):
        assert resolve_config(f"ablation-{switches}", []).model.name == "wrn28_4"
        kept = resolve_config(f"ablation-wrn28_2-{switches}", [])
        assert kept.model.name == "wrn28_2" and kept.method == resolve_config(f"ablation-{switches}", []).method
    for dataset in ("cifar10", "cifar100"):
        assert resolve_config(f"{dataset}-wrn28_4-noisymix", []).model.name == "wrn28_4"
        assert resolve_config(f"{dataset}-wrn28_2-noisymix", []).model.name == "wrn28_2"


# What a method's preset must set, written from the papers / the public NoisyMix README (not
# read back from the code): alpha and noise strengths per method.
_PAPER_STRENGTHS = {
    "mixup": {"alpha": 1.0}, "manifold_mixup": {"alpha": 2.0}, "cutmix": {"alpha": 1.0},
    "noise": {"alpha": 0.0, "add": 0.4, "mult": 0.2}, "nfm": {"alpha": 1.0, "add": 0.4, "mult": 0.2},
    "augmix_noise_jsd": {"alpha": 0.0, "add": 0.5, "mult": 0.5, "sparse": 0.65},
    "augmix_nfm": {"alpha": 1.0, "add": 0.5, "mult": 0.5, "sparse": 0.65},
    "augmix_manifold_jsd": {"alpha": 1.0},
    "noisymix": {"alpha": 1.0, "add": 0.5, "mult": 0.5, "sparse": 0.65},
}


def _strengths(cfg: TrainConfig) -> dict:
    return {"alpha": cfg.mix.alpha, "add": cfg.mix.noise.add, "mult": cfg.mix.noise.mult,
            "sparse": cfg.mix.noise.sparse}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_bare_method_trains_with_its_presets_strengths(method):
    """``--set method=X`` without its preset resolves to the preset's config (bar the
    preset name), not to the baseline's alpha = 0 and no noise."""
    import dataclasses

    bare = resolve_config("baseline", [f"method={method}"])
    preset = resolve_config(method, [])
    assert dataclasses.replace(bare, preset=method) == preset
    for key, value in _PAPER_STRENGTHS.get(method, {}).items():
        assert _strengths(bare)[key] == value, (method, key)
    assert (bare.jsd_variant == "augmix") == METHODS[method].jsd
    # from another preset too: the new method brings its own strengths, dataset/model stay
    other = resolve_config("cifar100-wrn28_4-nfm", [f"method={method}"])
    assert dataclasses.replace(other, preset=method, data=preset.data, model=preset.model) == preset
    # and an explicit --set still wins, in either order
    for order in ([f"method={method}", "mix.alpha=0.3"], ["mix.alpha=0.3", f"method={method}"]):
        assert resolve_config("baseline", order).mix.alpha == 0.3


def test_bare_noisymix_is_not_augmix_jsd():
    cfg = resolve_config("baseline", ["method=noisymix"])
    assert cfg.mix.alpha == 1.0 and cfg.mix.noise.add == 0.5 and cfg.mix.noise.mult == 0.5
