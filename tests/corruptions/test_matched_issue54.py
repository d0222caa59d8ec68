"""Issue 54, the hand-edited ``digits_matched.json``: a ``fit`` entry of the wrong type, ``residual`` missing,
``fit: null``, the file a list, a strength of ``Infinity`` gave tracebacks (some after the whole job) or
"Out of range float values are not JSON compliant".  Each is one line naming the file and the bad key or
value, raised before any work: by the reader, by ``noisymix corrupt --params digits-matched`` (nothing
made) and by ``noisymix reproduce`` on the matched plan (no folder claimed)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fullscale.corruptions import matched
from fullscale.corruptions.matched import MATCHED_FILE, check_fit_record, read_fit_file
from fullscale.vocabulary import CORRUPTIONS
from noisymix_app.cli import main

COMMITTED = json.loads(MATCHED_FILE.read_text())


def _edited(edit) -> str:
    record = json.loads(json.dumps(COMMITTED))
    edit(record)
    return json.dumps(record)


def _set(path, value):
    def edit(record):
        *keys, last = path
        for key in keys:
            record = record[key]
        record[last] = value
    return edit


# (what the user did, the file's text, what the one line must name)
CASES = {
    "fit entry of the wrong type": (_edited(_set(("fit", "fog"), 3)), "fit.fog"),
    "residual missing": (_edited(lambda r: r["fit"]["contrast"].pop("residual")), "residual"),
    "fit null": (_edited(_set(("fit",), None)), "'fit'"),
    "the file a list": (json.dumps([COMMITTED]), "list"),
    "strength Infinity": (MATCHED_FILE.read_text().replace(
        f'"gaussian_noise": {json.dumps(COMMITTED["strengths"]["gaussian_noise"])}', '"gaussian_noise": Infinity'),
        "strengths.gaussian_noise is Infinity"),
    "residual NaN": (MATCHED_FILE.read_text().replace(
        f'"residual": {json.dumps(COMMITTED["fit"]["brightness"]["residual"])}', '"residual": NaN', 1),
        "fit.brightness.residual is NaN"),
    "strength a string": (_edited(_set(("strengths", "fog"), "0.2")), "strengths.fog"),
    "strengths disagree with the fit": (_edited(_set(("strengths", "fog"), 0.3)), "fit.fog.strength"),
    "trace not pairs": (_edited(_set(("fit", "snow", "trace"), [[1.0]])), "fit.snow.trace"),
    "not JSON": ("{", "not a fit record"),
}


@pytest.fixture()
def package(tmp_path, monkeypatch):
    """A package file of the test's own, read by ``matched_fit`` (its cache cleared before and after)."""
    path = tmp_path / "pkg" / "digits_matched.json"
    path.parent.mkdir()
    monkeypatch.setattr(matched, "MATCHED_FILE", path)
    matched.matched_fit.cache_clear()
    yield path
    matched.matched_fit.cache_clear()


def test_the_committed_file_passes_the_check():
    assert read_fit_file(MATCHED_FILE)["strengths"] == COMMITTED["strengths"]


@pytest.mark.parametrize("case", list(CASES))
def test_a_hand_edited_file_is_one_line_naming_file_and_key(case, package):
    text, named = CASES[case]
    package.write_text(text)
    with pytest.raises(ValueError) as caught:
        matched.matched_fit()
    message = str(caught.value)
    assert "\n" not in message and str(package) in message and named in message, message
    assert "Traceback" not in message and "JSON compliant" not in message


@pytest.mark.parametrize("case", ["fit entry of the wrong type", "strength Infinity", "the file a list"])
def test_corrupt_refuses_it_before_making_anything(case, package, tmp_path, one_line_error):
    package.write_text(CASES[case][0])
    out = tmp_path / "set"
    assert main(["corrupt", "--dataset", "digits", "--params", "digits-matched", "--out", str(out),
                 "--corruptions", "contrast", "--limit", "4"]) == 2
    line = one_line_error()
    assert "digits_matched.json" in line and CASES[case][1].split(" is ")[0] in line
    assert not out.exists()


def test_reproduce_refuses_it_before_claiming_the_folder(package, tmp_path, one_line_error):
    package.write_text(CASES["residual missing"][0])
    out = tmp_path / "job"
    assert main(["reproduce", "--plan", "laptop", "--out", str(out)]) == 2
    assert "digits_matched.json" in one_line_error()
    assert not out.exists()


BAD = st.one_of(st.sampled_from([0, -1.5, math.inf, -math.inf, math.nan, None, True, "1", [1.0], {}]),
                st.floats(max_value=0.0, allow_nan=False))


@given(name=st.sampled_from(CORRUPTIONS), value=BAD)
def test_any_bad_strength_is_refused_naming_it(name, value):
    record = json.loads(json.dumps(COMMITTED))
    record["strengths"][name] = value
    record["fit"][name]["strength"] = value
    with pytest.raises(ValueError, match=rf"strengths\.{name} must be a finite positive number"):
        check_fit_record(record, "the file")
