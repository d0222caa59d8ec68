"""Adversarial training (Madry et al., 2018, "Towards Deep Learning Models Resistant to Adversarial Attacks"), a
method the project does not ship, in the second form ``noisymix screen`` takes: a
``fullscale.training.methods.Method`` whose kind of mixing is registered here, because its batch op needs the
model (a batch function sees only the batch):

    PYTHONPATH=. noisymix screen docs.examples.adversarial:adversarial --out screens/adversarial

Every training batch is replaced by its L-infinity PGD adversary: a uniform start in the ``EPSILON`` ball,
``STEPS`` signed-gradient steps of ``STEP`` on the cross-entropy, each projected back onto the ball and into
[0, 1] (Madry et al.'s CIFAR-10 setting: 8/255, 2/255, 7 steps).  The attack runs the model in eval mode, so
its forward passes leave the batch-norm statistics alone, and takes gradients with respect to the images only
(no parameter gradient is kept); the step then trains on the adversarial images with their own labels.  The
start is drawn from ``generator``, the run's own stream: a run is reproducible from its seed.

A PGD step costs ``STEPS`` more forward and backward passes than a Baseline step: this screen trains about
eight times longer than a batch function's.
"""

import torch
import torch.nn.functional as F

from fullscale.mixings import MIXINGS, Mixing, register_mixing
from fullscale.training.methods import Method
from noisymix.loss import noisymix_loss

EPSILON = 8 / 255
STEP = 2 / 255
STEPS = 7
KIND = "pgd_linf"


def pgd(model, images, labels, generator, *, epsilon=EPSILON, step=STEP, steps=STEPS):
    """The L-infinity PGD adversary of ``images`` (float, [0, 1]) for ``model`` (module docstring)."""
    was_training = model.training
    model.eval()
    try:
        start = torch.rand(images.shape, generator=generator, device=generator.device).to(images)
        adversary = (images + (2 * start - 1) * epsilon).clamp(0, 1)
        for _ in range(steps):
            adversary.requires_grad_(True)
            loss = F.cross_entropy(model(adversary).float(), labels)
            (grad,) = torch.autograd.grad(loss, adversary)
            adversary = adversary.detach() + step * grad.sign()
            adversary = torch.minimum(torch.maximum(adversary, images - epsilon), images + epsilon).clamp(0, 1)
    finally:
        model.train(was_training)
    return adversary.detach()


def _batch_op(core, x, y, draw, options, *, generator):
    # the labels travel to the loss as the op's extra: the step's own targets would mix them with the
    # partners its draws name (a kind of mixing draws lambdas), and adversarial training mixes nothing
    return pgd(core, x, y, generator), draw, y


def _loss(logits, targets, labels, options):
    """Cross-entropy on the batch's own labels, as a Baseline step's loss."""
    return noisymix_loss(logits.float(), F.one_hot(labels, logits.shape[-1]).float(), views=1)


if KIND not in MIXINGS:  # imported once per process; a second import finds it filed
    register_mixing(Mixing(KIND, batch_op=_batch_op, loss=_loss, per_pair=True, combines=False))

adversarial = Method("adversarial", "Adversarial training (PGD, Madry et al.)", mixing=KIND)
