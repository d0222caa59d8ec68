"""Transcribe every table of the paper's LaTeX source into ``figures/paper_values.json``.

Run once (``python -m figures.transcribe PAPER.tex``) when the paper changes; the committed JSON
is what ``noisymix figures`` reads, and tests/figures re-reads the LaTeX to check every number.
Keys: table label -> {"columns": [...], "rows": [[row name, [cell, ...]], ...]} (rows in the paper's
order); a cell is a number,
``{"mean", "min", "max"}`` for "a (b / c)", ``{"value", "paren"}`` for "a (b)", a list for
"a / b / c", or ``null`` for "-".  Ablation rows are keyed by their switches, e.g. "A-NJ".
The toy accuracies of fig:toy_example (in its sub-captions) are added as a pseudo-table.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from noisymix_infra.io import write_json

_NUMBER = r"-?\d+(?:\.\d+)?"


def _strip(text: str) -> str:
    text = re.sub(r"~?\\cite\{[^}]*\}", "", text)
    text = re.sub(r"\\(?:textbf|textit|emph|mathbf)\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\\(?:textbf|textit|emph|mathbf)\{([^{}]*)\}", r"\1", text)
    text = text.replace("\\uparrow", "↑").replace("\\downarrow", "↓").replace("\\%", "%")
    text = text.replace("$^*$", "*").replace("{", "").replace("}", "").replace("$", "")
    return " ".join(text.split())


def parse_cell(cell: str) -> Any:
    c = _strip(cell)
    if c in ("-", "--", ""):
        return None
    m = re.fullmatch(rf"({_NUMBER}) \(({_NUMBER}) / ({_NUMBER})\)", c)
    if m:
        return {"mean": float(m[1]), "min": float(m[2]), "max": float(m[3])}
    m = re.fullmatch(rf"({_NUMBER}) ?\(({_NUMBER})\)", c)
    if m:
        return {"value": float(m[1]), "paren": float(m[2])}
    m = re.fullmatch(rf"\+?({_NUMBER})", c)
    if m:
        return float(m[1])
    parts = [p.strip() for p in c.split("/")]
    if len(parts) > 1 and all(re.fullmatch(_NUMBER, p) for p in parts):
        return [float(p) for p in parts]
    raise ValueError(f"cannot parse cell {cell!r}")


def _tabular(tex: str, label: str) -> str:
    start = tex.index(f"\\label{{{label}}}")
    begin = tex.index("\\begin{tabular}", start)
    end = tex.index("\\end{tabular}", begin)
    body = tex[begin:end]
    return body[body.index("}", body.index("{tabular}") + 9) + 1:]


def _rows(body: str) -> list[list[str]]:
    rows = []
    for raw in body.split("\\\\"):
        lines = [ln for ln in raw.splitlines() if not ln.strip().startswith("%")]
        text = " ".join(lines)
        text = re.sub(r"\\(toprule|midrule|bottomrule|hline)", "", text).strip()
        if text:
            rows.append([c.strip() for c in text.split("&")])
    return rows


def table(tex: str, label: str) -> dict:
    rows, header, data = _rows(_tabular(tex, label)), [], []
    skip = 4 if label == "tab:ablation" else 1  # leading cells that name the row
    for cells in rows:
        if label == "tab:ablation":
            if "rotatebox" in cells[0]:
                header = [_strip(re.sub(r"\\rotatebox\[[^]]*\]\{\d+\}", "", c)) for c in cells]
                continue
            key = "".join(f if "cmark" in c else "-" for c, f in zip(cells[:4], "AFNJ", strict=True))
            data.append([key, [parse_cell(c) for c in cells[4:]]])
            continue
        try:
            values = [parse_cell(c) for c in cells[1:] if c.strip()]
        except ValueError:
            if data:
                raise
            values = []
        if not values or (all(v is None for v in values) and not data):
            header = [_strip(c) for c in cells]  # the last header row names the columns
            continue
        data.append([_strip(cells[0]), values])
    return {"columns": [h for h in header[skip:] if h] if label != "tab:ablation" else header[4:],
            "rows": data}


def toy_accuracies(tex: str) -> dict:
    start = tex.index("\\label{fig:toy_data}")
    end = tex.index("\\label{fig:toy_example}")
    found = re.findall(r"\}\{(.*?) \(([\d.]+) ?\\%\)\.\}", tex[start:end])
    return {"columns": ["test accuracy (%)"], "rows": [[_strip(n), [float(a)]] for n, a in found]}


def transcribe(tex_path: str | Path) -> dict:
    tex = Path(tex_path).read_text()
    labels = re.findall(r"\\label\{(tab:[^}]*)\}", tex)
    out = {label: table(tex, label) for label in labels}
    out["fig:toy_example"] = toy_accuracies(tex)
    return out


if __name__ == "__main__":
    write_json(Path(__file__).with_name("paper_values.json"), transcribe(sys.argv[1]))
