"""Every number transcribed in figures/paper_values.json against the paper's LaTeX source.

The check is independent of figures/transcribe.py: for each transcribed row it finds the row of
the LaTeX table by its name, pulls every number out of the remaining cells with one regular
expression, and requires the same sequence; and it counts the table's data rows so no row is
left out.  Skipped when the paper source is not available.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VALUES = json.loads((ROOT / "figures" / "paper_values.json").read_text())
CANDIDATES = [os.environ.get("NOISYMIX_PAPER_TEX", ""), "/work/shared/paper/noisymix.tex",
              str(ROOT.parent / "shared" / "paper" / "noisymix.tex")]
TEX_PATH = next((Path(p) for p in CANDIDATES if p and Path(p).is_file()), None)
pytestmark = pytest.mark.skipif(TEX_PATH is None, reason="paper source not available")


def _flatten(cell):
    if cell is None:
        return []
    if isinstance(cell, dict):
        order = ("mean", "min", "max") if "mean" in cell else ("value", "paren")
        return [cell[k] for k in order]
    if isinstance(cell, list):
        return list(cell)
    return [cell]


def _table_lines(tex: str, label: str) -> list[str]:
    body = tex[tex.index(f"\\label{{{label}}}"):]
    body = body[body.index("\\begin{tabular}"):body.index("\\end{tabular}")]
    return [" ".join(chunk.split()) for chunk in body.split("\\\\") if "&" in chunk]


def _numbers(text: str) -> list[float]:
    text = re.sub(r"\\cite\{[^}]*\}|\\rotatebox\[[^]]*\]\{\d+\}", "", text)
    return [float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)]


@pytest.mark.parametrize("label", sorted(k for k in VALUES if k.startswith("tab:")))
def test_every_transcribed_number_matches_the_latex(label):
    tex = TEX_PATH.read_text()
    lines = _table_lines(tex, label)
    # header rows: an empty first cell, column names with arrows, rotated or multi-column titles
    data_lines = [ln for ln in lines
                  if ln.split("&")[0].split("\\toprule")[-1].strip() not in ("", "Source Model")
                  and not re.search(r"uparrow|downarrow|multicolumn|rotatebox", ln)]
    rows = VALUES[label]["rows"]
    assert len(rows) == len(data_lines), (label, len(rows), len(data_lines))
    for (name, cells), line in zip(rows, data_lines, strict=True):
        cells_text = line.split("&")
        if label == "tab:ablation":
            marks = "".join(f if "cmark" in c else "-" for c, f in zip(cells_text[:4], "AFNJ", strict=True))
            assert marks == name
            rest = "&".join(cells_text[4:])
        else:
            first = re.sub(r"\\[a-z]+\{|\}", "", cells_text[0]).lower()
            assert name.split()[0].strip("*").lower() in first, (name, line)
            rest = "&".join(cells_text[1:])
        expected = _numbers(rest)
        got = [v for c in cells for v in _flatten(c)]
        assert got == expected, (label, name, got, expected)


def test_toy_accuracies_and_spot_values_read_by_hand():
    toy = dict((n, v[0]) for n, v in VALUES["fig:toy_example"]["rows"])
    assert toy == {"Baseline": 86.8, "Noise injection": 86.8, "Manifold Mixup": 87.4, "NFM": 87.6,
                   "Manifold Mixup + JSD": 88.0, "NoisyMix": 88.8}
    imagenet = dict(VALUES["tab:results_imagenet"]["rows"])
    assert imagenet["NoisyMix (ours)"] == [77.6, {"value": 52.3, "paren": 52.4}, 45.7, {"value": 28.5, "paren": 29.7}]
    ablation = dict(VALUES["tab:ablation"]["rows"])
    assert ablation["AFNJ"] == [81.3, 71.9, 24.4] and ablation["----"] == [79.0, 47.4, None]
