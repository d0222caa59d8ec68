"""`noisymix evaluate FILE --model torchvision:NAME | timm:NAME | package.module:factory` and
``fullscale.api.benchmark``: any model, RobustBench's state-dict layout, and each bad input one
line (exit 2) with nothing written."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest
import torch
from torch import nn

from fullscale.api import benchmark, load_model
from fullscale.data import load_dataset
from fullscale.models.registry import Normalize
from fullscale.vocabulary import CORRUPTIONS
from noisymix_app.cli import main
from noisymix_infra.io import save_torch

COUNT = 30  # images per severity

FACTORIES = '''
import torch
from torch import nn


def tiny(num_classes=10, width=4):
    g = torch.Generator().manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                        nn.Linear(16 * width, num_classes))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return net


def wider(num_classes=10):
    return tiny(num_classes, width=6)


def broken(num_classes=10):
    raise RuntimeError("the weights server is down")


def not_a_model():
    return 42
'''


@pytest.fixture()
def user_code(tmp_path, monkeypatch):
    (tmp_path / "user_models_39.py").write_text(FACTORIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "user_models_39"
    sys.modules.pop("user_models_39", None)


@pytest.fixture(scope="module")
def digits_c(tmp_path_factory):
    """A complete -C set of the digits (15 corruptions x 5 severities, darker with the severity)."""
    root = tmp_path_factory.mktemp("digits-c")
    test = load_dataset("digits", "test")
    images = test.images[:COUNT].permute(0, 2, 3, 1).numpy()
    for k, name in enumerate(CORRUPTIONS):
        blocks = [(images.astype(np.float32) * (1 - 0.12 * s) + 7 * k).clip(0, 255).astype(np.uint8)
                  for s in range(1, 6)]
        np.save(root / f"{name}.npy", np.concatenate(blocks))
    np.save(root / "labels.npy", np.asarray(test.labels[:COUNT], dtype=np.int64))
    return root


def _evaluate(file, spec, out, data_root, *extra):
    return main(["evaluate", str(file), "--model", spec, "--out", str(out), "--suite", "digits-c",
                 "--data-root", str(data_root), "--device", "cpu", *extra])


def _predict(model, root, name, severity):
    images = torch.from_numpy(np.load(root / f"{name}.npy")[(severity - 1) * COUNT:severity * COUNT])
    with torch.no_grad():
        return model(images.permute(0, 3, 1, 2).float() / 255).argmax(1).numpy()


def test_a_robustbench_layout_evaluates_as_the_same_weights_loaded_plain(user_code, digits_c, tmp_path):
    model = __import__(user_code).tiny(10)
    save_torch(tmp_path / "plain.pt", model.state_dict())
    identity = {"normalize.mean": torch.zeros(1, 3, 1, 1), "normalize.std": torch.ones(1, 3, 1, 1),
                **{f"model.{k}": v for k, v in model.state_dict().items()}}
    save_torch(tmp_path / "rb.pt", identity)
    mean, std = torch.tensor([0.2, 0.4, 0.6]).view(1, 3, 1, 1), torch.tensor([0.3, 0.2, 0.5]).view(1, 3, 1, 1)
    save_torch(tmp_path / "rb-normalized.pt", {**identity, "normalize.mean": mean, "normalize.std": std})
    records = {}
    for name in ("plain", "rb", "rb-normalized"):
        assert _evaluate(tmp_path / f"{name}.pt", f"{user_code}:tiny", tmp_path / name, digits_c) == 0
        records[name] = json.loads((tmp_path / name / "eval" / "digits-c.json").read_text())
    assert records["rb"]["results"] == records["plain"]["results"]
    assert records["plain"]["model"] == f"{user_code}:tiny" and records["plain"]["complete"]
    # the checkpoint's own mean and std: independently, its network behind (x - mean) / std
    reference = nn.Sequential(Normalize((mean.flatten().tolist(), std.flatten().tolist())), model).eval()
    labels = np.load(digits_c / "labels.npy")
    for name in ("fog", "snow"):
        for s in (1, 5):
            expected = float((_predict(reference, digits_c, name, s) == labels).mean())
            assert records["rb-normalized"]["results"][name][str(s)]["accuracy"] == pytest.approx(expected)
    assert records["rb-normalized"]["results"] != records["plain"]["results"]


def test_benchmark_in_python_writes_the_json_of_the_command(user_code, digits_c, tmp_path):
    model = __import__(user_code).tiny(10)
    save_torch(tmp_path / "w.pt", model.state_dict())
    assert _evaluate(tmp_path / "w.pt", f"{user_code}:tiny", tmp_path / "cli", digits_c) == 0
    record = benchmark(model, "digits-c", digits_c, out=tmp_path / "py")
    written = json.loads((tmp_path / "py" / "eval" / "digits-c.json").read_text())
    cli = json.loads((tmp_path / "cli" / "eval" / "digits-c.json").read_text())
    assert record["path"] == str(tmp_path / "py" / "eval" / "digits-c.json")
    assert written["results"] == cli["results"] and written["summary"] == cli["summary"]
    assert written["checkpoint"]["path"] == "<in memory: Sequential>" and len(written["checkpoint"]["sha256"]) == 64
    by_name = benchmark(f"{user_code}:tiny", "digits-c", digits_c, out=tmp_path / "spec", weights=tmp_path / "w.pt")
    assert by_name["results"] == cli["results"]
    loaded = load_model(f"{user_code}:tiny", tmp_path / "w.pt", num_classes=10)
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), model.state_dict().values(),
                                                    strict=True))


def _fake_timm(monkeypatch):
    fake = types.ModuleType("timm")
    fake.is_model = lambda name: name == "resnet18"
    fake.list_models = lambda pattern="": ["resnet18", "resnet18d"] if "resnet" in pattern else []
    fake.create_model = lambda name, pretrained=False, num_classes=1000: nn.Linear(2, num_classes)
    monkeypatch.setitem(sys.modules, "timm", fake)


@pytest.mark.parametrize("case", ["timm-unknown", "timm-missing", "torchvision-missing", "torchvision-broken",
                                  "factory-raises",
                                  "no-factory", "no-module", "not-a-model", "other-architecture", "ours-unknown"])
def test_bad_input_is_one_line_and_writes_nothing(case, user_code, digits_c, tmp_path, monkeypatch, capsys):
    model = __import__(user_code).tiny(10)
    save_torch(tmp_path / "w.pt", model.state_dict())
    spec, match = {
        "timm-unknown": ("timm:resnet1800", "timm has no model 'resnet1800'"),
        "timm-missing": ("timm:resnet18", "timm is not usable here"),
        "torchvision-missing": ("torchvision:resnet18", "torchvision is not usable here"),
        "torchvision-broken": ("torchvision:resnet18", "torchvision is not usable here (RuntimeError: operator "
                                                       "torchvision::nms does not exist)"),
        "factory-raises": (f"{user_code}:broken", "the factory raised RuntimeError: the weights server is down"),
        "no-factory": (f"{user_code}:nothing", f"{user_code} has no factory 'nothing'"),
        "no-module": ("no_such_package_39.models:net", "cannot import no_such_package_39.models"),
        "not-a-model": (f"{user_code}:not_a_model", "returned int, not an nn.Module"),
        "other-architecture": (f"{user_code}:wider", "does not fit"),
        "ours-unknown": ("resnet5O", "not one of ours"),
    }[case]
    if case == "timm-unknown":
        _fake_timm(monkeypatch)
    elif case.endswith("-missing"):
        monkeypatch.setitem(sys.modules, spec.split(":")[0], None)  # import fails, as where it is absent
    elif case == "torchvision-broken":  # compiled ops built for another torch: its import raises
        (tmp_path / "broken" / "torchvision").mkdir(parents=True)
        (tmp_path / "broken" / "torchvision" / "__init__.py").write_text(
            'raise RuntimeError("some context\\noperator torchvision::nms does not exist")\n')
        monkeypatch.syspath_prepend(str(tmp_path / "broken"))
        monkeypatch.delitem(sys.modules, "torchvision", raising=False)
    assert _evaluate(tmp_path / "w.pt", spec, tmp_path / "out", digits_c) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and match in lines[0], lines
    assert not (tmp_path / "out" / "eval").exists()


def test_a_timm_model_comes_wrapped_with_its_normalisation(monkeypatch):
    _fake_timm(monkeypatch)
    net = load_model("timm:resnet18", num_classes=7)
    assert [name for name, _ in net.named_children()] == ["normalize", "model"]
    assert net.model.out_features == 7
