"""The trainer: every method of the CIFAR tables, data on the device, one loop.

The training set lives on the device as uint8 (N, 3, H, W); batches are slices of a
``randperm`` drawn from the run's generator (no DataLoader), augmented on the device
(``fullscale.augment``).  One step (``_loss``):

1. crop + flip the batch; build the views: the image (Baseline, mixing methods), one AugMix
   view (AugMix without JSD), or clean + two AugMix views (JSD methods);
2. draw the partners and lambda once (``noisymix.draw_mix``; one lambda per batch, as the public
   code) and the mixing point k uniformly from ``model.stages`` (``input`` only for Mixup);
3. forward with M_{lambda,xi} applied at stage k (``noisymix.noisy_feature_mixup``, same
   partners and lambda for the three views, additive level x view index as the public code);
4. L = CE(clean logits, mixed labels) + gamma JS(clean, aug1, aug2) (``noisymix.noisymix_loss``).

Per-step cosine learning rate down to ``lr_min`` (the public ``get_lr``), SGD Nesterov; bf16
autocast and channels_last on CUDA; DDP under ``torchrun`` (rank 0 alone writes).  Every epoch
ends with an atomic ``checkpoint.pt`` (model, optimiser, scheduler, generator states), so
``resume`` continues to the same result; a non-finite loss stops the run naming the step.
"""

from __future__ import annotations

import math
import os
import platform
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import Tensor, nn

import noisymix
from fullscale.augment import augmix, random_crop_flip, to_float
from fullscale.config import TrainConfig
from fullscale.data import load_dataset
from fullscale.hooks import transform_stage
from fullscale.methods import Method, get_method
from fullscale.models import create_model
from fullscale.runs import append_metrics, read_metrics
from noisymix.config import config_to_dict
from noisymix.io import load_state_dict, save_torch, write_json
from noisymix.loss import noisymix_loss
from noisymix.mixing import cutmix, draw_mix, mix_targets, noisy_feature_mixup
from noisymix.progress import progress

__all__ = ["NonFiniteLoss", "train"]


class NonFiniteLoss(RuntimeError):
    pass


def _device(cfg: TrainConfig) -> torch.device:
    if cfg.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(cfg.device)


def _cosine(step: int, total: int, cfg: TrainConfig) -> float:
    """Learning-rate factor of the public code's LambdaLR: cosine from 1 to lr_min / lr."""
    return (cfg.lr_min + (cfg.lr - cfg.lr_min) * 0.5 * (1 + math.cos(step / total * math.pi))) / cfg.lr


def _views(x_u8: Tensor, method: Method, cfg: TrainConfig, g: torch.Generator) -> Tensor:
    x_u8 = random_crop_flip(x_u8, generator=g, padding=cfg.crop_padding)
    if not method.augmentations:
        return to_float(x_u8)
    if not method.jsd:
        return augmix(x_u8, cfg.augmix, generator=g)
    return torch.cat([to_float(x_u8), augmix(x_u8, cfg.augmix, generator=g),
                      augmix(x_u8, cfg.augmix, generator=g)])


def _loss(model: nn.Module, core: nn.Module, x_u8: Tensor, y: Tensor, method: Method, cfg: TrainConfig,
          num_classes: int, g: torch.Generator) -> noisymix.LossParts:
    """One step's loss (see the module docstring); ``core`` is the unwrapped model (hooks)."""
    x = _views(x_u8, method, cfg, g)
    b = y.shape[0]
    mixing = method.feature_mixing or method.mixing == "cutmix"
    draw = draw_mix(b, cfg.mix if mixing else noisymix.MixConfig(alpha=0.0), generator=g)
    if method.mixing == "cutmix":
        x, draw = cutmix(x, draw, generator=g)
        logits = model(x)
    elif method.feature_mixing or method.noise:
        stages = core.stages if method.mixing == "manifold" else ("input",)
        k = int(torch.randint(len(stages), (1,), generator=g, device=g.device))
        mix_cfg = cfg.mix if method.noise else noisymix.MixConfig(alpha=cfg.mix.alpha)
        with transform_stage(core, stages[k], lambda h: noisy_feature_mixup(
                h, draw, mix_cfg, generator=g, views=method.views)):
            logits = model(x)
    else:
        logits = model(x)
    targets = mix_targets(y, draw, num_classes)
    return noisymix_loss(logits.float(), targets, views=method.views, gamma=cfg.jsd_weight,
                         jsd_variant=cfg.jsd_variant)


def _versions() -> dict[str, str]:
    return {"noisymix": noisymix.__version__, "torch": torch.__version__, "python": platform.python_version()}


def train(cfg: TrainConfig, out: str | Path, *, resume: bool = False) -> Path:
    """Train ``cfg`` into the run directory ``out``; return it.  See the module docstring.

    The weight initialisation and dropout draw from torch's global generator, so training runs
    inside ``fork_rng`` seeded with ``cfg.seed`` (the caller's global state is untouched) and the
    checkpoint carries that state for an exact resume.
    """
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(cfg.seed)
        return _train(cfg, Path(out), resume)


def _train(cfg: TrainConfig, out: Path, resume: bool) -> Path:
    method = get_method(cfg.method)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = _device(cfg)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
    writer = rank == 0

    data = load_dataset(cfg.dataset, "train", cfg.data_root or None)
    if cfg.train_subset:
        data = data.subset(torch.arange(min(cfg.train_subset, len(data))))
    heldout = None
    if cfg.heldout:
        if cfg.heldout >= len(data):
            raise ValueError(f"heldout={cfg.heldout} leaves no training images out of {len(data)}")
        heldout = data.subset(torch.arange(len(data) - cfg.heldout, len(data))).to(device)
        data = data.subset(torch.arange(len(data) - cfg.heldout))
    images, labels = data.images.to(device), data.labels.to(device)
    n = len(data)

    core = create_model(cfg.model, data.num_classes, **cfg.model_kwargs).to(device)
    if device.type == "cuda":
        core = core.to(memory_format=torch.channels_last)
    model: nn.Module = core
    if world > 1:
        ids = [device] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(core, device_ids=ids)
    if cfg.compile and device.type == "cuda":
        model = torch.compile(model)
    optimizer = torch.optim.SGD(core.parameters(), lr=cfg.lr, momentum=cfg.momentum, nesterov=cfg.nesterov,
                                weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(n / cfg.batch_size)
    total = cfg.epochs * steps_per_epoch
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _cosine(s, total, cfg))
    order_g = noisymix.generator_for(cfg.seed, device)  # batch order: same on every rank
    aug_g = noisymix.generator_for(cfg.seed * 1000 + 1 + rank, device)  # augmentation and mixing

    record = {**config_to_dict(cfg), "num_classes": data.num_classes, "model_kwargs": cfg.model_kwargs,
              "versions": _versions(), "device": str(device) if device.type == "cpu"
              else torch.cuda.get_device_name(device), "train_images": n, "data_source": data.source,
              "world_size": world}
    start_epoch, metrics = 0, []
    checkpoint = out / "checkpoint.pt"
    if resume and checkpoint.exists():
        state = load_state_dict(checkpoint, map_location=device)
        core.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        order_g.set_state(state["order_generator"].cpu())
        aug_g.set_state(state["aug_generator"].cpu())
        torch.set_rng_state(state["torch_generator"].cpu())
        start_epoch = int(state["epoch"])
        metrics = [m for m in read_metrics(out) if m["epoch"] <= start_epoch]
    elif writer and (out / "final.pt").exists():
        raise ValueError(f"{out} already holds a finished run; use another --out or --resume")
    if writer:
        write_json(out / "config.json", record)

    amp = cfg.amp and device.type == "cuda"
    bar = progress(total=total, initial=start_epoch * steps_per_epoch, desc=f"train {cfg.preset}",
                   unit="step")
    for epoch in range(start_epoch, cfg.epochs):
        model.train()
        t0 = time.perf_counter()
        sums = torch.zeros(4, device=device)  # loss, ce, jsd, correct
        perm = torch.randperm(n, generator=order_g, device=device)
        for step in range(steps_per_epoch):
            index = perm[step * cfg.batch_size:(step + 1) * cfg.batch_size][rank::world]
            x_u8, y = images[index], labels[index]
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                parts = _loss(model, core, x_u8, y, method, cfg, data.num_classes, aug_g)
            if not torch.isfinite(parts.total):
                parts = type(parts)(*(t.detach() for t in (parts.total, parts.cross_entropy, parts.jsd)))
                raise NonFiniteLoss(
                    f"non-finite loss at epoch {epoch + 1}, step {step + 1}: total={float(parts.total)}, "
                    f"cross_entropy={float(parts.cross_entropy)}, jsd={float(parts.jsd)}; the last good "
                    f"checkpoint is {checkpoint if checkpoint.exists() else 'none (first epoch)'}")
            optimizer.zero_grad(set_to_none=True)
            parts.total.backward()
            optimizer.step()
            scheduler.step()
            sums += torch.stack([parts.total.detach() * len(y), parts.cross_entropy.detach() * len(y),
                                 parts.jsd.detach() * len(y), torch.zeros((), device=device)])
            bar.update(1)
        seconds = time.perf_counter() - t0
        if world > 1:
            dist.all_reduce(sums)
        entry = {"epoch": epoch + 1, "loss": float(sums[0] / n), "cross_entropy": float(sums[1] / n),
                 "jsd": float(sums[2] / n), "lr": optimizer.param_groups[0]["lr"],
                 "images_per_s": n / seconds, "seconds": seconds}
        if heldout is not None:
            entry["heldout_accuracy"] = _accuracy(core, heldout.images, heldout.labels)
        metrics.append(entry)
        if writer:
            append_metrics(out, metrics)
            save_torch(checkpoint, {"model": core.state_dict(), "optimizer": optimizer.state_dict(),
                                    "scheduler": scheduler.state_dict(), "epoch": epoch + 1,
                                    "order_generator": order_g.get_state(),
                                    "aug_generator": aug_g.get_state(),
                                    "torch_generator": torch.get_rng_state()})
    bar.close()
    if writer:
        save_torch(out / "final.pt", core.state_dict())
    if world > 1:
        dist.barrier()
    return out


@torch.inference_mode()
def _accuracy(model: nn.Module, images_u8: Tensor, labels: Tensor, batch: int = 1000) -> float:
    was_training = model.training
    model.eval()
    correct = sum(int((model(to_float(images_u8[i:i + batch])).argmax(1) == labels[i:i + batch]).sum())
                  for i in range(0, len(labels), batch))
    model.train(was_training)
    return correct / len(labels)
