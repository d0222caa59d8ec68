"""The trainer end to end on the built-in digits: every method runs, resume is exact, errors are clear."""

from __future__ import annotations

import json

import pytest
import torch

from fullscale.augment import random_crop_flip
from fullscale.cli_train import resolve_config
from fullscale.config import TrainConfig
from fullscale.methods import METHODS
from fullscale.models import create_model
from fullscale.presets import PRESETS
from fullscale.runs import load_run_model
from fullscale.train import NonFiniteLoss, _loss, train
from noisymix.cli import main
from noisymix.io import load_state_dict
from noisymix.mixing import draw_mix

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
        resolve_config("puzzlemix", [])
    with pytest.raises(ValueError, match="valid keys"):
        resolve_config("baseline", ["learning_rate=0.1"])


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_gives_a_finite_loss_and_gradient(name):
    cfg = resolve_config(name, ["width=4"])
    model = create_model("preactresnet18", 10, width=4)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 10, (8,), generator=g)
    parts = _loss(model, model, x, y, METHODS[name], cfg, 10, g)
    assert torch.isfinite(parts.total)
    parts.total.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())
    if METHODS[name].jsd:
        assert parts.jsd > 0
        torch.testing.assert_close(parts.total, parts.cross_entropy + cfg.jsd_weight * parts.jsd)
    else:
        assert parts.jsd == 0


def test_baseline_loss_is_the_cross_entropy_of_the_augmented_batch():
    cfg = resolve_config("baseline", ["width=4"])
    model = create_model("preactresnet18", 10, width=4)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 10, (8,), generator=g)
    parts = _loss(model, model, x, y, METHODS["baseline"], cfg, 10, torch.Generator().manual_seed(1))
    cropped = random_crop_flip(x, generator=torch.Generator().manual_seed(1), padding=4)
    expected = torch.nn.functional.cross_entropy(model(cropped.float() / 255), y)
    torch.testing.assert_close(parts.total, expected)


def test_mixup_loss_is_lambda_weighted_cross_entropy_of_the_mixed_batch():
    cfg = resolve_config("mixup", ["width=4"])
    model = create_model("preactresnet18", 10, width=4).eval()  # eval: BN sees no batch statistics
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 10, (8,), generator=g)
    parts = _loss(model, model, x, y, METHODS["mixup"], cfg, 10, torch.Generator().manual_seed(1))
    # replay the generator: crop/flip, then the draw (perm, lambda), then the stage index
    g2 = torch.Generator().manual_seed(1)
    cropped = random_crop_flip(x, generator=g2, padding=4).float() / 255
    draw = draw_mix(8, cfg.mix, generator=g2)
    lam = float(draw.lam)
    normalised = (cropped - 0.5) / 0.5
    mixed = lam * normalised + (1 - lam) * normalised[draw.perm]
    model.normalize.forward = lambda t: t  # feed the mixed, already normalised batch
    logits = model(mixed)
    ce = torch.nn.functional.cross_entropy
    expected = lam * ce(logits, y) + (1 - lam) * ce(logits, y[draw.perm])
    torch.testing.assert_close(parts.total, expected)


def test_end_to_end_cli_run_writes_the_run_directory(tmp_path):
    run = tmp_path / "run"
    assert main(["train", "--preset", "noisymix", "--out", str(run), *QUICK_ARGS]) == 0
    config = json.loads((run / "config.json").read_text())
    assert config["method"] == "noisymix" and config["dataset"] == "digits" and config["num_classes"] == 10
    assert config["model_kwargs"] == {"width": 4} and "torch" in config["versions"]
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1
    assert {"loss", "cross_entropy", "jsd", "lr", "images_per_s"} <= set(json.loads(lines[0]))
    model, _ = load_run_model(run)
    assert model(torch.rand(2, 3, 32, 32)).shape == (2, 10)
    # a finished run is not overwritten silently
    assert main(["train", "--preset", "noisymix", "--out", str(run), *QUICK_ARGS]) == 2


def test_loss_decreases_on_digits(tmp_path):
    cfg = resolve_config("baseline", ["dataset=digits", "width=8", "epochs=3", "batch_size=32",
                                      "train_subset=256"])
    train(cfg, tmp_path / "r")
    lines = (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()
    losses = [json.loads(line)["loss"] for line in lines]
    assert losses[-1] < losses[0]


def test_resume_gives_the_same_weights_as_a_straight_run(tmp_path, monkeypatch):
    cfg = resolve_config("noisymix", [*QUICK, "epochs=2"])
    train(cfg, tmp_path / "straight")
    straight = load_state_dict(tmp_path / "straight" / "final.pt")

    import fullscale.train as trainer
    original = trainer.save_torch

    def save_then_crash(path, obj):  # the process dies right after the first checkpoint
        original(path, obj)
        if path.name == "checkpoint.pt":
            raise KeyboardInterrupt
    monkeypatch.setattr(trainer, "save_torch", save_then_crash)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "resumed")
    monkeypatch.setattr(trainer, "save_torch", original)
    assert load_state_dict(tmp_path / "resumed" / "checkpoint.pt")["epoch"] == 1
    assert not (tmp_path / "resumed" / "final.pt").exists()
    train(cfg, tmp_path / "resumed", resume=True)
    resumed = load_state_dict(tmp_path / "resumed" / "final.pt")
    for key in straight:
        assert torch.equal(straight[key], resumed[key]), key
    assert len((tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()) == 2


def test_non_finite_loss_stops_with_the_step_named(tmp_path):
    cfg = resolve_config("baseline", [*QUICK, "lr=1e30", "epochs=3", "momentum=0", "nesterov=false"])
    with pytest.raises(NonFiniteLoss, match="step"):
        train(cfg, tmp_path / "r")


def test_bad_config_values_are_refused():
    with pytest.raises(ValueError):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="JSD"):
        from fullscale.methods import Method
        Method("x", "x", jsd=True)
