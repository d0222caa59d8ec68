"""The graphed step (``fullscale.training.graphed``, issue 47) where a CPU can check it.

- ``sgd_update`` (the update a graph can hold: the learning rate read from a tensor) against
  torch's own ``torch.optim.SGD``: the reference is torch's implementation, not this one.
- The static-buffer step run eagerly (``capture=False``, what a CUDA graph captures) against the
  trainer's ordinary step (``drawn_step_loss``, ``backward``, ``torch.optim.SGD.step``) on the same
  draws: the same losses and weights up to float rounding.
- ``cuda_graph=true`` refused in one line where it does not apply (the CPU first).
The capture itself is held against the eager step on a GPU: ``tests/gpu/test_graphed_step.py``.
"""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fullscale.models import create_model
from fullscale.training.config import TrainConfig
from fullscale.training.draws import draw_step
from fullscale.training.graphed import GraphedStep, check_cuda_graph, sgd_update
from fullscale.training.loop import train
from fullscale.training.methods import get_method
from fullscale.training.presets import resolve_config
from fullscale.training.step import drawn_step_loss
from noisymix_infra.config import apply_overrides

# float32 rounding of one update (a few ulps of values of order 1), grown over three steps
UPDATE_RTOL, UPDATE_ATOL = 1e-5, 1e-6


@settings(max_examples=20, deadline=None)
@given(momentum=st.sampled_from([0.0, 0.9]), nesterov=st.booleans(), weight_decay=st.sampled_from([0.0, 5e-4]),
       dampening=st.sampled_from([0.0, 0.1]), lrs=st.lists(st.floats(1e-4, 0.5), min_size=3, max_size=3),
       seed=st.integers(0, 2**31))
def test_sgd_update_is_torch_sgd_up_to_rounding(momentum, nesterov, weight_decay, dampening, lrs, seed):
    if nesterov and (momentum == 0 or dampening):
        nesterov = False  # torch refuses Nesterov without momentum or with dampening
    g = torch.Generator().manual_seed(seed)
    params = [torch.randn(5, 3, generator=g).requires_grad_(), torch.randn(7, generator=g).requires_grad_()]
    theirs = [p.detach().clone().requires_grad_() for p in params]
    ours_opt = torch.optim.SGD(params, lr=lrs[0], momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                               dampening=dampening)
    ref_opt = torch.optim.SGD(theirs, lr=lrs[0], momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                              dampening=dampening, foreach=False)
    for lr in lrs:
        grads = [torch.randn(p.shape, generator=g) for p in params]
        for p, q, grad in zip(params, theirs, grads, strict=True):
            p.grad, q.grad = grad.clone(), grad.clone()
        ref_opt.param_groups[0]["lr"] = lr
        ref_opt.step()
        sgd_update(ours_opt, [torch.tensor(lr)])
    for p, q in zip(params, theirs, strict=True):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=UPDATE_RTOL, atol=UPDATE_ATOL)
    if momentum:  # the state torch's SGD keeps, so checkpoints load into either
        for p, q in zip(params, theirs, strict=True):
            torch.testing.assert_close(ours_opt.state[p]["momentum_buffer"], ref_opt.state[q]["momentum_buffer"],
                                       rtol=UPDATE_RTOL, atol=UPDATE_ATOL)


def _draws(method_name: str, steps: int, batch: int = 8):
    cfg = resolve_config(method_name, ["width=4", "dataset=digits", f"batch_size={batch}", "lr=0.05"])
    method = get_method(cfg.method)
    g = torch.Generator().manual_seed(3)
    stage_g = torch.Generator().manual_seed(4)
    model = create_model("preactresnet18", 10, width=4)
    out = []
    for _ in range(steps):
        x = torch.randint(0, 256, (batch, 3, 32, 32), dtype=torch.uint8, generator=g)
        y = torch.randint(0, 10, (batch,), generator=g)
        out.append((draw_step(x, y, method, cfg, model.stages, g, stage_g), y))
    return cfg, method, out


@pytest.mark.parametrize("method_name", ["noisymix", "baseline", "nfm"])
def test_the_static_buffer_step_equals_the_ordinary_step_on_the_cpu(method_name, one_torch_thread):
    # one thread: at two, a convolution's backward sums in an order that varies from call to call, and
    # four chaotic steps of a small batch grow that to 1e-3 in conv1 (measured; test_members.py says the same)
    cfg, method, steps = _draws(method_name, steps=4)
    torch.manual_seed(0)
    model = create_model("preactresnet18", 10, width=4)
    ours_model = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.optim.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    ours_opt = torch.optim.SGD(ours_model.parameters(), lr=cfg.optim.lr, momentum=0.9, nesterov=True,
                               weight_decay=5e-4)
    g_ref, g_ours = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)  # the noise's stream
    graphed = GraphedStep(ours_model, ours_model, ours_opt, method, cfg, 10, g_ours, amp=False, capture=False)
    if method.feature_transform:
        assert {d.stage for d, _ in steps} != {None}
    for k, (draws, y) in enumerate(steps):
        lr = cfg.optim.lr * (1 - k / 8)  # a schedule: the static learning rate must follow it
        optimizer.param_groups[0]["lr"] = ours_opt.param_groups[0]["lr"] = lr
        ref = drawn_step_loss(model, model, draws, y, method, cfg, 10, g_ref)
        optimizer.zero_grad(set_to_none=True)
        ref.total.backward()
        optimizer.step()
        parts = graphed.step(draws, y)
        for name in ("total", "cross_entropy", "jsd"):
            torch.testing.assert_close(getattr(parts, name), getattr(ref, name).detach(), rtol=1e-4, atol=1e-5)
    assert torch.equal(g_ref.get_state(), g_ours.get_state())  # the noise drawn alike, in the same order
    for (name, a), b in zip(model.state_dict().items(), ours_model.state_dict().values(), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=name)


def test_cuda_graph_on_the_cpu_is_refused_in_one_line_and_writes_nothing(tmp_path):
    cfg = apply_overrides(TrainConfig(), ["dataset=digits", "width=4", "epochs=1", "train_subset=32",
                                          "device=cpu", "runtime.cuda_graph=true"])
    with pytest.raises(ValueError, match=r"^cuda_graph=true needs CUDA .* this run is on cpu: drop cuda_graph$"):
        train(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("override", "why"), [(["method=cutmix"], "batch op"), (["compile=true"], "choose one")])
def test_cuda_graph_names_what_it_does_not_apply_to(override, why):
    cfg = apply_overrides(TrainConfig(), ["runtime.cuda_graph=true", *override])
    with pytest.raises(ValueError, match=why):
        check_cuda_graph(cfg, get_method(cfg.method), torch.device("cuda"), 1)
    with pytest.raises(ValueError, match="one process"):
        check_cuda_graph(apply_overrides(TrainConfig(), ["runtime.cuda_graph=true"]), get_method("baseline"),
                         torch.device("cuda"), 2)
    check_cuda_graph(apply_overrides(TrainConfig(), override), get_method(cfg.method), torch.device("cpu"),
                     2)  # off: nothing refused


def test_stacked_members_are_no_longer_refused_on_cuda():
    """Issue 53: the members' step is captured too (``graphed_members``); nothing refuses it."""
    check_cuda_graph(apply_overrides(TrainConfig(), ["runtime.cuda_graph=true"]), get_method("noisymix"),
                     torch.device("cuda"), 1)
