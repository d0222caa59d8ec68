"""Issue 54, root causes 2 and 3: the fit's records say what made them, and ``--freeze`` guards the package
file.  One tiny fit (one model of 1 epoch, gaussian_noise at k = 1 only) is made per module through the
command line; the freezes go to a package file of the test's own (``noisymix_app.analogue.fit_c.MATCHED_FILE``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from fullscale.corruptions import matched
from fullscale.corruptions.matched import MATCHED_FILE, read_fit_file
from fullscale.vocabulary import CORRUPTIONS
from noisymix_app.analogue import fit_c as fit_analogue
from noisymix_app.analogue import freeze as fit_freeze
from noisymix_app.analogue.fidelity import made_words
from noisymix_app.analogue.fit_c import MADE, fit_summary, freeze, missed
from noisymix_app.analogue.freeze import check_package_writable, freeze_guarded
from noisymix_app.cli import main

TINY = ["--set", "seeds=100", "--set", "steps=0", "--set", "epochs=1", "--set", "corruptions=gaussian_noise"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(folder, record) of a tiny fit typed with a relative ``--out`` (the command must say so)."""
    root = tmp_path_factory.mktemp("fit54")
    here = os.getcwd()
    os.chdir(root)
    try:
        assert main(["fit-analogue", "--out", "myfit", *TINY]) == 0
    finally:
        os.chdir(here)
    out = root / "myfit"
    return out, json.loads((out / "digits_matched.json").read_text())


@pytest.fixture()
def package(tmp_path, monkeypatch):
    """A copy of the committed package file, where ``fit-analogue --freeze`` writes in this test."""
    path = tmp_path / "pkg" / "digits_matched.json"
    path.parent.mkdir()
    path.write_bytes(MATCHED_FILE.read_bytes())
    monkeypatch.setattr(matched, "MATCHED_FILE", path)
    matched.matched_fit.cache_clear()
    yield path
    matched.matched_fit.cache_clear()


# --- root cause 2: what made the record ---------------------------------------------------------------

def test_the_record_names_the_typed_command_its_models_and_provenance(tiny):
    out, record = tiny
    assert record["command"] == "noisymix fit-analogue --out myfit " + " ".join(TINY)
    assert record["recipe"]["epochs"] == 1
    (model,) = record["models"]
    assert model["seed"] == 100 and model["epochs"] == 1 and len(model["config_sha256"]) == 64
    from noisymix_infra.io import sha256_file

    assert model["final_sha256"] == sha256_file(out / model["run"] / "final.pt")
    prov = record["provenance"]
    assert {"commit", "versions", "host", "written", "cpu_model"} <= set(prov) and prov["versions"]["torch"]
    entry = record["fit"]["gaussian_noise"]
    assert entry["made"] == {k: record[k] for k in MADE} and entry["command"] == record["command"]


def test_models_of_other_options_are_refused_before_any_training(tiny, one_line_error):
    out, record = tiny
    before = {p: p.stat().st_mtime_ns for p in (out / "models").rglob("*")}
    assert main(["fit-analogue", "--out", str(out), *TINY[:4], "--set", "epochs=2", *TINY[6:]]) == 2
    line = one_line_error()
    assert "epochs" in line and "baseline-seed100" in line
    assert {p: p.stat().st_mtime_ns for p in (out / "models").rglob("*")} == before
    assert json.loads((out / "digits_matched.json").read_text()) == record


def test_a_merged_freeze_keeps_each_entrys_maker_and_no_false_top_level(tiny):
    _, record = tiny
    committed = json.loads(MATCHED_FILE.read_text())
    merged = freeze(json.loads(json.dumps(record)), json.loads(json.dumps(committed)))
    # the old top level said epochs 10, options of all 15 and the old clean accuracy for every entry
    assert merged["recipe"] is None and merged["options"] is None and merged["clean_accuracy"] is None
    assert merged["command"] is None
    assert merged["fit"]["gaussian_noise"]["made"]["recipe"]["epochs"] == 1
    assert merged["fit"]["fog"]["made"]["recipe"] == committed["recipe"]
    assert merged["fit"]["fog"]["made"]["clean_accuracy"] == committed["clean_accuracy"]
    matched.check_fit_record(merged)


def test_the_reports_paragraph_is_rendered_from_the_record(tiny):
    _, record = tiny
    committed = json.loads(MATCHED_FILE.read_text())
    merged = freeze(json.loads(json.dumps(record)), json.loads(json.dumps(committed)))
    text = made_words(fit_summary(merged))
    assert "1 epochs, not the main job's recipe" in text and record["command"] in text
    assert "100–104, the main job's recipe" in text  # the other 14 entries' own fit
    alone = made_words(fit_summary(committed))
    assert alone == f"`{committed['command']}` (Baseline seeds 100–104, the main job's recipe)"


# --- root cause 3: the freeze is guarded --------------------------------------------------------------

def test_a_fit_that_misses_its_tolerance_is_not_frozen_unless_forced(tiny, package, one_line_error):
    out, record = tiny
    assert missed(record), record["fit"]  # the premise: 1 epoch at k = 1 misses gaussian_noise's 48.9
    before = package.read_bytes()
    assert main(["fit-analogue", "--out", str(out), "--freeze", *TINY]) == 2
    line = one_line_error()
    assert "--force-freeze" in line and "gaussian_noise" in line and str(package) in line
    assert package.read_bytes() == before
    assert main(["fit-analogue", "--out", str(out), "--freeze", "--force-freeze", *TINY]) == 0
    frozen = read_fit_file(package)
    assert frozen["fit"]["gaussian_noise"]["made"]["recipe"]["epochs"] == 1
    assert frozen["strengths"]["gaussian_noise"] == 1.0
    assert all(frozen["strengths"][n] == json.loads(before)["strengths"][n] for n in CORRUPTIONS
               if n != "gaussian_noise")
    assert sorted(p.name for p in package.parent.iterdir()) == ["digits_matched.json"]  # no lock file, no temp


def test_a_bad_package_entry_is_refused_before_the_fit(tmp_path, package, one_line_error):
    record = json.loads(package.read_text())
    del record["fit"]["fog"]["residual"]
    package.write_text(json.dumps(record))
    out = tmp_path / "fresh-fit"
    assert main(["fit-analogue", "--out", str(out), "--freeze", *TINY]) == 2
    line = one_line_error()
    assert str(package) in line and "fit.fog" in line and "residual" in line
    assert not out.exists()


def test_a_read_only_package_is_refused_before_the_fit(tmp_path, package, monkeypatch, one_line_error):
    if os.geteuid() == 0:  # root writes into a 0555 folder: the refusal of the folder's probe, simulated
        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")
        monkeypatch.setattr(fit_freeze.tempfile, "mkstemp", refuse)
    else:
        package.parent.chmod(0o555)
    out = tmp_path / "fresh-fit"
    try:
        assert main(["fit-analogue", "--out", str(out), "--freeze", *TINY]) == 2
    finally:
        package.parent.chmod(0o755)
    line = one_line_error()
    assert str(package) in line and "not writable" in line and ".tmp" not in line
    assert not out.exists()


def _partial(name: str, strength: float) -> dict:
    entry = {"target": 6.9, "strength": strength, "drop": 6.9, "residual": 0.0, "trace": [[strength, 6.9]]}
    return {"command": f"noisymix fit-analogue --out f --freeze --set corruptions={name}", "seconds": 1.0,
            "fit": {name: entry}, "strengths": {name: strength}}


def test_two_freezes_at_once_lose_no_update(package):
    """Each merge reads the frozen record, then waits 0.3 s before writing: without the lock the second
    read the record before the first wrote, and one update was lost."""
    def slow(result, path):
        frozen = read_fit_file(path)
        time.sleep(0.3)
        return freeze(result, frozen)

    threads = [threading.Thread(target=freeze_guarded, args=(package, _partial(name, k)),
                                kwargs={"tolerance_ok": True, "force": False, "merge": slow})
               for name, k in (("fog", 0.25), ("snow", 2.5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    frozen = read_fit_file(package)
    assert frozen["strengths"]["fog"] == 0.25 and frozen["strengths"]["snow"] == 2.5


def test_a_write_killed_mid_way_leaves_no_temporary_file_for_good(package):
    """``kill -9`` inside the atomic write leaves ``.digits_matched.json.*.tmp``; the next freeze sweeps it."""
    code = ("import sys, time\nfrom noisymix_infra.io import atomic_write\n"
            "with atomic_write(sys.argv[1], 'w') as h:\n    h.write('{'); h.flush(); print('in', flush=True)\n"
            "    time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(package)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "in"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    litter = list(package.parent.glob(".digits_matched.json.*.tmp"))
    assert litter  # the premise: the killed write left its temporary file
    freeze_guarded(package, _partial("fog", 0.25), tolerance_ok=True, force=False, merge=fit_analogue._merged)
    assert not list(package.parent.glob(".digits_matched.json.*"))
    assert read_fit_file(package)["strengths"]["fog"] == 0.25


def test_check_package_writable_names_the_package_file(tmp_path):
    with pytest.raises(ValueError, match="its folder does not exist"):
        check_package_writable(tmp_path / "nowhere" / "x.json")
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(ValueError, match="not a plain file"):
        check_package_writable(tmp_path / "dir.json")
    check_package_writable(tmp_path / "x.json")
    assert list(tmp_path.iterdir()) == [tmp_path / "dir.json"]  # the probe is gone
