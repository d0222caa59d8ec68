"""Puzzle Mix's options (the training config's ``puzzlemix`` group, ``--set puzzlemix.beta=1.2``) and
the result of one mixing step (``fullscale.puzzlemix.mixing.puzzle_mix``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from torch import Tensor

__all__ = ["PuzzleMixConfig", "PuzzleMixResult"]


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
