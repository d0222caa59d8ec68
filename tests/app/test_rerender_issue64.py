"""Issue 64, goal 1: a re-render writes only numbers it can tie to what was written (``summary.rerender``).

The cases of the hostile campaign: a committed summary with one value dropped from one cell re-rendered as "No
answer"; every NoisyMix value +5 re-rendered as +19.1 beside a figure of +14.1; ``--kept ablation`` took a quick
run's summary.  Each is now one line and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from noisymix_app.reproduce.summary import check_whole, main, rerender, values_digest

ROOT = Path(__file__).resolve().parents[2]


def _committed() -> dict:
    return json.loads((ROOT / "docs" / "reproduce-summary.json").read_text())


def _write(tmp_path: Path, record: dict, name: str = "summary.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(record))
    return path


def _untouched(root: Path) -> bool:
    return not (root / "docs").exists()


def test_a_cell_whose_values_and_seeds_differ_in_length_is_refused_before_anything(tmp_path):
    record = _committed()
    record["table"]["noisymix"]["corrupted"]["values"].pop()
    path = _write(tmp_path, record)
    with pytest.raises(ValueError, match=r"table\.noisymix\.corrupted is not whole"):
        rerender(str(path), root=tmp_path)
    assert _untouched(tmp_path)
    record = _committed()
    record["table"]["baseline"]["clean"]["values"][0] = "97"  # a value of another kind
    with pytest.raises(ValueError, match=r"table\.baseline\.clean is not whole"):
        check_whole(record, "x")


def test_numbers_edited_after_they_were_written_are_refused(tmp_path):
    record = _committed()
    record["digest"] = values_digest(record)  # what the first render records
    check_whole(record, "x")  # as written: whole
    cell = record["table"]["noisymix"]["corrupted"]
    cell["values"] = [v + 5 for v in cell["values"]]
    path = _write(tmp_path, record)
    with pytest.raises(ValueError, match="not those it was written with"):
        rerender(str(path), root=tmp_path)
    assert _untouched(tmp_path)
    # the command says it in one line, status 2
    from noisymix_app.cli import main_in_one_line

    assert main_in_one_line("python -m noisymix_app.reproduce.summary", lambda: main(["--rerender", str(path)])) == 2


def test_kept_ablation_takes_only_the_ablation_plans_summary(tmp_path):
    record = _committed()  # the main job's summary is no ablation
    path = _write(tmp_path, record)
    with pytest.raises(ValueError, match="not the ablation plan's complete output"):
        rerender(str(path), root=tmp_path, kept="ablation")
    assert _untouched(tmp_path)


def test_a_summary_that_no_longer_decides_a_claim_is_refused(tmp_path, monkeypatch):
    """The values of a claim's method gone (a whole method dropped, lengths consistent): the primary claim would
    vanish from the README; refused instead (nothing pooled here, so the method's seeds are gone altogether)."""
    import noisymix_app.reproduce.pool as pool_module

    monkeypatch.setattr(pool_module, "POOLED", tmp_path / "nothing-pooled")
    record = _committed()
    del record["table"]["baseline"]
    record["digest"] = values_digest(record)  # as if written so: the digest alone would not catch it
    path = _write(tmp_path, record)
    with pytest.raises(ValueError, match="no longer decides"):
        rerender(str(path), root=tmp_path)
    assert _untouched(tmp_path)


def test_a_rerendered_summary_rerenders_again(tmp_path):
    """The digest is of the values as read back: the record a re-render writes passes its own check."""
    from noisymix_app.reproduce.summary import rederive

    record = {**rederive(_committed()), "digest": values_digest(_committed())}
    check_whole(json.loads(json.dumps(record)), "x")


def _results(tmp_path: Path) -> Path:
    """A main-job folder the README's writer takes: its summary records its runs' hashes and its values' digest."""
    import dataclasses

    from noisymix_app.reproduce.plans import PLANS
    from noisymix_app.reproduce.summary import run_hashes

    out = tmp_path / "results"
    plan = json.loads(json.dumps(dataclasses.asdict(PLANS["laptop"])))
    for m in plan["methods"]:
        for s in plan["seeds"]:
            (out / "runs" / f"{m}-seed{s}" / "eval").mkdir(parents=True)
            (out / "runs" / f"{m}-seed{s}" / "final.pt").write_bytes(f"{m}{s}".encode())
            (out / "runs" / f"{m}-seed{s}" / "eval" / "clean.json").write_text('{"summary": {"accuracy": 0.9}}')
    record = {"plan": plan, "plan_name": "laptop", "complete": True, "theory": {"n": 1}, "toy": {"n": 1},
              "table": {"noisymix": {"clean": {"seeds": [0, 1], "values": [90.0, 91.0]}}},
              "runs": run_hashes(out, plan)}
    record["digest"] = values_digest(record)
    (out / "summary.json").write_text(json.dumps(record))
    (out / "SUMMARY.md").write_text("numbers\n")
    return out


def test_the_readme_writer_takes_only_the_runs_and_numbers_the_summary_was_made_from(tmp_path):
    from noisymix_app.reproduce.readme import BEGIN, END, update_readme

    readme = f"intro\n{BEGIN}\nold\n{END}\n"
    (tmp_path / "README.md").write_text(readme)
    out = _results(tmp_path)
    update_readme(out, root=tmp_path)  # as made: taken
    assert "numbers" in (tmp_path / "README.md").read_text()
    (tmp_path / "README.md").write_text(readme)
    (out / "runs" / "nfm-seed3" / "eval" / "clean.json").write_text('{"summary": {"accuracy": 0.1}}')
    with pytest.raises(ValueError, match="run nfm-seed3 is not the one the summary was made from"):
        update_readme(out, root=tmp_path)
    out = _results(tmp_path / "again")
    record = json.loads((out / "summary.json").read_text())
    record["table"]["noisymix"]["clean"]["values"] = [95.0, 96.0]  # the numbers edited after they were written
    (out / "summary.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="not those it was written with"):
        update_readme(out, root=tmp_path)
    assert (tmp_path / "README.md").read_text() == readme  # refused: nothing written


@pytest.mark.parametrize("cell", [[1, 2], "97.0", None, 5])
def test_a_cell_of_another_kind_is_one_line_not_a_traceback(tmp_path, cell):
    record = _committed()
    record["table"]["noisymix"]["corrupted"] = cell
    with pytest.raises(ValueError, match="its table is not an object of methods"):
        rerender(str(_write(tmp_path, record)), root=tmp_path)
    assert _untouched(tmp_path)
