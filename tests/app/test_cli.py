"""The front door: registry, one-line errors, exit codes."""

from __future__ import annotations

import importlib
import sys

import pytest

from noisymix_app.cli import COMMANDS, main


def test_every_command_module_exists_and_follows_the_contract():
    for name, command in COMMANDS.items():
        module = importlib.import_module(command.module)
        assert callable(module.add_arguments), name
        assert callable(module.run), name


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)


def test_unknown_command_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["frobnicate"])
    assert exit_info.value.code == 2


def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch):
    (tmp_path / "fake_command.py").write_text(
        "def add_arguments(parser):\n    parser.add_argument('--path')\n"
        "def run(args):\n    raise ValueError(f'no data at {args.path}\\nsecond line')\n"
    )
    # (not syspath_prepend: it imports pkg_resources, which some environments lack)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    importlib.invalidate_caches()
    monkeypatch.setitem(COMMANDS, "fake", COMMANDS["toy"]._replace(module="fake_command"))
    assert main(["fake", "--path", "/nowhere"]) == 2
    err = capsys.readouterr().err
    assert err == "noisymix fake: error: no data at /nowhere\n"


def test_ctrl_c_names_how_to_continue(monkeypatch, capsys):
    """Issue 21: an interrupted train names the exact --resume command; sweep says rerun."""
    import fullscale.cli_train as cli_train
    from noisymix_app.cli import main

    def interrupted(_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_train, "run", interrupted)
    assert main(["train", "--preset", "digits-noisymix", "--out", "runs/x y"]) == 130
    err = capsys.readouterr().err.strip()
    assert err.endswith("noisymix train --preset digits-noisymix --out 'runs/x y' --resume"), err


def test_evaluate_result_line_prints_percent():
    from fullscale.cli_evaluate import _percent

    line = _percent({"accuracy": 0.5111, "mean_accuracy": 0.1, "n": 450})
    assert line == "accuracy 51.1 %, mean_accuracy 10.0 %, n 450"
