"""``noisymix_infra.threads``: the one way to set torch's CPU threads, and ``--threads`` on every command."""

from __future__ import annotations

import pytest
import torch

from noisymix_app.cli import COMMANDS, _parser, main
from noisymix_infra.threads import ENV, resolve_threads, torch_threads


@pytest.fixture
def one_thread(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_sets_and_restores_the_previous_count(one_thread):
    with torch_threads(2) as n:
        assert n == 2 and torch.get_num_threads() == 2
    assert torch.get_num_threads() == 1


def test_restores_after_an_error(one_thread):
    with pytest.raises(RuntimeError, match="boom"), torch_threads(3):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == 1


def test_none_and_zero_leave_torch_alone_or_follow_the_environment(one_thread, monkeypatch):
    for n in (None, 0):
        with torch_threads(n):
            assert torch.get_num_threads() == 1
    monkeypatch.setenv(ENV, "2")
    with torch_threads(None):
        assert torch.get_num_threads() == 2
    with torch_threads(3):  # an explicit count beats the environment
        assert torch.get_num_threads() == 3
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize(("n", "env", "message"), [
    (-1, None, "--threads must be >= 1 (or 0: NOISYMIX_THREADS or torch's default), got -1"),
    (1.5, None, "threads must be a whole number, got 1.5"),
    (None, "many", "NOISYMIX_THREADS must be a whole number of threads, got 'many'"),
    (None, "-2", "NOISYMIX_THREADS must be >= 1"),
])
def test_bad_values_are_one_line_errors(one_thread, monkeypatch, n, env, message):
    if env is not None:
        monkeypatch.setenv(ENV, env)
    with pytest.raises(ValueError) as error:
        resolve_threads(n)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert torch.get_num_threads() == 1


def test_every_command_accepts_threads_with_its_own_default():
    defaults = {"verify": 1, "toy": 1, "corrupt": 1}  # the commands whose work is many small ops
    for name in COMMANDS:
        _, subparsers = _parser(name)
        action = next(a for a in subparsers[name]._actions if "--threads" in a.option_strings)
        assert action.default == defaults.get(name), name


def test_bad_threads_on_the_command_line_is_one_line(tmp_path, capsys, one_thread):
    assert main(["verify", "--out", str(tmp_path), "--threads", "-3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("noisymix verify: error: --threads must be >= 1") and err.count("\n") == 1
    assert torch.get_num_threads() == 1
    assert not (tmp_path / "theory.json").exists()
