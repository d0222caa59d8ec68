"""Issue 60, causes 1, 3 and 6: the writers of the README's blocks and docs/ guard themselves, whoever calls
them; a summary read back carries everything its verdicts used; a report's files are written all or none."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from noisymix_app.reproduce.plans import PLANS
from noisymix_app.reproduce.readme import BEGIN, END, publishable, update_readme
from noisymix_app.reproduce.summary import rederive, rerender
from noisymix_infra.io import write_files
from noisymix_infra.stats import Seeds


def _plan(name: str = "laptop", **changes) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(dataclasses.replace(PLANS[name], **changes))))


def _repo(tmp_path):
    """A README with the main block and its figure, and docs/ holding the committed summary's files."""
    root = tmp_path / "repo"
    (root / "docs" / "figures").mkdir(parents=True)
    readme = f"intro\n{BEGIN}\nthe committed block\n{END}\n![a](docs/figures/robust_c.png)\n"
    (root / "README.md").write_text(readme)
    (root / "docs" / "figures" / "robust_c.png").write_bytes(b"the committed figure")
    (root / "docs" / "reproduce-summary.md").write_text("the committed summary\n")
    return root, readme


def _quick_folder(tmp_path) -> tuple:
    out = tmp_path / "quick"
    (out / "figures").mkdir(parents=True)
    (out / "SUMMARY.md").write_text("a quick run's numbers\n")
    (out / "README-BLOCK.md").write_text("a quick run's block\n")
    (out / "figures" / "robust_c.png").write_bytes(b"a quick run's figure")
    record = {"plan": _plan("quick"), "plan_name": "quick", "complete": True, "theory": {"n": 1}, "toy": {"n": 1},
              "table": {}}
    (out / "summary.json").write_text(json.dumps(record))
    return out, record


def _unchanged(root, readme) -> None:
    assert (root / "README.md").read_text() == readme
    assert (root / "docs" / "figures" / "robust_c.png").read_bytes() == b"the committed figure"
    assert (root / "docs" / "reproduce-summary.md").read_text() == "the committed summary\n"
    assert not (root / "docs" / "reproduce-summary.json").exists()


def test_update_readme_refuses_a_quick_run_whoever_calls_it(tmp_path):
    """`python -m noisymix_app.reproduce.summary --out QUICK --update-readme` replaced the README's block, docs/
    and the figure with a 1-epoch run's: the writer itself refuses it."""
    root, readme = _repo(tmp_path)
    out, _ = _quick_folder(tmp_path)
    with pytest.raises(ValueError, match="not the main job's output"):
        update_readme(out, root)
    _unchanged(root, readme)


@pytest.mark.parametrize("change", [{"seeds": (0, 1)}, {"epochs": 1}, {"methods": ("baseline", "noisymix")}])
def test_a_laptop_plan_with_other_numbers_is_not_the_main_job(change):
    record = {"plan": _plan(**change), "plan_name": "laptop --set ...", "complete": True, "theory": 1, "toy": 1}
    with pytest.raises(ValueError, match="differs from the laptop plan in"):
        publishable(record)
    # the count of runs side by side changes no number (issue 40): still the main job's
    publishable({**record, "plan": _plan(workers=2)})


def test_an_unfinished_main_job_is_refused():
    with pytest.raises(ValueError, match="not finished"):
        publishable({"plan": _plan(), "plan_name": "laptop", "complete": False, "theory": 1, "toy": 1})
    with pytest.raises(ValueError, match="not finished"):
        publishable({"plan": _plan(), "plan_name": "laptop", "complete": True, "theory": None, "toy": 1})


def test_rerender_refuses_a_quick_summary_and_one_whose_figures_are_not_docs(tmp_path):
    """`--rerender QUICK/summary.json` replaced the README's block; a rerender of a summary whose figures are
    not the ones in docs/figures left the README's figure from another run."""
    root, readme = _repo(tmp_path)
    out, _ = _quick_folder(tmp_path)
    with pytest.raises(ValueError, match="not the main job's output"):
        rerender(str(out / "summary.json"), root=root)
    _unchanged(root, readme)
    finished = {"plan": _plan(), "plan_name": "laptop", "complete": True, "theory": {"n": 1}, "toy": {"n": 1},
                "table": {}, "figures": {"docs/figures/robust_c.png": "0" * 64}}
    path = tmp_path / "finished.json"
    path.write_text(json.dumps(finished))
    with pytest.raises(ValueError, match="is not the one this summary's run drew"):
        rerender(str(path), root=root)
    _unchanged(root, readme)


def test_a_summary_read_back_keeps_the_resolution_its_verdict_used():
    """`--rerender` read the kept values without each metric's step: a run that said one image won on every seed
    was within noise re-rendered as "holds", p 6e-15 (float rounding beat the old zero-spread check)."""
    step = 100 / 300
    seeds = list(range(9))
    base = [80.0 + s for s in seeds]
    nm = [b + step for b in base]  # one image more on every seed: a spread of float rounding
    record = {"plan": _plan(), "plan_name": "laptop", "claims": [], "table": {
        "baseline": {"corrupted": {"mean": 0, "half_width": 0, "values": base, "seeds": seeds, "step": step}},
        "noisymix": {"corrupted": {"mean": 0, "half_width": 0, "values": nm, "seeds": seeds, "step": step}}}}
    claim = next(c for c in rederive(record, margins={})["claims"] if c["id"] == "robust_noisymix_vs_baseline")
    assert claim["difference"]["spread"] == pytest.approx(step)
    assert claim["verdict"] == "holds" and claim["p"] > 1e-10  # t = 3: holds, but no certainty from rounding
    # without the step (a summary older than it) the same values have no spread to judge by: no verdict at all
    for cell in (record["table"]["baseline"]["corrupted"], record["table"]["noisymix"]["corrupted"]):
        del cell["step"]
    claim = next(c for c in rederive(record, margins={})["claims"] if c["id"] == "robust_noisymix_vs_baseline")
    assert claim["p"] is None and claim["verdict"] != "holds"
    assert Seeds({0: 1.0}, step=step).step == step


def test_a_reports_files_are_written_all_or_none(tmp_path):
    """`analogue` rewrote the PNG and the Markdown, then failed on NaN writing the JSON, leaving two reports
    mixed: every content is rendered before the first file is replaced."""
    (tmp_path / "a.md").write_text("old report\n")
    (tmp_path / "a.png").write_bytes(b"old figure")
    with pytest.raises(ValueError):
        write_files({tmp_path / "a.md": "new report\n", tmp_path / "a.png": b"new figure",
                     tmp_path / "a.json": {"value": math.nan}})
    assert (tmp_path / "a.md").read_text() == "old report\n" and (tmp_path / "a.png").read_bytes() == b"old figure"
    assert not (tmp_path / "a.json").exists()
    write_files({tmp_path / "a.md": "new report\n", tmp_path / "a.json": {"value": 1.0}})
    assert (tmp_path / "a.md").read_text() == "new report\n" and json.loads((tmp_path / "a.json").read_text())
