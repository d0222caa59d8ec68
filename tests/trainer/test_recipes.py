"""docs/recipes.md's table is the presets' own values (issue 31, part 4: recipes said out loud)."""

from __future__ import annotations

from pathlib import Path

from fullscale.training.config import FLAT_KEYS
from fullscale.training.presets import resolve_config
from noisymix_infra.config import config_to_dict

DOC = Path(__file__).resolve().parents[2] / "docs" / "recipes.md"


def _value(cfg, key: str) -> str:
    """The value of a ``--set`` key (dotted, or a flat alias: ``FLAT_KEYS``) in ``cfg``."""
    value = config_to_dict(cfg)
    for part in FLAT_KEYS.get(key, key).split("."):
        value = value[part]
    return str(tuple(value)) if isinstance(value, list) else str(value)


def test_the_puzzlemix_recipe_table_is_the_presets():
    lines = DOC.read_text().split("## Puzzle Mix", 1)[1].split("##", 1)[0].splitlines()
    header = next(line for line in lines if line.startswith("| key |"))
    presets = [cell.strip().split("`")[1] for cell in header.strip("|").split("|")[1:]]
    rows = [line for line in lines if line.startswith("| ") and not line.startswith(("| key", "|---"))]
    assert len(rows) >= 8
    configs = [resolve_config(name, []) for name in presets]
    for row in rows:
        key, *cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells == [_value(cfg, key) for cfg in configs], key


def test_the_public_recipe_is_the_public_codes():
    """The public README's 1200-epoch PreActResNet-18 command and main.py's batch 100."""
    cfg = resolve_config("cifar10-preactresnet18-puzzlemix-public", [])
    optim = cfg.optim
    assert (cfg.method, optim.batch_size, optim.lr, optim.momentum, optim.nesterov, optim.weight_decay,
            optim.epochs) == ("puzzlemix", 100, 0.1, 0.9, True, 1e-4, 1200)
    assert (optim.lr_schedule, tuple(optim.lr_milestones), optim.lr_gamma, cfg.puzzlemix.loss) == \
        ("step", (400, 800), 0.1, "bce_softmax")
