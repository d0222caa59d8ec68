"""Issue 60, root cause 3: a -C manifest merged after a run without frost took that run's null frost identity,
then the next run's other photographs: it named photographs that did not make ``frost.npy``.

A run into a set's folder merges its manifest; the identity fields that only the runs making frost set
(``frost_sha256``, ``frost_photographs``) are kept from the stored manifest when a run lacks them, and a
set whose ``frost.npy`` no manifest names the photographs of (one merged before this fix) is refused in
one line, as any other identity the set was made under."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from noisymix_app.cli import main

BUNDLED = Path(__file__).resolve().parents[2] / "fullscale" / "corruptions" / "frost_photos"


def _corrupt(out, names, frost_dir=BUNDLED):
    return main(["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(out), "--limit", "4", "--severities",
                 "1", "--corruptions", names, "--frost-dir", str(frost_dir)])


def _manifest(out) -> dict:
    return json.loads((out / "manifest.json").read_text())


def _other_photographs(tmp_path) -> Path:
    other = tmp_path / "other"
    shutil.copytree(BUNDLED, other)
    (other / "frost1.png").write_bytes((other / "frost2.png").read_bytes())
    return other


def test_a_run_without_frost_keeps_the_frost_identity_and_other_photographs_are_refused(tmp_path, one_line_error):
    out = tmp_path / "set"
    assert _corrupt(out, "frost") == 0
    made, frost = _manifest(out), (out / "frost.npy").read_bytes()
    assert made["frost_sha256"]
    assert _corrupt(out, "contrast") == 0  # a run that makes no frost
    merged = _manifest(out)
    assert merged["frost_sha256"] == made["frost_sha256"]
    assert merged["frost_photographs"] == made["frost_photographs"]
    assert merged["names"] == ["frost", "contrast"]
    assert _corrupt(out, "frost,contrast", _other_photographs(tmp_path)) == 2  # was: taken, and named
    assert "frost_sha256" in one_line_error()
    assert _manifest(out) == merged and (out / "frost.npy").read_bytes() == frost


def test_a_run_with_frost_after_one_without_records_its_photographs(tmp_path):
    out = tmp_path / "set"
    assert _corrupt(out, "contrast") == 0
    assert _manifest(out)["frost_sha256"] is None
    assert _corrupt(out, "frost") == 0
    assert _manifest(out)["frost_sha256"]
    assert _corrupt(out, "contrast") == 0
    assert _manifest(out)["frost_sha256"]


def test_a_set_whose_frost_no_manifest_names_is_refused_for_frost(tmp_path, one_line_error):
    """A manifest merged by the old code: frost.npy there, its photographs' identity null.  Which photographs
    made it cannot be told: a run that makes frost is refused; one that does not is taken."""
    out = tmp_path / "set"
    assert _corrupt(out, "frost") == 0
    damaged = {**_manifest(out), "frost_sha256": None, "frost_photographs": None}
    (out / "manifest.json").write_text(json.dumps(damaged))
    assert _corrupt(out, "frost", _other_photographs(tmp_path)) == 2
    line = one_line_error()
    assert "frost.npy" in line and "photographs its manifest does not name" in line
    assert _corrupt(out, "contrast") == 0
