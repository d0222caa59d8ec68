"""Stacked members' graphed step (``fullscale.training.graphed_members``, issue 53 goal 5) where a CPU can check it.

The body a CUDA graph captures, run eagerly from its static buffers (``capture=False``), against:
- the members path's eager step (``members.Stacked.losses``, backward of the sum, ``torch.optim.SGD``):
  every member's loss parts, weights, BatchNorm statistics and noise generator after several steps;
- each seed's step alone (``graphed.GraphedStep`` on the plain model, its own draws and generator):
  member i is seed i alone up to the rounding of a grouped convolution (``test_members.py``'s
  bounds: one step to a few float32 ulps), so the members' streams stay independent;
- a planted shared noise generator, which that comparison must catch.
``feature_noise`` drawn before the forward pass is the noise ``noisy_feature_mixup`` draws inside it,
bit for bit.  ``cuda_graph=true`` for members on a CPU is refused in one line with nothing written.
The capture itself is held against this eager body on a device: ``tests/gpu/test_graphed_step.py``.
"""

from __future__ import annotations

import copy
import types

import pytest
import torch

from fullscale.models import create_model
from fullscale.training.draws import draw_step, step_mix_config
from fullscale.training.graphed import GraphedStep
from fullscale.training.graphed_members import GraphedMembers
from fullscale.training.members import Stacked, member_state_dicts, stack_models, train_members
from fullscale.training.methods import get_method
from fullscale.training.presets import resolve_config
from noisymix.mixing import MixDraw, feature_noise, noisy_feature_mixup
from noisymix_infra.config import apply_overrides

SEEDS = (0, 1, 2)
# several steps of one float32 computation in another order (split/where/cat around the same ops):
# rounding of sums of a few hundred terms, grown over the momentum steps; on an Intel Xeon with torch's AVX512
# kernels one first-layer weight of 108 (scale 0.26) ended 1.6e-5 apart (1e-5 held on AMD EPYC): 3e-5, a
# tenth of a thousandth of the weights' scale, bounds that rounding on either CPU
EAGER_RTOL, EAGER_ATOL = 1e-4, 3e-5
# a grouped convolution against a plain one, one step (test_members.py's FIRST_STEP_RTOL and its update bound)
ALONE_RTOL, ALONE_ATOL = 1e-4, 1e-6


def _setup(method_name: str, steps: int, batch: int = 8):
    """Configs, a stack of the SEEDS' models, and each member's draws of ``steps`` steps."""
    cfg = resolve_config(method_name, ["width=4", "dataset=digits", f"batch_size={batch}", "lr=0.05"])
    method = get_method(cfg.method)
    models = []
    for seed in SEEDS:
        torch.manual_seed(seed)
        models.append(create_model("preactresnet18", 10, width=4))
    data_g = torch.Generator().manual_seed(11)
    steps_draws = []
    gens = [(torch.Generator().manual_seed(100 + s), torch.Generator().manual_seed(200 + s)) for s in SEEDS]
    for _ in range(steps):
        x = [torch.randint(0, 256, (batch, 3, 32, 32), dtype=torch.uint8, generator=data_g) for _ in SEEDS]
        y = [torch.randint(0, 10, (batch,), generator=data_g) for _ in SEEDS]
        steps_draws.append(([draw_step(x[m], y[m], method, cfg, models[0].stages, *gens[m]) for m in range(len(SEEDS))],
                            y))
    return cfg, method, models, steps_draws


def _noise_generators():
    return [torch.Generator().manual_seed(900 + s) for s in SEEDS]


def _sgd(params, cfg):
    return torch.optim.SGD(params, lr=cfg.optim.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)


@pytest.mark.parametrize("method_name", ["noisymix", "nfm", "augmix_jsd", "mixup", "baseline"])
def test_the_graphed_members_body_equals_the_members_eager_step(method_name, one_torch_thread):
    cfg, method, models, steps = _setup(method_name, steps=4)
    ref_stack = stack_models(models)
    ours_stack = copy.deepcopy(ref_stack)
    ref_opt, ours_opt = _sgd(ref_stack.parameters(), cfg), _sgd(ours_stack.parameters(), cfg)
    ref_gens, ours_gens = _noise_generators(), _noise_generators()
    trainee = Stacked(ref_stack, models[0], method, cfg, 10)
    runs = [types.SimpleNamespace(generators=types.SimpleNamespace(aug=g)) for g in ref_gens]
    graphed = GraphedMembers(ours_stack, ours_opt, method, cfg, 10, ours_gens, amp=False, capture=False)
    if method.feature_transform and method.any_stage:
        assert len({d.stage for draws, _ in steps for d in draws}) > 1  # the points differ between members/steps
    for k, (draws, labels) in enumerate(steps):
        lr = cfg.optim.lr * (1 - k / 8)  # a schedule: the static learning rate must follow it
        ref_opt.param_groups[0]["lr"] = ours_opt.param_groups[0]["lr"] = lr
        ref = trainee.losses(draws, labels, runs)
        ref_opt.zero_grad(set_to_none=True)
        torch.stack([p.total for p in ref]).sum().backward()
        ref_opt.step()
        ours = graphed.train_step(draws, labels)
        assert len(ours) == len(SEEDS)
        for m, (a, b) in enumerate(zip(ours, ref, strict=True)):
            for name in ("total", "cross_entropy", "jsd"):
                torch.testing.assert_close(getattr(a, name), getattr(b, name).detach(), rtol=EAGER_RTOL,
                                           atol=EAGER_ATOL, msg=f"step {k} member {m} {name}")
    for m, (a, b) in enumerate(zip(ref_gens, ours_gens, strict=True)):
        assert torch.equal(a.get_state(), b.get_state()), f"member {m}: the noise was drawn otherwise"
    for m, (ref_state, ours_state) in enumerate(zip(member_state_dicts(ref_stack), member_state_dicts(ours_stack),
                                                    strict=True)):
        for key, value in ref_state.items():
            torch.testing.assert_close(ours_state[key], value, rtol=EAGER_RTOL, atol=EAGER_ATOL,
                                       msg=f"member {m} {key}")


def _alone_after_one_step(cfg, method, model, draws, labels, seed_index):
    model = copy.deepcopy(model)
    opt = _sgd(model.parameters(), cfg)
    step = GraphedStep(model, model, opt, method, cfg, 10, _noise_generators()[seed_index], amp=False, capture=False)
    parts = step.step(draws, labels)
    return parts, model.state_dict()


@pytest.mark.parametrize("method_name", ["noisymix", "nfm"])
def test_each_member_of_the_graphed_body_is_its_seed_alone(method_name, one_torch_thread):
    """Member i of the stacked graphed body equals seed i's graphed body alone (its own weights,
    draws, noise generator): the per-seed streams stay independent inside the shared step."""
    cfg, method, models, steps = _setup(method_name, steps=1)
    (draws, labels), = steps
    stack = stack_models(models)
    graphed = GraphedMembers(stack, _sgd(stack.parameters(), cfg), method, cfg, 10, _noise_generators(), amp=False,
                             capture=False)
    ours = graphed.train_step(draws, labels)
    states = member_state_dicts(stack)
    for m in range(len(SEEDS)):
        parts, state = _alone_after_one_step(cfg, method, models[m], draws[m], labels[m], m)
        for name in ("total", "cross_entropy", "jsd"):
            torch.testing.assert_close(getattr(ours[m], name), getattr(parts, name), rtol=ALONE_RTOL, atol=ALONE_ATOL,
                                       msg=f"member {m} {name}")
        for key, value in state.items():
            if value.is_floating_point():
                torch.testing.assert_close(states[m][key], value, rtol=ALONE_RTOL, atol=ALONE_ATOL,
                                           msg=f"member {m} {key}")
            else:
                assert torch.equal(states[m][key], value), key
    assert float(ours[0].total) != float(ours[1].total)  # different runs


def test_a_planted_shared_noise_generator_is_caught(one_torch_thread):
    """All members drawing their noise from one generator (a bug) no longer equal their seeds alone."""
    cfg, method, models, steps = _setup("noisymix", steps=1)
    (draws, labels), = steps
    stack = stack_models(models)
    shared = torch.Generator().manual_seed(900)  # seed 0's stream, shared
    graphed = GraphedMembers(stack, _sgd(stack.parameters(), cfg), method, cfg, 10, [shared] * len(SEEDS),
                             amp=False, capture=False)
    ours = graphed.train_step(draws, labels)
    off = []
    for m in range(len(SEEDS)):
        parts, _ = _alone_after_one_step(cfg, method, models[m], draws[m], labels[m], m)
        if not torch.allclose(ours[m].total, parts.total, rtol=ALONE_RTOL, atol=ALONE_ATOL):
            off.append(m)
    assert off and 0 not in off  # member 0 drew first from its own stream; the others' noise was not theirs


@pytest.mark.parametrize("split", ["independent", "shared"])
def test_noise_drawn_before_the_forward_pass_is_the_noise_drawn_inside_it(split):
    cfg = resolve_config("noisymix", ["width=4", "dataset=digits", f"mix.noise.split_noise={split}"])
    mix_cfg = step_mix_config(get_method("noisymix"), cfg)
    h = torch.randn(3 * 6, 5, 4, 4, generator=torch.Generator().manual_seed(0))
    draw = MixDraw(perm=torch.randperm(6, generator=torch.Generator().manual_seed(1)), lam=torch.tensor(0.3))
    g_inside, g_before = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    inside = noisy_feature_mixup(h, draw, mix_cfg, generator=g_inside, views=3)
    terms = feature_noise(tuple(h.shape), mix_cfg, generator=g_before, views=3)
    kept = [None if t is None else t.clone() for t in terms]
    before = noisy_feature_mixup(h, draw, mix_cfg, generator=None, views=3, terms=terms)
    assert torch.equal(inside, before)
    assert torch.equal(g_inside.get_state(), g_before.get_state())
    assert all(a is None or torch.equal(a, b) for a, b in zip(terms, kept, strict=True))  # the caller's left unchanged


def test_members_with_cuda_graph_on_a_cpu_are_refused_in_one_line_and_write_nothing(tmp_path):
    cfg = apply_overrides(resolve_config("noisymix", ["dataset=digits", "width=4", "epochs=1", "train_subset=32",
                                                      "batch_size=16"]), ["device=cpu", "runtime.cuda_graph=true"])
    outs = [tmp_path / "a", tmp_path / "b"]
    with pytest.raises(ValueError, match=r"^cuda_graph=true needs CUDA .* this run is on cpu: drop cuda_graph$"):
        train_members(cfg, (0, 1), outs)
    assert not any(o.exists() for o in outs)


@pytest.mark.parametrize("argv", [["--plan", "gpu"],
                                  ["--plan", "quick", "--set", "train_overrides=runtime.cuda_graph=true"]])
def test_reproduce_with_captured_steps_on_a_cpu_is_refused_in_one_line_before_any_step(argv, tmp_path, capsys,
                                                                                       monkeypatch):
    """The gpu plan captures its members' steps (issue 53): on a machine without CUDA it is refused by
    the plan's check, one line, before the folder is claimed (issue 54: not after verify, toy, corrupt)."""
    from noisymix_app.cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["reproduce", *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "cuda_graph=true needs CUDA" in err and "\n" not in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()
