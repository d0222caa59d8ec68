"""Issue 46: `noisymix fit-analogue` end to end at toy size, its freeze rule, and (slow) the committed fit
reproduced from its own command."""

from __future__ import annotations

import json

import pytest

from fullscale.corruptions.matched import MATCHED_FILE
from noisymix_app.analogue import fit_c as fit_analogue
from noisymix_app.analogue.fit_c import FitOptions, choose, freeze
from noisymix_app.cli import main


def test_a_tiny_fit_runs_end_to_end_and_keeps_the_nearest_point(tmp_path):
    out = tmp_path / "fit"
    code = main(["fit-analogue", "--out", str(out), "--set", "seeds=100", "--set", "steps=2", "--set", "epochs=1",
                 "--set", "corruptions=contrast"])
    assert code in (0, None)
    record = json.loads((out / "digits_matched.json").read_text())
    entry = record["fit"]["contrast"]
    # the bisection on log2 k in [-4, 4] starts at k = 1, then halves the side the first drop points to
    first, second = entry["trace"][0], entry["trace"][1]
    assert first[0] == 1.0 and second[0] == (4.0 if first[1] < entry["target"] else 0.25)
    assert (entry["strength"], entry["drop"]) == choose([tuple(p) for p in entry["trace"]], entry["target"])
    # the command as typed (issue 54), --out as given
    assert record["command"] == (f"noisymix fit-analogue --out {out} --set seeds=100 --set steps=2 --set epochs=1 "
                                 "--set corruptions=contrast")
    assert (out / "models" / "baseline-seed100" / "final.pt").is_file()


@pytest.mark.parametrize("bad", ["seeds=3", "seeds=x", "steps=40", "corruptions=speckle_noise", "corruptions="])
def test_bad_fit_options_are_one_line(bad, one_line_error, tmp_path):
    assert main(["fit-analogue", "--out", str(tmp_path / "f"), "--set", bad]) == 2
    one_line_error()


def test_freeze_replaces_the_named_corruptions_and_keeps_the_others():
    frozen = json.loads(MATCHED_FILE.read_text())
    result = {"command": "noisymix fit-analogue --out fit --freeze --set corruptions=fog", "seconds": 10.0,
              "fit": {"fog": {"target": 6.9, "strength": 0.2, "drop": 6.8, "residual": -0.1, "trace": [[0.2, 6.8]]}},
              "strengths": {"fog": 0.2}}
    merged = freeze(result, frozen)
    assert merged["strengths"]["fog"] == 0.2 and merged["fit"]["fog"]["command"].endswith("corruptions=fog")
    assert all(merged["strengths"][n] == frozen["strengths"][n] for n in frozen["strengths"] if n != "fog")
    assert merged["command"] is None  # two commands made it
    with pytest.raises(ValueError, match="frozen fit of the others"):
        freeze(result, None)


def test_the_fit_options_default_to_the_committed_ones():
    fit = json.loads(MATCHED_FILE.read_text())
    assert FitOptions(**fit["options"]) == FitOptions()


@pytest.mark.slow
def test_the_committed_fit_reproduces_from_its_command(tmp_path):
    """The committed record's own options, for two corruptions (three Baseline models, ~5 min on 2 cores):
    the same strength, or one bisection step away on another CPU."""
    fit = json.loads(MATCHED_FILE.read_text())
    options = FitOptions(**{**fit["options"], "corruptions": "gaussian_noise,contrast"})
    again = fit_analogue.fit(options, tmp_path)
    for name in ("gaussian_noise", "contrast"):
        assert again["strengths"][name] == pytest.approx(fit["strengths"][name], rel=0.05)


def test_a_fit_refuses_a_folder_of_another_kind_and_the_users_own_file(tmp_path, one_line_error):
    made = tmp_path / "set"
    assert main(["corrupt", "--dataset", "digits16", "--kind", "c", "--out", str(made), "--corruptions", "contrast",
                 "--limit", "4"]) in (0, None)
    before = sorted(p.name for p in made.iterdir())
    assert main(["fit-analogue", "--out", str(made), "--set", "corruptions=contrast"]) == 2
    assert "corrupted -C set" in one_line_error()
    assert sorted(p.name for p in made.iterdir()) == before  # nothing written into the set
    theirs = tmp_path / "mine"
    theirs.mkdir()
    (theirs / "digits_matched.json").write_text("my notes")
    assert main(["fit-analogue", "--out", str(theirs), "--set", "corruptions=contrast"]) == 2
    assert "which noisymix did not write" in one_line_error()
    assert (theirs / "digits_matched.json").read_text() == "my notes" and sorted(theirs.iterdir()) == [
        theirs / "digits_matched.json"]


def test_the_matched_set_is_refused_off_its_own_data_in_one_line(tmp_path, one_line_error):
    for argv in (["--dataset", "digits16"], ["--dataset", "digits16", "--kind", "p"],
                 ["--dataset", "digits", "--size", "16"]):
        out = tmp_path / f"s{len(list(tmp_path.iterdir()))}"
        assert main(["corrupt", *argv, "--params", "digits-matched", "--out", str(out)]) == 2
        assert "difficulty-matched Digits-C" in one_line_error()
        assert not out.exists()


def test_a_matched_set_made_with_other_strengths_is_not_resumed(tmp_path, one_line_error):
    out = tmp_path / "dm"
    argv = ["corrupt", "--dataset", "digits", "--params", "digits-matched", "--out", str(out),
            "--corruptions", "contrast", "--limit", "4"]
    assert main(argv) in (0, None)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["strengths"]["contrast"] *= 2  # a set made before a refit
    (out / "manifest.json").write_text(json.dumps(manifest))
    before = (out / "contrast.npy").read_bytes()
    assert main([*argv[:-4], "--corruptions", "fog", "--limit", "4"]) == 2
    assert "strengths" in one_line_error()
    assert (out / "contrast.npy").read_bytes() == before and not (out / "fog.npy").exists()
