"""The compiled training step (``torch.compile``, mixing hooks included) on the CPU with the cheap
``eager`` backend (inductor on 2 cores takes minutes): a fixed set of graphs, no recompile per
step whatever the stage, lambda and noise draws, and the same losses as the eager step."""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.utils import counters

from fullscale.models import create_model
from fullscale.training.hooks import install_stage_hooks, transform_stage
from fullscale.training.methods import METHODS
from fullscale.training.presets import resolve_config
from fullscale.training.step import step_loss


def _graphs() -> int:
    return int(counters["stats"]["unique_graphs"])


def _steps(model, core, n: int, after_each=None) -> list[float]:
    cfg = resolve_config("noisymix", ["width=4"])
    g, stage_g = torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)
    data = torch.Generator().manual_seed(2)
    x = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8, generator=data)
    y = torch.randint(0, 10, (8,), generator=data)
    opt = torch.optim.SGD(core.parameters(), lr=0.05)
    losses = []
    for _ in range(n):
        parts = step_loss(model, core, x, y, METHODS["noisymix"], cfg, 10, g, stage_g)
        opt.zero_grad(set_to_none=True)
        parts.total.backward()
        opt.step()
        losses.append(parts.total.item())
        if after_each:
            after_each()
    return losses


def test_compiled_step_makes_a_fixed_set_of_graphs_and_the_eager_losses():
    torch._dynamo.reset()
    torch.manual_seed(0)
    eager_core = create_model("preactresnet18", 10, width=4)
    core = create_model("preactresnet18", 10, width=4)
    core.load_state_dict(eager_core.state_dict())
    install_stage_hooks(core)
    model = torch.compile(core, backend="eager")
    seen = []
    compiled = _steps(model, core, 10, after_each=lambda: seen.append(_graphs()))
    assert seen[1] > 0 and seen[-1] == seen[1], seen  # graphs made in the first steps, none after
    reference = _steps(eager_core, eager_core, 10)
    torch.testing.assert_close(torch.tensor(compiled), torch.tensor(reference), rtol=1e-5, atol=1e-6)


def test_per_step_hooks_without_the_permanent_ones_fragment_the_graph():
    """What ``install_stage_hooks`` prevents (and that the count above can see graphs appear):
    a per-step hook is traced into, and the mixing code's generator calls break the graph."""
    counts = {}
    for installed in (False, True):
        torch._dynamo.reset()
        before = _graphs()
        core = create_model("preactresnet18", 10, width=4)
        if installed:
            install_stage_hooks(core)
        _steps(torch.compile(core, backend="eager"), core, 3)
        counts[installed] = _graphs() - before
    assert counts[False] > 2 * counts[True], counts


def test_installed_hooks_transform_exactly_as_a_per_call_hook():
    torch.manual_seed(0)
    plain = create_model("preactresnet18", 10, width=4).eval()
    hooked = create_model("preactresnet18", 10, width=4).eval()
    hooked.load_state_dict(plain.state_dict())
    install_stage_hooks(hooked)
    install_stage_hooks(hooked)  # idempotent: one hook per stage
    x = torch.rand(2, 3, 32, 32)
    for stage in plain.stages:
        with transform_stage(plain, stage, lambda h: h * 0.5 + 1):
            want = plain(x)
        with transform_stage(hooked, stage, lambda h: h * 0.5 + 1):
            got = hooked(x)
        assert torch.equal(got, want), stage
    assert torch.equal(hooked(x), plain(x))  # outside the block: no transform
    with transform_stage(hooked, "input", lambda h: h), pytest.raises(RuntimeError, match="already active"):
        with transform_stage(hooked, "layer1", lambda h: h):
            pass
