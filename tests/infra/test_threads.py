"""``noisymix_infra.threads``: the one way to set torch's CPU threads, and ``--threads`` on every command."""

from __future__ import annotations

from unittest import mock

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import noisymix_infra.threads as threads
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


def test_none_and_zero_follow_the_environment_else_the_free_cores(one_thread, monkeypatch):
    monkeypatch.setattr(threads, "auto_threads", lambda sample_seconds=0.25: 2)
    for n in (None, 0):
        with torch_threads(n):
            assert torch.get_num_threads() == 2
        with torch_threads(n, auto=False):  # torch's count left as it is
            assert torch.get_num_threads() == 1
    monkeypatch.setenv(ENV, "3")
    with torch_threads(None):
        assert torch.get_num_threads() == 3
    with torch_threads(4):  # an explicit count beats the environment
        assert torch.get_num_threads() == 4
    assert torch.get_num_threads() == 1


def _stat(rows: dict[int, tuple[int, int]]) -> str:
    """A /proc/stat text whose cpuN lines have the given (busy, idle) jiffies (user, idle columns)."""
    total = [sum(b for b, _ in rows.values()), sum(i for _, i in rows.values())]
    lines = [f"cpu  {total[0]} 0 0 {total[1]} 0 0 0 0 0 0"]
    lines += [f"cpu{cpu} {busy} 0 0 {idle} 0 0 0 0 0 0" for cpu, (busy, idle) in rows.items()]
    return "\n".join([*lines, "intr 1 2 3", "ctxt 5"]) + "\n"


@settings(max_examples=40, deadline=None)
@given(idle_fractions=st.lists(st.integers(0, 100), min_size=1, max_size=8))
def test_free_cores_counts_the_idle_share_of_each_usable_core(idle_fractions):
    """Two samples of /proc/stat 100 jiffies apart: core k idle for idle_fractions[k] of them."""
    cpus = set(range(len(idle_fractions)))
    first = {c: (1000, 1000) for c in cpus}
    second = {c: (1000 + 100 - f, 1000 + f) for c, f in zip(sorted(cpus), idle_fractions)}
    texts = iter([_stat(first), _stat(second)])
    with mock.patch("builtins.open", mock.mock_open()) as opened, \
            mock.patch.object(threads.os, "sched_getaffinity", lambda pid: cpus), \
            mock.patch.object(threads.time, "sleep", lambda s: None):
        opened.return_value.readlines.side_effect = lambda: next(texts).splitlines(keepends=True)
        free = threads.free_cores()
    assert free == pytest.approx(sum(idle_fractions) / 100)


@pytest.mark.parametrize(("free", "usable", "expected"), [
    (None, 4, 4), (0.0, 2, 1), (0.4, 2, 1), (1.0, 2, 1), (1.6, 2, 2), (2.0, 2, 2), (7.9, 4, 4),
])
def test_auto_threads_uses_the_free_cores_within_the_usable_ones(monkeypatch, free, usable, expected):
    monkeypatch.setattr(threads, "free_cores", lambda sample_seconds=0.25: free)
    monkeypatch.setattr(threads, "usable_cores", lambda: usable)
    assert threads.auto_threads() == expected


@pytest.mark.parametrize(("n", "env", "message"), [
    (-1, None, "--threads must be >= 1 (or 0: NOISYMIX_THREADS or the free cores), got -1"),
    (99999, None, "--threads 99999 is more than 4 threads per core"),
    (None, "100000", "NOISYMIX_THREADS 100000 is more than 4 threads per core"),
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


def test_threads_beyond_the_machine_is_one_line_not_a_crash(tmp_path, capsys, one_thread):
    assert main(["verify", "--out", str(tmp_path), "--threads", "99999"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("noisymix verify: error: --threads 99999 is more than") and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["train", "--bogus"], ["evaluate"], ["train", "--threads", "two"], ["nonsense"],
                                  ["bench", "toy", "--", "--repeats-typo", "0"]])
def test_argument_errors_are_one_line(capsys, argv):
    """The README promises one line on bad input: argparse's usage text is not printed before it."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err and "usage:" not in err, err
