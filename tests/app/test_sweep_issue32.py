"""`noisymix sweep` (issue 32, continued): a CIFAR --data-root without its batches is refused before
any run, a sweep's folder claim stays in the sweep command (``noisymix reproduce`` runs ``run_local``
in its own folder), a resume leaves a stale transfer run alone, and the serial runner decides torch's
threads again for each run."""

from __future__ import annotations

import pytest

from noisymix_app.cli import main
from noisymix_app.sweep import command as sweep_command
from noisymix_app.sweep import local as sweep_local
from noisymix_app.sweep.plan import Plan, RunSpec
from noisymix_infra import threads as threads_module
from noisymix_infra.folder_kind import claim_folder, folder_kind


def _plan(*names: str) -> Plan:
    return Plan("digits_analogue", tuple(RunSpec(n, "baseline", 0) for n in names), analogue=True)


def test_a_cifar_data_root_without_its_batches_is_refused_before_any_run(tmp_path, capsys):
    empty = tmp_path / "data"
    empty.mkdir()
    out = tmp_path / "sweep"
    assert main(["sweep", "results_cifar10", "--seeds", "1", "--out", str(out), "--data-root", str(empty)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no cifar10 pickle batches" in err[0] and "more input problem" in err[0]
    assert not out.exists()
    assert main(["sweep", "results_cifar10", "--seeds", "1", "--dry-run", "--data-root", str(empty)]) == 0
    captured = capsys.readouterr()
    assert "sweep results_cifar10:" in captured.out and "no cifar10 pickle batches" in captured.err


@pytest.mark.parametrize("given", [0, 3])
def test_each_serial_run_decides_its_torch_threads(tmp_path, monkeypatch, given):
    """``--threads 0``: each run gets the count ``auto_threads`` gives when it starts; N > 0: N."""
    import torch

    monkeypatch.delenv(threads_module.ENV, raising=False)
    monkeypatch.setattr(threads_module, "usable_cores", lambda: 4)
    sampled = iter([2, 1, 3])
    calls: list[int] = []

    def auto(sample_seconds: float = 0.25) -> int:
        calls.append(1)
        return next(sampled)

    monkeypatch.setattr(threads_module, "auto_threads", auto)
    seen: dict[str, int] = {}

    def fake_run(spec, out, **kwargs):
        seen[spec.name] = torch.get_num_threads()
        return "done"

    monkeypatch.setattr(sweep_local, "execute_run", fake_run)
    before = torch.get_num_threads()
    sweep_local.run_local(_plan("a", "b", "c"), tmp_path, workers=0, threads=given, tabulate=False)
    if given:
        assert seen == {"a": given, "b": given, "c": given} and not calls
    else:
        assert seen == {"a": 2, "b": 1, "c": 3} and len(calls) == 3
    assert torch.get_num_threads() == before  # restored after each run


def test_run_local_does_not_claim_a_reproduce_folder_as_a_sweep(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep_local, "execute_run", lambda spec, out, **kwargs: "done")
    claim_folder(tmp_path, "reproduce")
    sweep_local.run_local(_plan("a"), tmp_path, workers=0, tabulate=False)
    assert folder_kind(tmp_path) == "reproduce"
    claim_folder(tmp_path, "reproduce")  # and `noisymix reproduce` may still resume in it


def test_a_resume_neither_retrains_nor_counts_a_stale_transfer_run(tmp_path, monkeypatch, capsys,
                                                                    finished_transfer_run):
    source = tmp_path / "source.pt"
    source.write_bytes(b"old source")
    out = tmp_path / "out"
    plan = finished_transfer_run(out, source)
    started: list[str] = []
    monkeypatch.setattr(sweep_local, "execute_run", lambda spec, o, **kwargs: started.append(spec.name) or "done")
    assert sweep_local.run_local(plan, out, workers=0, tabulate=False) == {"t": "done"}
    source.write_bytes(b"a replaced source model")
    assert sweep_local.run_local(plan, out, workers=0, tabulate=False) == {"t": "stale"}
    assert not started and "is stale" in capsys.readouterr().err
    assert "stale: 1" in sweep_command.status_text(out) and "2/2 done" not in sweep_command.status_text(out)


@pytest.mark.parametrize(("given", "expected"), [(None, 0), (0, 0), (3, 3)])
def test_reproduce_passes_its_threads_to_each_run(tmp_path, monkeypatch, given, expected):
    """`noisymix reproduce --threads N` holds every training run to N (the serial runner decides
    threads per run, so the count must reach it; 0: per run, from the free cores)."""
    import noisymix_app.reproduce.command as reproduce_module
    from noisymix_app.cli import main

    seen = {}

    def fake(plan, out, **kwargs):
        seen.update(kwargs)
        return {"seconds": 0.0}

    monkeypatch.setattr(reproduce_module, "reproduce", fake)
    argv = ["reproduce", "--plan", "quick", "--out", str(tmp_path / "r")]
    if given is not None:
        argv += ["--threads", str(given)]
    assert main(argv) == 0
    assert seen["threads"] == expected
