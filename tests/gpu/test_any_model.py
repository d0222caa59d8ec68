"""NoisyMix and the benchmarks on real torchvision and timm models (``pytest -m gpu``; skipped
where torchvision / timm do not import, as on the CPU build here): the mixing points found on
their ResNets and stage-based models, a few NoisyMix steps on CUDA, ``evaluate --model
torchvision:resnet18`` equal to the same weights in RobustBench's layout."""

from __future__ import annotations

import json

import pytest
import torch

from fullscale.api import NoisyMix, default_stages, load_model
from fullscale.data import load_dataset
from noisymix_app.cli import main
from noisymix_infra.io import save_torch

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _needs_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")


def test_torchvision_resnets_mix_at_the_points_a_person_would_name():
    models = pytest.importorskip("torchvision.models")
    for name in ("resnet18", "resnet50", "wide_resnet50_2"):
        assert default_stages(models.get_model(name, num_classes=10)) == ("input", "layer1", "layer2", "layer3")
    wrapped = load_model("torchvision:resnet18", num_classes=10)
    assert default_stages(wrapped) == ("input", "model.layer1", "model.layer2", "model.layer3")


def test_timm_models_mix_at_the_points_a_person_would_name():
    timm = pytest.importorskip("timm")
    assert default_stages(timm.create_model("resnet18", num_classes=10)) == ("input", "layer1", "layer2", "layer3")
    assert default_stages(timm.create_model("convnext_atto", num_classes=10)) == (
        "input", "stages.0", "stages.1", "stages.2")


def test_noisymix_steps_on_a_torchvision_resnet_on_cuda():
    models = pytest.importorskip("torchvision.models")
    torch.manual_seed(0)
    model = models.get_model("resnet18", num_classes=10).cuda().train()
    data = load_dataset("digits", "train")
    x, y = data.images[:64].cuda(), torch.as_tensor(data.labels[:64]).long().cuda()
    nm = NoisyMix(model, 10, generator=torch.Generator(device="cuda").manual_seed(0))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(20):
        loss = nm.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert all(torch.isfinite(torch.tensor(losses))) and sum(losses[-5:]) < sum(losses[:5])


def test_evaluate_a_torchvision_model_and_its_robustbench_file(tmp_path):
    from fullscale.data.imagenet_fixture import write_imagenet_tree

    models = pytest.importorskip("torchvision.models")
    net = models.get_model("resnet18", num_classes=1000).eval()
    save_torch(tmp_path / "plain.pt", net.state_dict())
    save_torch(tmp_path / "rb.pt", {"normalize.mean": torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1),
                                    "normalize.std": torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1),
                                    **{f"model.{k}": v for k, v in net.state_dict().items()}})
    val = write_imagenet_tree(tmp_path / "imagenet", n_train=1, n_val=2) / "val"
    for name in ("plain", "rb"):
        assert main(["evaluate", str(tmp_path / f"{name}.pt"), "--model", "torchvision:resnet18", "--out",
                     str(tmp_path / name), "--suite", "clean", "--data-root", str(val), "--resize", "37",
                     "--crop", "32", "--workers", "0", "--device", "cuda", "--protocol", "ours"]) == 0
    plain, rb = (json.loads((tmp_path / n / "eval" / "clean.json").read_text()) for n in ("plain", "rb"))
    assert plain["summary"]["accuracy"] == rb["summary"]["accuracy"]
