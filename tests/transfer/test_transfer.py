"""The transfer recipe (fullscale.training.transfer): source loading, freezing, the batched upsampling."""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F

from fullscale.augment.resized_crop import draw_resized_crop_boxes, random_resized_crop_flip
from fullscale.models import create_model
from fullscale.models.transfer import EvalResize, eval_resize_size
from fullscale.training.transfer import apply_freeze, load_source_backbone, set_train_mode, trainable_parameter_names
from noisymix_infra.io import save_torch

WIDTH = 8  # a narrow ResNet-50 (torchvision's keys, 1/64 of the weights): fast on the CPU


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here on one torch thread (tests/conftest.py)."""


@pytest.fixture()
def source(tmp_path):
    """A saved ImageNet ResNet-50 state dict (1000 classes, random weights, BN statistics set)."""
    torch.manual_seed(1)
    model = create_model("resnet50", 1000, width=WIDTH)
    state = model.state_dict()
    for k, v in state.items():
        if k.endswith(("running_mean", "running_var")):
            v.copy_(torch.rand_like(v) + 0.5)
    path = tmp_path / "source.pt"
    save_torch(path, state)
    return path, state


def _transfer(num_classes=10, image_size=32, **kw):
    return create_model("resnet50_transfer", num_classes, width=WIDTH, image_size=image_size, **kw)


# --------------------------------------------------------------------------- the upsampling


def test_test_resize_is_resize_then_centre_crop():
    x = torch.rand(3, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    for size in (224, 64):
        big = eval_resize_size(size)
        assert big == {224: 256, 64: 73}[size]
        off = round((big - size) / 2)
        ref = F.interpolate(x, size=(big, big), mode="bilinear", align_corners=False)[..., off:off + size,
                                                                                     off:off + size]
        assert torch.allclose(EvalResize(size)(x), ref, atol=1e-5)
    assert EvalResize(64)(torch.ones(1, 3, 64, 64)).equal(torch.ones(1, 3, 64, 64))  # training views pass
    with pytest.raises(ValueError, match="32x32"):
        EvalResize(64)(torch.zeros(1, 3, 48, 48))


def test_training_view_is_crop_then_resize_then_flip_per_image():
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 256, (6, 3, 32, 32), dtype=torch.uint8, generator=g)
    out = random_resized_crop_flip(x, 80, generator=torch.Generator().manual_seed(5))
    replay = torch.Generator().manual_seed(5)  # the draws in the function's order: boxes, then flips
    boxes = draw_resized_crop_boxes(6, 32, 32, generator=replay)
    flips = torch.rand(6, generator=replay) < 0.5
    for i, (top, left, h, w) in enumerate(boxes.tolist()):
        crop = x[i:i + 1, :, top:top + h, left:left + w].float() / 255
        ref = F.interpolate(crop, size=(80, 80), mode="bilinear", align_corners=False)
        ref = ref.flip(-1) if flips[i] else ref
        assert torch.allclose(out[i:i + 1], ref, atol=1e-5), i
    assert flips.any() and not flips.all()


def _torchvision_get_params(rng: random.Random, height=32, width=32, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's RandomResizedCrop.get_params, one image at a time (its algorithm, written out)."""
    area = height * width
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(math.log(ratio[0]), math.log(ratio[1])))
        w, h = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, height - h), rng.randint(0, width - w), h, w
    return 0, 0, height, width


def test_crop_boxes_follow_torchvisions_distribution():
    n = 20000
    ours = draw_resized_crop_boxes(n, 32, 32, generator=torch.Generator().manual_seed(0)).double()
    rng = random.Random(0)
    ref = torch.tensor([_torchvision_get_params(rng) for _ in range(n)], dtype=torch.float64)
    top, left, h, w = ours.unbind(1)
    assert (top >= 0).all() and (left >= 0).all() and (top + h <= 32).all() and (left + w <= 32).all()
    for a, b in ((ours, ref),):
        area_a, area_b = a[:, 2] * a[:, 3] / 1024, b[:, 2] * b[:, 3] / 1024
        assert abs(area_a.mean() - area_b.mean()) < 0.01 and abs(area_a.std() - area_b.std()) < 0.01
        assert abs((a[:, 3] / a[:, 2]).mean() - (b[:, 3] / b[:, 2]).mean()) < 0.01
        centre_a, centre_b = a[:, 1] + a[:, 3] / 2, b[:, 1] + b[:, 3] / 2
        assert abs(centre_a.mean() - centre_b.mean()) < 0.15 and abs(centre_a.std() - centre_b.std()) < 0.15


# --------------------------------------------------------------------------- the source weights


def test_backbone_loaded_exactly_classifier_replaced(source):
    path, state = source
    torch.manual_seed(0)
    model = _transfer(num_classes=10)
    fresh_fc = model.fc.weight.detach().clone()
    load_source_backbone(model, path)
    loaded = model.state_dict()
    assert set(loaded) == set(state)  # torchvision's keys
    for k, v in state.items():
        if not k.startswith("fc."):
            assert loaded[k].equal(v), k
    assert loaded["fc.weight"].shape == (10, 4 * 8 * WIDTH) and loaded["fc.weight"].equal(fresh_fc)


def test_public_wrappings_load(source, tmp_path):
    _path, state = source
    for wrapped in ({"state_dict": {f"module.{k}": v for k, v in state.items()}},
                    {"model": state},  # a run's checkpoint.pt
                    {k: v for k, v in state.items() if not k.endswith("num_batches_tracked")}):  # older files
        save_torch(tmp_path / "w.pt", wrapped)
        model = _transfer()
        load_source_backbone(model, tmp_path / "w.pt")
        assert model.state_dict()["layer4.2.bn3.running_var"].equal(state["layer4.2.bn3.running_var"])


def test_bad_sources_one_error_naming_the_keys(source, tmp_path):
    path, state = source
    bad = dict(state)
    del bad["layer3.1.conv2.weight"]
    bad["layer5.0.conv1.weight"] = torch.zeros(1)
    save_torch(tmp_path / "bad.pt", bad)
    with pytest.raises(ValueError, match=r"missing 1 keys \[layer3\.1\.conv2\.weight\].*unexpected 1 keys "
                                         r"\[layer5\.0\.conv1\.weight\]"):
        load_source_backbone(_transfer(), tmp_path / "bad.pt")
    save_torch(tmp_path / "other.pt", {"encoder.weight": torch.zeros(2)})
    with pytest.raises(ValueError, match="not a ResNet-50 state dict"):
        load_source_backbone(_transfer(), tmp_path / "other.pt")
    save_torch(tmp_path / "list.pt", [torch.zeros(2)])
    with pytest.raises(ValueError, match="not a ResNet-50 state dict"):
        load_source_backbone(_transfer(), tmp_path / "list.pt")
    with pytest.raises(ValueError, match="shapes differ"):  # another width
        load_source_backbone(create_model("resnet50_transfer", 10, width=4, image_size=32), path)


# --------------------------------------------------------------------------- freezing


def _backbone_prefixes(level: int) -> tuple[str, ...]:
    return ("conv1.", "bn1.", *(f"layer{i}." for i in range(1, level + 1)))


@pytest.mark.parametrize("level", [-1, 1, 2, 3, 4])
def test_freeze_levels_as_the_public_code(level):
    names = [n for n, _ in _transfer().named_parameters()]
    trainable = trainable_parameter_names(_transfer(), level)
    # the public get_fine_tuning_params: frozen up to and including layer{level}; -1 freezes nothing
    expected = names if level == -1 else [n for n in names if not n.startswith(_backbone_prefixes(level))]
    assert trainable == expected
    if level == 4:
        assert trainable == ["fc.weight", "fc.bias"]
    with pytest.raises(ValueError, match="freeze_level"):
        trainable_parameter_names(_transfer(), 5)


def _one_step(model, freeze_bn_stats: bool) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.tensor([0, 1, 2, 3])
    set_train_mode(model, freeze_bn_stats=freeze_bn_stats)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss = F.cross_entropy(model(random_resized_crop_flip(x, 48, generator=g)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


@pytest.mark.parametrize("freeze_bn_stats", [False, True])
def test_fixed_feature_step_leaves_the_backbone_bit_identical(source, freeze_bn_stats):
    path, _state = source
    model = _transfer(image_size=48)
    load_source_backbone(model, path)
    frozen = apply_freeze(model, 4)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    _one_step(model, freeze_bn_stats)
    after = model.state_dict()
    assert set(frozen) == {n for n, _ in model.named_parameters()} - {"fc.weight", "fc.bias"}
    for name in frozen:  # weight decay and momentum included: no gradient, no change
        assert after[name].equal(before[name]), name
    assert not after["fc.weight"].equal(before["fc.weight"]) and not after["fc.bias"].equal(before["fc.bias"])
    stats = [k for k in before if k.endswith(("running_mean", "running_var", "num_batches_tracked"))]
    changed = [k for k in stats if not after[k].equal(before[k])]
    if freeze_bn_stats:
        assert changed == []
    else:  # the public code: model.train() on the whole model, the frozen BN statistics move
        assert len(changed) == len(stats)


def test_full_fine_tuning_step_moves_every_weight(source):
    path, _ = source
    model = _transfer(image_size=48)
    load_source_backbone(model, path)
    assert apply_freeze(model, -1) == []
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    _one_step(model, False)
    assert all(not p.equal(before[n]) for n, p in model.named_parameters())


# --------------------------------------------------------------------------- evaluation


def _transfer_run_dir(tmp_path, source_path):
    from noisymix_infra.io import write_json

    run = tmp_path / "run"
    model = _transfer(image_size=40)
    load_source_backbone(model, source_path)
    save_torch(run / "final.pt", model.state_dict())
    write_json(run / "config.json", {"model": "resnet50_transfer", "num_classes": 10, "dataset": "cifar10",
                                     "method": "baseline", "model_kwargs": {"width": WIDTH, "image_size": 40,
                                                                            "normalization": "cifar10"}})
    return run, model.eval()


def test_cifar_c_of_a_transfer_run_gives_the_three_numbers(tmp_path, source):
    import numpy as np

    from fullscale.vocabulary import CATEGORIES, CORRUPTIONS
    from noisymix_app.cli import main
    from noisymix_infra.io import read_json, save_npy

    run, model = _transfer_run_dir(tmp_path, source[0])
    g = torch.Generator().manual_seed(0)
    count = 4
    labels = torch.randint(0, 10, (count,), generator=g)
    root = tmp_path / "CIFAR-10-C"
    direct = {}
    for name in CORRUPTIONS:
        images = torch.randint(0, 256, (5 * count, 32, 32, 3), dtype=torch.uint8, generator=g)
        save_npy(root / f"{name}.npy", images.numpy())
        with torch.no_grad():  # the 32x32 images straight into the model: it upsamples them itself
            preds = model(images.permute(0, 3, 1, 2).float() / 255).argmax(1).view(5, count)
        direct[name] = float((preds == labels).float().mean())
    save_npy(root / "labels.npy", np.tile(labels.numpy(), 5))
    assert main(["evaluate", str(run), "--suite", "cifar10-c", "--data-root", str(root)]) == 0
    summary = read_json(run / "eval" / "cifar10-c.json")["summary"]
    assert summary["per_corruption"] == pytest.approx(direct)
    groups = [np.mean([direct[c] for c in members]) for members in CATEGORIES.values()]
    assert summary["transfer"]["all"] == pytest.approx(np.mean(groups))
    assert summary["transfer"]["noise"] == pytest.approx(groups[0])
    assert summary["transfer"]["other"] == pytest.approx(np.mean(groups[1:]))
    assert summary["transfer"]["mean_15"] == pytest.approx(summary["mean_accuracy"])

    # the same set stored at another resolution (e.g. pre-upsampled): one clear error, nothing written
    big = tmp_path / "CIFAR-10-C-64"
    for name in CORRUPTIONS:
        save_npy(big / f"{name}.npy", np.zeros((5 * count, 64, 64, 3), np.uint8))
    save_npy(big / "labels.npy", np.tile(labels.numpy(), 5))
    (run / "eval" / "cifar10-c.json").unlink()
    assert main(["evaluate", str(run), "--suite", "cifar10-c", "--data-root", str(big)]) == 2
    assert not (run / "eval" / "cifar10-c.json").exists()


# --------------------------------------------------------------------------- presets and config

#: transfer_learning/parameters.csv of the public code, the cifar10 / cifar100 rows:
#: (freeze_level, lr, weight_decay, batch_size, epochs, step_lr)
PUBLIC_PARAMETERS = {-1: (0.001, 0.0005, 64, 150, 50), 4: (0.01, 0.0005, 64, 150, 50)}


def test_presets_are_the_public_recipe():
    from fullscale.training.presets import PRESETS, resolve_config
    from fullscale.vocabulary import TRANSFER_ROWS

    for dataset in ("cifar10", "cifar100"):
        for row in TRANSFER_ROWS.values():
            for suffix, level in (("", -1), ("-frozen", 4)):
                name = f"transfer-{dataset}-{row}{suffix}"
                cfg = resolve_config(name, [f"source_weights=/src/{row}.pt"])
                lr, wd, batch, epochs, step_lr = PUBLIC_PARAMETERS[level]
                optim, transfer = cfg.optim, cfg.transfer
                assert (optim.lr, optim.weight_decay, optim.batch_size, optim.epochs) == (lr, wd, batch, epochs), name
                assert optim.lr_schedule == "step" and optim.lr_milestones == tuple(range(step_lr, epochs, step_lr))
                assert optim.lr_gamma == 0.1 and optim.momentum == 0.9 and not optim.nesterov  # robustness' SGD
                assert transfer.freeze_level == level and not transfer.freeze_bn_stats and cfg.data.image_size == 224
                assert (cfg.data.dataset, cfg.transfer.source_row, cfg.method) == (dataset, row, "baseline")
                assert cfg.model_kwargs == {"image_size": 224, "normalization": dataset}
                assert str(lr) in PRESETS[name].description and "150 epochs" in PRESETS[name].description


def test_step_schedule_is_steplr_per_epoch():
    from fullscale.training.schedule import step_lr_factor

    steps = 10  # per epoch
    factors = [step_lr_factor(s, steps, (50, 100), 0.1) for s in range(150 * steps)]
    assert factors[0] == factors[50 * steps - 1] == 1.0
    assert factors[50 * steps] == factors[100 * steps - 1] == pytest.approx(0.1)
    assert factors[100 * steps] == factors[-1] == pytest.approx(0.01)


def test_transfer_fields_must_agree(tmp_path):
    from fullscale.training.config import ModelConfig, OptimConfig, TrainConfig, TransferConfig
    from fullscale.training.transfer import check_config

    with pytest.raises(ValueError, match="source_weights=PATH"):
        check_config(TrainConfig(model=ModelConfig("resnet50_transfer")))
    with pytest.raises(FileNotFoundError, match=r"nope\.pt"):
        check_config(TrainConfig(model=ModelConfig("resnet50_transfer"),
                                 transfer=TransferConfig(source_weights=str(tmp_path / "nope.pt"))))
    with pytest.raises(ValueError, match="belong to transfer runs"):
        check_config(TrainConfig(transfer=TransferConfig(freeze_level=4)))
    with pytest.raises(ValueError, match="lr_milestones"):
        check_config(TrainConfig(optim=OptimConfig(lr_schedule="step")))
    with pytest.raises(ValueError, match="freeze_level"):
        TrainConfig(transfer=TransferConfig(freeze_level=5))
