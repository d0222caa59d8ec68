"""Models and the stage hooks: mixing at a named stage, block definitions, refused options.
The per-model checks are generated from the registry in test_registry_models.py."""

from __future__ import annotations

import pytest
import torch

from fullscale.models import create_model
from fullscale.training.hooks import stage_module, transform_stage
from noisymix.mixing import MixConfig, NoiseConfig, draw_mix, noisy_feature_mixup


def test_mixing_at_the_input_is_mixup_of_the_normalised_batch():
    model = create_model("preactresnet18", 5, width=4).eval()
    x = torch.rand(6, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    cfg = MixConfig(alpha=1.0, noise=NoiseConfig(add=0.3, mult=0.2))
    draw = draw_mix(6, cfg, generator=torch.Generator().manual_seed(2))
    with transform_stage(model, "input", lambda h: noisy_feature_mixup(
            h, draw, cfg, generator=torch.Generator().manual_seed(3))):
        hooked = model(x)
    # by hand: normalise, mix with the same draw and noise, run the rest of the network
    mixed = noisy_feature_mixup((x - 0.5) / 0.5, draw, cfg, generator=torch.Generator().manual_seed(3))
    rest = model.linear(torch.nn.functional.adaptive_avg_pool2d(
        model.layer4(model.layer3(model.layer2(model.layer1(model.conv1(mixed))))), 1).flatten(1))
    torch.testing.assert_close(hooked, rest)
    # the hook is gone afterwards
    plain = model.linear(torch.nn.functional.adaptive_avg_pool2d(
        model.layer4(model.layer3(model.layer2(model.layer1(model.conv1((x - 0.5) / 0.5))))), 1).flatten(1))
    torch.testing.assert_close(model(x), plain)


def test_preact_block_carries_the_activated_input_on_its_identity_shortcut():
    # the public NoisyMix PreActBlock: out = conv2(relu(bn2(conv1(a)))) + a with a = relu(bn1(x))
    model = create_model("preactresnet18", 10, width=4).eval()
    block = model.layer1[1]
    with torch.no_grad():
        for bn in (block.bn1, block.bn2):
            bn.running_mean.uniform_(-0.5, 0.5, generator=torch.Generator().manual_seed(0))
    x = torch.randn(2, 4, 8, 8, generator=torch.Generator().manual_seed(1))
    a = torch.relu((x - block.bn1.running_mean.view(1, -1, 1, 1))
                   / torch.sqrt(block.bn1.running_var.view(1, -1, 1, 1) + block.bn1.eps))
    inner = torch.nn.functional.conv2d(a, block.conv1.weight, padding=1)
    inner = torch.relu((inner - block.bn2.running_mean.view(1, -1, 1, 1))
                       / torch.sqrt(block.bn2.running_var.view(1, -1, 1, 1) + block.bn2.eps))
    expected = torch.nn.functional.conv2d(inner, block.conv2.weight, padding=1) + a
    torch.testing.assert_close(block(x), expected)


def test_unknown_stage_is_refused():
    model = create_model("wrn28_2", 10)
    with pytest.raises(ValueError, match="stages"):
        stage_module(model, "layer4")


def test_unknown_model_option_names_the_valid_ones():
    with pytest.raises(ValueError, match="its options: dropout"):
        create_model("wrn28_2", 10, width=16)
