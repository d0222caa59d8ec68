"""Stacked members' captured step (``cuda_graph=true`` with members, issue 53 goal 5) against the same body run eagerly.

As ``test_graphed_step.py`` for a run alone: each replayed step of the stack is held against the
eager static-buffer body (``capture=False``) from the same weights, momentum and member generator
states (copied over before every step: one step's rounding, not a chaotic run's).  The members'
transform points differ step to step, yet one graph serves them all (the point is a mask, the noise
drawn outside the graph); each member's generator advances as eagerly.  Then ``train_members`` with
``cuda_graph=true`` end to end: every member finishes, its loss finite and falling.  Skips without CUDA.
"""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch

from fullscale.models import create_model
from fullscale.training.draws import draw_step
from fullscale.training.graphed import WARMUP_STEPS
from fullscale.training.graphed_members import GraphedMembers
from fullscale.training.members import stack_models, train_members
from fullscale.training.methods import get_method
from fullscale.training.presets import resolve_config

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

MEMBERS = 3
STEPS = 12  # WARMUP_STEPS eager, one capture, then replays: one graph for every tuple of points
RTOL = {False: 1e-4, True: 2e-2}  # one step of float32 (bf16 autocast: bf16 activations) in another kernel order


def _sync(dst_model, dst_opt, src_model, src_opt):
    dst_model.load_state_dict(src_model.state_dict())
    for p, q in zip(dst_model.parameters(), src_model.parameters(), strict=True):
        if "momentum_buffer" in src_opt.state[q]:
            dst_opt.state[p]["momentum_buffer"] = src_opt.state[q]["momentum_buffer"].clone()


@pytest.mark.parametrize("amp", [False, True])
def test_each_replayed_members_step_equals_the_eager_body_up_to_rounding(amp):
    device = torch.device("cuda")
    cfg = resolve_config("noisymix", ["width=8", "dataset=digits", "batch_size=32", "lr=0.05"])
    method = get_method(cfg.method)
    models = []
    for seed in range(MEMBERS):
        torch.manual_seed(seed)
        models.append(create_model("preactresnet18", 10, width=8))
    stack = stack_models(models).to(device)
    eager_stack = copy.deepcopy(stack)
    opt = torch.optim.SGD(stack.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    eager_opt = torch.optim.SGD(eager_stack.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    gens = [torch.Generator(device=device).manual_seed(7 + m) for m in range(MEMBERS)]
    eager_gens = [torch.Generator(device=device).manual_seed(7 + m) for m in range(MEMBERS)]
    graphed = GraphedMembers(stack, opt, method, cfg, 10, gens, amp=amp, capture=True)
    eager = GraphedMembers(eager_stack, eager_opt, method, cfg, 10, eager_gens, amp=amp, capture=False)
    views_gs = [torch.Generator(device=device).manual_seed(100 + m) for m in range(MEMBERS)]
    stage_gs = [torch.Generator().manual_seed(200 + m) for m in range(MEMBERS)]
    data_g = torch.Generator(device=device).manual_seed(3)
    replayed, losses, points = 0, [], set()
    for step in range(STEPS):
        labels = [torch.randint(0, 10, (32,), device=device, generator=data_g) for _ in range(MEMBERS)]
        draws = [draw_step(torch.randint(0, 256, (32, 3, 32, 32), dtype=torch.uint8, device=device, generator=data_g),
                           labels[m], method, cfg, stack.stages, views_gs[m], stage_gs[m]) for m in range(MEMBERS)]
        points.add(tuple(d.stage for d in draws))
        _sync(eager_stack, eager_opt, stack, opt)
        for a, b in zip(eager_gens, gens, strict=True):
            a.set_state(b.get_state())
        lr = 0.05 * (1 - step / STEPS)
        opt.param_groups[0]["lr"] = eager_opt.param_groups[0]["lr"] = lr
        was_captured = graphed.graphs == 1
        parts = graphed.train_step(draws, labels)
        ref = eager.train_step(draws, labels)
        torch.cuda.synchronize()
        replayed += was_captured
        losses.append([float(p.total) for p in parts])
        for m, (a, b) in enumerate(zip(parts, ref, strict=True)):
            for name in ("total", "cross_entropy", "jsd"):
                torch.testing.assert_close(getattr(a, name), getattr(b, name), rtol=RTOL[amp], atol=1e-4,
                                           msg=f"step {step} member {m} {name}")
        for (name, a), b in zip(stack.state_dict().items(), eager_stack.state_dict().values(), strict=True):
            torch.testing.assert_close(a, b, rtol=RTOL[amp], atol=1e-5, msg=name)
        for m, (a, b) in enumerate(zip(gens, eager_gens, strict=True)):
            assert torch.equal(a.get_state(), b.get_state()), f"step {step} member {m}: the generators parted"
    assert graphed.graphs == 1 and replayed == STEPS - WARMUP_STEPS - 1
    assert len(points) > 1  # the members' points changed, the graph stayed
    assert len({tuple(x) for x in losses}) == len(losses)  # fresh draws every replay
    assert all(math.isfinite(v) for row in losses for v in row)


def test_train_members_with_cuda_graph_finishes_every_member(tmp_path):
    cfg = resolve_config("noisymix", ["dataset=digits", "width=8", "epochs=3", "batch_size=32", "train_subset=256",
                                      "device=cuda", "runtime.cuda_graph=true"])
    outs = [tmp_path / f"m{s}" for s in range(MEMBERS)]
    train_members(cfg, list(range(MEMBERS)), outs)
    for out in outs:
        assert (out / "final.pt").is_file()
        records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        ce = [r["cross_entropy"] for r in records]
        assert len(ce) == 3 and all(map(math.isfinite, ce)), ce
        assert json.loads((out / "config.json").read_text())["config"]["runtime"]["cuda_graph"] is True
