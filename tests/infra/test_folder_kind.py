"""``noisymix_infra.folder_kind``: every folder says what it is; a command refuses a folder of another kind."""

from __future__ import annotations

import json

import pytest

from noisymix_infra.folder_kind import KINDS, MARKER, claim_folder, folder_kind, mark_folder, require_kind


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_claimed_folder_says_its_kind_and_refuses_every_other(tmp_path, kind):
    folder = tmp_path / "out"
    claim_folder(folder, kind)
    assert json.loads((folder / MARKER).read_text())["kind"] == kind
    claim_folder(folder, kind)  # the same kind again: a resume
    for other in KINDS:
        if other != kind:
            with pytest.raises(ValueError, match=f"is {KINDS[kind].split(' (')[0]}") as error:
                claim_folder(folder, other)
            assert "\n" not in str(error.value)
            assert json.loads((folder / MARKER).read_text())["kind"] == kind


@pytest.mark.parametrize(("files", "kind"), [
    ({"config.json": "{}", "metrics.jsonl": ""}, "run"),
    ({"config.json": "{}", "final.pt": ""}, "run"),
    ({"manifest.json": json.dumps({"kind": "c", "names": ["contrast"]})}, "c-set"),
    ({"manifest.json": json.dumps({"kind": "p", "names": ["shot_noise"]})}, "p-set"),
    ({"sweep/plan.json": "{}"}, "sweep"),
    ({"reproduce.json": "{}"}, "reproduce"),
    ({"reproduce.json": "{}", "sweep/plan.json": "{}"}, "reproduce"),  # reproduce runs through a sweep
    ({"notes.txt": "mine"}, None),
    ({"config.json": "{}"}, None),  # a config alone is not yet a run of ours
    ({"manifest.json": "not json"}, None),
])
def test_folders_made_before_the_marker_are_recognised_by_what_they_hold(tmp_path, files, kind):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert folder_kind(tmp_path) == kind


def test_a_folder_of_the_users_own_is_left_alone(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    claim_folder(tmp_path, "run")
    assert folder_kind(tmp_path) == "run" and (tmp_path / "notes.txt").read_text() == "mine"
    assert folder_kind(tmp_path / "missing") is None


def test_require_kind_refuses_a_folder_of_ours_of_another_kind(tmp_path):
    mark_folder(tmp_path / "set", "c-set")
    assert require_kind(tmp_path / "set", ("c-set", "p-set"), "--data-root") == "c-set"
    assert require_kind(tmp_path / "other", "run", "RUN") is None
    with pytest.raises(ValueError, match=r"^RUN: .* is a corrupted -C set .*, not a training run"):
        require_kind(tmp_path / "set", "run", "RUN")


@pytest.mark.parametrize("text", ["{", '{"kind": "cake"}', "[1, 2]"])
def test_a_broken_marker_is_one_line(tmp_path, text):
    (tmp_path / MARKER).write_text(text)
    with pytest.raises(ValueError) as error:
        folder_kind(tmp_path)
    assert MARKER in str(error.value) and "\n" not in str(error.value)


def test_a_folder_name_with_control_characters_is_quoted(tmp_path):
    folder = tmp_path / "evil\n\x1b[2Jname"
    mark_folder(folder, "c-set")
    with pytest.raises(ValueError) as error:
        claim_folder(folder, "run")
    assert "\n" not in str(error.value) and "\x1b" not in str(error.value)
