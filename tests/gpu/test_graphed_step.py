"""The captured training step (``cuda_graph=true``, issue 47) against the same step run eagerly.

Each replayed step is held against the eager static-buffer step from the same weights, momentum
and generator state (copied over before every step, so the comparison is one step's rounding, not
a chaotic run's): the loss parts and the weights after the update agree up to float rounding, the
device generator ends in the same state (the noise is drawn inside the graph, fresh every replay),
and every transform point gets its own graph.  Skips without CUDA.
"""

from __future__ import annotations

import copy

import pytest
import torch

from fullscale.models import create_model
from fullscale.training.draws import draw_step
from fullscale.training.graphed import WARMUP_STEPS, GraphedStep
from fullscale.training.methods import get_method
from fullscale.training.presets import resolve_config

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

STEPS = 40  # every one of the four transform points warmed up and captured, then replayed (stage counts
# of these seeds: 16, 9, 9, 6; a point needs WARMUP_STEPS + 1)
# one step of float32 (bf16 autocast: bf16 activations) arithmetic in another kernel order
RTOL = {False: 1e-4, True: 2e-2}


def _sync(dst_model, dst_opt, src_model, src_opt):
    dst_model.load_state_dict(src_model.state_dict())
    for p, q in zip(dst_model.parameters(), src_model.parameters(), strict=True):
        if "momentum_buffer" in src_opt.state[q]:
            dst_opt.state[p]["momentum_buffer"] = src_opt.state[q]["momentum_buffer"].clone()


@pytest.mark.parametrize("amp", [False, True])
def test_each_replayed_step_equals_the_eager_step_up_to_rounding(amp):
    device = torch.device("cuda")
    cfg = resolve_config("noisymix", ["width=16", "dataset=digits", "batch_size=32", "lr=0.05"])
    method = get_method(cfg.method)
    torch.manual_seed(0)
    model = create_model("preactresnet18", 10, width=16).to(device).to(memory_format=torch.channels_last)
    eager_model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    eager_opt = torch.optim.SGD(eager_model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    g = torch.Generator(device=device).manual_seed(7)
    g_eager = torch.Generator(device=device).manual_seed(7)
    graphed = GraphedStep(model, model, opt, method, cfg, 10, g, amp=amp, capture=True)
    eager = GraphedStep(eager_model, eager_model, eager_opt, method, cfg, 10, g_eager, amp=amp, capture=False)
    views_g = torch.Generator(device=device).manual_seed(1)
    stage_g = torch.Generator().manual_seed(2)
    data_g = torch.Generator(device=device).manual_seed(3)
    replayed, losses = 0, []
    for step in range(STEPS):
        x = torch.randint(0, 256, (32, 3, 32, 32), dtype=torch.uint8, device=device, generator=data_g)
        y = torch.randint(0, 10, (32,), device=device, generator=data_g)
        draws = draw_step(x, y, method, cfg, model.stages, views_g, stage_g)
        _sync(eager_model, eager_opt, model, opt)
        g_eager.set_state(g.get_state())
        lr = 0.05 * (1 - step / STEPS)
        opt.param_groups[0]["lr"] = eager_opt.param_groups[0]["lr"] = lr
        slot = graphed.slots.get((draws.stage, tuple(draws.x.shape), tuple(draws.draw.lam.shape), (32,)))
        was_captured = slot is not None and slot.graph is not None
        parts = graphed.step(draws, y)
        ref = eager.step(draws, y)
        torch.cuda.synchronize()
        replayed += was_captured
        losses.append(float(parts.total))
        for name in ("total", "cross_entropy", "jsd"):
            torch.testing.assert_close(getattr(parts, name), getattr(ref, name), rtol=RTOL[amp], atol=1e-4)
        for (name, a), b in zip(model.state_dict().items(), eager_model.state_dict().values(), strict=True):
            torch.testing.assert_close(a, b, rtol=RTOL[amp], atol=1e-5, msg=name)
        assert torch.equal(g.get_state(), g_eager.get_state()), f"step {step}: the generators parted"
    assert graphed.graphs == len(model.stages) == 4
    assert replayed >= STEPS - len(model.stages) * (WARMUP_STEPS + 1) and replayed > 0
    assert len(set(losses)) == len(losses)  # fresh draws every replay


def test_a_replay_draws_fresh_noise():
    """Two replays on the same inputs differ (the noise is not frozen into the graph) and the
    generator advances by the same amount as two eager steps would."""
    device = torch.device("cuda")
    cfg = resolve_config("noisymix", ["width=8", "dataset=digits", "batch_size=16", "lr=1e-9"])
    method = get_method(cfg.method)
    model = create_model("preactresnet18", 10, width=8).to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=1e-9, momentum=0.0)
    g = torch.Generator(device=device).manual_seed(5)
    graphed = GraphedStep(model, model, opt, method, cfg, 10, g, amp=False, capture=True)
    x = torch.randint(0, 256, (16, 3, 32, 32), dtype=torch.uint8, device=device)
    y = torch.randint(0, 10, (16,), device=device)
    draws = draw_step(x, y, method, cfg, ("layer1",), torch.Generator(device=device).manual_seed(1),
                      torch.Generator().manual_seed(2))
    for _ in range(WARMUP_STEPS + 1):
        graphed.step(draws, y)
    assert graphed.graphs == 1
    first = float(graphed.step(draws, y).total)
    second = float(graphed.step(draws, y).total)
    assert first != second
