"""Every `tab:` and `fig:` label of the paper's LaTeX source is accounted for: `noisymix figures`
writes something for it, and REPORT.md says, label by label, that our numbers fill it or what
filling it takes (data or hardware).  Skipped when the paper source is not available."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from noisymix_app.cli import main
from noisymix_figures.coverage import LABELS

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = [os.environ.get("NOISYMIX_PAPER_TEX", ""), "/work/shared/paper/noisymix.tex",
              str(ROOT.parent / "shared" / "paper" / "noisymix.tex")]
TEX_PATH = next((Path(p) for p in CANDIDATES if p and Path(p).is_file()), None)
TOY = Path(__file__).parent / "toy_fixture.json"


#: labels of the paper with no generator, each with the reason (none: every label is registered,
#: ``noisymix_figures.registry``; tests/figures/test_registry.py runs each generator)
UNREGISTERED: dict[str, str] = {}


def _paper_labels() -> list[str]:
    return re.findall(r"\\label\{((?:tab|fig):[^}]*)\}", TEX_PATH.read_text())


@pytest.mark.skipif(TEX_PATH is None, reason="paper source not available")
def test_every_label_of_the_paper_has_an_entry():
    labels = _paper_labels()
    assert len(labels) == len(set(labels)) == 22
    assert set(LABELS) | set(UNREGISTERED) == set(labels), (set(labels) - set(LABELS), set(LABELS) - set(labels))
    assert not set(LABELS) & set(UNREGISTERED) and all(UNREGISTERED.values())


def _results(root: Path) -> Path:
    """CIFAR-10 PreActResNet-18 runs of two methods and a toy result: some labels filled, the others not."""
    from PIL import Image

    from fullscale.vocabulary import CATEGORIES, CORRUPTIONS
    from noisymix_infra.io import write_json

    for name, method, seed, clean, c in (("b0", "baseline", 0, 0.95, 0.7), ("n0", "noisymix", 0, 0.95, 0.9)):
        run = root / name
        write_json(run / "config.json", {"method": method, "preset": method, "model": "preactresnet18",
                                         "dataset": "cifar10", "seed": seed, "epochs": 200, "model_kwargs": {}})
        (run / "final.pt").write_bytes(f"weights of {name}".encode())  # distinct: seeds are counted by weights
        write_json(run / "eval" / "clean.json", {"suite": "clean", "complete": True, "summary": {"accuracy": clean},
                                                 "results": {"clean": {"accuracy": clean, "n": 10}}})
        per = dict.fromkeys(CORRUPTIONS, c)
        write_json(run / "eval" / "cifar10-c.json", {
            "suite": "cifar10-c", "complete": True, "results": {},
            "summary": {"mean_accuracy": c, "per_corruption": per, "per_category": dict.fromkeys(CATEGORIES, c)}})
    toy = root / "toy"
    toy.mkdir()
    shutil.copyfile(TOY, toy / "toy.json")
    for png in ("toy_data.png", "decision_boundaries.png"):  # written by `noisymix toy` beside toy.json
        Image.new("RGB", (8, 8)).save(toy / png)
    return root


@pytest.mark.skipif(TEX_PATH is None, reason="paper source not available")
def test_the_report_accounts_for_every_label(tmp_path):
    out = tmp_path / "out"
    assert main(["figures", "--results", str(_results(tmp_path / "results")), "--out", str(out)]) == 0
    text = (out / "REPORT.md").read_text()
    section = text[text.index("## The paper, label by label"):]
    filled = set()
    for label in _paper_labels():
        line = next((ln for ln in section.splitlines() if ln.startswith(f"| `{label}` |")), None)
        assert line is not None, f"{label} is not in the report's coverage section"
        cells = [c.strip() for c in line.strip("|").split("|")]
        written = re.findall(r"`([^`]+)`", cells[1])
        assert written and all((out / f).is_file() for f in written), (label, cells[1])
        if "**filled**" in cells[3]:
            filled.add(label)
        else:  # what it takes, in data or hardware
            assert "needs" in cells[3] and ("(data" in cells[3] or "(hardware" in cells[3]), line
    # what these results hold is filled: the CIFAR-10 PreActResNet-18 tables and figure, the toy, the examples
    assert filled == {"tab:results_cifar10", "tab:results_cifar10_c", "fig:robust10vs100", "fig:toy_data",
                      "fig:toy_example", "fig:cimages"}, filled
    assert "fig:cifar100_wrs_type" in section and (out / "cifar100_wrs_type.png").is_file()
