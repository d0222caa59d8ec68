"""Two-process DDP training with torchrun on CPU (gloo): rank 0 alone writes a complete run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from fullscale.runs import load_run_model


def test_torchrun_two_processes(tmp_path):
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable))
    if torchrun is None:
        pytest.skip("torchrun not installed")
    out = tmp_path / "run"
    cmd = [torchrun, "--nproc_per_node", "2", "-m", "noisymix.cli", "train", "--preset", "noisymix", "--out", str(out),
           *[a for kv in ("dataset=digits", "width=4", "epochs=1", "train_subset=128", "batch_size=32")
             for a in ("--set", kv)]]
    env = {**os.environ, "NOISYMIX_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300, env=env)
    assert done.stdout.count("trained noisymix") == 1
    config = json.loads((out / "config.json").read_text())
    assert config["world_size"] == 2
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1
    assert config["train_images"] == 128
    model, _ = load_run_model(out)
    assert model(torch.rand(2, 3, 32, 32)).shape == (2, 10)
    # rank 0 alone wrote: one line of output, no stray files
    names = sorted(p.name for p in out.iterdir() if p.name != ".lock")  # .lock: rank 0's directory lock
    assert names == ["checkpoint.pt", "config.json", "final.pt", "metrics.jsonl"]
