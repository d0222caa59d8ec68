"""AugMix (Hendrycks et al.), batched: one augmented view per image, all images at once.

Per image, as ``aug()`` of the public code (github.com/google-research/augmix ``cifar.py``; the
NoisyMix copy ``aug_utils.py`` is the same function, and its ``augmentations.py`` is identical,
so the two differ in nothing we reproduce): ``width`` chains, each of ``depth`` ops (``depth =
-1``: 1..3 drawn per chain), each op drawn uniformly from the op list with its own level
``Uniform(0.1, severity)`` and sign; chain weights ``w ~ Dirichlet(alpha)``; the result
``(1 - m) x + m sum_i w_i chain_i(x)`` with ``m ~ Beta(alpha, alpha)`` (alpha = 1 in both codes).
The public code puts ``m`` on the augmented part, the AugMix paper on the clean image; for
Beta(alpha, alpha) the two laws coincide.  ``all_ops`` adds color, contrast, brightness and
sharpness (``augmentations_all``; off by default in both codes, as they overlap the -C test set).

Differences from the public per-image pipeline, all deliberate: our random numbers come from a
``torch.Generator`` (the caller's, on its device), not NumPy's global state, so the same law but
not the same draws; geometric ops agree with PIL to within one grey level (see ``ops``); the
output is the [0, 1] float image, and ``Normalize(0.5, 0.5)`` happens inside the models.

How: images stay uint8 as in PIL (quantised after every op).  For each chain step the chains
that drew an op of one kind are gathered and processed together: one ``grid_sample`` for all
rotate/shear maps, one for all translations, one table lookup for all point ops.  On CPU this
runs in cache-sized chunks spread over torch's threads; on CUDA as one batch.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from fullscale.augment.ops import (
    BASIC_OPS,
    OPS,
    AffineOp,
    LutOp,
    Op,
    PixelOp,
    apply_lut,
    normalise,
    resample_normalised,
)
from noisymix.random import sample_beta, sample_dirichlet
from noisymix_infra.devices import to_device

__all__ = ["AugMixConfig", "augmix", "draw_chains"]

_MAX_DEPTH = 3  # the public code's np.random.randint(1, 4)
_CPU_CHUNK = 256  # images per pass on CPU: ~2.4 MB of uint8 chains, cache-resident
_MIN_CHUNK = 16  # below this, per-call overhead dominates


@dataclass(frozen=True)
class AugMixConfig:
    """The public code's ``--mixture-width``, ``--mixture-depth``, ``--aug-severity``, ``--all-ops``
    and the Dirichlet/Beta coefficient (1 in the NoisyMix code)."""

    width: int = 3  # augmentation chains mixed per view (--mixture-width)
    depth: int = -1  # ops per chain; -1: 1 to 3 at random (--mixture-depth)
    severity: int = 3  # strength of each op, 1-10 (--aug-severity)
    alpha: float = 1.0  # Dirichlet/Beta coefficient of the chain and skip weights
    all_ops: bool = False  # also the ops that overlap the -C corruptions (--all-ops)
    def __post_init__(self) -> None:
        if self.width < 1:
            raise ValueError(f"AugMix width must be >= 1, got {self.width}")
        if self.depth == 0 or self.depth < -1:
            raise ValueError(f"AugMix depth must be -1 (random 1..3) or >= 1, got {self.depth}")
        if not 1 <= self.severity <= 10:
            raise ValueError(f"AugMix severity must be in 1..10, got {self.severity}")
        if self.alpha <= 0:
            raise ValueError(f"AugMix alpha must be > 0, got {self.alpha}")

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(OPS) if self.all_ops else BASIC_OPS


@dataclass(frozen=True)
class Chains:
    """The random choices of one AugMix view for ``n`` images (chains flattened image-major)."""

    op_index: Tensor  # (n * width, max_depth) int64 into config.ops
    active: Tensor  # (n * width, max_depth) bool: step < depth of that chain
    level: Tensor  # (n * width, max_depth)
    sign: Tensor  # (n * width, max_depth) of +-1
    chain_weights: Tensor  # (n, width)
    clean_weight: Tensor  # (n,): 1 - m


def draw_chains(n: int, config: AugMixConfig, *, generator: torch.Generator) -> Chains:
    """The random choices of ``aug()`` for ``n`` images, drawn on the generator's device.

    Per chain: depth 1..3 (or ``config.depth``), an op index per step uniform over ``config.ops``,
    a level ``Uniform(0.1, severity)`` and a sign +-1 with probability 1/2 per step (used by the
    ops that flip at random); per image: Dirichlet chain weights and the Beta mixing weight.
    """
    dev = generator.device
    chains = n * config.width
    steps = _MAX_DEPTH if config.depth < 0 else config.depth
    if config.depth < 0:
        depth = torch.randint(1, _MAX_DEPTH + 1, (chains, 1), generator=generator, device=dev)
    else:
        depth = torch.full((chains, 1), config.depth, device=dev)
    op_index = torch.randint(0, len(config.ops), (chains, steps), generator=generator, device=dev)
    level = 0.1 + (config.severity - 0.1) * torch.rand(chains, steps, generator=generator, device=dev)
    sign = torch.where(torch.rand(chains, steps, generator=generator, device=dev) > 0.5, -1.0, 1.0)
    weights = sample_dirichlet([config.alpha] * config.width, (n,), generator=generator) \
        if config.width > 1 else torch.ones(n, 1, device=dev)
    m = sample_beta(config.alpha, config.alpha, (n,), generator=generator)
    active = torch.arange(steps, device=dev)[None, :] < depth
    return Chains(op_index, active, level, sign, weights, 1 - m)


def apply_chains(images_u8: Tensor, config: AugMixConfig, chains: Chains, *, chunk: int | None = None) -> Tensor:
    """The view defined by ``chains``: float32 (N, 3, H, W) in [0, 1].

    Work runs on the images' device, on CUDA as one batch.  On CPU the batch goes through in
    chunks of at most ``chunk`` images (default ``_CPU_CHUNK``) so that the intermediate images
    stay in cache, and the chunks are spread over torch's threads (see ``_over_cpu_threads``).
    The result does not depend on the chunking: every op is per image and the draws are made.
    """
    n, _, h, w = images_u8.shape
    dev = images_u8.device
    if chunk is not None and chunk < 1:
        raise ValueError(f"chunk must be >= 1 image, got {chunk}")
    threads = torch.get_num_threads() if dev.type == "cpu" else 1
    if chunk is None:
        chunk = min(_CPU_CHUNK, max(_MIN_CHUNK, -(-n // threads))) if dev.type == "cpu" else max(n, 1)
    plan = _Plan.build(config, chains, (h, w), dev)
    width = config.width
    # out = (1 - m) x + m sum_j w_j chain_j (public aug()), /255 folded into the weights
    clean = to_device(chains.clean_weight.float(), dev)
    chain_weights = ((1 - clean)[:, None] * to_device(chains.chain_weights.float(), dev) / 255).view(n, width, 1, 1, 1)
    clean = (clean / 255).view(n, 1, 1, 1)
    out = torch.empty(n, *images_u8.shape[1:], dtype=torch.float32, device=dev)

    def run(lo: int) -> None:
        hi = min(n, lo + chunk)
        x = plan.apply(images_u8[lo:hi].repeat_interleave(width, dim=0), slice(lo * width, hi * width))
        view = out[lo:hi]
        view.copy_(images_u8[lo:hi]).mul_(clean[lo:hi])
        x = x.view(hi - lo, width, *x.shape[1:])
        for j in range(width):  # mixed-dtype multiply-add: no float copy of the chains
            view.addcmul_(x[:, j], chain_weights[lo:hi, j])
        view.clamp_(max=1.0)  # the weights sum to 1 only up to rounding

    starts = range(0, n, chunk)
    if threads > 1 and len(starts) > 1:
        _over_cpu_threads(run, starts, threads)
    else:
        for lo in starts:
            run(lo)
    return out


@dataclass(frozen=True)
class _Plan:
    """Everything about one view that does not depend on pixels, for all chains at once.

    Ops are grouped by kind so that one chain step costs one pass per kind, whatever the mix of
    ops drawn: all bilinear affine maps, all nearest (integer) maps, all point tables.  Which
    chains fall in which group is decided on the host, from the op indices as a NumPy array
    (``op_index``): the device never has to report a count or a mask (no ``nonzero``, no boolean
    indexing), so making a view never waits for the device.  Draws made on a CPU generator (the
    trainer's) cost nothing to read; draws on a CUDA generator are read back once per view.
    """

    ops: tuple[Op, ...]
    op_index: np.ndarray  # (chains, steps) int64 on the host, -1 where the chain has already ended
    level: Tensor  # (chains, steps) on the images' device
    sign: Tensor  # (chains, steps)
    affine: Tensor  # (chains, steps, 2, 3) float32, normalised affine maps (zero elsewhere)
    groups: dict[str, np.ndarray]  # group -> (len(ops) + 1,) bool over op indices (the last: -1)

    @staticmethod
    def build(config: AugMixConfig, chains: Chains, size: tuple[int, int], device: torch.device) -> _Plan:
        ops = tuple(OPS[name] for name in config.ops)
        op_index = torch.where(chains.active, chains.op_index, -1).cpu().numpy()  # the one read of a view
        level, sign = chains.level, chains.sign  # where they were drawn: the coefficients are made there
        affine = torch.zeros(*op_index.shape, 2, 3, device=level.device)
        flat_affine = affine.view(-1, 2, 3)
        for k, op in enumerate(ops):
            if isinstance(op, AffineOp):
                at = np.flatnonzero(op_index == k)
                if at.size:
                    rows = _index(at, level.device)
                    chosen_level, chosen_sign = level.reshape(-1)[rows], sign.reshape(-1)[rows]
                    flat_affine[rows] = normalise(op.coefficients(chosen_level, chosen_sign, size), size)
        groups = {mode: np.array([isinstance(op, AffineOp) and op.mode == mode for op in ops] + [False])
                  for mode in ("bilinear", "nearest")}
        groups["lut"] = np.array([isinstance(op, LutOp) for op in ops] + [False])
        level, sign, affine = (to_device(t, device) for t in (level, sign, affine))
        return _Plan(ops, op_index, level, sign, affine, groups)

    def apply(self, x: Tensor, rows: slice) -> Tensor:
        """Run the chains ``rows`` on ``x`` (their images, (chains, C, H, W) uint8), step by step."""
        op_index, level, sign, affine = self.op_index[rows], self.level[rows], self.sign[rows], self.affine[rows]
        c, dev = x.shape[1], x.device
        lut_ops = [(k, op) for k, op in enumerate(self.ops) if isinstance(op, LutOp)]
        pixel_ops = [(k, op) for k, op in enumerate(self.ops) if isinstance(op, PixelOp)]
        # tables of the ops that need no pixels, for every step of these chains at once
        tables = torch.empty(*op_index.shape, 256, dtype=torch.uint8, device=dev)
        flat_tables = tables.view(-1, 256)
        for k, op in lut_ops:
            if not op.per_image:
                at = np.flatnonzero(op_index == k)
                if at.size:
                    drawn = _index(at, dev)
                    flat_tables[drawn] = op.table(None, level.reshape(-1)[drawn], sign.reshape(-1)[drawn]).view(-1, 256)
        # (index_select on one step's column throughout: much cheaper than advanced indexing)
        for step in range(op_index.shape[1]):
            drawn, level_s, sign_s = op_index[:, step], level[:, step], sign[:, step]
            for mode in ("bilinear", "nearest"):
                at_np = np.flatnonzero(self.groups[mode][drawn])
                if at_np.size:
                    at = _index(at_np, dev)
                    maps = affine[:, step].index_select(0, at)
                    _put(x, at, resample_normalised(x.index_select(0, at), maps, mode=mode))
            at_np = np.flatnonzero(self.groups["lut"][drawn])
            if at_np.size:
                at = _index(at_np, dev)
                sub, sub_op = x.index_select(0, at), drawn[at_np]
                table = tables[:, step].index_select(0, at).unsqueeze(1).repeat(1, c, 1)  # (m, C, 256)
                for k, op in lut_ops:
                    if op.per_image:
                        sel_np = np.flatnonzero(sub_op == k)
                        if sel_np.size:
                            sel, chosen = _index(sel_np, dev), _index(at_np[sel_np], dev)
                            table[sel] = op.table(sub.index_select(0, sel), level_s.index_select(0, chosen),
                                                  sign_s.index_select(0, chosen))
                _put(x, at, apply_lut(sub, table))
            for k, op in pixel_ops:
                at_np = np.flatnonzero(drawn == k)
                if at_np.size:
                    at = _index(at_np, dev)
                    _put(x, at, op(x.index_select(0, at), level_s.index_select(0, at), sign_s.index_select(0, at)))
        return x


def _index(rows: np.ndarray, device: torch.device) -> Tensor:
    """Host-side row indices as an int64 tensor on ``device`` (a copy queued behind the device's
    work, not a wait for it)."""
    return to_device(torch.from_numpy(np.ascontiguousarray(rows, dtype=np.int64)), device)


def _over_cpu_threads(run: Callable[[int], None], starts: range, threads: int) -> None:
    """Run the chunks on ``threads`` Python threads, each op single-threaded.

    The ops here are small (a few MB each) and torch's intra-op parallelism wakes its thread team
    for every one of them.  On the 2-core development VM one view of 2048 images took 136 ms on
    one thread, 117 ms with 2 intra-op threads and 94 ms with one chunk per Python thread (torch
    ops release the GIL; the Python between them does not, which caps the gain).  torch's thread
    count is set to 1 for the duration and restored.
    """
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(run, starts):  # re-raises a chunk's exception here
                pass
    finally:
        torch.set_num_threads(threads)


def _put(x: Tensor, rows: Tensor, values: Tensor) -> None:
    """``x[rows] = values`` for uint8 images, as int64 words when the rows allow it (CPU: ~6x faster)."""
    per_row = x[0].numel()
    if per_row % 8 == 0 and x.is_contiguous() and values.is_contiguous():
        x.view(x.shape[0], -1).view(torch.int64).index_copy_(
            0, rows, values.view(values.shape[0], -1).view(torch.int64))
    else:
        x.index_copy_(0, rows, values)


def augmix(images_u8: Tensor, config: AugMixConfig, *, generator: torch.Generator) -> Tensor:
    """One AugMix view of every image: float32 (N, 3, H, W) in [0, 1].  Call twice for JSD's two views."""
    if images_u8.dtype != torch.uint8 or images_u8.ndim != 4 or images_u8.shape[1] != 3:
        raise ValueError(f"augmix expects uint8 images (N, 3, H, W), got {images_u8.dtype} "
                         f"{tuple(images_u8.shape)}")
    return apply_chains(images_u8, config, draw_chains(images_u8.shape[0], config, generator=generator))
