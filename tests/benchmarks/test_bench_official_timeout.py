"""``bench official-loop``: a child past ``--child-timeout`` is an error entry, not a lost JSON (issue 54).

Probed: one child run past ``--child-timeout`` ended the benchmark with a 30-line ``TimeoutExpired``
traceback and no JSON, losing every figure measured before it.  Here fake children stand in for the
public loop and our trainer (the public code and torchvision are not on this machine): one sleeps
past the limit (and leaves a grandchild, as the public loop's ``DataLoader`` workers), the others
answer at once.  The JSON holds the timed-out runs as errors beside the others' figures, and the
sleeping child's whole process group is gone.
"""

from __future__ import annotations

import json
import os
import sys
import time

from noisymix_app.bench import bench_official_loop as bench
from noisymix_app.cli import main

SLEEPER = ("import subprocess, sys, time; from pathlib import Path; "
           "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
           "Path(sys.argv[1]).write_text(str(child.pid)); time.sleep(120)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie awaiting its reaper is gone for our purpose
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_child_past_its_timeout_is_an_error_entry_and_the_others_are_kept(tmp_path, monkeypatch):
    code = tmp_path / "code"
    code.mkdir()
    (code / "cifar.py").write_text("# the public loop's entry point (never run here)\n")
    pids = tmp_path / "pids"
    pids.mkdir()

    def public_command(code, workers, steps, warmup, data_root, seed, out):
        if seed == 1:  # sleeps past the limit, with a grandchild
            return [sys.executable, "-c", SLEEPER, str(pids / "public")]
        record = {"seconds": 2.0, "losses": [2.3], "first_non_finite_step": None}
        return [sys.executable, "-c", f"import json; open({str(out)!r}, 'w').write(json.dumps({record!r}))"]

    def ours_command(run, data_root, epochs, variant, device, sets):
        if variant == "sleep":
            return [sys.executable, "-c", SLEEPER, str(pids / "ours")]
        entry = {"epoch": 1, "images_per_s": 1280.0, "cross_entropy": 2.0, "seconds": 1.0}
        return [sys.executable, "-c",
                f"import json, os; os.makedirs({str(run)!r}); "
                f"open(os.path.join({str(run)!r}, 'metrics.jsonl'), 'w').write(json.dumps({entry!r}) + '\\n'); "
                f"open(os.path.join({str(run)!r}, 'config.json'), 'w').write("
                f"json.dumps({{'config': {{'optim': {{'batch_size': 128}}}}}}))"]

    monkeypatch.setattr(bench, "_public_command", public_command)
    monkeypatch.setattr(bench, "_ours_command", ours_command)
    monkeypatch.setattr(bench, "_check_ours", lambda args, variants: None)  # "sleep" and "fine" are no --set keys
    out = tmp_path / "official.json"
    start = time.monotonic()
    assert main(["bench", "--out", str(out), "official-loop", "--", "--code", str(code), "--workers", "16",
                 "--public-seeds", "1,2", "--images", "64", "--child-timeout", "3",
                 "--ours-variants", "sleep;fine"]) == 0
    assert time.monotonic() - start < 60
    result = json.loads(out.read_text())
    timed_out, kept = result["public"]
    assert timed_out == {"workers": 16, "seed": 1, "error": "timed out after 3 s (--child-timeout); killed"}
    assert kept["seed"] == 2 and kept["steps_per_s"] == 100.0  # 200 steps in 2 s
    sleeping, fine = result["ours"]
    assert sleeping == {"variant": "sleep", "error": "timed out after 3 s (--child-timeout); killed"}
    assert fine["variant"] == "fine" and fine["steps_per_s"] == 10.0 and fine["speedup_over_public"] == {"16": 0.1}
    deadline = time.monotonic() + 5
    grandchildren = [int((pids / name).read_text()) for name in ("public", "ours")]
    while any(map(_alive, grandchildren)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, grandchildren)), "a timed-out child's process group outlived it"
