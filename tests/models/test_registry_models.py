"""Tests generated from the model registry, as timm does: every registered model is checked
against its published architecture (parameter count, stage names, state-dict keys) and runs
forward and backward on a tiny input. Registering a model adds its tests; a model without an
entry in ``ARCHITECTURE`` fails them, so the table has to be filled with independent numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import torch

from fullscale.models import create_model, list_models
from fullscale.models.wide_resnet import WideResNet
from fullscale.training.hooks import stage_module, transform_stage


def _wrn_parameters(depth: int, widen: int, num_classes: int) -> int:
    """Wide-ResNet-depth-k parameters from the architecture (Zagoruyko & Komodakis, 2016, table 1)
    as the public NoisyMix ``wideresnet28`` builds it: 3x3 convolutions with bias, a biased 1x1
    convolution on the shortcut where the width or stride changes, BN (weight, bias) before each
    convolution and once at the end, then a linear classifier."""
    n = (depth - 4) // 6
    widths = (16, 16 * widen, 32 * widen, 64 * widen)
    total = 3 * widths[0] * 9 + widths[0]                      # conv1 (biased)
    c_in = widths[0]
    for c in widths[1:]:
        for j in range(n):
            total += 2 * c_in + (c_in * c * 9 + c)             # bn1, conv1
            total += 2 * c + (c * c * 9 + c)                   # bn2, conv2
            if j == 0 and c_in != c:
                total += c_in * c + c                          # 1x1 shortcut
            c_in = c
    return total + 2 * c_in + c_in * num_classes + num_classes  # final bn, linear


def _bn(prefix: str) -> list[str]:
    return [f"{prefix}.{s}" for s in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")]


@dataclass(frozen=True)
class Architecture:
    """What is published about a registered model, written down independently of its code."""

    num_classes: int
    parameters: int          # at full width, for ``num_classes``
    source: str              # where ``parameters`` comes from
    stages: tuple[str, ...]  # the mixing points, in order
    state_keys: int          # state-dict entries, num_batches_tracked included
    some_keys: dict[str, tuple[int, ...]] = field(default_factory=dict)  # hand-listed key -> shape
    tiny: dict = field(default_factory=dict)  # options for a small, fast instance
    size: int = 32                            # input side for the forward test


ARCHITECTURE: dict[str, Architecture] = {
    "preactresnet18": Architecture(
        num_classes=10, parameters=11_171_146,
        source="public NoisyMix/AugMix CIFAR PreActResNet-18 (no final BN), 10 classes",
        stages=("input", "layer1", "layer2", "layer3"),
        # conv1 + 8 blocks x (bn1, conv1, bn2, conv2) + 3 shortcut convs + linear
        state_keys=1 + 8 * (5 + 1 + 5 + 1) + 3 + 2,
        some_keys={"conv1.weight": (64, 3, 3, 3), "layer2.0.shortcut.0.weight": (128, 64, 1, 1),
                   "layer4.1.conv2.weight": (512, 512, 3, 3), "linear.weight": (10, 512)},
        tiny={"width": 4}),
    "wrn28_2": Architecture(
        num_classes=10, parameters=_wrn_parameters(28, 2, 10),
        source="WRN-28-2 from the architecture formula (1.47M)",
        stages=("input", "layer1", "layer2", "layer3"),
        # conv1 (w, b) + 12 blocks x (bn1, conv1 w b, bn2, conv2 w b) + 3 shortcuts (w, b) + bn1 + linear
        state_keys=2 + 12 * (5 + 2 + 5 + 2) + 3 * 2 + 5 + 2,
        some_keys={"conv1.bias": (16,), "layer1.0.shortcut.0.weight": (32, 16, 1, 1),
                   "layer3.3.conv2.weight": (128, 128, 3, 3), "bn1.running_var": (128,),
                   "linear.weight": (10, 128)}),
    "wrn28_4": Architecture(
        num_classes=10, parameters=_wrn_parameters(28, 4, 10),
        source="WRN-28-4 from the architecture formula (5.85M)",
        stages=("input", "layer1", "layer2", "layer3"),
        state_keys=2 + 12 * (5 + 2 + 5 + 2) + 3 * 2 + 5 + 2,
        some_keys={"layer2.0.shortcut.0.weight": (128, 64, 1, 1), "linear.weight": (10, 256)}),
    "resnet50": Architecture(
        num_classes=1000, parameters=25_557_032, source="torchvision resnet50 (He et al., 2016)",
        stages=("input", "layer1", "layer2", "layer3"),
        state_keys=320,  # torchvision resnet50().state_dict(), num_batches_tracked included
        some_keys={"conv1.weight": (64, 3, 7, 7), "bn1.num_batches_tracked": (),
                   "layer1.0.downsample.0.weight": (256, 64, 1, 1), "layer1.0.downsample.1.running_mean": (256,),
                   "layer3.5.bn3.weight": (1024,), "layer4.2.conv3.weight": (2048, 512, 1, 1),
                   "fc.weight": (1000, 2048), "fc.bias": (1000,)},
        tiny={"width": 4}, size=64),
    # the transfer model: torchvision's ResNet-50 with a 10-way classifier (25,557,032 - 1000 x 2049
    # + 10 x 2049), the same keys; it upsamples 32x32 CIFAR images itself (non-persistent buffers)
    "resnet50_transfer": Architecture(
        num_classes=10, parameters=25_557_032 - 1000 * 2049 + 10 * 2049,
        source="torchvision resnet50 with a 10-class fc (the public transfer code's replace_fc_layer)",
        stages=("input", "layer1", "layer2", "layer3"),
        state_keys=320,
        some_keys={"conv1.weight": (64, 3, 7, 7), "layer4.2.conv3.weight": (2048, 512, 1, 1),
                   "fc.weight": (10, 2048), "fc.bias": (10,)},
        tiny={"width": 4, "image_size": 48}, size=32),
}

MODELS = list_models()


def _architecture(name: str) -> Architecture:
    if name not in ARCHITECTURE:
        pytest.fail(f"model {name!r} is registered but has no entry in ARCHITECTURE: add its published "
                    "parameter count, stages and state-dict layout")
    return ARCHITECTURE[name]


def test_the_formula_gives_the_published_wide_resnet_28_10():
    # Zagoruyko & Komodakis (2016), table 1: WRN-28-10 has 36.5M parameters (36,489,290 in the
    # public CIFAR code with biased convolutions); checks the formula used for WRN-28-2/4 above.
    assert _wrn_parameters(28, 10, 10) == 36_489_290
    assert sum(p.numel() for p in WideResNet(28, 10, 10).parameters()) == 36_489_290


def test_the_table_models_are_registered():
    assert set(MODELS) >= {"preactresnet18", "wrn28_2", "wrn28_4", "resnet50"}
    with pytest.raises(ValueError, match="available"):
        create_model("vit", 10)


@pytest.mark.parametrize("name", MODELS)
def test_parameter_count_is_the_published_one(name):
    arch = _architecture(name)
    model = create_model(name, arch.num_classes)
    assert sum(p.numel() for p in model.parameters()) == arch.parameters, arch.source


@pytest.mark.parametrize("name", MODELS)
def test_stages_are_the_declared_modules(name):
    arch = _architecture(name)
    model = create_model(name, 10, **arch.tiny)
    assert tuple(model.stages) == arch.stages
    assert stage_module(model, "input") is model.normalize
    for stage in arch.stages[1:]:
        assert stage_module(model, stage) is dict(model.named_children())[stage]


@pytest.mark.parametrize("name", MODELS)
def test_state_dict_layout(name):
    arch = _architecture(name)
    state = create_model(name, arch.num_classes).state_dict()
    assert len(state) == arch.state_keys
    for key, shape in arch.some_keys.items():
        assert tuple(state[key].shape) == shape, key
    # the normalisation constants are not saved, so the usual definitions' state dicts load
    assert not any(k.startswith("normalize") for k in state)


def test_resnet50_keys_are_torchvisions():
    keys = {"conv1.weight", "fc.weight", "fc.bias", *_bn("bn1")}
    for layer, blocks in enumerate((3, 4, 6, 3), start=1):
        for b in range(blocks):
            p = f"layer{layer}.{b}"
            for i in (1, 2, 3):
                keys |= {f"{p}.conv{i}.weight", *_bn(f"{p}.bn{i}")}
            if b == 0:
                keys |= {f"{p}.downsample.0.weight", *_bn(f"{p}.downsample.1")}
    assert len(keys) == 320
    assert set(create_model("resnet50", 1000).state_dict()) == keys


@pytest.mark.parametrize("name", MODELS)
def test_tiny_forward_backward(name):
    arch = _architecture(name)
    model = create_model(name, 7, **arch.tiny)
    x = torch.rand(2, 3, arch.size, arch.size, generator=torch.Generator().manual_seed(0))
    out = model(x)
    assert out.shape == (2, 7) and torch.isfinite(out).all()
    out.logsumexp(1).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


@pytest.mark.parametrize("name", MODELS)
def test_a_stage_transform_leaves_the_other_stages_untouched(name):
    arch = _architecture(name)
    model = create_model(name, 5, **arch.tiny).eval()
    x = torch.rand(3, 3, arch.size, arch.size, generator=torch.Generator().manual_seed(4))
    stages = model.stages

    def features() -> dict[str, torch.Tensor]:
        seen = {}
        handles = [stage_module(model, s).register_forward_hook(
            lambda _m, _i, out, s=s: seen.__setitem__(s, out.detach().clone())) for s in stages]
        seen["logits"] = model(x).detach()
        for h in handles:
            h.remove()
        return seen

    plain = features()
    k = len(stages) - 2
    target = stages[k]
    with transform_stage(model, target, lambda h: h + 1.0):
        moved = features()
    for s in stages[:k]:  # earlier stages are untouched
        torch.testing.assert_close(moved[s], plain[s])
    torch.testing.assert_close(moved[target], plain[target] + 1.0)  # the target: exactly transformed
    assert not torch.allclose(moved[stages[k + 1]], plain[stages[k + 1]])  # later features see the change
    assert not torch.allclose(moved["logits"], plain["logits"])
    torch.testing.assert_close(features()["logits"], plain["logits"])  # and the hook is gone
