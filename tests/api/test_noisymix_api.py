"""The public NoisyMix step (``fullscale.api.NoisyMix``) on our model and on a model that is not
ours: the trainer's step on the same seeds, a few steps lower the loss, same seeds same run, and
the mixing points found by module path."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import noisymix
from fullscale.api import NoisyMix, default_stages, transform_stage
from fullscale.data import load_dataset
from fullscale.models import create_model
from fullscale.training.generators import stream_seed
from fullscale.training.hooks import install_stage_hooks, stage_module
from fullscale.training.methods import get_method
from fullscale.training.presets import resolve_config
from fullscale.training.step import step_loss


class TorchvisionLikeResNet18(nn.Module):
    """A module tree named as torchvision's ResNet-18 (conv1, bn1, relu, maxpool, layer1..4,
    avgpool, fc), tiny: one conv block per layer."""

    def __init__(self, num_classes: int = 10, width: int = 4) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(2)
        chans = [width, width, 2 * width, 4 * width, 8 * width]
        for i in range(4):
            block = nn.Sequential(nn.Conv2d(chans[i], chans[i + 1], 3, 1 if i == 0 else 2, 1, bias=False),
                                  nn.BatchNorm2d(chans[i + 1]), nn.ReLU())
            setattr(self, f"layer{i + 1}", block)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(chans[-1], num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


@pytest.fixture(scope="module")
def digits():
    data = load_dataset("digits", "train")
    return data.images[:256], torch.as_tensor(data.labels[:256]).long()


def test_a_public_step_is_the_trainers_step_on_our_model(digits):
    x, y = digits[0][:32], digits[1][:32]
    torch.manual_seed(0)  # only the initial weights; the steps draw from their generators
    ours = create_model("preactresnet18", 10, width=8).train()
    theirs = copy.deepcopy(ours)
    cfg = resolve_config("noisymix", [])
    method = get_method("noisymix")
    g, stage_g = noisymix.generator_for(5), noisymix.generator_for(stream_seed(5, 501))
    nm = NoisyMix(theirs, 10, generator=noisymix.generator_for(5))
    assert nm.stages == ours.stages  # the trainer's points (our model's own)
    for _ in range(3):  # successive steps: the generators advance alike
        expected = step_loss(ours, ours, x, y, method, cfg, 10, g, stage_g)
        got = nm.parts(x, y)
        for a, b in zip((got.total, got.cross_entropy, got.jsd), (expected.total, expected.cross_entropy,
                                                                 expected.jsd), strict=True):
            assert torch.equal(a, b)
        expected.total.backward()
        got.total.backward()
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(p.grad, q.grad)


def _clean_loss(model: nn.Module, digits) -> float:
    """Cross-entropy on clean digits with the batch's own normalisation statistics (on a copy): after a
    few dozen steps BatchNorm's running statistics still lag the weights, and an eval-mode loss then
    measured the lag more than the learning (it rose on some seeds while the weights had learned)."""
    probe = copy.deepcopy(model).train()
    with torch.no_grad():
        return float(nn.functional.cross_entropy(probe(digits[0].float() / 255), digits[1]))


def _train(model: nn.Module, digits, seed: int, steps: int = 40) -> list[float]:
    x_all, y_all = digits
    nm = NoisyMix(model, num_classes=10, generator=torch.Generator().manual_seed(seed))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    order = torch.randperm(len(y_all), generator=torch.Generator().manual_seed(seed))
    losses = []
    for step in range(steps):
        idx = order[(step * 32) % len(order):][:32]
        loss = nm.loss(x_all[idx], y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


@pytest.mark.parametrize("make", [lambda: create_model("preactresnet18", 10, width=8),
                                  lambda: TorchvisionLikeResNet18()], ids=["ours", "torchvision-like"])
def test_a_few_steps_lower_the_loss_and_same_seeds_are_equal(make, digits):
    torch.manual_seed(1)
    model = make()
    again = copy.deepcopy(model)
    before = _clean_loss(model, digits)
    losses = _train(model, digits, seed=3)
    # seeds 3-6 at lr 0.1: the clean loss fell to 0.61-0.78 of its start on either model
    assert _clean_loss(model, digits) < 0.85 * before, losses
    assert _train(again, digits, seed=3) == losses
    for p, q in zip(model.parameters(), again.parameters(), strict=True):
        assert torch.equal(p, q)


def test_mixing_points_are_those_a_person_would_name():
    assert default_stages(TorchvisionLikeResNet18()) == ("input", "layer1", "layer2", "layer3")
    for name in ("preactresnet18", "wrn28_2", "resnet50"):
        model = create_model(name, 10, width=4) if name != "wrn28_2" else create_model(name, 10)
        assert default_stages(model) == model.stages  # our models: today's points

    class TimmStages(nn.Module):  # timm's ConvNeXt/RegNet layout: stem, stages.0..3, head
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 1)
            self.stages = nn.Sequential(*[nn.Conv2d(4, 4, 1) for _ in range(4)])
            self.head = nn.Linear(4, 2)

    class RobustBenchWRN(nn.Module):  # the public NoisyMix / RobustBench WideResNet names
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 1)
            self.block1, self.block2, self.block3 = (nn.Conv2d(4, 4, 1) for _ in range(3))
            self.bn1, self.fc = nn.BatchNorm2d(4), nn.Linear(4, 2)

    assert default_stages(TimmStages()) == ("input", "stages.0", "stages.1", "stages.2")
    assert default_stages(RobustBenchWRN()) == ("input", "block1", "block2", "block3")
    wrapped = nn.Sequential()
    wrapped.add_module("normalize", nn.Identity())
    wrapped.add_module("model", TorchvisionLikeResNet18())
    assert default_stages(wrapped) == ("input", "model.layer1", "model.layer2", "model.layer3")
    assert stage_module(wrapped, "input") is wrapped.normalize


def test_an_unknown_layout_or_module_is_one_line_listing_module_paths():
    plain = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
    with pytest.raises(ValueError, match=r"no known mixing points.*its modules: 0, 1, 2, 3") as info:
        default_stages(plain)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=r"has no module 'layer9' to mix at; its module paths: conv1, bn1"):
        NoisyMix(TorchvisionLikeResNet18(), 10, generator=torch.Generator(), stages=("input", "layer9"))
    nm = NoisyMix(plain, 2, generator=torch.Generator(), stages=("input", "1"))  # named by hand: fine
    assert nm.stages == ("input", "1")


def test_the_input_of_a_model_without_normalize_is_its_own_input():
    model = TorchvisionLikeResNet18().eval()
    x = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), transform_stage(model, "input", lambda h: h * 0.0):
        zeroed = model(x)
    with torch.no_grad():
        torch.testing.assert_close(zeroed, model(torch.zeros_like(x)))
    hooked = copy.deepcopy(model)
    install_stage_hooks(hooked)  # the permanent hooks the trainer compiles with: the same transform
    with torch.no_grad(), transform_stage(hooked, "input", lambda h: h * 0.0):
        torch.testing.assert_close(hooked(x), zeroed)
    with torch.no_grad(), transform_stage(hooked, "layer2", lambda h: h + 1.0):
        moved = hooked(x)
    with torch.no_grad(), transform_stage(model, "layer2", lambda h: h + 1.0):
        torch.testing.assert_close(model(x), moved)
