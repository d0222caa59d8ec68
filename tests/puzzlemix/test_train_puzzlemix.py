"""Puzzle Mix in the trainer: the step's loss is the Puzzle Mix of its views, the presets carry the
public recipe on the NoisyMix schedule, and the tables' row names the method."""

from __future__ import annotations

import copy
import json

import pytest
import torch

pytest.importorskip("gco", reason="Puzzle Mix needs gco-wrapper (pip install 'noisymix[puzzlemix]')")

from fullscale.models import create_model
from fullscale.puzzlemix import puzzlemix_batch
from fullscale.training.methods import METHODS
from fullscale.training.presets import resolve_config
from fullscale.training.step import make_views, step_loss, step_mix_config
from fullscale.vocabulary import METHOD_ROWS
from noisymix.loss import soft_cross_entropy
from noisymix.mixing import MixDraw, draw_mix, mix_targets
from noisymix_app.cli import main


def test_the_step_loss_is_the_puzzle_mix_of_its_views():
    method = METHODS["puzzlemix"]
    cfg = resolve_config("puzzlemix", ["width=4", "puzzlemix.block_nums=4,8"])
    torch.manual_seed(0)
    model = create_model("preactresnet18", 10, width=4)
    replay_model = copy.deepcopy(model)  # the step updates BN statistics; replay from the same state
    data = torch.Generator().manual_seed(0)
    x_u8 = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8, generator=data)
    y = torch.randint(0, 10, (8,), generator=data)
    parts = step_loss(model, model, x_u8, y, method, cfg, 10, torch.Generator().manual_seed(5),
                  torch.Generator().manual_seed(1))
    assert model.training

    g = torch.Generator().manual_seed(5)
    x = make_views(x_u8, method, cfg, g)
    draw = draw_mix(8, step_mix_config(method, cfg), generator=g)
    result, clean = puzzlemix_batch(replay_model, x, y, draw.perm, float(draw.lam), cfg.puzzlemix, generator=g)
    assert clean is None
    targets = mix_targets(y, MixDraw(perm=draw.perm, lam=result.weights), 10)
    expected = soft_cross_entropy(replay_model(result.images), targets)
    torch.testing.assert_close(parts.total, expected)
    assert parts.jsd == 0


def test_clean_lam_adds_the_clean_loss_term():
    method = METHODS["puzzlemix"]
    cfg = resolve_config("puzzlemix", ["width=4", "puzzlemix.clean_lam=1.0", "puzzlemix.block_nums=4"])
    model = create_model("preactresnet18", 10, width=4)
    x_u8 = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1, 2, 3])
    parts = step_loss(model, model, x_u8, y, method, cfg, 10, torch.Generator().manual_seed(5),
                  torch.Generator().manual_seed(1))
    assert parts.total > parts.cross_entropy  # 2 clean_lam CE(clean) > 0 on top


@pytest.mark.parametrize("dataset", ["cifar10", "cifar100"])
@pytest.mark.parametrize("model", ["preactresnet18", "wrn28_4"])
def test_presets_are_the_public_recipe_on_the_noisymix_schedule(dataset, model):
    cfg = resolve_config(f"{dataset}-{model}-puzzlemix", [])
    assert (cfg.method, cfg.data.dataset, cfg.model.name) == ("puzzlemix", dataset, model)
    assert cfg.optim.epochs == 200 and cfg.mix.alpha == 1.0
    p = cfg.puzzlemix
    assert (p.n_labels, p.beta, p.gamma, p.eta, p.neigh_size, p.transport, p.t_eps, p.t_size) == \
        (3, 1.2, 0.5, 0.2, 4, True, 0.8, 4)
    assert p.adv_p == 0 and p.clean_lam == 0 and p.block_nums == (2, 4, 8, 16)
    assert METHOD_ROWS["Puzzle Mix"] == "puzzlemix"


def test_a_short_run_trains(tmp_path):
    run = tmp_path / "run"
    quick = ["dataset=digits", "width=4", "epochs=1", "batch_size=32", "train_subset=64"]
    assert main(["train", "--preset", "puzzlemix", "--out", str(run),
                 *[a for kv in quick for a in ("--set", kv)]]) == 0
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 1 and metrics[0]["loss"] > 0
