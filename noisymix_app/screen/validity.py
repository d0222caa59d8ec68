"""The screen's validity beyond the eight (issue 65, goal 5): methods the NoisyMix paper does not compare,
screened on the proxy, their predictions held against published CIFAR-10-C numbers.

    python -m noisymix_app.screen.validity --screen Cutout=DIR --screen AutoAugment=DIR \\
        --screen "Adversarial Training=DIR" --out docs/screen-validity.json [--update-readme]

**The published numbers** are one table of another paper (``figures/augmix_table1.json``: the AugMix paper's
Table 1, CIFAR-10-C error of Standard training, Cutout, Mixup, CutMix, AutoAugment, adversarial training and
AugMix, four architectures, one recipe each).  Its recipes are not the NoisyMix paper's, so its numbers are
**rescaled** to the NoisyMix table (tab:results_cifar10, ResNet-18): each method's share of its own table's
Baseline-to-AugMix gap, ``share = (E_standard - E_method) / (E_standard - E_augmix)`` on the Mean row, placed on
the NoisyMix table's gap, ``published = A_baseline + share (A_augmix - A_baseline)`` (accuracy, %).  The same
share on each architecture alone gives the range the rescaled value moves over (``range``).  The rescaling's own
error is measured where it can be: Mixup and CutMix are in both tables, so their rescaled AugMix-table value is
held against the NoisyMix table's own (``rescale_check``).

**Each screen** is a finished ``noisymix screen`` folder of the committed eight-method summary (its
``screen.json``: refused in one line if it was screened against another summary, or is not a screen's page).
Its row: the prediction and its 95 % interval from the page, the rescaled published value and its error
(prediction minus published), whether the interval holds it, and the error of the null prediction "no change
from the Baseline" (the NoisyMix table's Baseline): a proxy that misses by more than that has told the reader
nothing a guess of no effect would not.

**The words** (``finding``) are made from those numbers alone: which methods the proxy placed (the interval
holds the published value and the proxy beat the null prediction), which it did not, and of which kind each is
(``KINDS``, the one input the numbers cannot give).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import noisymix_figures
from noisymix_infra.io import printable, read_json

__all__ = ["KINDS", "TABLE", "build", "finding", "published_table", "rescale_check", "rescaled"]

#: the checkout (a committed page's path is written relative to it; the README it writes the block of)
ROOT = Path(__file__).resolve().parents[2]
#: the published table (package data of noisymix_figures, beside the NoisyMix paper's values)
TABLE = Path(noisymix_figures.__file__).resolve().parent / "augmix_table1.json"
#: what kind of method each screened column is: the one input of the words the numbers cannot give
KINDS = {"Cutout": "occlusion: a square of each image erased, labels kept",
         "AutoAugment": "a learned policy of photometric and geometric operations, unmixed",
         "Adversarial Training": "worst-case noise: L-infinity PGD at 8/255"}
#: the README's block this command writes
README_BEGIN, README_END = "<!-- screen-validity:begin -->", "<!-- screen-validity:end -->"
COMMAND = ("python -m noisymix_app.screen.validity --screen Cutout=DIR --screen AutoAugment=DIR "
           "--screen \"Adversarial Training=DIR\" --out docs/screen-validity.json --update-readme")


def published_table(path: Path = TABLE) -> dict:
    """The published table, as the file has it."""
    return json.loads(Path(path).read_text())


def _noisymix_gap() -> tuple[float, float]:
    """The NoisyMix table's Baseline and AugMix CIFAR-10-C accuracy (tab:results_cifar10), %."""
    from noisymix_figures.paper import method_columns

    cols = method_columns(["baseline", "augmix_jsd"])
    return cols["baseline"]["corrupted"], cols["augmix_jsd"]["corrupted"]


def rescaled(column: str, table: dict | None = None) -> dict:
    """``column``'s published CIFAR-10-C number placed on the NoisyMix table (module docstring): its share of
    its table's Baseline-to-AugMix gap (Mean row), the accuracy that share gives on the NoisyMix table, and the
    range the per-architecture shares give."""
    table = table or published_table()
    cols = table["columns"]
    if column not in cols:
        raise ValueError(f"{printable(column)} is not a column of {table['source'].split(',')[0]}'s table: "
                         f"{', '.join(c for c in cols if c not in (table['baseline'], table['augmix']))}")
    base_a, augmix_a = _noisymix_gap()
    sign = -1.0 if table["metric"] == "error" else 1.0

    def share(i: int | None) -> float:
        pick = (lambda c: cols[c]["mean"]) if i is None else (lambda c: cols[c]["per_architecture"][i])
        return sign * (pick(column) - pick(table["baseline"])) / (sign * (pick(table["augmix"]) -
                                                                          pick(table["baseline"])))

    mean_share = share(None)
    shares = [share(i) for i in range(len(table["architectures"]))]
    place = [base_a + s * (augmix_a - base_a) for s in shares]
    return {"column": column, "published_mean": cols[column]["mean"], "share": mean_share,
            "value": base_a + mean_share * (augmix_a - base_a), "range": [min(place), max(place)],
            "noisymix_baseline": base_a, "noisymix_augmix": augmix_a}


def rescale_check(table: dict | None = None) -> list[dict]:
    """The rescaling's own error, where a method is in both tables: its rescaled value minus the NoisyMix
    table's own number."""
    from noisymix_figures.paper import method_columns

    table = table or published_table()
    rows = []
    for column, method in table.get("in_noisymix_table", {}).items():
        found = rescaled(column, table)
        own = method_columns([method])[method]["corrupted"]
        rows.append({"column": column, "method": method, "rescaled": found["value"], "noisymix_table": own,
                     "error": found["value"] - own})
    return rows


def _shown(path: Path) -> str:
    """``path`` relative to the checkout where it lies inside it (a committed page), else as given."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _read_screen(path: Path, reference) -> dict:
    """What a row reads of a finished screen's page (``screen.json``), of the committed summary: one line for a
    page that is no screen's, lacks a field a row reads, or was screened against another summary."""
    page = Path(path) / "screen.json" if Path(path).is_dir() else Path(path)
    if not page.is_file():
        raise ValueError(f"{printable(str(path))}: no screen.json (a finished `noisymix screen` folder)")
    record = read_json(page)
    try:
        sha = record["reference"]["sha256"]
        p = record["maps"]["corrupted"]["prediction"]
        found = {"prediction": {k: float(p[k]) for k in ("value", "low", "high", "half_width")}
                 | {"extrapolated": bool(p["extrapolated"])},
                 "spec": str(record["spec"]["given"]), "source_sha256": record["spec"].get("source_sha256"),
                 "seeds": [int(x) for x in record["seeds"]],
                 "proxy_corrupted": float(record["ours"]["corrupted"]["mean"]),
                 "gain": next(({"mean": e["difference"]["mean"], "half_width": e["difference"]["half_width"]}
                               for e in record.get("paired", ())
                               if e["against"] == "baseline" and e["measure"] == "corrupted"), None),
                 "scale_warning": bool(((record.get("by_family") or {}).get("finding") or {}).get("words")),
                 "second_view": _second_view(record)}
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ValueError(f"{printable(str(page))} is not a screen's page (a field a row reads is missing or of "
                         "another kind)") from None
    if sha != reference.sha256:
        raise ValueError(f"{printable(str(page))} was screened against another eight-method summary (sha256 "
                         f"{printable(str(sha))[:12]}..., the committed one {reference.sha256[:12]}...): screen it "
                         "again")
    return {**found, "page": page}


def build(screens: list[tuple[str, Path]], *, summary: Path | None = None, table: dict | None = None) -> dict:
    """The validity record (module docstring) of ``screens``: (published column, screen folder) pairs."""
    from noisymix_app.screen.reference import read_reference
    from noisymix_infra.io import sha256_file
    from noisymix_infra.provenance import provenance

    table = table or published_table()
    reference = read_reference(summary)
    if not screens:
        raise ValueError("no --screen COLUMN=DIR given")
    names = [c for c, _ in screens]
    if len(set(names)) != len(names):
        raise ValueError(f"--screen {printable(next(c for c in names if names.count(c) > 1))} given twice")
    for column, _ in screens:
        if column in (table["baseline"], table["augmix"]) or column in table.get("in_noisymix_table", {}):
            raise ValueError(f"--screen {printable(column)}: one of the NoisyMix paper's eight or the table's "
                             "anchors; the check is of methods outside the eight")
    base_a, _ = _noisymix_gap()
    rows = []
    for column, folder in screens:
        published = rescaled(column, table)
        found = _read_screen(folder, reference)
        p = found["prediction"]
        rows.append({
            "column": column, "kind": KINDS.get(column), "spec": found["spec"],
            "source_sha256": found["source_sha256"], "seeds": found["seeds"],
            "page": {"path": _shown(found["page"]), "sha256": sha256_file(found["page"])},
            "proxy_corrupted": found["proxy_corrupted"], "proxy_gain": found["gain"],
            "prediction": p, "published": published,
            "error": p["value"] - published["value"],
            "inside": p["low"] <= published["value"] <= p["high"],
            "null_error": base_a - published["value"],
            "scale_warning": found["scale_warning"], "second_view": found["second_view"]})
    checks = rescale_check(table)
    out = {"what": "the screen's predictions of methods outside the NoisyMix paper's eight against published "
                   "CIFAR-10-C numbers rescaled to the NoisyMix table (issue 65, goal 5)",
           "source": table["source"], "transcribed": table.get("transcribed"),
           "summary": {"path": str(reference.path), "sha256": reference.sha256},
           "rows": rows, "rescale_check": checks, "command": COMMAND, "provenance": provenance()}
    out["finding"] = finding(out)
    return out


def _second_view(record: dict) -> dict | None:
    """The page's second view (``--also-published``) in brief: per family, the gain over the Baseline in each
    view (means, points) and whether the views disagree; None for a page without one, or without its
    reference at the published rows."""
    view = record.get("published")
    if not view or not view.get("reference"):
        return None
    families = [{"name": e["name"], "matched_gain": e["comparison"]["matched_gain"]["mean"],
                 "published_gain": e["comparison"]["published_gain"]["mean"], "disagree": e["comparison"]["disagree"],
                 "why": e["comparison"]["why"]}
                for e in view["families"] if e.get("comparison") is not None]
    return {"corrupted": view["ours"]["corrupted"]["mean"], "families": families, "disagree": list(view["disagree"])}


def _placed(row: dict) -> bool:
    return row["inside"] and abs(row["error"]) < abs(row["null_error"])


def finding(record: dict) -> str:
    """The words (module docstring), every number the record's."""
    rows = record["rows"]
    placed = [r for r in rows if _placed(r)]
    missed = [r for r in rows if not _placed(r)]
    worst_rescale = max((abs(c["error"]) for c in record["rescale_check"]), default=None)

    def one(r: dict) -> str:
        why = []
        if not r["inside"]:
            why.append("outside its interval")
        if abs(r["error"]) >= abs(r["null_error"]):
            why.append(f"no closer than predicting no change ({r['null_error']:+.1f})")
        p = r["prediction"]
        return (f"{r['column']} ({r['kind'] or 'kind not given'}): predicted {p['value']:.1f} [{p['low']:.1f}, "
                f"{p['high']:.1f}], published {r['published']['value']:.1f} (error {r['error']:+.1f}"
                + (f"; {', '.join(why)}" if why else "") + ")")

    head = f"Of {len(rows)} methods outside the eight, the proxy placed"
    if not placed:
        text = f"{head} none: " + "; ".join(one(r) for r in missed) + "."
    elif not missed:
        text = f"{head} all {len(rows)}: " + "; ".join(one(r) for r in placed) + "."
    else:
        text = (f"{head} {len(placed)}: " + "; ".join(one(r) for r in placed) + f"; it did not place {len(missed)}: "
                + "; ".join(one(r) for r in missed) + ".")
    widths = [r["prediction"]["half_width"] for r in rows]
    spread = [r["published"]["value"] for r in rows]
    wide = f"±{min(widths):.1f}" if f"{min(widths):.1f}" == f"{max(widths):.1f}" else \
        f"±{min(widths):.1f} to ±{max(widths):.1f}"
    text += (f"  Its intervals are {wide} points wide, while the published values "
             f"span {min(spread):.1f} to {max(spread):.1f}: an interval that holds the published value says little "
             "by itself, so a method counts as placed only where the prediction is also closer than the guess of no "
             "change from the Baseline.")
    if worst_rescale is not None:
        text += (f"  The rescaling itself misses the two methods in both tables by up to {worst_rescale:.1f} points "
                 "(Mixup, CutMix).")
    warned = [r for r in rows if r["scale_warning"]]
    if warned:
        errors = ", ".join(f"{r['column']} {r['error']:+.1f}" for r in warned)
        text += (f"  The page{'s' if len(warned) > 1 else ''} of {', '.join(r['column'] for r in warned)} warned "
                 f"that the gain lies in corruptions the proxy scales far from CIFAR's strength (errors: {errors})")
        over = [r for r in warned if not r["inside"] and r["error"] > 0]
        if len(over) == len(warned):
            kinds = "; ".join(f"{r['kind'] or r['column']}" for r in over)
            text += (f": the proxy over-predicts {'them' if len(over) > 1 else 'it'} beyond its interval, crediting "
                     f"a robustness to its scaled-up corruptions that CIFAR's do not reward ({kinds})")
        text += "."
    if not placed:
        text += ("  On this evidence the proxy places none of the kinds of method tried outside the eight: its "
                 "prediction for such a method is a hypothesis to test on CIFAR-10-C, not an estimate.")
    seen = [r for r in rows if r.get("second_view")]
    if seen:
        parts = []
        for r in seen:
            where = [f"{f['name']} ({f['matched_gain']:+.1f} matched, {f['published_gain']:+.1f} published)"
                     for f in r["second_view"]["families"] if f["disagree"]]
            parts.append(f"{r['column']} on {', '.join(where)}" if where else f"{r['column']} on no family")
        text += "  At the published CIFAR strengths the two views of the gain disagree for " + "; ".join(parts) + "."
    return text


def render_markdown(record: dict) -> str:
    lines = ["# The screen beyond the eight", "", f"**{record['finding']}**", "",
             f"Published: {record['source']}; rescaled to the NoisyMix table by each method's share of its table's "
             "Baseline-to-AugMix gap (`noisymix_app/screen/validity.py`)."
             + (f"  Transcribed {record['transcribed']}." if record.get("transcribed") else ""), "",
             "| method | kind | seeds | proxy Digits-C | predicted CIFAR-10-C [95 %] | published, rescaled (range over "
             "architectures) | error | no-change error |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in record["rows"]:
        p, q = r["prediction"], r["published"]
        lines.append(f"| {r['column']} | {r['kind'] or ''} | {len(r['seeds'])} | {r['proxy_corrupted']:.1f} | "
                     f"{p['value']:.1f} [{p['low']:.1f}, {p['high']:.1f}] | {q['value']:.1f} ({q['range'][0]:.1f}–"
                     f"{q['range'][1]:.1f}) | {r['error']:+.1f} | {r['null_error']:+.1f} |")
    seen = [r for r in record["rows"] if r.get("second_view")]
    if seen:
        names = [f["name"] for f in seen[0]["second_view"]["families"]]
        lines += ["", "The gain over the Baseline by family, on the difficulty-matched sets → at the published CIFAR "
                  "strengths (the same models; `--also-published`; * the two views disagree):", "",
                  "| method | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for r in seen:
            cells = {f["name"]: f"{f['matched_gain']:+.1f} → {f['published_gain']:+.1f}"
                     + (" *" if f["disagree"] else "") for f in r["second_view"]["families"]}
            lines.append(f"| {r['column']} | " + " | ".join(cells.get(n, "") for n in names) + " |")
    lines += ["", "The rescaling checked on the methods in both tables:", "",
              "| method | rescaled from the AugMix table | the NoisyMix table | error |", "|---|---:|---:|---:|"]
    for c in record["rescale_check"]:
        lines.append(f"| {c['column']} | {c['rescaled']:.1f} | {c['noisymix_table']:.1f} | {c['error']:+.1f} |")
    lines += ["", f"Made by `{record['command']}` from the screens' pages (each row's `page.sha256`).", ""]
    return "\n".join(lines)


def readme_block(record: dict) -> str:
    """The README's few lines: each method's prediction against its published value, and what that says, by the
    rules of ``finding``."""
    rows = record["rows"]
    placed = [r["column"] for r in rows if _placed(r)]
    cells = "; ".join(f"{r['column']} {r['prediction']['value']:.1f} [{r['prediction']['low']:.1f}, "
                      f"{r['prediction']['high']:.1f}] vs {r['published']['value']:.1f}" for r in rows)
    text = (f"Of {len(rows)} methods outside the eight, the proxy placed "
            + (f"{len(placed)} ({', '.join(placed)})" if placed else "none")
            + f" (predicted CIFAR-10-C [95 %] vs published, rescaled): {cells}.")
    over = [r["column"] for r in rows if r["scale_warning"] and not r["inside"] and r["error"] > 0]
    if over:
        text += (f"  It over-predicts beyond its interval {', '.join(over)}, whose pages warned that the gain lies in "
                 "corruptions it scales far from CIFAR's strength.")
    if not placed:
        text += ("  Its prediction for a method outside the eight is a hypothesis to test on CIFAR-10-C, not an "
                 "estimate.")
    return text + "\n"


def write(record: dict, out: Path, *, update_readme: bool = False) -> None:
    """``out`` (JSON), its Markdown beside it and, with ``update_readme``, the README's block, all or none."""
    from noisymix_infra.io import replace_marked, write_files

    files: dict = {out: record, out.with_suffix(".md"): render_markdown(record)}
    if update_readme:
        files[ROOT / "README.md"] = replace_marked((ROOT / "README.md").read_text(), README_BEGIN, README_END,
                                                   readme_block(record))
    write_files(files)


def check_out(out: Path) -> None:
    """``--out`` before any work: a ``.json`` file (its Markdown is written beside it, the same name with
    ``.md``), and where it or that Markdown exists, one this command wrote (a validity record and its page);
    one line otherwise, nothing written."""
    if out.suffix != ".json":
        raise ValueError(f"--out {printable(str(out))}: give a .json file (its .md is written beside it)")
    if out.is_dir():
        raise ValueError(f"--out {printable(str(out))} is a folder: give the JSON file to write")
    if out.exists():
        try:
            what = read_json(out).get("what", "")
        except (ValueError, AttributeError):
            what = ""
        if not str(what).startswith("the screen's predictions of methods outside"):
            raise ValueError(f"--out {printable(str(out))} exists and is not a record this command wrote: give a "
                             "new file (nothing was written)")
    md = out.with_suffix(".md")
    if md.exists() and not md.read_text(errors="replace").startswith("# The screen beyond the eight"):
        raise ValueError(f"{printable(str(md))} exists and is not a page this command wrote: give another --out "
                         "(nothing was written)")


def _screen_item(text: str) -> tuple[str, Path]:
    column, sep, folder = text.partition("=")
    if not sep or not column.strip() or not folder.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not COLUMN=DIR (a column of the published table, a screen)")
    return column.strip(), Path(folder.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m noisymix_app.screen.validity",
                                     description="screens of methods outside the eight against published CIFAR-10-C "
                                                 "numbers (docs/screen-validity.json; issue 65)")
    parser.add_argument("--screen", action="append", type=_screen_item, default=[], metavar="COLUMN=DIR",
                        help="a column of figures/augmix_table1.json and the folder of its noisymix screen")
    parser.add_argument("--summary", default=None, help="the eight-method summary the screens were made against")
    parser.add_argument("--out", required=True, help="the JSON file to write (its .md beside it)")
    parser.add_argument("--update-readme", action="store_true", help="also write the README's block")
    args = parser.parse_args(argv)
    out = Path(args.out)
    check_out(out)
    record = build(args.screen, summary=args.summary)
    record["command"] = "python -m noisymix_app.screen.validity " + shlex.join(argv if argv is not None
                                                                             else sys.argv[1:])
    write(record, out, update_readme=args.update_readme)
    print(record["finding"])
    print(f"wrote {out} and {out.with_suffix('.md')}" + (" and README.md" if args.update_readme else ""))
    return 0


if __name__ == "__main__":
    from noisymix_app.cli import main_in_one_line

    sys.exit(main_in_one_line("python -m noisymix_app.screen.validity", main))
