"""Puzzle Mix (Kim, Choo & Song, ICML 2020): saliency-guided mixup with an optimal mask per pair.

Our own statement of the method as its public code builds it (github.com/snu-mllab/PuzzleMix,
``mixup.py``: ``mixup_graph``, ``graphcut_multi``, ``neigh_penalty``, ``mask_transport``,
``transport_image``; recipe in ``main.py`` and its README).  One step, for images ``x`` (B, C, W, W)
in [0, 1] (our models normalise inside), their saliency (B, W, W), partners ``perm`` and one lambda:

1. a block count ``n`` drawn uniformly from ``block_nums`` (the code: ``2 ** randint(1, 5)``);
2. unary terms: the saliency average-pooled to n x n blocks and normalised to sum 1 per image;
   pairwise terms: the mean absolute colour difference across each block boundary of the
   ``neigh_size``-pooled images, for the four (own, partner) combinations, times beta gamma, with
   ``beta = beta / n / 16``; the code folds the pairwise terms into unaries plus one edge weight;
3. labels {0, ..., L-1} (mask values 1 - l / (L-1)), label prior ``eta * -log(binomial(L-1, lambda))
   / n^2``, label cost (l - l')^2 / (L-1)^2 on edges, all scaled by ``1000 n^2`` and truncated to
   int32 as the code does, then solved per image with alpha-beta swap (pyGCO's
   ``cut_grid_graph(..., algorithm="swap")``, the library the code uses).  Its C wrapper keeps the
   graphs in one unlocked global table per process, so a process cuts one graph at a time; with
   ``workers`` > 1 the batch is shared between this thread and ``workers - 1`` helper processes
   (``fullscale.puzzlemix.cuts``; the public code's ``--mp`` is a process pool too), the same masks
   as in one thread.  Measured (``noisymix bench puzzlemix``, 2-core VM, batch 32, workers 2): the
   cuts alone 1.3-1.6x faster than in one thread on the idle machine (1.5-1.75x at batch 128),
   0.7-0.8x (medians) beside a busy core; the locked thread pool used before, 0.73-0.96x; the whole
   CPU step ~1x either way, the cuts being about 1 % of it;
4. transport (``transport=True``): at ``t_size``-pixel blocks, each image's salient blocks move to
   where the mask keeps it, by the code's greedy assignment: ``n`` rounds of "every block picks its
   cheapest destination, each destination keeps its cheapest claimant, the others' claimed cost
   grows by 1" on cost ``t_eps * |i - j|^2 / (n - 1)^2 - saliency_i * [mask_j > 0]``; the last round's
   winners move, a destination nobody won is left empty (zero in the code's normalised space, i.e.
   the normalisation mean here: ``fill``);
5. mixed = mask * x' + (1 - mask) * x[perm]', label weight of each pair = the mask's mean.

The adversarial option of its CIFAR recipe (``adv_p > 0``): with probability ``adv_p`` each (own,
partner) side gets an FGSM-like perturbation, from a uniform start in the ``adv_eps / 255`` ball
(the saliency pass runs on the perturbed batch), one signed-gradient step of (adv_eps + 2) / 255,
clipped to the ball and scaled by a uniform coefficient (``adversarial_start`` / ``adversarial_noise``).

The package, by job: ``config`` (the options, ``PuzzleMixConfig``, and a step's result),
``gradient`` (the saliency pass and the adversarial noise), ``energy`` (steps 2-3: the graph-cut
problem of every pair), ``masks`` (step 3: the cuts, shared with helper processes), ``cuts`` (one
share of the cuts, and the helper processes' loop), ``transport`` (step 4), ``mixing`` (steps 1-5 as
one operator, the trainer's step and loss, and the kind of mixing it registers; ``fullscale.mixings``
imports it).  The public names are handed on here, each loaded from its module on first use
(PEP 562): a helper process starts as ``python -m fullscale.puzzlemix.cuts``, which imports this
package first, and must import numpy and pyGCO only, never torch.  The graph cut needs
``pip install noisymix[puzzlemix]`` (gco-wrapper); it is imported on first use.
"""

from __future__ import annotations

import importlib

#: each public name -> the module of this package that defines it
_HOMES: dict[str, str] = {
    "PuzzleMixConfig": "config", "PuzzleMixResult": "config",
    "adversarial_noise": "gradient", "adversarial_start": "gradient", "saliency": "gradient",
    "block_costs": "energy", "block_saliency": "energy",
    "solve_masks": "masks",
    "mask_transport": "transport", "transport_blocks": "transport",
    "draw_block_num": "mixing", "puzzle_mix": "mixing", "puzzlemix_batch": "mixing", "puzzlemix_loss": "mixing",
    "puzzlemix_step": "mixing",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    """A public name, imported from its module on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
