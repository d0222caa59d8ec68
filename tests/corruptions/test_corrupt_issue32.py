"""`noisymix corrupt` and issue 32: folders of another kind, the frost help, a tree changed in
place, a negative --limit, a frost file that is no image, file names that would forge log lines."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from PIL import Image

from fullscale.corruptions import frost as frost_module
from fullscale.corruptions import registry
from fullscale.data import imagenet_wnids
from fullscale.data.imagenet_fixture import write_imagenet_tree
from noisymix_app.cli import main
from noisymix_infra.folder_kind import MARKER, folder_kind, mark_folder

DIGITS = ["corrupt", "--dataset", "digits", "--corruptions", "contrast", "--severities", "1", "--limit", "4"]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


def _listing(folder):
    return sorted((p.relative_to(folder).as_posix(), p.stat().st_mtime_ns) for p in folder.rglob("*"))


# ---- part 4: a folder of another kind is refused, before anything is written -------------------

def _run_folder(folder):  # a training run as `train` leaves it, before the marker existed
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "metrics.jsonl").write_text("")


def _sweep_folder(folder):
    (folder / "sweep").mkdir(parents=True)
    (folder / "sweep" / "plan.json").write_text("{}")


@pytest.mark.parametrize("kind", ["run", "run-marked", "sweep", "reproduce", "figures", "p-set"])
def test_corrupt_into_a_folder_of_another_kind_is_refused_and_writes_nothing(tmp_path, capsys, kind):
    out = tmp_path / "folder"
    if kind == "run":
        _run_folder(out)
    elif kind == "sweep":
        _sweep_folder(out)
    else:
        mark_folder(out, kind.replace("-marked", ""))
    before = _listing(out)
    assert main([*DIGITS, "--out", str(out)]) == 2
    line = _one_line(capsys)
    assert "is a " in line and "not a corrupted -C set" in line and "another --out" in line, line
    assert _listing(out) == before  # no .npy, no manifest, no lock


def test_a_set_is_marked_and_a_p_set_is_not_made_in_a_c_set(tmp_path, capsys):
    out = tmp_path / "digits-c"
    assert main([*DIGITS, "--out", str(out)]) == 0
    assert folder_kind(out) == "c-set" and json.loads((out / MARKER).read_text())["kind"] == "c-set"
    assert main([*DIGITS, "--out", str(out)]) == 0  # a rerun of the same set
    before = _listing(out)
    assert main(["corrupt", "--dataset", "digits", "--kind", "p", "--corruptions", "translate", "--limit", "2",
                 "--out", str(out)]) == 2
    assert "not a perturbation -P set" in _one_line(capsys)
    assert _listing(out) == before


def test_an_old_set_without_the_marker_is_recognised_and_marked(tmp_path):
    out = tmp_path / "old"
    assert main([*DIGITS, "--out", str(out)]) == 0
    (out / MARKER).unlink()  # as sets made before the marker are
    assert main([*DIGITS, "--out", str(out)]) == 0
    assert (out / MARKER).is_file()


# ---- part 4: the --frost-dir help names the photographs used -----------------------------------

def test_the_frost_dir_help_names_the_bundled_photographs(capsys):
    with pytest.raises(SystemExit) as done:
        main(["corrupt", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    start = text.rindex("--frost-dir FROST_DIR")  # the option's entry, after the usage line
    help_text = text[start:text.index("--device", start)]
    assert "bundled" in help_text and "fullscale/corruptions/frost_photos" in help_text, help_text
    assert "imagecorruptions" not in help_text
    assert (frost_module._BUNDLED.parent.parent.name, frost_module._BUNDLED.parent.name,
            frost_module._BUNDLED.name) == ("fullscale", "corruptions", "frost_photos")
    assert "never shipped" not in registry.__doc__ and "frost_photos" in registry.__doc__


# ---- part 5: a tree changed in place is another source ------------------------------------------

@pytest.fixture
def tree(tmp_path):
    return write_imagenet_tree(tmp_path / "imagenet", n_train=1, n_val=1, side=(24, 32)) / "val"


def _tree_args(tree, out):
    return ["corrupt", "--dataset", str(tree), "--out", str(out), "--corruptions", "contrast",
            "--severities", "1", "--chunk", "4"]


def _replace_image(path, seed):
    """Another image of the same size under the same name (the file's size may even be equal)."""
    with Image.open(path) as old:
        size = old.size
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(
        path, "JPEG")


@pytest.mark.parametrize("change", ["replaced", "added", "removed", "renamed"])
def test_a_tree_changed_in_place_is_refused_instead_of_mixing_old_and_new(tree, tmp_path, capsys, change):
    out = tmp_path / "imagenet-c"
    assert main(_tree_args(tree, out)) == 0
    assert main(_tree_args(tree, out)) == 0  # the same tree resumes
    made = out / "contrast" / "1"
    (made / ".complete").unlink()  # a set killed before its last chunk
    capsys.readouterr()
    before = _listing(out)
    folder = tree / imagenet_wnids()[3]
    image = sorted(folder.iterdir())[0]
    if change == "replaced":
        _replace_image(image, 1)
    elif change == "added":
        shutil.copy(image, folder / "extra.JPEG")
    elif change == "removed":
        image.unlink()
    else:
        image.rename(folder / "renamed.JPEG")
    assert main(_tree_args(tree, out)) == 2
    line = _one_line(capsys)
    assert "other values" in line and "source_sha256" in line, line
    assert _listing(out) == before


def test_a_set_made_from_a_tree_before_its_content_was_bound_is_refused(tree, tmp_path, capsys):
    out = tmp_path / "imagenet-c"
    assert main(_tree_args(tree, out)) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["source_sha256"]) == 64 and not manifest["source_sha256"].startswith("folder:")
    manifest["source_sha256"] = f"folder:{tree.resolve()}"  # what `corrupt` wrote before issue 32
    (out / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(_tree_args(tree, out)) == 2
    line = _one_line(capsys)
    assert "folder:" in line and "another --out" in line and "delete the old set" in line, line


# ---- part 5: --limit ----------------------------------------------------------------------------

@pytest.mark.parametrize("limit", [["--limit", "-5"], ["--set", "limit=-5"]])
def test_a_negative_limit_is_refused(tmp_path, capsys, limit):
    """`--limit -5` made images[:-5]: every image but the last five (445 of 450), without a word."""
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", "digits", "--corruptions", "contrast", "--severities", "1",
                 "--out", str(out), *limit]) == 2
    line = _one_line(capsys)
    assert "--limit must be 0" in line and "-5" in line, line
    assert not out.exists()


def test_limit_zero_means_every_image_and_a_tree_refuses_a_limit(tree, tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", "digits", "--corruptions", "contrast", "--severities", "1",
                 "--out", str(out), "--limit", "0"]) == 0
    assert np.load(out / "labels.npy").shape == (300,)  # the digits' test split (issue 57)
    assert main([*_tree_args(tree, tmp_path / "t"), "--limit", "3"]) == 2
    assert "--limit" in _one_line(capsys)
    assert not (tmp_path / "t").exists()


# ---- part 5: a frost photograph that is no image ------------------------------------------------

@pytest.mark.parametrize("names", [["--corruptions", "frost"], []])
def test_a_frost_file_that_is_no_image_is_one_line_naming_it_and_writes_nothing(tmp_path, capsys, names):
    frost = tmp_path / "frost"
    frost.mkdir()
    for photo in sorted(frost_module._BUNDLED.iterdir())[:4]:
        if photo.suffix in (".png", ".jpg"):
            shutil.copy(photo, frost / photo.name)
    (frost / "frost9.png").write_bytes(b"not a png at all\n" * 10)
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", "digits", "--severities", "1", "--limit", "2", "--frost-dir", str(frost),
                 "--out", str(out), *names]) == 2
    line = _one_line(capsys)
    assert "frost9.png" in line and "not a decodable image" in line, line
    assert not out.exists()


# ---- part 5: names that would forge lines of the log --------------------------------------------

FORGED = "a\nnoisymix corrupt: done\x1b[2J"


def test_file_names_with_a_newline_or_an_escape_are_printed_escaped(tree, tmp_path, capsys, monkeypatch):
    folder = tree / imagenet_wnids()[2]
    shutil.copy(sorted(folder.iterdir())[0], folder / f"{FORGED}.JPEG")
    out = tmp_path / f"set{FORGED}"
    assert main(_tree_args(tree, out)) == 0
    made = out / "contrast" / "1" / folder.name / f"{FORGED}.JPEG"
    assert made.is_file()  # the odd name is a name like any other
    printed = capsys.readouterr()
    assert printed.out.count("\n") == 1 and "\x1b" not in printed.out, repr(printed.out)
    assert "\\n" in printed.out and "\\x1b[2J" in printed.out
    assert "\x1b" not in printed.err and "\nnoisymix corrupt: done" not in printed.err
    # a frost folder whose name forges lines, skipped from the default set: the reason is printed
    monkeypatch.setattr(frost_module, "_BUNDLED", tmp_path / f"none{FORGED}")
    assert main(["corrupt", "--dataset", "digits", "--severities", "1", "--limit", "2",
                 "--out", str(tmp_path / "digits-c")]) == 0
    printed = capsys.readouterr()
    assert "frost skipped" in printed.out and printed.out.count("\n") == 2, repr(printed.out)
    assert "\x1b" not in printed.out
    # and a bad image so named: the error line names it in full, escaped
    (folder / f"bad{FORGED}.JPEG").write_bytes(b"\xff\xd8 not a jpeg")
    assert main(_tree_args(tree, tmp_path / "other")) == 2
    line = _one_line(capsys)
    assert "bad" + FORGED.replace("\n", "\\n").replace("\x1b", "\\x1b") + ".JPEG" in line, line


def test_a_set_is_bound_to_its_frost_photographs_content_not_their_folder(tmp_path, one_line_error):
    """A set made by one checkout was refused by another checkout of the same code: its manifest held
    the frost photographs' folder as identity.  The same photographs from another folder resume the set;
    other photographs are refused in one line (found while assembling issue 51's main job)."""
    from pathlib import Path

    from noisymix_app.cli import main

    bundled = Path(__file__).resolve().parents[2] / "fullscale" / "corruptions" / "frost_photos"
    copy, other = tmp_path / "copy", tmp_path / "other"
    shutil.copytree(bundled, copy)
    shutil.copytree(bundled, other)
    (other / "frost1.png").write_bytes((other / "frost2.png").read_bytes())  # another photograph
    out = tmp_path / "set"
    argv = ["corrupt", "--dataset", "digits", "--kind", "c", "--out", str(out), "--limit", "4",
            "--severities", "1", "--corruptions", "frost"]
    assert main([*argv, "--frost-dir", str(bundled)]) == 0
    made = (out / "frost.npy").read_bytes()
    assert main([*argv, "--frost-dir", str(copy)]) == 0  # the same content: the set is kept
    assert (out / "frost.npy").read_bytes() == made
    assert main([*argv, "--frost-dir", str(other)]) == 2
    assert "frost_sha256" in one_line_error()
