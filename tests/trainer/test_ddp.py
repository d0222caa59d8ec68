"""Two-process DDP training with torchrun on CPU (gloo): rank 0 alone writes a complete run."""

from __future__ import annotations

import json
import os

import pytest
import torch

from fullscale.run_model import load_run_model

# device=cpu: these are the gloo runs; a machine with one GPU would put rank 1 on a second one
_TINY = ("dataset=digits", "width=4", "epochs=1", "train_subset=128", "batch_size=32", "device=cpu")


def test_torchrun_two_processes(tmp_path, torchrun):
    out = tmp_path / "run"
    done = torchrun("-m", "noisymix_app.cli", "train", "--preset", "noisymix", "--out", str(out),
                    *[a for kv in _TINY for a in ("--set", kv)])
    assert done.stdout.count("trained noisymix") == 1
    run_facts = json.loads((out / "config.json").read_text())["run"]
    assert run_facts["world_size"] == 2
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1
    assert run_facts["train_images"] == 128
    model, _ = load_run_model(out)
    assert model(torch.rand(2, 3, 32, 32)).shape == (2, 10)
    # rank 0 alone wrote: one line of output, no stray files
    names = sorted(p.name for p in out.iterdir() if p.name != ".lock")  # .lock: rank 0's directory lock
    assert names == ["checkpoint.pt", "config.json", "final.pt", "metrics.jsonl", "noisymix-folder.json"]



def _draws(tmp_path, torchrun, *extra: str) -> list[list[dict]]:
    """Per rank, the (stage, lambda, noise fingerprint) of every step of a 2-process run."""
    worker = os.path.join(os.path.dirname(__file__), "ddp_draws_worker.py")
    torchrun(worker, str(tmp_path), *_TINY, *extra)
    assert [(tmp_path / f"group-left-{r}").read_text() for r in (0, 1)] == ["True", "True"]
    return [json.loads((tmp_path / f"draws-{r}.json").read_text()) for r in (0, 1)]


def test_ranks_share_lambda_and_stage_and_keep_their_own_noise(tmp_path, torchrun):
    """The single-process recipe under torchrun (default ``ddp_draws=shared``): one lambda and
    one transform point per step for the whole batch, on every rank; the noise stays per rank.
    With ``ddp_draws=per_rank`` the ranks' lambdas differ (so this test can tell the two apart)."""
    r0, r1 = _draws(tmp_path / "shared", torchrun)
    assert len(r0) == len(r1) == 4  # 128 images / batch 32
    assert [(s["stage"], s["lam"]) for s in r0] == [(s["stage"], s["lam"]) for s in r1]
    assert all(0 < s["lam"] < 1 for s in r0)
    assert all(a["noise"] != b["noise"] for a, b in zip(r0, r1, strict=True))
    p0, p1 = _draws(tmp_path / "per_rank", torchrun, "ddp_draws=per_rank")
    assert [s["lam"] for s in p0] != [s["lam"] for s in p1]
    assert [s["lam"] for s in p0] == [s["lam"] for s in r0]  # rank 0 draws as before


def test_sync_bn_on_the_cpu_with_several_processes_is_a_clear_error():
    from fullscale.training.config import RuntimeConfig, TrainConfig
    from fullscale.training.process import sync_batchnorm

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    cfg = TrainConfig(runtime=RuntimeConfig(sync_bn=True))
    with pytest.raises(ValueError, match="sync_bn=true needs CUDA"):
        sync_batchnorm(model, cfg, 2, torch.device("cpu"))
    assert sync_batchnorm(model, cfg, 1, torch.device("cpu")) is model  # one process: nothing to sync


@pytest.mark.gpu
def test_sync_bn_converts_on_cuda_and_keeps_the_checkpoint_layout():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    from fullscale.models import create_model
    from fullscale.training.config import RuntimeConfig, TrainConfig
    from fullscale.training.process import sync_batchnorm

    device = torch.device("cuda")
    plain = create_model("preactresnet18", 10, width=4).to(device)
    keys = list(plain.state_dict())
    synced = sync_batchnorm(plain, TrainConfig(runtime=RuntimeConfig(sync_bn=True)), 2, device)
    assert not any(type(m) is torch.nn.BatchNorm2d for m in synced.modules())
    assert any(isinstance(m, torch.nn.SyncBatchNorm) for m in synced.modules())
    assert list(synced.state_dict()) == keys and synced.stages == plain.stages
    synced.eval()  # one process, no group: the eval path of SyncBatchNorm runs on the GPU
    assert synced(torch.rand(2, 3, 32, 32, device=device)).shape == (2, 10)


def test_a_run_made_before_the_ddp_options_still_resumes(tmp_path):
    """A config.json without ``ddp_draws`` / ``sync_bn`` (runs made before they existed) computes
    what the defaults compute in one process, so resuming it is not refused."""
    from fullscale.training.checkpoint import check_same_config
    from fullscale.training.config import RuntimeConfig, TrainConfig, flat_config
    from noisymix_infra.config import config_to_dict
    from noisymix_infra.io import write_json

    record = config_to_dict(TrainConfig())  # grouped, as a run writes it now
    old = {k: v for k, v in flat_config(record).items() if k not in ("ddp_draws", "sync_bn")}  # flat, as then
    assert "lr" in old and "runtime" not in old
    write_json(tmp_path / "config.json", old)
    check_same_config(tmp_path / "config.json", record)
    with pytest.raises(ValueError, match="sync_bn"):
        check_same_config(tmp_path / "config.json", config_to_dict(TrainConfig(runtime=RuntimeConfig(sync_bn=True))))


def test_more_ranks_than_gpus_is_one_line_before_the_rendezvous(monkeypatch):
    """torchrun --nproc_per_node 2 on a one-GPU machine: every rank refuses in one line instead of
    rank 1 failing deep in CUDA ("invalid device ordinal") while rank 0 waits for it."""
    from fullscale.training.config import TrainConfig
    from fullscale.training.process import start_process

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(ValueError, match=r"2 processes on this node, which has 1 CUDA device.*--nproc_per_node 1"):
        start_process(TrainConfig())
