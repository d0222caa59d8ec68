"""``read_json_object`` (issue 60, root cause 5): one reader for a JSON object a user hands us, every malformed
file one ``ValueError`` line naming it (only ``ValueError`` becomes one line at the front door: a missing
file, a ``[1]`` or ``{"summary": null}`` gave tracebacks)."""

from __future__ import annotations

import pytest

from noisymix_infra.io import read_json_object

WHAT = "an evaluation of noisymix"


@pytest.mark.parametrize("content, words", [
    (None, "not found"),
    ("", "not a JSON file"),
    ('{"summary": {"accur', "not a JSON file"),
    (b"\xff\xfe{}", "not a JSON file"),
    ("[1]", "must be a JSON object, got a list"),
    ("null", "must be a JSON object, got null"),
    ('{"results": {}}', "'summary' is missing"),
    ('{"summary": null}', "'summary' is null"),
    ('{"summary": 3}', "'summary' must be an object, got 3"),
    ('{"summary": {}}', "'summary.accuracy' is missing"),
    ('{"summary": {"accuracy": "high"}}', "'summary.accuracy' must be a number, got 'high'"),
    ('{"summary": {"accuracy": true}}', "'summary.accuracy' must be a number, got True"),
    ('{"summary": {"accuracy": NaN}}', "'summary.accuracy' must be a number, got nan"),
])
def test_every_malformed_file_is_one_line_naming_it(tmp_path, content, words):
    path = tmp_path / "clean.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(ValueError) as error:
        read_json_object(path, WHAT, {"summary": "object", "summary.accuracy": "number"})
    text = str(error.value)
    assert "\n" not in text and str(path) in text and words in text, text
    assert WHAT in text


def test_a_folder_and_an_unreadable_file_are_one_line(tmp_path):
    with pytest.raises(ValueError, match="cannot be read"):
        read_json_object(tmp_path, WHAT)


def test_a_whole_object_is_returned_and_keys_given_as_a_list_need_only_be_there(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"plan": {"seeds": [0]}, "table": {}, "extra": [1, 2]}')
    assert read_json_object(path, "a summary", ("plan", "table"))["extra"] == [1, 2]
    assert read_json_object(path, "a summary", {"plan.seeds": "list", "table": "object"})["plan"] == {"seeds": [0]}
    with pytest.raises(ValueError, match=r"'plan\.seeds' must be an object"):
        read_json_object(path, "a summary", {"plan.seeds.first": "any"})
