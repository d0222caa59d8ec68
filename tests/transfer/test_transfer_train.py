"""Fine-tuning runs are presets of `noisymix train`: one step from a saved ResNet-50 state dict."""

from __future__ import annotations

import pytest
import torch

from fullscale.data.cifar import write_cifar_fixture
from fullscale.models import create_model
from fullscale.runs import read_metrics
from noisymix_app.cli import main
from noisymix_infra.io import load_state_dict, save_torch

WIDTH = 8  # a narrow ResNet-50 with torchvision's keys: fast on the CPU


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here on one torch thread (tests/conftest.py)."""


@pytest.fixture()
def setup(tmp_path):
    write_cifar_fixture(tmp_path / "data", "cifar10", n_train=8, n_test=4)
    torch.manual_seed(1)
    source = create_model("resnet50", 1000, width=WIDTH).state_dict()
    for k, v in source.items():
        if k.endswith(("running_mean", "running_var")):
            v.copy_(torch.rand_like(v) + 0.5)
    save_torch(tmp_path / "source.pt", source)
    return tmp_path, source


def _train(tmp_path, preset: str, *extra: str) -> tuple:
    out = tmp_path / preset
    sets = [f"source_weights={tmp_path / 'source.pt'}", f"width={WIDTH}", "image_size=40", "epochs=1",
            "batch_size=4", "train_subset=4", "device=cpu"]
    given = {kv.split("=")[0] for kv in extra}  # a key is given once: extra's value in place of ours
    sets = [kv for kv in sets if kv.split("=")[0] not in given] + list(extra)
    args = ["train", "--preset", preset, "--out", str(out), "--data-root", str(tmp_path / "data")]
    assert main(args + [a for kv in sets for a in ("--set", kv)]) == 0
    return out, load_state_dict(out / "final.pt")


def _stats(name: str) -> bool:
    return name.endswith(("running_mean", "running_var", "num_batches_tracked"))


def test_fixed_feature_preset_one_step_backbone_bit_identical(setup):
    tmp_path, source = setup
    out, final = _train(tmp_path, "transfer-cifar10-noisymix-frozen")
    assert final["fc.weight"].shape == (10, 32 * WIDTH)
    weights = [k for k in source if not k.startswith("fc.") and not _stats(k)]
    assert all(final[k].equal(source[k]) for k in weights)  # every frozen weight, bit for bit
    stats = [k for k in source if _stats(k)]
    # the public code puts the whole model in train mode: the frozen layers' BN statistics move
    assert all(not final[k].equal(source[k]) for k in stats)
    assert read_metrics(out)[0]["epoch"] == 1

    _, kept = _train(tmp_path, "transfer-cifar10-augmix-frozen", "freeze_bn_stats=true")
    assert all(kept[k].equal(source[k]) for k in source if not k.startswith("fc."))


def test_full_fine_tuning_preset_loads_the_backbone_and_trains_it(setup):
    tmp_path, source = setup
    out, final = _train(tmp_path, "transfer-cifar10-baseline")
    backbone = [k for k in source if not k.startswith("fc.") and not _stats(k)]
    assert all(not final[k].equal(source[k]) for k in backbone)  # every layer trained
    # one SGD step at lr 0.001 from the source: every tensor stays near where it was loaded (at most
    # 17 % of its norm here, conv1 of this random net; another initialisation would be ~140 % away)
    assert all((final[k] - source[k]).norm() < 0.3 * (source[k].norm() + 1) for k in backbone)
    import json
    record = json.loads((out / "config.json").read_text())
    config = record["config"]  # grouped (issue 33)
    assert config["model"]["name"] == "resnet50_transfer" and config["transfer"]["source_row"] == "baseline"
    assert config["optim"]["lr_schedule"] == "step" and config["optim"]["lr_milestones"] == [50, 100]
    run = record.get("run", record)
    assert run["model_kwargs"] == {"width": WIDTH, "image_size": 40, "normalization": "cifar10"}
    assert main(["evaluate", str(out), "--suite", "clean", "--data-root", str(tmp_path / "data")]) == 0


def test_step_schedule_in_the_trainer(setup):
    tmp_path, _ = setup
    out, _ = _train(tmp_path, "transfer-cifar10-mixup", "epochs=2", "lr_milestones=1", "lr=0.002")
    lrs = [m["lr"] for m in read_metrics(out)]  # the lr of the next step, after each epoch (1 step each)
    assert lrs == pytest.approx([0.0002, 0.0002])


def test_bad_source_is_one_error_and_leaves_no_config(setup, capsys):
    tmp_path, source = setup
    bad = {k: v for k, v in source.items() if k != "layer2.0.conv1.weight"}
    save_torch(tmp_path / "source.pt", bad)
    out = tmp_path / "bad"
    args = ["train", "--preset", "transfer-cifar10-baseline", "--out", str(out), "--data-root",
            str(tmp_path / "data")]
    sets = [f"source_weights={tmp_path / 'source.pt'}", f"width={WIDTH}", "image_size=40", "train_subset=4",
            "device=cpu"]
    assert main(args + [a for kv in sets for a in ("--set", kv)]) == 2
    assert "layer2.0.conv1.weight" in capsys.readouterr().err
    assert not (out / "config.json").exists()


def test_a_transfer_run_resumes_to_the_same_weights(setup, crash_then_resume):
    from fullscale.training.presets import resolve_config

    tmp_path, _ = setup
    cfg = resolve_config("transfer-cifar10-noisymix", [
        f"source_weights={tmp_path / 'source.pt'}", f"width={WIDTH}", "image_size=40", "epochs=2", "batch_size=4",
        "train_subset=4", "device=cpu", "lr_milestones=1"], data_root=str(tmp_path / "data"))
    straight, resumed = crash_then_resume(cfg, tmp_path / "straight", tmp_path / "resumed")
    assert all(torch.equal(straight[k], resumed[k]) for k in straight)


def test_a_resume_on_another_source_file_of_the_same_path_is_refused(setup, crash_after_first_checkpoint):
    """Issue 23: a transfer run named its source weights by their path only; a resume after the file
    was replaced fine-tuned the rest of the run from other weights."""
    import json

    import fullscale.training.loop as trainer
    from fullscale.training.presets import resolve_config
    from noisymix_infra.io import sha256_file

    tmp_path, source = setup
    cfg = resolve_config("transfer-cifar10-baseline", [
        f"source_weights={tmp_path / 'source.pt'}", f"width={WIDTH}", "image_size=40", "epochs=2", "batch_size=4",
        "train_subset=4", "device=cpu"], data_root=str(tmp_path / "data"))
    out = tmp_path / "run"
    crash_after_first_checkpoint(cfg, out)
    record = json.loads((out / "config.json").read_text())
    assert record["run"]["source_weights_sha256"] == sha256_file(tmp_path / "source.pt")
    save_torch(tmp_path / "source.pt", {k: v + 1 if v.is_floating_point() else v for k, v in source.items()})
    with pytest.raises(ValueError, match=r"source_weights.*source\.pt.*changed"):
        trainer.train(cfg, out, resume=True)
