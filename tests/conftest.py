"""Shared test set-up: quiet progress bars, one torch thread per xdist worker, hypothesis
profiles, and a clean skip for GPU-only tests on machines without CUDA."""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import HealthCheck, settings

os.environ.setdefault("NOISYMIX_PROGRESS", "0")
os.environ.setdefault("MPLBACKEND", "Agg")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two workers on two cores: more intra-op threads would only oversubscribe them.  The variable
    # gives the commands the tests run one thread too (instead of sampling the free cores each time).
    torch.set_num_threads(1)
    os.environ.setdefault("NOISYMIX_THREADS", "1")

settings.register_profile(
    "default", deadline=None, max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture()
def one_torch_thread():
    """One torch intra-op thread for the test (restored after): suites of many tiny tensor ops,
    for which a second thread only spin-waits on a busy 2-core machine (10x slower, measured)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture()
def crash_then_resume(crash_after_first_checkpoint):
    """``run(cfg, straight, resumed)``: train ``cfg`` straight through into ``straight``; train it
    into ``resumed`` with the process dying right after its first checkpoint, then ``--resume``;
    return both final state dicts (an exact resume makes them equal)."""
    import fullscale.training.loop as trainer
    from noisymix_infra.io import load_state_dict

    def run(cfg, straight, resumed):
        trainer.train(cfg, straight)
        crash_after_first_checkpoint(cfg, resumed)
        trainer.train(cfg, resumed, resume=True)
        return load_state_dict(straight / "final.pt"), load_state_dict(resumed / "final.pt")
    return run


@pytest.fixture()
def crash_after_checkpoints(monkeypatch):
    """``crash(train, n=1)``: call ``train()`` with the process dying (KeyboardInterrupt) right after
    the ``n``-th ``checkpoint.pt`` is written (a group writes one per member); the trainer is
    restored, ready to resume."""
    import fullscale.training.checkpoint as checkpoint_module

    def crash(train, n=1):
        original, saved = checkpoint_module.save_torch, []

        def save_then_crash(path, obj):
            original(path, obj)
            if path.name == "checkpoint.pt":
                saved.append(path)
                if len(saved) == n:
                    raise KeyboardInterrupt
        monkeypatch.setattr(checkpoint_module, "save_torch", save_then_crash)
        with pytest.raises(KeyboardInterrupt):
            train()
        monkeypatch.setattr(checkpoint_module, "save_torch", original)
    return crash


@pytest.fixture()
def crash_after_first_checkpoint(crash_after_checkpoints):
    """``crash(cfg, out)``: train ``cfg`` into ``out`` with the process dying (KeyboardInterrupt)
    right after its first checkpoint is written; the trainer is restored, ready for ``resume=True``."""
    import fullscale.training.loop as trainer

    def crash(cfg, out):
        crash_after_checkpoints(lambda: trainer.train(cfg, out))
    return crash


@pytest.fixture()
def torchrun():
    """``run(*args)``: ``torchrun --standalone --nproc_per_node 2 *args`` (one torch thread per
    process, no progress bars); a failure shows the tail of what the processes wrote."""
    import shutil
    import subprocess
    import sys

    exe = shutil.which("torchrun", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("torchrun not installed")

    def run(*args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "NOISYMIX_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
        # --standalone: a free rendezvous port, so the DDP tests can run at once under xdist
        command = [exe, "--standalone", "--nproc_per_node", "2", *args]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=150, env=env)
        except subprocess.TimeoutExpired as hung:
            # Seen once in four full-suite runs under -n 2 (2026-11-25): rank 0 had trained and
            # printed its last line, then the job never ended (a process that does not exit after
            # the gloo group is left; not reproduced in isolation).  Open, noted in issue 32's
            # closing note; one more attempt keeps a rare teardown hang from failing the suite,
            # while a run that hangs every time still fails.
            print(f"torchrun hung after {hung.timeout} s (stdout: {hung.stdout!r}); trying once more")
            if "--out" in args:  # what the hung attempt wrote would be refused as "already holds a run"
                shutil.rmtree(args[args.index("--out") + 1], ignore_errors=True)
            done = subprocess.run(command, capture_output=True, text=True, timeout=150, env=env)
        assert done.returncode == 0, f"torchrun exited {done.returncode}:\n{done.stderr[-6000:]}"
        return done

    return run


@pytest.fixture()
def one_line_error(capsys):
    """What the command under test wrote to stderr, read by calling it: asserted to be one line and no
    traceback, the form of every refusal of the command line."""

    def read() -> str:
        err = capsys.readouterr().err.strip()
        assert err and "\n" not in err and "Traceback" not in err, err
        return err

    return read
