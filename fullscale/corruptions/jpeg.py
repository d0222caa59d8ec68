"""JPEG compression as batched tensor ops: what PIL's ``save(quality=q)`` + ``open`` do to an RGB
image with libjpeg's defaults (baseline, 4:2:0 chroma, standard tables scaled by quality, slow
integer DCT, fancy upsampling), written with float DCTs.

It is not bit-exact with libjpeg (integer DCT rounding, fixed-point colour conversion): the
tests bound the difference.  ``corrupt`` uses it for images on an accelerator; on the CPU it
calls PIL itself (exact, and as fast there)."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["jpeg_roundtrip", "quant_tables"]

# ITU-T T.81 Annex K tables (libjpeg's std_luminance_quant_tbl / std_chrominance_quant_tbl)
_LUMA = (16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
         14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
         49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99)
_CHROMA = (17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99,
           47, 66, 99, 99, 99, 99, 99, 99, *([99] * 32))


def quant_tables(quality: int) -> tuple[Tensor, Tensor]:
    """libjpeg's jpeg_set_quality: scale 5000 / q below 50, else 200 - 2 q; (t s + 50) / 100 in
    [1, 255] (baseline)."""
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be in 1..100, got {quality}")
    scale = 5000 // quality if quality < 50 else 200 - 2 * quality

    def table(base: tuple[int, ...]) -> Tensor:
        return torch.tensor([min(max((b * scale + 50) // 100, 1), 255) for b in base],
                            dtype=torch.float64).view(8, 8)
    return table(_LUMA), table(_CHROMA)


@functools.lru_cache(maxsize=1)
def _dct_matrix() -> Tensor:
    k = torch.arange(8, dtype=torch.float64)
    m = torch.cos((2 * k[None, :] + 1) * k[:, None] * math.pi / 16) * math.sqrt(2 / 8)
    m[0] /= math.sqrt(2)
    return m  # orthonormal DCT-II: coefficients = M block M^T


def _blocks(p: Tensor) -> Tensor:
    n, h, w = p.shape
    return p.view(n, h // 8, 8, w // 8, 8).permute(0, 1, 3, 2, 4)


def _unblocks(b: Tensor) -> Tensor:
    n, bh, bw = b.shape[:3]
    return b.permute(0, 1, 3, 2, 4).reshape(n, bh * 8, bw * 8)


def _code(plane: Tensor, table: Tensor) -> Tensor:
    """Level shift, DCT, quantise (round half away from zero), dequantise, inverse DCT."""
    m = _dct_matrix().to(plane)
    q = table.to(plane)
    coef = m @ _blocks(plane - 128) @ m.T
    coef = torch.sign(coef) * torch.floor(coef.abs() / q + 0.5) * q
    return _unblocks(m.T @ coef @ m) + 128


def _pad_to(p: Tensor, h: int, w: int) -> Tensor:
    """libjpeg extends partial blocks by repeating the last column / row."""
    return F.pad(p.unsqueeze(1), (0, w - p.shape[2], 0, h - p.shape[1]), mode="replicate").squeeze(1)


def _downsample(c: Tensor) -> Tensor:
    """jcsample.c h2v2_downsample: (sum of the 2x2 + bias) >> 2, bias 1, 2, 1, 2 along a row."""
    n, h, w = c.shape
    s = c.view(n, h // 2, 2, w // 2, 2).sum((2, 4))
    bias = torch.tensor([1.0, 2.0], dtype=c.dtype, device=c.device).repeat(w // 4 + 1)[: w // 2]
    return torch.floor((s + bias) / 4)


def _upsample(c: Tensor) -> Tensor:
    """jdsample.c h2v2_fancy_upsample: triangle filter, 3/4 of the nearer and 1/4 of the farther
    sample in each direction, with libjpeg's rounding (+8 / +7 over 16)."""
    up = F.pad(c.unsqueeze(1), (0, 0, 1, 1), mode="replicate").squeeze(1)
    near, above, below = up[:, 1:-1], up[:, :-2], up[:, 2:]
    rows = torch.stack([3 * near + above, 3 * near + below], 2).flatten(1, 2)  # colsums, 2h rows
    side = F.pad(rows.unsqueeze(1), (1, 1, 0, 0), mode="replicate").squeeze(1)
    mid, left, right = side[:, :, 1:-1], side[:, :, :-2], side[:, :, 2:]
    out = torch.stack([torch.floor((3 * mid + left + 8) / 16), torch.floor((3 * mid + right + 7) / 16)], 3)
    out = out.flatten(2, 3)
    # the first and last output columns use the colsum itself: (colsum * 4 + 8) >> 4 and (.. + 7) >> 4
    out[:, :, 0] = torch.floor((rows[:, :, 0] * 4 + 8) / 16)
    out[:, :, -1] = torch.floor((rows[:, :, -1] * 4 + 7) / 16)
    return out


def jpeg_roundtrip(x: Tensor, quality: int) -> Tensor:
    """Float RGB images (N, 3, H, W) in [0, 1] -> the decoded JPEG, float in [0, 1] (whole levels)."""
    h, w = x.shape[2:]
    luma_q, chroma_q = quant_tables(quality)
    rgb = torch.round(x.double().clamp(0, 1) * 255)
    r, g, b = rgb.unbind(1)
    y = torch.floor(0.299 * r + 0.587 * g + 0.114 * b + 0.5)
    cb = torch.floor(-0.168735892 * r - 0.331264108 * g + 0.5 * b + 128 + 0.5 - 1e-9)
    cr = torch.floor(0.5 * r - 0.418687589 * g - 0.081312411 * b + 128 + 0.5 - 1e-9)
    def up_to(v: int, m: int) -> int:
        return -(-v // m) * m

    y_rec = _code(_pad_to(y, up_to(h, 8), up_to(w, 8)), luma_q)
    y_rec = torch.round(y_rec).clamp(0, 255)[:, :h, :w]
    ch, cw = -(-h // 2), -(-w // 2)  # the chroma planes' own size; their blocks pad from there
    chroma = []
    for c in (cb, cr):
        small = _downsample(_pad_to(c, 2 * ch, 2 * cw))
        rec = torch.round(_code(_pad_to(small, up_to(ch, 8), up_to(cw, 8)), chroma_q)).clamp(0, 255)
        chroma.append(_upsample(rec[:, :ch, :cw])[:, :h, :w] - 128)
    cb_rec, cr_rec = chroma
    out = torch.stack([y_rec + 1.402 * cr_rec,
                       y_rec - 0.344136286 * cb_rec - 0.714136286 * cr_rec,
                       y_rec + 1.772 * cb_rec], 1)
    return (torch.floor(out + 0.5).clamp(0, 255) / 255).to(x.dtype)
