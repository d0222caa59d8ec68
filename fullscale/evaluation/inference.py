"""The model applied to uint8 images: batched under ``torch.inference_mode`` (bf16 autocast and
channels_last on CUDA), non-finite logits refused, and on the CPU the traced, frozen model
(``cpu_inference_model``)."""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn

from fullscale.augment import to_float

__all__ = ["cpu_inference_model", "logits_of"]


def logits_of(model: nn.Module, images_u8: Tensor, device: torch.device, batch: int = 1000) -> Tensor:
    """Float logits (N, K) on the CPU of uint8 images (N, 3, H, W), in batches of ``batch``."""
    starts = range(0, images_u8.shape[0], batch)
    return torch.cat([batch_logits(model, images_u8[s:s + batch], device) for s in starts])


def batch_logits(model: nn.Module, images_u8: Tensor, device: torch.device) -> Tensor:
    cuda = device.type == "cuda"
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
        x = to_float(images_u8.to(device, non_blocking=True))
        if cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        return finite_logits(model(x).float().cpu())


def cpu_inference_model(model: nn.Module, example_u8: Tensor) -> nn.Module:
    """On the CPU, ``model`` traced, frozen and optimised for inference (TorchScript: oneDNN folds
    each BatchNorm into its convolution and fuses the ReLUs), for the -C suites' tens of thousands
    of images: PreActResNet-18 at widths 8 and 16, batch 64, 2 threads ran 2.6x the images/s of
    eager mode (`noisymix bench evaluate`; benchmarks/RESULTS.md, issue 22).  Returned only when
    its logits on ``example_u8`` agree with the eager model's to float32 rounding (summation order
    differs); otherwise, and when tracing fails (a model TorchScript cannot trace), the eager model
    itself."""
    with torch.inference_mode():
        x = to_float(example_u8)
        reference = model(x).float()
    if not bool(torch.isfinite(reference).all()):
        return model  # nothing to compare against: the eager model's logits are refused where used (finite_logits)
    try:
        # TorchScript is deprecated in favour of torch.compile, which on the CPU compiles C++ for tens
        # of seconds per model (longer than a Digits-C evaluation); should TorchScript go, the
        # except below keeps the eager model
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            fast = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, x, check_trace=False)))
            with torch.inference_mode():
                got = fast(x).float()
    except Exception:  # any tracing failure: the eager model stays correct
        return model
    scale = float(reference.abs().max()) or 1.0
    return fast if torch.allclose(got, reference, rtol=1e-4, atol=1e-5 * scale) else model


def finite_logits(logits: Tensor) -> Tensor:
    """``logits``, refused when any is NaN/inf: a diverged model's argmax is class 0 everywhere
    and would be reported as a (chance-level) accuracy instead of an error."""
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("the model gives non-finite logits (NaN/inf): its weights are broken "
                         "(a diverged run?); nothing evaluated")
    return logits

