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

Step 4 lives in ``fullscale.puzzlemix.transport`` (its names handed on here).  The graph cut needs
``pip install noisymix[puzzlemix]`` (gco-wrapper); it is imported on first use.
"""

from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fullscale.mixings import Mixing, register_mixing
from fullscale.puzzlemix.cuts import cut_chunk
from fullscale.puzzlemix.transport import mask_transport, transport_blocks
from noisymix.loss import LossParts, soft_cross_entropy
from noisymix.mixing import MixDraw

__all__ = ["PuzzleMixConfig", "PuzzleMixResult", "adversarial_noise", "adversarial_start", "block_costs",
           "block_saliency", "mask_transport", "puzzle_mix", "puzzlemix_batch", "puzzlemix_loss", "puzzlemix_step",
           "saliency", "solve_masks", "transport_blocks"]


@dataclass(frozen=True)
class PuzzleMixConfig:
    """The public code's CIFAR recipe (its README's PreActResNet-18 commands): alpha 1 (``mix.alpha``),
    3 labels, eta 0.2, beta 1.2, gamma 0.5, neighbourhood 4, transport at 4-pixel blocks with
    eps 0.8, no adversarial part (its adversarial rows: ``adv_p=0.1``, ``adv_eps=10``), no clean loss."""

    block_nums: tuple[int, ...] = (2, 4, 8, 16)  # blocks per side, drawn uniformly (2 ** randint(1, 5))
    n_labels: int = 3  # mask values {0, 1/2, 1}; 2 or 4 also as the code
    beta: float = 1.2  # label smoothness
    gamma: float = 0.5  # data local smoothness
    eta: float = 0.2  # prior (lambda) term
    neigh_size: int = 4  # pooling of the images for the boundary differences
    transport: bool = True  # move salient blocks (the public code's --transport)
    t_eps: float = 0.8  # transport cost coefficient
    t_size: int = 4  # transport block size in pixels; -1: the graph-cut block size (main.py's default)
    adv_p: float = 0.0  # probability of the adversarial perturbation, per side and step
    adv_eps: float = 10.0  # its l-inf ball, in 1/255
    # > 0: the saliency pass runs in train mode and its loss, 2 clean_lam CE(clean), joins the step's
    # loss (the code's clean input regularisation, there next to a BCE on softmax averaged over classes)
    clean_lam: float = 0.0
    workers: int = 0  # graph-cut processes, this one included (0: min(8, CPUs); 1: in this thread alone)
    # the step's loss: "ce", the soft-target cross-entropy every method of this trainer uses, or
    # "bce_softmax", the public code's BCE on softmax outputs averaged over classes (its clean term
    # then 2 clean_lam CE / K as there); its recipe pairs that loss with weight decay 1e-4
    loss: Literal["ce", "bce_softmax"] = "ce"

    def __post_init__(self) -> None:
        if not self.block_nums or any(b < 1 for b in self.block_nums):
            raise ValueError(f"puzzlemix.block_nums must be positive block counts, got {self.block_nums}")
        if self.n_labels not in (2, 3, 4):
            raise ValueError(f"puzzlemix.n_labels must be 2, 3 or 4 (the code's priors), got {self.n_labels}")
        if self.neigh_size < 1 or (self.t_size < 1 and self.t_size != -1):
            raise ValueError("puzzlemix.neigh_size must be >= 1 and t_size >= 1 or -1")
        if not 0 <= self.adv_p <= 1:
            raise ValueError(f"puzzlemix.adv_p must lie in [0, 1], got {self.adv_p}")
        if self.workers < 0 or self.clean_lam < 0 or self.adv_eps < 0:
            raise ValueError("puzzlemix.workers, clean_lam and adv_eps must be >= 0")
        if self.loss not in ("ce", "bce_softmax"):
            raise ValueError(f"puzzlemix.loss must be 'ce' or 'bce_softmax', got {self.loss!r}")


@dataclass(frozen=True)
class PuzzleMixResult:
    images: Tensor  # (B, C, W, W) mixed images
    weights: Tensor  # (B,) weight of each image's own label (= the mask's mean)
    mask: Tensor  # (B, 1, W, W) share of the own (transported) image per pixel
    block_num: int  # graph-cut blocks per side this step


def _gco() -> Any:
    try:
        import gco
    except ImportError:
        raise ImportError("Puzzle Mix needs the graph-cut library gco-wrapper: pip install 'noisymix[puzzlemix]'") \
            from None
    return gco


# ---------------------------------------------------------------- saliency and adversarial noise


def saliency(model: nn.Module, x: Tensor, y: Tensor, *, std: Tensor | None = None,
             clean_lam: float = 0.0) -> tuple[Tensor, Tensor, Tensor | None]:
    """sqrt(mean_c (dCE/dx_c)^2) of the batch-mean clean loss, (B, H, W); that gradient
    (B, C, H, W), in the normalised space; and the clean loss term.

    The code differentiates with respect to the normalised input; ``std`` (the model's per-channel
    normalisation, (1, C, 1, 1)) converts our [0, 1] input's gradient to that one.  With
    ``clean_lam == 0`` the pass runs in eval mode and no parameter gradient is kept (the code zeroes
    them); otherwise in train mode and the returned ``2 clean_lam CE`` keeps its graph for the step.
    """
    was_training = model.training
    x = x.detach().requires_grad_(True)
    if clean_lam == 0:
        model.eval()
    try:
        logits = model(x).float()
    finally:
        model.train(was_training)
    loss = F.cross_entropy(logits, y)
    (grad,) = torch.autograd.grad(loss, x, retain_graph=clean_lam > 0)
    grad = grad.float()
    if std is not None:
        grad = grad * std.to(grad)
    unary = grad.pow(2).mean(1).sqrt()
    return unary, grad, (2 * clean_lam * loss if clean_lam > 0 else None)


def adversarial_start(x: Tensor, cfg: PuzzleMixConfig, *, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Whether each side (own, partner) is perturbed this step, (2,) bool, and the uniform start
    noise in the ``adv_eps / 255`` ball, clipped so that ``x + noise`` stays in [0, 1]."""
    sides = torch.rand(2, generator=generator, device=generator.device) < cfg.adv_p
    eps = cfg.adv_eps / 255.0
    noise = torch.rand(x.shape, generator=generator, device=generator.device).to(x) * (2 * eps) - eps
    return sides.to(x.device), (x + noise).clamp(0, 1) - x


def adversarial_noise(noise: Tensor, grad_sign: Tensor, cfg: PuzzleMixConfig, *,
                      generator: torch.Generator) -> Tensor:
    """One signed-gradient step of (adv_eps + 2) / 255 from ``noise``, clipped to the ball, times a
    uniform coefficient (the code's ``adv_mix_coef``)."""
    eps = cfg.adv_eps / 255.0
    noise = (noise + (cfg.adv_eps + 2) / 255.0 * grad_sign).clamp(-eps, eps)
    return noise * torch.rand((), generator=generator, device=generator.device).to(noise)


# ---------------------------------------------------------------- the energy


def _neigh_penalty(a: Tensor, b: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Mean |a - b| over colour across each block boundary (rows, columns), averaged along it."""
    pw_x = a[:, :, :-1, :] - b[:, :, 1:, :]
    pw_y = a[:, :, :, :-1] - b[:, :, :, 1:]
    pw_x = pw_x[:, :, k - 1::k, :]
    pw_y = pw_y[:, :, :, k - 1::k]
    pw_x = F.avg_pool2d(pw_x.abs().mean(1), kernel_size=(1, k))
    pw_y = F.avg_pool2d(pw_y.abs().mean(1), kernel_size=(k, 1))
    return pw_x, pw_y


def _prior(alpha: float, n_labels: int, eps: float = 1e-8) -> np.ndarray:
    """-log P(label) of Binomial(L - 1, alpha) (label 0 = all own image), as the code."""
    if n_labels == 2:
        return np.array([-np.log(alpha + eps), -np.log(1 - alpha + eps)])
    if n_labels == 3:
        return np.array([-np.log(alpha**2 + eps), -np.log(2 * alpha * (1 - alpha) + eps),
                         -np.log((1 - alpha)**2 + eps)])
    return np.array([-np.log(alpha**3 + eps), -np.log(3 * alpha**2 * (1 - alpha) + eps),
                     -np.log(3 * alpha * (1 - alpha)**2 + eps), -np.log((1 - alpha)**3 + eps)])


def block_costs(x: Tensor, sal: Tensor, perm: Tensor, lam: float, block_num: int,
                cfg: PuzzleMixConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray, Tensor]:
    """The graph-cut problem of every pair, batched: int32 unary costs (B, n, n, L), vertical and
    horizontal edge weights (B, n-1, n), (B, n, n-1), and the normalised block saliency (B, n, n).

    Same float operations in the same order as the code (float32 on the device, then its numpy
    expressions on the CPU), so the int32 arrays equal the ones its ``graphcut_multi`` passes on.
    """
    x, sal = x.float(), sal.float()
    batch, width = x.shape[0], x.shape[-1]
    block_size = width // block_num
    neigh_size = min(cfg.neigh_size, block_size)
    beta = cfg.beta / block_num / 16

    unary_own = block_saliency(sal, block_size)
    unary_partner = unary_own[perm]

    own = F.avg_pool2d(x, neigh_size)
    partner = own[perm]
    k = block_size // neigh_size
    pw_x = torch.zeros([batch, 2, 2, block_num - 1, block_num], device=x.device)
    pw_y = torch.zeros([batch, 2, 2, block_num, block_num - 1], device=x.device)
    pw_x[:, 0, 0], pw_y[:, 0, 0] = _neigh_penalty(partner, partner, k)
    pw_x[:, 0, 1], pw_y[:, 0, 1] = _neigh_penalty(partner, own, k)
    pw_x[:, 1, 0], pw_y[:, 1, 0] = _neigh_penalty(own, partner, k)
    pw_x[:, 1, 1], pw_y[:, 1, 1] = _neigh_penalty(own, own, k)
    pw_x = beta * cfg.gamma * pw_x
    pw_y = beta * cfg.gamma * pw_y

    u1, u2 = unary_own.clone(), unary_partner.clone()
    u2[:, :-1, :] += (pw_x[:, 1, 0] + pw_x[:, 1, 1]) / 2.
    u1[:, :-1, :] += (pw_x[:, 0, 1] + pw_x[:, 0, 0]) / 2.
    u2[:, 1:, :] += (pw_x[:, 0, 1] + pw_x[:, 1, 1]) / 2.
    u1[:, 1:, :] += (pw_x[:, 1, 0] + pw_x[:, 0, 0]) / 2.
    u2[:, :, :-1] += (pw_y[:, 1, 0] + pw_y[:, 1, 1]) / 2.
    u1[:, :, :-1] += (pw_y[:, 0, 1] + pw_y[:, 0, 0]) / 2.
    u2[:, :, 1:] += (pw_y[:, 0, 1] + pw_y[:, 1, 1]) / 2.
    u1[:, :, 1:] += (pw_y[:, 1, 0] + pw_y[:, 0, 0]) / 2.
    edge_x = (pw_x[:, 1, 0] + pw_x[:, 0, 1] - pw_x[:, 1, 1] - pw_x[:, 0, 0]) / 2
    edge_y = (pw_y[:, 1, 0] + pw_y[:, 0, 1] - pw_y[:, 1, 1] - pw_y[:, 0, 0]) / 2

    # one transfer; then the code's numpy expressions (its graphcut_multi(unary2, unary1, ...))
    u1_np, u2_np = torch.stack([u1, u2]).cpu().numpy()
    ex_np, ey_np = edge_x.cpu().numpy(), edge_y.cpu().numpy()
    large_val = 1000 * block_num**2
    prior = cfg.eta * _prior(lam, cfg.n_labels) / block_num**2
    unary = (large_val * np.stack([(1 - t) * u2_np + t * u1_np + prior[i]
                                   for i, t in enumerate(np.linspace(0, 1, cfg.n_labels))], axis=-1)).astype(np.int32)
    ex_np = (large_val * (ex_np + beta)).astype(np.int32)
    ey_np = (large_val * (ey_np + beta)).astype(np.int32)
    return unary, ex_np, ey_np, unary_own


# ---------------------------------------------------------------- the graph cut


def _label_cost(n_labels: int) -> np.ndarray:
    cost = np.zeros([n_labels, n_labels], dtype=np.float32)
    for i in range(n_labels):
        for j in range(n_labels):
            cost[i, j] = (i - j)**2 / (n_labels - 1)**2
    return cost


def _workers(workers: int) -> int:
    return workers or min(8, os.cpu_count() or 1)


# One batch at a time per process, whichever thread calls: pyGCO's C wrapper keeps its graphs in a
# global std::map keyed by a global counter, neither locked (gco/cgco.cpp), so two threads inside it
# at once can cut each other's graph (a rare mask from another image, seen once as a same-seed
# mismatch), and the helpers' pipes carry one batch at a time.
_GCO_LOCK = threading.Lock()
_HELPERS: tuple[int, list[subprocess.Popen]] | None = None  # (pid, helper processes): started once, reused
_HELPERS_FAILED = False  # helpers that could not start or died: in-thread cuts from then on


def _pool(count: int) -> list[subprocess.Popen]:
    """``count`` helper processes (``python -m fullscale.puzzlemix.cuts``), started on first use and
    kept for the process's life (more started when more are asked for; a forked child starts its
    own).  Fork + exec of a fresh interpreter, never a fork of this process, whose torch threads may
    hold locks; each imports numpy and pyGCO only and has pyGCO's global table to itself.  Not
    multiprocessing: its spawn and forkserver run the caller's main script again in every worker
    (its imports, torch's too), and a script without a ``__main__`` guard then fails.  Called under
    ``_GCO_LOCK``."""
    global _HELPERS
    if _HELPERS is None or _HELPERS[0] != os.getpid():
        _HELPERS = (os.getpid(), [])
    helpers = _HELPERS[1]
    if len(helpers) >= count:  # every batch after the first: nothing to start
        return helpers[:count]
    root = str(Path(__file__).resolve().parents[2])  # the fullscale package found here, not another
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    while len(helpers) < count:
        helpers.append(subprocess.Popen([sys.executable, "-m", "fullscale.puzzlemix.cuts"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env))
    return helpers[:count]


@atexit.register
def _close_pool() -> None:
    """End the helpers: the end of its stdin ends each (it also ends when this process dies)."""
    global _HELPERS
    if _HELPERS is not None and _HELPERS[0] == os.getpid():
        for proc in _HELPERS[1]:
            for pipe in (proc.stdin, proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
        for proc in _HELPERS[1]:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    _HELPERS = None


def _cut_shared(unary: np.ndarray, cost: np.ndarray, edge_x: np.ndarray, edge_y: np.ndarray,
                workers: int) -> np.ndarray | None:
    """The labels, the batch split in ``workers`` shares of consecutive images: the first cut in this
    thread, each other one in a helper process meanwhile.  ``None`` (and a one-line warning) if the
    helpers cannot start or one died: the caller cuts in-thread.  Called under ``_GCO_LOCK``."""
    global _HELPERS_FAILED
    shares = np.array_split(np.arange(len(unary)), min(workers, len(unary)))
    try:
        helpers = _pool(workers - 1)
        for proc, share in zip(helpers, shares[1:]):
            pickle.dump((unary[share], cost, edge_x[share], edge_y[share]), proc.stdin, pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()
        try:
            own = cut_chunk(unary[shares[0]], cost, edge_x[shares[0]], edge_y[shares[0]])
        finally:  # the answers read even if this thread's cut failed: the next batch must find none waiting
            answers = [pickle.load(proc.stdout) for proc in helpers[:len(shares) - 1]]  # in the order sent
    except (OSError, EOFError, pickle.UnpicklingError) as error:  # could not start, or a helper died
        _HELPERS_FAILED = True
        _close_pool()
        reason = " ".join(f"{type(error).__name__}: {error}".split())
        warnings.warn(f"Puzzle Mix: a graph-cut helper process failed ({reason}); cutting in this thread from "
                      "now on (same masks, slower)", RuntimeWarning, stacklevel=3)
        return None
    for ok, value in answers:
        if not ok:
            raise value
    return np.concatenate([own] + [value for _, value in answers])


def block_saliency(sal: Tensor, size: int) -> Tensor:
    """The saliency (B, W, W) average-pooled to ``size``-pixel blocks and normalised to sum 1 per
    image (the unary terms' and the transport's weights).  An image without any saliency (a
    constant image, all gradients 0) gets uniform weights; the public code divides 0 by 0 there
    and casts the NaN to int32 -2147483648 in the graph cut (issue 23)."""
    pooled = F.avg_pool2d(sal, size)
    total = pooled.reshape(len(pooled), -1).sum(1).reshape(-1, 1, 1)
    uniform = torch.full_like(pooled, 1.0 / pooled[0].numel())
    return torch.where(total > 0, pooled / total.clamp_min(torch.finfo(pooled.dtype).tiny), uniform)


def solve_masks(unary: np.ndarray, edge_x: np.ndarray, edge_y: np.ndarray, *, workers: int = 0) -> np.ndarray:
    """Alpha-beta swap on each (n, n) grid of the batch; the labels (B, n, n) as mask values
    ``1 - label / (L - 1)`` (float32).  ``workers`` processes cut at once (0: min(8, CPUs); 1: this
    thread alone): this thread and ``workers - 1`` helper processes, each a share of consecutive
    images; the same masks either way."""
    _gco()  # the missing library named in one line, here rather than in a worker
    n_labels = unary.shape[-1]
    cost = _label_cost(n_labels)
    workers = _workers(workers)
    with _GCO_LOCK:
        labels = None
        if workers > 1 and len(unary) > 1 and not _HELPERS_FAILED:
            labels = _cut_shared(unary, cost, edge_x, edge_y, workers)
        if labels is None:
            labels = cut_chunk(unary, cost, edge_x, edge_y)
    block_num = unary.shape[1]
    return (1.0 - labels.reshape(-1, block_num, block_num) / (n_labels - 1)).astype(np.float32)


# ---------------------------------------------------------------- the operator


def draw_block_num(cfg: PuzzleMixConfig, generator: torch.Generator) -> int:
    return cfg.block_nums[int(torch.randint(len(cfg.block_nums), (1,), generator=generator,
                                            device=generator.device))]


def puzzle_mix(x: Tensor, sal: Tensor, perm: Tensor, lam: float, cfg: PuzzleMixConfig, *,
               generator: torch.Generator | None = None, block_num: int | None = None,
               fill: Tensor | float = 0.0, noise: Tensor | None = None,
               sides: tuple[bool, bool] = (False, False)) -> PuzzleMixResult:
    """Puzzle Mix of ``x`` (B, C, W, W) with ``x[perm]`` (see the module docstring).

    Args:
        sal: (B, W, W) saliency (``saliency``).
        lam: the step's lambda (label prior of the graph cut).
        generator: draws the block count (give ``block_num`` instead to fix it).
        fill: what a block the transport leaves empty holds, per channel (the model's
            normalisation mean is the code's 0).
        noise, sides: the adversarial perturbation and whether the own / partner side takes it
            (``adversarial_start``); the partner takes ``noise[perm]``.
    """
    if x.ndim != 4 or x.shape[-1] != x.shape[-2] or sal.shape != (x.shape[0], *x.shape[-2:]):
        raise ValueError(f"puzzle_mix expects square images (B, C, W, W) and saliency (B, W, W), got "
                         f"{tuple(x.shape)} and {tuple(sal.shape)}")
    if block_num is None:
        if generator is None:
            raise ValueError("puzzle_mix needs a generator (or a fixed block_num)")
        block_num = draw_block_num(cfg, generator)
    batch, width = x.shape[0], x.shape[-1]
    if width % block_num:
        raise ValueError(f"image width {width} is not a multiple of {block_num} blocks")
    x = x.float()
    block_size = width // block_num
    unary, edge_x, edge_y, sal_own = block_costs(x, sal, perm, float(lam), block_num, cfg)
    mask = torch.from_numpy(solve_masks(unary, edge_x, edge_y, workers=cfg.workers)).to(x.device).unsqueeze(1)

    own, partner = x, x[perm]
    if noise is not None and sides[0]:
        own = (own + noise).clamp(0, 1)
    if noise is not None and sides[1]:
        partner = (partner + noise[perm]).clamp(0, 1)

    if cfg.transport:
        t_size = min(cfg.t_size, block_size)
        t_block_num = block_num
        if cfg.t_size != -1 and t_size < block_size:
            t_block_num = width // t_size
            mask = F.interpolate(mask, size=t_block_num)
            sal_own = block_saliency(sal.float(), t_size)
        own = transport_blocks(own, mask_transport(mask, sal_own, cfg.t_eps), t_block_num, fill)
        partner = transport_blocks(partner, mask_transport(1 - mask, sal_own[perm], cfg.t_eps), t_block_num, fill)

    mask = F.interpolate(mask, size=width)
    weights = mask.reshape(batch, -1).mean(-1)
    return PuzzleMixResult(mask * own + (1 - mask) * partner, weights, mask, block_num)


def puzzlemix_batch(model: nn.Module, x: Tensor, y: Tensor, perm: Tensor, lam: float, cfg: PuzzleMixConfig, *,
                    generator: torch.Generator) -> tuple[PuzzleMixResult, Tensor | None]:
    """One training step's inputs, as the code's ``train``: the adversarial start (``adv_p > 0``),
    the saliency pass on ``model`` (the unwrapped network: a per-sample gradient needs no DDP
    sync), the adversarial step, then ``puzzle_mix``.  Returns the result and the clean loss term
    (``clean_lam > 0``, else None)."""
    mean, std = _normalisation(model)
    x = x.float()
    sides, noise = (False, False), None
    if cfg.adv_p > 0:
        drawn, noise = adversarial_start(x, cfg, generator=generator)
        sides = (bool(drawn[0]), bool(drawn[1]))
    adversarial = noise is not None and any(sides)
    sal, grad, clean = saliency(model, (x + noise) if adversarial else x, y, std=std, clean_lam=cfg.clean_lam)
    if adversarial:
        noise = adversarial_noise(noise, grad.sign(), cfg, generator=generator)
    result = puzzle_mix(x, sal, perm, lam, cfg, generator=generator, fill=mean,
                        noise=noise if adversarial else None, sides=sides)
    return result, clean


def puzzlemix_step(model: nn.Module, x: Tensor, y: Tensor, draw: MixDraw, cfg: PuzzleMixConfig, *,
                   generator: torch.Generator) -> tuple[Tensor, MixDraw, Tensor | None]:
    """The trainer's hook: ``puzzlemix_batch`` with the step's partners and lambda; returns the
    mixed images (``x``'s dtype), the draw with each pair's label weight (per-sample lambda = the
    mask's mean) and the clean loss term (or None)."""
    result, clean = puzzlemix_batch(model, x, y, draw.perm, float(draw.lam), cfg, generator=generator)
    return result.images.to(x.dtype), MixDraw(perm=draw.perm, lam=result.weights), clean


def puzzlemix_loss(logits: Tensor, soft_targets: Tensor, clean: Tensor | None, cfg: PuzzleMixConfig) -> LossParts:
    """The step's loss on the mixed batch (``cfg.loss``) plus the clean term; ``jsd`` is 0.

    ``bce_softmax`` is written out (log-probabilities clamped at -100 as torch's BCE) rather than
    ``F.binary_cross_entropy``, which refuses to run under autocast."""
    logits = logits.float()
    if cfg.loss == "bce_softmax":
        log_p = F.log_softmax(logits, -1).clamp_min(-100)
        log_not_p = torch.log1p(-log_p.exp()).clamp_min(-100)
        mixed = -(soft_targets * log_p + (1 - soft_targets) * log_not_p).mean()
        clean = clean / logits.shape[-1] if clean is not None else None
    else:
        mixed = soft_cross_entropy(logits, soft_targets)
    total = mixed if clean is None else mixed + clean
    return LossParts(total=total, cross_entropy=mixed, jsd=mixed.new_zeros(()))


def _normalisation(model: nn.Module) -> tuple[Tensor | float, Tensor | None]:
    """The model's input normalisation (mean, std) as (1, C, 1, 1) tensors, or (0, None)."""
    norm = getattr(model, "normalize", None)
    if norm is None or not hasattr(norm, "mean"):
        return 0.0, None
    return norm.mean, norm.std


# the kind of mixing the trainer runs (``fullscale.mixings``): its options are the ``puzzlemix`` group
# of the training config; per-pair masks, so its seeds are not stacked; joined with nothing else
register_mixing(Mixing("puzzlemix", batch_op=puzzlemix_step, loss=puzzlemix_loss, per_pair=True, combines=False,
                       config=PuzzleMixConfig))
