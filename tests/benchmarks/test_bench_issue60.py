"""``bench official-loop`` (issue 60): ``--ours-set nope=1`` exited 0 with every run an error, and the error
kept the last 500 characters of `train`'s line, cutting off the key's name.  Every run of ours is now
resolved as ``noisymix train`` resolves it (the one ``--set`` dialect) before the data or any run: an
unknown key, a bad value, or a key given twice is one line naming it."""

from __future__ import annotations

import pytest

from noisymix_app.bench import bench_official_loop as bench
from noisymix_app.cli import main


@pytest.mark.parametrize("extra, words", [
    (["--ours-set", "nope=1"], "unknown config key 'nope'"),
    (["--ours-set", "width=4", "--ours-set", "optim.nope=2"], "unknown config key 'optim.nope'"),
    (["--ours-variants", "amp=maybe"], "amp must be a boolean"),
    (["--ours-variants", "amp=true;nope=1"], "unknown config key 'nope'"),
    (["--ours-set", "epochs=3"], "epochs"),  # --ours-epochs sets it: the last would win unseen
    (["--ours-set", "amp=false"], "amp"),  # and a variant sets amp
])
def test_a_bad_key_of_ours_is_one_line_before_any_data_or_run(tmp_path, monkeypatch, one_line_error, extra, words):
    ran = []
    monkeypatch.setattr(bench, "write_synthetic_cifar", lambda *a, **k: ran.append("data"))
    monkeypatch.setattr(bench, "_run_child", lambda *a, **k: ran.append("run") or "not run")
    out = tmp_path / "official.json"
    assert main(["bench", "--out", str(out), "official-loop", "--", "--images", "64", *extra]) == 2
    line = one_line_error()
    assert words in line, line
    assert ran == [] and not out.exists()


def test_good_keys_pass_the_check_and_reach_the_runs(tmp_path, monkeypatch):
    commands = []
    monkeypatch.setattr(bench, "write_synthetic_cifar", lambda *a, **k: None)
    monkeypatch.setattr(bench, "_run_child", lambda command, timeout, **k: commands.append(command) or "not run")
    out = tmp_path / "official.json"
    assert main(["bench", "--out", str(out), "official-loop", "--", "--images", "64", "--ours-set", "width=4",
                 "--ours-set", "batch_size=32", "--ours-variants", "amp=true,seed=0;amp=false"]) == 0
    assert len(commands) == 2 and all("width=4" in c for c in commands)


def test_a_runs_error_keeps_its_start(tmp_path, monkeypatch):
    """A run's own failure is kept from its start, where `train` names the cause."""
    import subprocess

    line = "noisymix train: error: " + "cause " * 200
    monkeypatch.setattr(bench, "_run_child", lambda *a, **k: subprocess.CompletedProcess(a[0], 2, "", line))
    entry = bench._ours(tmp_path, 1, "amp=true", "cpu", 1.0, [])
    assert entry["error"].startswith("noisymix train: error: cause") and len(entry["error"]) <= 500
