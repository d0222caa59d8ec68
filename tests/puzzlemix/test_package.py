"""Puzzle Mix is one package, ``fullscale/puzzlemix/`` (issue 48): its public names (those of the
single module it was before) are handed on by ``fullscale.puzzlemix`` from the module of each job,
and the package's ``__init__`` imports no torch, since every graph-cut helper process imports it."""

from __future__ import annotations

import importlib
import subprocess
import sys

import fullscale.puzzlemix as puzzlemix

#: the public names of fullscale/puzzlemix.py before the package (its __all__ and draw_block_num)
FORMER_PUBLIC_NAMES = {
    "PuzzleMixConfig", "PuzzleMixResult", "adversarial_noise", "adversarial_start", "block_costs", "block_saliency",
    "draw_block_num", "mask_transport", "puzzle_mix", "puzzlemix_batch", "puzzlemix_loss", "puzzlemix_step",
    "saliency", "solve_masks", "transport_blocks"}


def test_the_former_public_names_are_handed_on_from_the_module_that_defines_each():
    assert set(puzzlemix.__all__) == FORMER_PUBLIC_NAMES
    for name in FORMER_PUBLIC_NAMES:
        value = getattr(puzzlemix, name)
        home = importlib.import_module(value.__module__)
        assert home.__name__.startswith("fullscale.puzzlemix.") and getattr(home, name) is value, name
    assert set(dir(puzzlemix)) >= FORMER_PUBLIC_NAMES


def test_an_unknown_name_is_an_attribute_error():
    try:
        puzzlemix.no_such_name  # noqa: B018
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("fullscale.puzzlemix.no_such_name did not raise")


def test_the_package_imports_no_torch_and_the_trainer_finds_the_kind():
    code = ("import sys, fullscale.puzzlemix\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))\n"
            "from fullscale.mixings import load_kinds\n"
            "print(load_kinds()['puzzlemix'].config.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split("\n")[:2] == ["[]", "fullscale.puzzlemix.config"]
