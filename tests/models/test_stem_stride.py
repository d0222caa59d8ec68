"""``stem_stride=2`` of PreActResNet-18 (the laptop plan's model): the same weights as the public
model, a first convolution that keeps every other output of the stride-1 one, and every stage at
half the side.  The expectations come from the convolution's definition, not from the code."""

from __future__ import annotations

import pytest
import torch

from fullscale.models import create_model
from fullscale.training.config import TrainConfig
from fullscale.training.hooks import stage_module
from noisymix_infra.config import apply_overrides


def _pair() -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    public = create_model("preactresnet18", 10, width=4)
    strided = create_model("preactresnet18", 10, width=4, stem_stride=2)
    strided.load_state_dict(public.state_dict())  # same keys and shapes: checkpoints carry over
    return public.eval(), strided.eval()


def test_the_strided_stem_keeps_every_other_output_of_the_public_stem() -> None:
    public, strided = _pair()
    x = torch.rand(3, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    full = public.conv1(public.normalize(x))
    half = strided.conv1(strided.normalize(x))
    assert half.shape == (3, 4, 16, 16)
    # padding 1, kernel 3: output (i, j) of stride 2 is output (2i, 2j) of stride 1, the same sum
    torch.testing.assert_close(half, full[:, :, ::2, ::2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("stage", "side"), [("layer1", 16), ("layer2", 8), ("layer3", 4)])
def test_every_stage_runs_at_half_the_side(stage: str, side: int) -> None:
    _, strided = _pair()
    seen = []
    handle = stage_module(strided, stage).register_forward_hook(lambda m, i, out: seen.append(out.shape) and None)
    strided(torch.rand(2, 3, 32, 32))
    handle.remove()
    assert tuple(seen[0][-2:]) == (side, side)


def test_only_preactresnet18_takes_the_option_and_only_1_or_2() -> None:
    with pytest.raises(ValueError, match="stem_stride must be 1"):
        apply_overrides(TrainConfig(), ["stem_stride=3"])
    with pytest.raises(ValueError, match="no option stem_stride"):
        create_model("wrn28_2", 10, stem_stride=2)
    assert TrainConfig().model_kwargs == {}  # the public model by default: old runs' kwargs unchanged
    assert apply_overrides(TrainConfig(), ["stem_stride=2"]).model_kwargs == {"stem_stride": 2}
