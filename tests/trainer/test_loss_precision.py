"""Every loss part is computed in float32 under bf16 autocast (issue 47, goal 4).

Our loop stopped with a non-finite loss at lr 0.1 in bf16; a loss part computed in bf16 (the JSD's
log-softmax above all: bf16 keeps 8 bits, so log-probabilities of confident views lose their
differences) was a candidate.  Under autocast the network's activations and logits are bf16 (its
convolutions and the last linear layer); the step's loss upcasts the logits before anything else
(``step.method_loss``: ``logits.float()``) and every op after that is float32.  Checked here on a
whole NoisyMix step under the CPU's bf16 autocast: the parts are float32 and equal, to float32
rounding, the loss computed here in float64 from the very (bf16) logits the network returned, by
the definitions: CE of the clean view against lambda one-hot(y) + (1 - lambda) one-hot(y[perm]) and
the Jensen-Shannon divergence of the three views, H(mean p) - mean H(p).
"""

from __future__ import annotations

import torch

from fullscale.models import create_model
from fullscale.training.draws import draw_step
from fullscale.training.methods import get_method
from fullscale.training.presets import resolve_config
from fullscale.training.step import drawn_step_loss

B, K = 16, 10


def _reference(logits: torch.Tensor, y: torch.Tensor, perm: torch.Tensor, lam: torch.Tensor, gamma: float):
    z = logits.double().reshape(3, B, K)
    log_p = z - z.logsumexp(-1, keepdim=True)
    one_hot = torch.eye(K, dtype=torch.float64)
    targets = lam.double() * one_hot[y] + (1 - lam.double()) * one_hot[y[perm]]
    ce = -(targets * log_p[0]).sum(-1).mean()
    p = log_p.exp()
    mixture = p.mean(0)
    entropy = lambda q: -(q * q.clamp_min(1e-300).log()).sum(-1)  # noqa: E731
    jsd = (entropy(mixture) - entropy(p).mean(0)).mean()
    return ce + gamma * jsd, ce, jsd


def test_every_loss_part_is_float32_under_bf16_autocast_and_equals_the_float64_loss_of_the_same_logits():
    cfg = resolve_config("noisymix", ["width=8", "dataset=digits", f"batch_size={B}"])
    method = get_method(cfg.method)
    torch.manual_seed(0)
    model = create_model("preactresnet18", K, width=8)
    g, stage_g = torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)
    x = torch.randint(0, 256, (B, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.randint(0, K, (B,), generator=g)
    draws = draw_step(x, y, method, cfg, model.stages, g, stage_g)
    seen = []
    model.register_forward_hook(lambda _m, _i, out: seen.append(out))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        parts = drawn_step_loss(model, model, draws, y, method, cfg, K, torch.Generator().manual_seed(3))
    (logits,) = seen
    assert logits.dtype == torch.bfloat16  # bf16 is used: in the network, up to its logits
    for value in (parts.total, parts.cross_entropy, parts.jsd):
        assert value.dtype == torch.float32
    total, ce, jsd = _reference(logits, y, draws.draw.perm, draws.draw.lam, cfg.jsd_weight)
    # float32 arithmetic on values of order 1-10: a few ulps (1e-6 relative), not bf16's 4e-3
    torch.testing.assert_close(parts.cross_entropy.double(), ce, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(parts.jsd.double(), jsd, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(parts.total.double(), total, rtol=1e-5, atol=1e-5)
