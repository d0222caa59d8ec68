"""The trainer on a tiny ImageNet-layout JPEG tree (dataset=imagenet, streamed): one epoch end to
end with the awkward files of the real data set, mid-epoch resume equal to the straight run (with
another worker count), and a damaged copy that stops with the list of bad files."""

from __future__ import annotations

import json

import pytest
import torch

from fullscale.data.imagenet_fixture import AWKWARD, write_imagenet_tree
from fullscale.training.loop import train
from fullscale.training.presets import PRESETS, resolve_config
from noisymix_app.cli import main
from noisymix_infra.io import load_state_dict

SMALL = ["model=preactresnet18", "width=4", "image_size=32", "workers=0", "max_bad_fraction=0.05"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return write_imagenet_tree(tmp_path_factory.mktemp("imagenet"), n_train=4, n_val=1, awkward=True)


def test_imagenet_presets_follow_the_public_recipe():
    for method in ("baseline", "mixup", "manifold_mixup", "cutmix", "augmix", "augmix_jsd", "noisymix", "nfm"):
        cfg = resolve_config(f"imagenet-resnet50-{method}", [])
        optim = cfg.optim
        assert (cfg.data.dataset, cfg.model.name, optim.batch_size, optim.lr, optim.weight_decay, optim.nesterov,
                optim.epochs, cfg.data.image_size) == ("imagenet", "resnet50", 256, 0.1, 1e-4, True, 200, 224)
    assert "ASSUMPTION" in PRESETS["imagenet-resnet50-noisymix"].description
    assert "ASSUMPTION" not in PRESETS["imagenet-resnet50-baseline"].description


def test_one_epoch_end_to_end_counts_the_bad_file(tree, tmp_path):
    run = tmp_path / "run"
    args = [a for kv in [*SMALL, f"data_root={tree}", "batch_size=4", "epochs=1"] for a in ("--set", kv)]
    assert main(["train", "--preset", "imagenet-resnet50-noisymix", "--out", str(run), *args]) == 0
    (entry,) = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    # 10 classes x 4 + 4 awkward files = 44 = 11 steps of 4: every file is read once, the
    # truncated one is counted and dropped, grey/CMYK/PNG-in-.JPEG are trained on
    assert entry["bad_files"] == 1
    assert 0 <= entry["data_wait_fraction"] <= 1 and entry["images_per_s"] > 0
    assert torch.isfinite(torch.tensor(entry["loss"]))
    record = json.loads((run / "config.json").read_text())
    assert record["run"]["num_classes"] == 10 and record["run"]["train_images"] == 44
    assert (run / "final.pt").is_file()


def test_resume_mid_epoch_with_another_worker_count_equals_the_straight_run(tree, tmp_path, monkeypatch):
    # 44 files, batch 8: 5 steps per epoch; checkpoints after global steps 3, 6, 9 (mid-epoch)
    cfg = resolve_config("imagenet-resnet50-noisymix", [*SMALL, f"data_root={tree}", "batch_size=8", "epochs=2",
                                                        "checkpoint_every=3"])
    train(cfg, tmp_path / "straight")
    straight = load_state_dict(tmp_path / "straight" / "final.pt")

    import fullscale.training.checkpoint as checkpoint_module
    original = checkpoint_module.save_torch
    saved = []

    def save_then_crash(path, obj):  # the process dies right after the checkpoint of global step 6
        original(path, obj)
        if path.name == "checkpoint.pt":
            saved.append((obj["epoch"], obj["step"]))
            if saved[-1] == (1, 1):
                raise KeyboardInterrupt
    monkeypatch.setattr(checkpoint_module, "save_torch", save_then_crash)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "resumed")
    monkeypatch.setattr(checkpoint_module, "save_torch", original)
    assert saved == [(0, 3), (1, 0), (1, 1)]  # (epochs done, steps into the next): mid, end, mid
    resumed_cfg = resolve_config("imagenet-resnet50-noisymix", [*SMALL, f"data_root={tree}", "batch_size=8",
                                                               "epochs=2", "checkpoint_every=3", "workers=2"])
    train(resumed_cfg, tmp_path / "resumed", resume=True)
    resumed = load_state_dict(tmp_path / "resumed" / "final.pt")
    for key in straight:
        assert torch.equal(straight[key], resumed[key]), key
    lines = [(tmp_path / d / "metrics.jsonl").read_text().splitlines() for d in ("straight", "resumed")]
    losses = [[json.loads(line)["loss"] for line in part] for part in lines]
    assert losses[0] == losses[1] and len(losses[0]) == 2


def test_too_many_bad_files_stop_the_run_with_their_names(tree, tmp_path, capsys):
    small = [kv for kv in SMALL if not kv.startswith("max_bad_fraction=")]  # each key given once (issue 41)
    args = [a for kv in [*small, f"data_root={tree}", "batch_size=4", "epochs=1", "max_bad_fraction=0.001"]
            for a in ("--set", kv)]
    assert main(["train", "--preset", "imagenet-resnet50-baseline", "--out", str(tmp_path / "r"), *args]) == 2
    err = capsys.readouterr().err
    assert AWKWARD["truncated"] in err and "max_bad_fraction" in err


def test_in_memory_data_resumes_mid_epoch_too(tmp_path, monkeypatch):
    """checkpoint_every on an in-memory set: the epoch's order is redrawn from the order generator
    saved as it was when the epoch began, so the resumed run equals the straight one."""
    cfg = resolve_config("noisymix", ["dataset=digits", "width=4", "epochs=2", "batch_size=16", "train_subset=64",
                                      "checkpoint_every=3"])
    train(cfg, tmp_path / "straight")
    straight = load_state_dict(tmp_path / "straight" / "final.pt")

    import fullscale.training.checkpoint as checkpoint_module
    original = checkpoint_module.save_torch

    def save_then_crash(path, obj):  # dies after the checkpoint of global step 6 (epoch 1, step 2)
        original(path, obj)
        if path.name == "checkpoint.pt" and (obj["epoch"], obj["step"]) == (1, 2):
            raise KeyboardInterrupt
    monkeypatch.setattr(checkpoint_module, "save_torch", save_then_crash)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "resumed")
    monkeypatch.setattr(checkpoint_module, "save_torch", original)
    train(cfg, tmp_path / "resumed", resume=True)
    resumed = load_state_dict(tmp_path / "resumed" / "final.pt")
    for key in straight:
        assert torch.equal(straight[key], resumed[key]), key


def test_torchrun_two_processes_shard_the_files(tree, tmp_path, torchrun):
    out = tmp_path / "run"
    sets = [*SMALL, f"data_root={tree}", "batch_size=4", "epochs=1", "device=cpu"]  # gloo, on any machine
    torchrun("-m", "noisymix_app.cli", "train", "--preset", "imagenet-resnet50-noisymix", "--out", str(out),
             *[a for kv in sets for a in ("--set", kv)])
    (entry,) = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    # 44 files, 22 per rank in batches of 2: every file read once by one rank, the bad one counted once
    assert entry["bad_files"] == 1
    assert json.loads((out / "config.json").read_text())["run"]["world_size"] == 2
