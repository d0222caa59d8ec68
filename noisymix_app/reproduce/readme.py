"""The README's copy of the main job's summary: ``update_readme`` writes the summary between the markers
``<!-- reproduce-summary:begin -->`` and ``<!-- reproduce-summary:end -->``, to ``docs/reproduce-summary.*``
and copies the figures the README shows to ``docs/figures`` with their sha256; ``stale_figures`` checks
them (``tests/test_readme.py``)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from noisymix_infra.io import read_json, replace_marked, write_files

__all__ = ["BEGIN", "BLOCK", "END", "FIGURE", "README_PLAN", "publishable", "readme_figures", "replace_block",
           "stale_figures", "update_readme"]

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "<!-- reproduce-summary:begin -->"
END = "<!-- reproduce-summary:end -->"
#: the README's short block a summary writes beside SUMMARY.md (issue 52: the answer, one table, one figure)
BLOCK = "README-BLOCK.md"


FIGURE = re.compile(r"\]\((docs/figures/([\w.-]+\.png))\)")
#: the one plan whose summary the README shows: the main job (``make reproduce``)
README_PLAN = "laptop"


def publishable(record: dict, root: Path | None = None) -> None:
    """One-line ``ValueError`` unless ``record`` (a summary.json) is the main job's finished, complete output:
    the laptop plan's protocol (``plans.protocol_differences``), every run with its numbers, the theory and toy
    steps there.  With ``root``: also its figures must be the ones docs/figures holds (a re-render writes no
    figure).  The guard of every writer of the README's main block and docs/reproduce-summary.*, whatever
    called it (issue 60, cause 1: ``--rerender`` and ``summary --update-readme`` replaced them with a quick run's)."""
    from noisymix_app.reproduce.plans import protocol_differences

    name = str(record.get("plan_name", "?"))
    differs = protocol_differences(record.get("plan") or {}, README_PLAN)
    if differs:
        raise ValueError(f"not the main job's output (plan {name!r} differs from the {README_PLAN} plan in "
                         f"{', '.join(differs[:4])}): only `noisymix reproduce` with the {README_PLAN} plan writes the "
                         "README's summary")
    if record.get("complete") is not True or not record.get("theory") or not record.get("toy"):
        raise ValueError(f"the {README_PLAN} plan's output is not finished (a run, the theory or the toy step has no "
                         "numbers): rerun `noisymix reproduce` to finish it before it goes into the README")
    if root is not None:
        recorded = record.get("figures") or {}
        readme = (root / "README.md").read_text()
        stale = [path for path, _ in readme_figures(_main_block(replace_block(readme, ""))) if path not in recorded
                 or not (root / path).is_file() or _sha256(root / path) != recorded[path]]
        if stale:
            raise ValueError(f"the README's figure {stale[0]} is not the one this summary's run drew: re-render only "
                             "the summary whose figures docs/figures holds, or rerun the main job with --update-readme")


def _main_block(readme: str) -> str:
    """The README without the blocks other commands generate (the analogue's, between
    ``<!-- analogue-methods:begin -->`` and its end marker, ``noisymix_app.analogue.methods``): their
    figures are not the main job's."""
    return re.sub(r"<!-- analogue-methods:begin -->.*?<!-- analogue-methods:end -->", "", readme, flags=re.S)


def readme_figures(readme: str) -> list[tuple[str, str]]:
    """The figures the README shows: (path in the repository, file name the figures step writes)."""
    return FIGURE.findall(readme)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def update_readme(out: str | Path, root: Path = ROOT) -> None:
    """Copy ``out``'s summary to ``docs/reproduce-summary.*``, its short block (``BLOCK``; SUMMARY.md for
    a folder without one) into the README between the markers, and every figure the README shows from
    ``out/figures`` to ``docs/figures``, with its sha256 recorded in ``docs/reproduce-summary.json``
    (``"figures"``), so that the README's figures are the run's whose numbers it prints (issue 22;
    ``stale_figures`` checks it).

    Everything is read and checked before the first write: a refusal writes nothing (issue 54: a run
    without ``calibration_shift.png`` was refused only after ``docs/figures/robust_c.png`` had been
    replaced, leaving the README's figures from two runs)."""
    from noisymix_app.reproduce.record import check_whole, run_hashes

    out = Path(out)
    record = read_json(out / "summary.json")
    publishable(record)  # the writer's own guard, whoever calls it (issue 60)
    # issue 64, goal 1: the numbers as written, of runs that exist with the weights and evaluations they were of
    check_whole(record, str(out / "summary.json"))
    found = run_hashes(out, record["plan"])
    differ = [name for name, digest in (record.get("runs") or {}).items() if found.get(name) != digest or not digest]
    if not record.get("runs") or differ:
        raise ValueError(f"{out}: " + (f"run {differ[0]} is not the one the summary was made from (its weights or "
                                       "evaluations are missing or changed)" if differ else
                                       "the summary records no run hashes (made before issue 64): rerun the summary")
                         + "; nothing written")
    text = (out / "SUMMARY.md").read_text()
    block = (out / BLOCK).read_text() if (out / BLOCK).is_file() else text
    readme = replace_block((root / "README.md").read_text(), block)
    record["figures"] = {}
    figures = {}  # path in the repository -> the run's bytes, all read before any is written
    for path, name in readme_figures(_main_block(readme)):
        made = out / "figures" / name
        if not made.is_file():
            raise ValueError(f"the README shows {path}, but {made} was not written by this run")
        figures[path] = made.read_bytes()
        record["figures"][path] = hashlib.sha256(figures[path]).hexdigest()
    write_files({**{root / path: data for path, data in figures.items()},
                 root / "docs" / "reproduce-summary.md": text, root / "docs" / "reproduce-summary.json": record,
                 root / "README.md": readme})


def replace_block(readme: str, block: str) -> str:
    """The README with ``block`` between the main job's markers (ValueError without them)."""
    return replace_marked(readme, BEGIN, END, block)


def stale_figures(root: Path = ROOT) -> list[str]:
    """The README's figures that are not the ones ``update_readme`` copied with the committed
    summary (missing from its record, or another file now): empty when all come from its run."""
    recorded = read_json(root / "docs" / "reproduce-summary.json").get("figures", {})
    readme = (root / "README.md").read_text()
    return [path for path, _ in readme_figures(_main_block(readme))
            if path not in recorded or not (root / path).is_file() or _sha256(root / path) != recorded[path]]
