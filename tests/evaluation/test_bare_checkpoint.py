"""`noisymix evaluate FILE --model resnet50 --out DIR`: a bare torchvision-format state dict (as
public ImageNet checkpoints are distributed) evaluated without a run directory."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from fullscale.data import Preprocess, imagenet_wnids
from fullscale.data.folders import decode
from fullscale.data.imagenet_fixture import write_imagenet_tree
from fullscale.models import create_model
from noisymix_app.cli import main
from noisymix_infra.io import save_torch


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    root = tmp_path_factory.mktemp("bare")
    model = create_model("resnet50", 1000).eval()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # a head that depends on the input, and BN statistics not at identity
        for name, tensor in model.state_dict().items():
            if name.endswith("running_var"):
                tensor.copy_(0.5 + torch.rand(tensor.shape, generator=g))
    tree = write_imagenet_tree(root / "imagenet", n_train=1, n_val=2)
    # a least-squares head on the first val image of each class, so accuracy is not trivially 0
    wnids = imagenet_wnids()
    firsts = sorted(p for p in (tree / "val").rglob("*_0000.JPEG"))
    features = []
    hook = model.fc.register_forward_hook(lambda module, inputs, output: features.append(inputs[0]))
    with torch.no_grad():
        model(torch.stack([decode(p, Preprocess(37, 32)) for p in firsts]).float() / 255)
    hook.remove()
    f = torch.cat([features[0], torch.ones(len(firsts), 1)], 1)
    target = torch.nn.functional.one_hot(torch.tensor([wnids.index(p.parent.name) for p in firsts]), 1000).float()
    w = torch.linalg.solve(f.T @ f + 1e-3 * torch.eye(f.shape[1]), f.T @ target)
    with torch.no_grad():
        model.fc.weight.copy_(w[:-1].T)
        model.fc.bias.copy_(w[-1])
    save_torch(root / "resnet50.pth", {f"module.{k}": v for k, v in model.state_dict().items()})
    return root, model


def test_clean_accuracy_of_a_bare_state_dict(bare, tmp_path):
    root, model = bare
    val = root / "imagenet" / "val"
    assert main(["evaluate", str(root / "resnet50.pth"), "--model", "resnet50", "--out", str(tmp_path / "out"),
                 "--suite", "clean", "--data-root", str(val), "--resize", "37", "--crop", "32",
                 "--workers", "0", "--device", "cpu"]) == 0
    record = json.loads((tmp_path / "out" / "eval" / "clean.json").read_text())
    # independent: decode every file ourselves, predict with the in-memory model, compare labels
    wnids = imagenet_wnids()
    files = sorted(p for p in val.rglob("*.JPEG"))
    images = torch.stack([decode(p, Preprocess(37, 32)) for p in files])
    labels = np.array([wnids.index(p.parent.name) for p in files])
    with torch.no_grad():
        predictions = model(images.float() / 255).argmax(1).numpy()
    assert record["complete"] and record["model"] == "resnet50"
    assert record["summary"]["accuracy"] == pytest.approx(float((predictions == labels).mean()))
    assert record["summary"]["accuracy"] >= 0.5  # the fitted half at least
    assert record["checkpoint"]["path"].endswith("resnet50.pth")


def test_wrong_keys_are_one_error_listing_missing_and_unexpected(bare, tmp_path, capsys):
    root, model = bare
    state = model.state_dict()
    state["extra.weight"] = torch.zeros(1)
    del state["fc.bias"]
    save_torch(tmp_path / "wrong.pth", state)
    assert main(["evaluate", str(tmp_path / "wrong.pth"), "--model", "resnet50", "--out", str(tmp_path / "o"),
                 "--suite", "clean", "--data-root", str(root / "imagenet" / "val")]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "missing keys ['fc.bias']" in lines[0] and "unexpected keys ['extra.weight']" in lines[0]


def test_model_without_out_is_an_error(bare, capsys):
    root, _ = bare
    assert main(["evaluate", str(root / "resnet50.pth"), "--model", "resnet50", "--suite", "clean"]) == 2
    assert "--out" in capsys.readouterr().err


def test_flat_val_with_solution_csv_gives_the_same_accuracy(bare, tmp_path):
    root, _ = bare
    val = root / "imagenet" / "val"
    flat = tmp_path / "ILSVRC" / "val"
    flat.mkdir(parents=True)
    rows = ["ImageId,PredictionString"]
    for path in sorted(val.rglob("*.JPEG")):
        (flat / path.name).write_bytes(path.read_bytes())
        rows.append(f"{path.stem},{path.parent.name} 0 0 10 10")
    (tmp_path / "LOC_val_solution.csv").write_text("\n".join(rows) + "\n")
    accuracies = []
    for data_root, out in ((val, tmp_path / "a"), (flat, tmp_path / "b")):
        assert main(["evaluate", str(root / "resnet50.pth"), "--model", "resnet50", "--out", str(out),
                     "--suite", "clean", "--data-root", str(data_root), "--resize", "37", "--crop", "32",
                     "--workers", "0", "--device", "cpu"]) == 0
        accuracies.append(json.loads((out / "eval" / "clean.json").read_text())["summary"]["accuracy"])
    assert accuracies[0] == accuracies[1] >= 0.5


def test_a_robustbench_resnet50_file_loads_as_it_is(bare, tmp_path):
    """RobustBench's layout (its ``normalize_model``: ``normalize.mean``/``std`` buffers, ``model.*``),
    as its ImageNet ResNet-50 entries (NoisyMix's among them) are distributed: the same accuracy as
    the same weights in torchvision's layout."""
    root, model = bare
    mean, std = torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225])
    state = {"normalize.mean": mean.view(1, 3, 1, 1), "normalize.std": std.view(1, 3, 1, 1),
             **{f"model.{k}": v for k, v in model.state_dict().items()}}
    save_torch(tmp_path / "Erichson2022NoisyMix.pt", state)
    val = root / "imagenet" / "val"
    for name, file in (("rb", tmp_path / "Erichson2022NoisyMix.pt"), ("plain", root / "resnet50.pth")):
        assert main(["evaluate", str(file), "--model", "resnet50", "--out", str(tmp_path / name), "--suite", "clean",
                     "--data-root", str(val), "--resize", "37", "--crop", "32", "--workers", "0"]) == 0
    rb, plain = (json.loads((tmp_path / n / "eval" / "clean.json").read_text()) for n in ("rb", "plain"))
    assert rb["summary"]["accuracy"] == plain["summary"]["accuracy"] >= 0.5
