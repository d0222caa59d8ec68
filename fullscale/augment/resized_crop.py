"""RandomResizedCrop + flip of uint8 image batches, upsampled on the device (bilinear, separable).

The public NoisyMix transfer code (``transfer_learning/``, on MadryLab ``robustness``) trains on
``RandomResizedCrop(224)`` + ``RandomHorizontalFlip()`` of the 32x32 CIFAR image (its
``constants.DEFAULT_TRAIN_TRANSFORMS``).  Here the crop boxes are drawn batched with torchvision's
distribution (``RandomResizedCrop.get_params``) and each box is resampled as one pair of
interpolation matrices per image (out = R_y @ image @ R_x^T per channel), so no 224x224 copy of the
data set exists.  ``interpolation_matrices`` also builds the test transform's fixed resize
(``fullscale.models.transfer.EvalResize``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from fullscale.augment.crop_flip import to_float
from noisymix_infra.devices import to_device

__all__ = ["draw_resized_crop_boxes", "interpolation_matrices", "random_resized_crop_flip"]


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
    boxes = to_device(draw_resized_crop_boxes(n, height, width, generator=generator, scale=scale, ratio=ratio), dev)
    flip = to_device(torch.rand(n, generator=generator, device=generator.device) < 0.5, dev)
    top, left, bh, bw = boxes.unbind(1)
    ys = _crop_resize_coordinates(top, bh, size)
    xs = _crop_resize_coordinates(left, bw, size)
    xs = torch.where(flip[:, None], xs.flip(1), xs)  # mirrored output = reversed sampling columns
    rows = interpolation_matrices(ys, top.float(), (top + bh - 1).float(), height)
    cols = interpolation_matrices(xs, left.float(), (left + bw - 1).float(), width)
    return _resample(to_float(images_u8), rows, cols)
