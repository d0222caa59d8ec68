"""L = L_NFM + gamma L_JSD on a tiny batch, against a hand-written computation."""

from __future__ import annotations

import math

import pytest
import torch

from noisymix import PUBLIC_CODE_JSD_WEIGHT, noisymix_loss


def test_three_views_hand_computed():
    # Two samples, two classes; clean logits, two augmented views.
    logits = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0],     # clean: p = (1/2,1/2), (3/4,1/4)
                           [0.0, 0.0], [0.0, 0.0],               # aug1:  (1/2,1/2), (1/2,1/2)
                           [0.0, 0.0], [0.0, math.log(3.0)]],    # aug2:  (1/2,1/2), (1/4,3/4)
                          dtype=torch.float64)
    targets = torch.tensor([[1.0, 0.0], [0.25, 0.75]], dtype=torch.float64)
    ce = (math.log(2.0) + (0.25 * -math.log(0.75) + 0.75 * -math.log(0.25))) / 2
    # Sample 1: all views equal -> 0. Sample 2: mixture (1/2,1/2);
    # JS = H(mix) - mean H(p) = ln 2 - (2 H(3/4,1/4) + ln 2) / 3.
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    jsd = (0.0 + (math.log(2.0) - (2 * h + math.log(2.0)) / 3)) / 2
    parts = noisymix_loss(logits, targets, views=3, gamma=2.0)
    assert parts.cross_entropy.item() == pytest.approx(ce, abs=1e-12)
    assert parts.jsd.item() == pytest.approx(jsd, abs=1e-12)
    assert parts.total.item() == pytest.approx(ce + 2.0 * jsd, abs=1e-12)


def test_vmapped_over_members_with_one_gamma_each():
    """The toy's ensemble step: member g is the hand-computed batch above with gamma_g."""
    logits = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0], [0.0, 0.0], [0.0, 0.0],
                           [0.0, 0.0], [0.0, math.log(3.0)]], dtype=torch.float64)
    targets = torch.tensor([[1.0, 0.0], [0.25, 0.75]], dtype=torch.float64)
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    ce = (math.log(2.0) + (0.25 * -math.log(0.75) + 0.75 * -math.log(0.25))) / 2
    jsd = (math.log(2.0) - (2 * h + math.log(2.0)) / 3) / 2
    gammas = torch.tensor([0.0, 2.0, 12.0], dtype=torch.float64)

    def loss(z, y, gamma):
        parts = noisymix_loss(z, y, views=3, gamma=gamma)
        return parts.total, parts.cross_entropy, parts.jsd

    total, cross, js = torch.func.vmap(loss)(logits.expand(3, -1, -1), targets.expand(3, -1, -1), gammas)
    assert cross.tolist() == pytest.approx([ce] * 3, abs=1e-12)
    assert js.tolist() == pytest.approx([jsd] * 3, abs=1e-12)
    assert total.tolist() == pytest.approx([ce + g * jsd for g in (0.0, 2.0, 12.0)], abs=1e-12)
    with pytest.raises(ValueError, match="gamma"):  # an unbatched tensor gamma is still checked
        noisymix_loss(logits, targets, gamma=torch.tensor(-1.0))


def test_single_view_has_no_stability_term():
    logits = torch.randn(4, 3)
    targets = torch.softmax(torch.randn(4, 3), -1)
    parts = noisymix_loss(logits, targets, views=1)
    assert parts.jsd.item() == 0.0
    assert parts.total.item() == pytest.approx(parts.cross_entropy.item())


def test_public_weight_and_bad_arguments():
    assert PUBLIC_CODE_JSD_WEIGHT == 12.0
    with pytest.raises(ValueError, match="gamma"):
        noisymix_loss(torch.zeros(6, 2), torch.zeros(2, 2), gamma=-1.0)
    with pytest.raises(ValueError, match="views"):
        noisymix_loss(torch.zeros(7, 2), torch.zeros(2, 2), views=3)
