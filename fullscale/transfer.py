"""Transfer learning (tab:results_transfer): ImageNet ResNet-50s fine-tuned on CIFAR-10/100.

The recipe is the public NoisyMix ``transfer_learning/`` code (built on MadryLab ``robustness``):

- ``tools.replace_fc_layer``: the source's classifier is replaced by a fresh ``nn.Linear(2048, K)``
  (torch's default initialisation); every other weight is the source's.
- ``constants.DEFAULT_TRAIN_TRANSFORMS`` / ``DEFAULT_TEST_TRANSFORMS`` replace the robustness
  library's CIFAR transforms (``datasets.make_loaders_CIFAR10`` overrides them): training views
  are ``RandomResizedCrop(224)`` + ``RandomHorizontalFlip()`` of the 32x32 image; test images are
  ``Resize(256)`` + ``CenterCrop(224)``.  (The library's own CIFAR transforms, ``RandomCrop(32,
  padding=4)``, colour jitter and rotation, are not used.)
- ``robustness.attacker.AttackerModel`` normalises with the data set's statistics
  (``TRANSFER_MEAN_STD``: the library's CIFAR-10 values; the transfer code's CIFAR-100 values),
  not ImageNet's, although the sources were trained with ImageNet's.
- ``tools.get_fine_tuning_params(model, freeze_level)``: ``-1`` trains everything; level ``k``
  freezes every parameter up to and including those of ``layer{k}`` (``4``: only ``fc`` trains,
  the fixed-feature variant).  ``robustness.train`` then calls ``model.train()`` on the whole
  model every epoch, so the frozen layers' BatchNorm running statistics still update (and they
  normalise with batch statistics); ``freeze_bn_stats=True`` is the named alternative that keeps
  frozen BatchNorm layers in eval mode.
- ``parameters.csv`` (cifar10 / cifar100): SGD momentum 0.9 (no Nesterov), weight decay 5e-4,
  batch 64, 150 epochs, lr x 0.1 every 50 epochs; lr 0.001 for full fine-tuning, 0.01 at
  ``freeze_level`` 4.

Data stays 32x32 uint8 on the device; the upsampling is batched per step
(``random_resized_crop_flip`` for training views, the model's own ``EvalResize`` for clean and
-C test images alike): no 224x224 copy of the data set exists.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import Tensor, nn

from fullscale.augment import to_float
from fullscale.models.registry import IMAGENET_MEAN_STD, Normalize, register_model
from fullscale.models.resnet import ResNet
from infra.io import read_state_dict

__all__ = [
    "FREEZE_LEVELS",
    "SOURCE_SIZE",
    "TRANSFER_MEAN_STD",
    "EvalResize",
    "apply_freeze", "check_config",
    "draw_resized_crop_boxes",
    "eval_resize_size",
    "frozen_batchnorms",
    "interpolation_matrices",
    "load_source_backbone",
    "random_resized_crop_flip",
    "resnet50_transfer",
    "set_train_mode", "step_lr_factor",
    "trainable_parameter_names",
]

#: the CIFAR images' side; the transfer model upsamples inputs of this size with the test transform
SOURCE_SIZE = 32
#: -1: train everything; k: freeze up to and including layer k (the public ``--freeze-level``)
FREEZE_LEVELS = (-1, 1, 2, 3, 4)
#: the normalisation of the public transfer code: robustness ``datasets.CIFAR`` for CIFAR-10,
#: ``make_loaders_CIFAR100``'s values for CIFAR-100; "imagenet" (the sources' own) as an option
TRANSFER_MEAN_STD: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)),
    "cifar100": ((0.5071, 0.4867, 0.4408), (0.2675, 0.2565, 0.2761)),
    "imagenet": IMAGENET_MEAN_STD,
}
_CLASSIFIER = ("fc.weight", "fc.bias")


# --------------------------------------------------------------------------- batched resampling


def interpolation_matrices(src: Tensor, lo: Tensor, hi: Tensor, length: int) -> Tensor:
    """(N, S, length) rows of bilinear weights: output position s of image n reads source
    coordinate ``src[n, s]`` clamped to ``[lo[n], hi[n]]`` (pixel centres at integers), i.e. the
    linear interpolation between its two neighbours, as ``F.interpolate(mode="bilinear",
    align_corners=False)`` along one axis.  Bilinear resampling is separable:
    out = R_y @ image @ R_x^T per channel."""
    s = torch.minimum(torch.maximum(src, lo[:, None]), hi[:, None])
    i0 = s.floor()
    frac = s - i0
    i0 = i0.long()
    i1 = torch.minimum(i0 + 1, hi[:, None].long())
    m = torch.zeros(*src.shape, length, dtype=src.dtype, device=src.device)
    m.scatter_add_(2, i0[..., None], (1 - frac)[..., None])
    m.scatter_add_(2, i1[..., None], frac[..., None])
    return m


def _resample(x: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
    """(N, C, H, W) float -> (N, C, Sy, Sx): out[n, c] = rows[n] @ x[n, c] @ cols[n]^T."""
    # contiguous: einsum's (N, Sy, C, Sx) strides would send the first convolution down a slow path
    return torch.einsum("nyh,nchx->ncyx", rows, torch.einsum("nchw,nxw->nchx", x, cols)).contiguous()


def _crop_resize_coordinates(start: Tensor, extent: Tensor, size: int) -> Tensor:
    """Source coordinates of ``size`` outputs resampling [start, start + extent) (half-pixel centres)."""
    o = torch.arange(size, device=start.device, dtype=torch.float32) + 0.5
    return start[:, None].float() + o[None, :] * (extent[:, None].float() / size) - 0.5


def draw_resized_crop_boxes(n: int, height: int, width: int, *, generator: torch.Generator,
                            scale: tuple[float, float] = (0.08, 1.0), ratio: tuple[float, float] = (3 / 4, 4 / 3),
                            attempts: int = 10) -> Tensor:
    """(n, 4) long boxes (top, left, h, w) as torchvision's ``RandomResizedCrop.get_params``: up to
    ``attempts`` draws of area ~ U(scale) x H W and log aspect ~ U(log ratio), the first that fits;
    otherwise the central crop of the clamped aspect ratio.  All draws batched (one generator call
    per quantity), so the boxes follow torchvision's distribution, not its random stream."""
    dev = generator.device
    area = height * width * torch.empty(n, attempts, device=dev).uniform_(scale[0], scale[1], generator=generator)
    log_r = torch.empty(n, attempts, device=dev).uniform_(math.log(ratio[0]), math.log(ratio[1]), generator=generator)
    aspect = torch.exp(log_r)
    w = torch.round(torch.sqrt(area * aspect)).long()
    h = torch.round(torch.sqrt(area / aspect)).long()
    ok = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = torch.where(ok.any(1), ok.float().argmax(1), torch.full((n,), -1, device=dev))
    # fallback: torchvision's central crop (whole image for a square input and ratio around 1)
    in_ratio = width / height
    if in_ratio < min(ratio):
        fw, fh = width, round(width / min(ratio))
    elif in_ratio > max(ratio):
        fh, fw = height, round(height * max(ratio))
    else:
        fw, fh = width, height
    pick = first.clamp(min=0)[:, None]
    bh = torch.where(first >= 0, h.gather(1, pick)[:, 0], fh)
    bw = torch.where(first >= 0, w.gather(1, pick)[:, 0], fw)
    u = torch.rand(n, 2, device=dev, generator=generator)
    top = torch.where(first >= 0, (u[:, 0] * (height - bh + 1)).long(), (height - fh) // 2)
    left = torch.where(first >= 0, (u[:, 1] * (width - bw + 1)).long(), (width - fw) // 2)
    return torch.stack([top, left, bh, bw], 1)


def random_resized_crop_flip(images_u8: Tensor, size: int, *, generator: torch.Generator,
                             scale: tuple[float, float] = (0.08, 1.0),
                             ratio: tuple[float, float] = (3 / 4, 4 / 3)) -> Tensor:
    """The public transfer code's training view, batched on the device: ``RandomResizedCrop(size)``
    then ``RandomHorizontalFlip()``; uint8 (N, 3, H, W) -> float (N, 3, size, size) in [0, 1].

    Each box is resampled as crop-then-resize (bilinear, half-pixel centres, coordinates clamped
    to the box: torch's ``F.interpolate`` on the crop; PIL's bilinear filter differs only in the
    edge pixels' weights and in rounding its output to uint8)."""
    if images_u8.ndim != 4:
        raise ValueError(f"random_resized_crop_flip expects (N, C, H, W), got {tuple(images_u8.shape)}")
    n, _, height, width = images_u8.shape
    dev = images_u8.device
    boxes = draw_resized_crop_boxes(n, height, width, generator=generator, scale=scale, ratio=ratio).to(dev)
    flip = (torch.rand(n, generator=generator, device=generator.device) < 0.5).to(dev)
    top, left, bh, bw = boxes.unbind(1)
    ys = _crop_resize_coordinates(top, bh, size)
    xs = _crop_resize_coordinates(left, bw, size)
    xs = torch.where(flip[:, None], xs.flip(1), xs)  # mirrored output = reversed sampling columns
    rows = interpolation_matrices(ys, top.float(), (top + bh - 1).float(), height)
    cols = interpolation_matrices(xs, left.float(), (left + bw - 1).float(), width)
    return _resample(to_float(images_u8), rows, cols)


def eval_resize_size(image_size: int) -> int:
    """The public test transform's resize side for ``image_size`` (256 for 224: Resize(256) +
    CenterCrop(224)); other sizes keep the 256 / 224 proportion."""
    return round(image_size * 256 / 224)


class EvalResize(nn.Module):
    """``Resize(eval_resize_size(s))`` + ``CenterCrop(s)`` of (N, 3, 32, 32) float images, batched
    (bilinear, half-pixel centres, clamped to the image: ``F.interpolate`` then the centre crop).
    Inputs already (s, s) pass unchanged: the trainer's views are made by
    ``random_resized_crop_flip``.  Any other size is refused (a -C set at another resolution)."""

    def __init__(self, image_size: int, source_size: int = SOURCE_SIZE) -> None:
        super().__init__()
        self.image_size, self.source_size = image_size, source_size
        resize = eval_resize_size(image_size)
        offset = round((resize - image_size) / 2.0)  # torchvision CenterCrop's offset
        o = torch.arange(offset, offset + image_size, dtype=torch.float64) + 0.5
        src = (o * (source_size / resize) - 0.5).float()[None]
        zero, last = torch.zeros(1), torch.full((1,), float(source_size - 1))
        self.register_buffer("weights", interpolation_matrices(src, zero, last, source_size)[0], persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        size = tuple(x.shape[-2:])
        if size == (self.image_size, self.image_size):
            return x
        if size != (self.source_size, self.source_size):
            raise ValueError(f"the transfer model takes {self.source_size}x{self.source_size} CIFAR images (or "
                             f"{self.image_size}x{self.image_size} training views), got {size[0]}x{size[1]}")
        r = self.weights.to(x.dtype)
        return torch.einsum("yh,nchw,xw->ncyx", r, x, r).contiguous()


# --------------------------------------------------------------------------- the model


class TransferResNet(ResNet):
    """torchvision's ResNet-50 (same state-dict keys) behind ``EvalResize`` and the transfer
    code's normalisation."""

    def __init__(self, num_classes: int, width: int, image_size: int, normalization: str) -> None:
        if normalization not in TRANSFER_MEAN_STD:
            raise ValueError(f"normalization must be one of {', '.join(TRANSFER_MEAN_STD)}, got {normalization!r}")
        if image_size < SOURCE_SIZE:
            raise ValueError(f"image_size must be >= {SOURCE_SIZE} (the transfer code upsamples), got {image_size}")
        super().__init__((3, 4, 6, 3), num_classes, width)
        self.resize = EvalResize(image_size)
        self.normalize = Normalize(TRANSFER_MEAN_STD[normalization])

    def forward(self, x: Tensor) -> Tensor:
        return super().forward(self.resize(x))


@register_model("resnet50_transfer")
def resnet50_transfer(num_classes: int = 10, width: int = 64, image_size: int = 224,
                      normalization: str = "cifar10") -> TransferResNet:
    """ResNet-50 for fine-tuning on 32x32 CIFAR at ``image_size`` (see the module docstring)."""
    return TransferResNet(num_classes, width, image_size, normalization)


# --------------------------------------------------------------------------- the source weights


def load_source_backbone(model: nn.Module, path: str | Path) -> dict[str, Tensor]:
    """Copy the ResNet-50 weights of ``path`` into ``model`` (a ``resnet50_transfer``), all but the
    classifier, which keeps its fresh initialisation (the public ``replace_fc_layer``).  Return the
    loaded backbone tensors.  The file must hold exactly torchvision's ResNet-50 keys (``fc.*`` and
    BatchNorm's ``num_batches_tracked`` may be absent, as in older torchvision files): anything else
    is one ValueError listing the missing and unexpected keys, or the mismatched shapes."""
    path = Path(path)
    state = read_state_dict(path, "a ResNet-50 state dict (expected names -> tensors)", nonempty=True)
    own = {k: v for k, v in model.state_dict().items() if k not in _CLASSIFIER}
    optional = {k for k in own if k.endswith("num_batches_tracked")}
    missing = sorted(set(own) - set(state) - optional)
    unexpected = sorted(set(state) - set(own) - set(_CLASSIFIER))
    if missing or unexpected:
        if not set(state) & set(own):
            raise ValueError(f"{path} is not a ResNet-50 state dict (none of its {len(state)} keys is one of "
                             f"torchvision's resnet50, e.g. {next(iter(state))!r})")
        raise ValueError(f"{path} is not a torchvision ResNet-50 state dict: missing {len(missing)} keys "
                         f"{_listing(missing)}; unexpected {len(unexpected)} keys {_listing(unexpected)}")
    shapes = [f"{k} {tuple(state[k].shape)} (expected {tuple(own[k].shape)})" for k in own
              if k in state and state[k].shape != own[k].shape]
    if shapes:
        raise ValueError(f"{path} is not a ResNet-50 of this width: {len(shapes)} shapes differ: {_listing(shapes)}")
    backbone = {k: state[k] for k in own if k in state}
    with torch.no_grad():
        for name, value in model.state_dict().items():
            if name in backbone:
                value.copy_(backbone[name])
    return backbone


def _listing(items: list[str], limit: int = 8) -> str:
    if not items:
        return "[]"
    more = f", ... ({len(items) - limit} more)" if len(items) > limit else ""
    return "[" + ", ".join(items[:limit]) + more + "]"


# --------------------------------------------------------------------------- the run's config


def check_config(cfg: object) -> None:
    """The transfer fields of a ``TrainConfig`` that must agree (checked when training starts)."""
    transfer = getattr(cfg, "model", "") == "resnet50_transfer"
    if transfer:
        if not cfg.source_weights:
            raise ValueError("model=resnet50_transfer fine-tunes a source: set source_weights=PATH "
                             "(a ResNet-50 state dict: a run's final.pt or a torchvision-format file)")
        if cfg.dataset not in ("cifar10", "cifar100"):
            raise ValueError(f"model=resnet50_transfer fine-tunes on cifar10 or cifar100, got dataset={cfg.dataset!r}")
        if not Path(cfg.source_weights).is_file():
            raise FileNotFoundError(f"source_weights={cfg.source_weights}: no such file")
    elif cfg.source_weights or cfg.freeze_level != -1 or cfg.freeze_bn_stats or cfg.source_row:
        raise ValueError("source_weights, source_row, freeze_level and freeze_bn_stats belong to transfer runs "
                         f"(model=resnet50_transfer); this run's model is {getattr(cfg, 'model', '?')!r}")
    if cfg.lr_schedule == "step" and not cfg.lr_milestones:
        raise ValueError("lr_schedule=step needs lr_milestones=E1,E2,... (epochs where lr is multiplied by lr_gamma)")


def step_lr_factor(step: int, steps_per_epoch: int, milestones: tuple[int, ...], gamma: float) -> float:
    """robustness' ``StepLR`` (stepped once per epoch) as a per-step factor: lr x gamma^(number of
    milestones reached by the current epoch); ``step_lr=50`` over 150 epochs is milestones 50, 100."""
    epoch = step // steps_per_epoch
    return gamma ** sum(epoch >= m for m in milestones)


# --------------------------------------------------------------------------- freezing


def trainable_parameter_names(model: nn.Module, freeze_level: int) -> list[str]:
    """The parameters the public ``get_fine_tuning_params`` leaves trainable, in order: all for
    ``-1``; for level k, walking ``named_parameters()`` in order, everything up to and including
    the last parameter whose name contains ``layer{k}`` is frozen, the rest trains."""
    if freeze_level not in FREEZE_LEVELS:
        raise ValueError(f"freeze_level must be one of {FREEZE_LEVELS} (-1: train everything), got {freeze_level}")
    names = [name for name, _ in model.named_parameters()]
    if freeze_level == -1:
        return names
    tag = f"layer{freeze_level}"
    if not any(tag in name for name in names):
        raise ValueError(f"freeze_level {freeze_level}: the model has no {tag} parameters")
    trainable, freeze = [], True
    for name in names:  # the public loop, line by line
        if not freeze and tag not in name:
            trainable.append(name)
        if freeze and tag in name:
            freeze = False
    return trainable


def apply_freeze(model: nn.Module, freeze_level: int) -> list[str]:
    """``requires_grad = False`` on every parameter the public code freezes; return the frozen names.
    (Frozen parameters never get a gradient, so SGD, weight decay included, leaves them as they are.)"""
    keep = set(trainable_parameter_names(model, freeze_level))
    frozen = []
    for name, param in model.named_parameters():
        if name not in keep:
            param.requires_grad_(False)
            frozen.append(name)
    return frozen


def frozen_batchnorms(model: nn.Module) -> list[nn.Module]:
    """BatchNorm layers whose affine parameters are all frozen."""
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
            and all(not p.requires_grad for p in m.parameters(recurse=False))]


def set_train_mode(model: nn.Module, *, freeze_bn_stats: bool) -> None:
    """``model.train()`` as ``robustness.train`` does (frozen layers' BatchNorm statistics update);
    with ``freeze_bn_stats``, frozen BatchNorm layers stay in eval mode (running statistics fixed)."""
    model.train()
    if freeze_bn_stats:
        for bn in frozen_batchnorms(model):
            bn.eval()
