"""Run by ``test_ddp.py`` under torchrun: train a tiny NoisyMix run and record, per step, the
lambda and transform stage this rank used and a fingerprint of its noise, into ``OUT/draws-RANK.json``.

The noise fingerprint applies this step's M_{lambda,xi} (same draw, a clone of the generator at
this very point) to an all-ones input: equal lambdas and inputs, so only the noise can differ."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

import fullscale.training.loop as loop_module
import fullscale.training.step as T
from fullscale.training.presets import resolve_config

records: list[dict] = []
_real_mixup, _real_stage = T.noisy_feature_mixup, T.transform_stage


def _transform_stage(core, stage, fn):
    records.append({"stage": stage})
    return _real_stage(core, stage, fn)


def _mixup(h, draw, cfg, *, generator, views=1):
    probe = torch.Generator(device=generator.device)
    probe.set_state(generator.get_state())
    ones = torch.ones_like(h)
    noise = T.__dict__["_real_noise"](ones, draw, cfg, generator=probe, views=views)
    records[-1].update(lam=float(draw.lam), noise=float((noise - ones).abs().sum()))
    return _real_mixup(h, draw, cfg, generator=generator, views=views)


T._real_noise = _real_mixup
T.noisy_feature_mixup, T.transform_stage = _mixup, _transform_stage

out = Path(sys.argv[1])
cfg = resolve_config("noisymix", sys.argv[2:])
loop_module.train(cfg, out / "run")
rank = int(os.environ["RANK"])
(out / f"draws-{rank}.json").write_text(json.dumps(records))
# train() leaves the process group it joined (one never destroyed could abort a rank at exit)
(out / f"group-left-{rank}").write_text(str(not torch.distributed.is_initialized()))
