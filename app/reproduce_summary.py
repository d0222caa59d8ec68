"""The findings of a ``noisymix reproduce`` folder: ``SUMMARY.md`` and ``summary.json``.

Every number the README shows for the small-scale run comes from here, never by hand:
``python -m app.reproduce_summary --out results --update-readme`` (or
``noisymix reproduce --out results --update-readme``) writes the summary, copies it to
``docs/reproduce-summary.md`` / ``.json`` and replaces the README between the markers
``<!-- reproduce-summary:begin -->`` and ``<!-- reproduce-summary:end -->``.  The summary names
the git commit it was made from; ``tests/test_readme.py`` fails when the README and the committed
summary disagree, or when the code that made the numbers changed after that commit.

Statistics.  Per method: mean over seeds and a 95 % t-interval (mean ± t_{0.975, n-1} s/√n).
Per claim of the paper (Sec. 4: NoisyMix and the other methods raise robustness over the
Baseline while keeping clean accuracy, NoisyMix the most robust) the paired difference over
seeds (same seed, same data order) with its 95 % t-interval: the claim **holds** when the
interval lies on the claimed side, is **within noise** when it covers the boundary, **fails**
when it lies on the other side.  The power: the minimum difference a paired t-test at 5 % detects
with 80 % power given the observed spread of the differences, (t_{0.975} + t_{0.80}) s_d / √n.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

from fullscale.methods import METHODS
from noisymix_infra.io import read_json, write_bytes, write_json, write_text
from noisymix_infra.provenance import git_state, machine
from noisymix_infra.stats import interval, paired
from theory.results import checks_of, tally, tally_sentence

__all__ = ["BEGIN", "CODE_PATHS", "END", "main", "readme_figures", "render", "stale_figures", "summarize",
           "update_readme", "write_summary"]

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- reproduce-summary:begin -->"
END = "<!-- reproduce-summary:end -->"
# the code whose change makes a summary stale (methods, trainer, evaluation, metrics, augmentation,
# corruptions, models and the reproduce job itself)
CODE_PATHS = ("noisymix", "app/plans.py", "app/reproduce.py", "app/reproduce_summary.py", "app/sweep.py",
              "app/sweep_plan.py", "fullscale/train.py", "fullscale/members.py", "fullscale/hooks.py",
              "fullscale/methods.py",
              "fullscale/evaluation.py", "fullscale/metrics.py", "fullscale/vocabulary.py", "fullscale/augment",
              "fullscale/corruptions", "fullscale/models", "fullscale/presets.py", "fullscale/config.py",
              "fullscale/data", "theory", "toy")
# method names as the paper writes them: the one label map, the methods' own titles (fullscale.methods)
LABELS = {name: method.title for name, method in METHODS.items()}
CLEAN_TOLERANCE = 1.0  # points of clean accuracy a method may lose and still "keep" it
METRICS = (("clean", "clean", "accuracy", True), ("corrupted", None, "mean_accuracy", True),
           ("rms_calibration_error", "calibration", "rms_calibration_error", False))


def _git() -> dict:
    return git_state(CODE_PATHS)


def summarize(out: str | Path) -> dict:
    """The findings of the reproduce folder ``out`` as a JSON-ready dict (see the module doc)."""
    out = Path(out)
    log = read_json(out / "reproduce.json")
    plan = log["plan"]
    suite = plan["corrupted_suite"]
    values: dict[str, dict[str, dict[int, float]]] = {}
    n_corruptions = set()
    for method in plan["methods"]:
        values[method] = {name: {} for name, *_ in METRICS}
        for seed in plan["seeds"]:
            run = out / "runs" / f"{method}-seed{seed}" / "eval"
            for name, file, key, _ in METRICS:
                path = run / f"{file or suite}.json"
                if path.exists():
                    record = read_json(path)
                    if key not in record.get("summary", {}):  # an incomplete or foreign record: no number
                        continue
                    values[method][name][seed] = 100 * float(record["summary"][key])
                    if file is None:
                        n_corruptions.add(len(record["summary"].get("per_corruption", {})))
    table = {m: {name: interval(list(v.values())) for name, v in per.items() if v} for m, per in values.items()}
    claims = _claims(values, plan["methods"])
    return {"plan": plan, "plan_name": log.get("plan_name", "custom"), "corrupted_suite": suite,
            "corruptions": sorted(n_corruptions),
            # the steps' own times: a resumed job's last invocation alone would understate it; with
            # worker processes they overlap, so the invocation's wall time is kept beside them
            "git": _git(), "seconds": round(sum(e.get("seconds", 0) for e in log.get("steps", [])), 1),
            "wall_seconds": log.get("seconds"),
            "table": table, "claims": claims,
            "machine": {**machine(), "workers": plan.get("workers", 0)},
            "theory": _theory(out / "theory" / "theory.json"), "toy": _toy(out / "toy" / "toy.json")}


def _verdict(diff: dict | None, threshold: float) -> str:
    """Claimed: difference > threshold.  holds / within noise / fails, by the 95 % interval."""
    if diff is None or diff["half_width"] is None:
        return "not enough seeds"
    lo, hi = diff["mean"] - diff["half_width"], diff["mean"] + diff["half_width"]
    return "holds" if lo > threshold else "fails" if hi < threshold else "within noise"


def _claims(values: dict, methods: list[str]) -> list[dict]:
    claims = []
    if "baseline" not in values:
        return claims
    base = values["baseline"]
    for m in (m for m in methods if m != "baseline"):
        d = paired(values[m]["corrupted"], base["corrupted"])
        claims.append({"id": f"robust_{m}", "statement": f"{LABELS.get(m, m)} is more robust than Baseline",
                       "difference": d, "threshold": 0.0, "verdict": _verdict(d, 0.0)})
        d = paired(values[m]["clean"], base["clean"])
        claims.append({"id": f"clean_{m}",
                       "statement": f"{LABELS.get(m, m)} keeps clean accuracy (loses < {CLEAN_TOLERANCE:g} point)",
                       "difference": d, "threshold": -CLEAN_TOLERANCE, "verdict": _verdict(d, -CLEAN_TOLERANCE)})
    if "noisymix" in values:
        for m in (m for m in methods if m not in ("baseline", "noisymix")):
            d = paired(values["noisymix"]["corrupted"], values[m]["corrupted"])
            claims.append({"id": f"noisymix_beats_{m}", "statement": f"NoisyMix is more robust than {LABELS.get(m, m)}",
                           "difference": d, "threshold": 0.0, "verdict": _verdict(d, 0.0)})
    return claims


def _theory(path: Path) -> dict | None:
    if not path.exists():
        return None
    return tally(checks_of(read_json(path), str(path)))


def _toy(path: Path) -> dict | None:
    if not path.exists():
        return None
    toy = read_json(path)
    return {"seeds": toy["experiment"]["seeds"],
            "claims": [{"id": c["id"], "statement": c["statement"], "verdict": c["verdict"]}
                       for c in toy.get("claims", [])]}


def _fmt(cell: dict | None) -> str:
    if not cell:
        return "—"
    if cell["half_width"] is None:
        return f"{cell['mean']:.1f} (1 seed)"
    return f"{cell['mean']:.1f} ± {cell['half_width']:.1f}"


def _duration(summary: dict) -> str:
    """How long the job took: the steps' own times, and the wall time where workers overlapped them."""
    if not summary.get("seconds"):
        return ""
    steps = f"its steps took {summary['seconds'] / 60:.1f} min"
    workers, wall = summary.get("machine", {}).get("workers", 0), summary.get("wall_seconds")
    if workers and wall:
        return f" ({steps} of {workers} worker processes' time, {wall / 60:.1f} min wall)"
    return f" ({steps})"


def render(summary: dict) -> str:
    """``SUMMARY.md``: the findings as Markdown (what the README includes between its markers)."""
    plan, git = summary["plan"], summary["git"]
    seeds = len(plan["seeds"])
    n_c = ",".join(str(n) for n in summary["corruptions"]) or "?"
    dirty = "" if not git.get("dirty") else " (working tree had uncommitted changes)"
    lines = [f"Generated by `noisymix reproduce --plan {summary.get('plan_name', '?')}` "
             f"({plan['description']}) from commit `{(git.get('commit') or 'unknown')[:12]}`{dirty}"
             + _duration(summary) + ": "
             f"{', '.join(LABELS.get(m, m) for m in plan['methods'])} on {plan['dataset']}, "
             f"{plan['model']} width {plan['width']}, {plan['epochs']} epochs"
             + "".join(f", {o.replace('=', ' ')}" for o in plan.get("train_overrides") or ())
             + f", {seeds} seed(s); the corrupted set has {n_c} corruption(s) × 5 severities. "
             "Mean ± 95 % t-interval over seeds (%).", "",
             "| method | clean | corrupted | RMS calibration error |", "|---|---:|---:|---:|"]
    for m in (m for m in plan["methods"] if m in summary["table"]):  # plan order (JSON sorts keys)
        row = summary["table"][m]
        lines.append(f"| {LABELS.get(m, m)} | {_fmt(row.get('clean'))} | {_fmt(row.get('corrupted'))} | "
                     f"{_fmt(row.get('rms_calibration_error'))} |")
    lines += ["", "Claims of the paper at this scale (paired difference over seeds, 95 % t-interval; "
              "*holds*: the interval is on the claimed side, *within noise*: it covers the boundary, "
              "*fails*: it is on the other side; MDD: the smallest difference detectable with 80 % power "
              "at the observed spread):", ""]
    for c in summary["claims"]:
        d = c["difference"]
        if d is None:
            lines.append(f"- {c['statement']}: no paired runs")
            continue
        interval = "" if d["half_width"] is None else (
            f" [{d['mean'] - d['half_width']:+.1f}, {d['mean'] + d['half_width']:+.1f}]")
        mdd = "" if d.get("mdd80") is None else f"; MDD {d['mdd80']:.1f}"
        lines.append(f"- {c['statement']}: {d['mean']:+.1f}{interval}{mdd} — **{c['verdict']}**")
    if summary.get("machine"):
        m = summary["machine"]
        v = m["versions"]
        per = f"{m['workers']} worker process(es) of 1 torch thread" if m.get("workers") else \
            f"one process of {m['torch_threads']} torch thread(s)"
        lines += ["", f"Made on: {m['cpu_model']} ({m['cpu_count']} cores; torch's CPU kernels: "
                  f"{m['cpu_capability']}), {per}; torch {v.get('torch')}, numpy {v.get('numpy')}, "
                  f"Python {v.get('python')}. Float rounding differs between CPUs and libraries, so "
                  "the numbers do too; the verdicts should not."]
    if summary.get("theory"):
        t = summary["theory"]
        lines += ["", f"Theory (`noisymix verify`): {tally_sentence(t)}"]
    if summary.get("toy"):
        toy = summary["toy"]
        lines += ["", f"Toy experiment (`noisymix toy`, {toy['seeds']} seeds):", ""]
        lines += [f"- {c['statement']} — **{c['verdict']}**" for c in toy["claims"]]
    return "\n".join(lines) + "\n"


def write_summary(out: str | Path, plan_name: str | None = None) -> dict:
    """Write ``out/summary.json`` and ``out/SUMMARY.md``; return the summary."""
    out = Path(out)
    summary = summarize(out)
    summary["plan_name"] = plan_name or summary["plan_name"]  # the name reproduce.json recorded
    write_json(out / "summary.json", summary)
    write_text(out / "SUMMARY.md", render(summary))
    return summary


FIGURE = re.compile(r"\]\((docs/figures/([\w.-]+\.png))\)")


def readme_figures(readme: str) -> list[tuple[str, str]]:
    """The figures the README shows: (path in the repository, file name the figures step writes)."""
    return FIGURE.findall(readme)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def update_readme(out: str | Path, root: Path = ROOT) -> None:
    """Copy ``out``'s summary to ``docs/reproduce-summary.*`` and into the README between the
    markers, and every figure the README shows from ``out/figures`` to ``docs/figures``, with its
    sha256 recorded in ``docs/reproduce-summary.json`` (``"figures"``), so that the README's figures
    are the run's whose numbers it prints (issue 22; ``stale_figures`` checks it)."""
    out = Path(out)
    text = (out / "SUMMARY.md").read_text()
    readme = (root / "README.md").read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), flags=re.S)
    if not pattern.search(readme):
        raise ValueError(f"README.md has no {BEGIN} ... {END} markers")
    record = read_json(out / "summary.json")
    record["figures"] = {}
    for path, name in readme_figures(readme):
        made = out / "figures" / name
        if not made.is_file():
            raise ValueError(f"the README shows {path}, but {made} was not written by this run")
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        write_bytes(root / path, made.read_bytes())
        record["figures"][path] = _sha256(made)
    write_text(root / "docs" / "reproduce-summary.md", text)
    write_json(root / "docs" / "reproduce-summary.json", record)
    write_text(root / "README.md", pattern.sub(lambda _: f"{BEGIN}\n{text}{END}", readme))


def stale_figures(root: Path = ROOT) -> list[str]:
    """The README's figures that are not the ones ``update_readme`` copied with the committed
    summary (missing from its record, or another file now): empty when all come from its run."""
    recorded = read_json(root / "docs" / "reproduce-summary.json").get("figures", {})
    readme = (root / "README.md").read_text()
    return [path for path, _ in readme_figures(readme)
            if path not in recorded or not (root / path).is_file() or _sha256(root / path) != recorded[path]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.reproduce_summary", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="a folder written by `noisymix reproduce`")
    parser.add_argument("--update-readme", action="store_true",
                        help="copy the summary to docs/reproduce-summary.* and into README.md")
    args = parser.parse_args(argv)
    write_summary(args.out)
    if args.update_readme:
        update_readme(args.out)
    print(json.dumps({"summary": str(Path(args.out) / "SUMMARY.md"), "readme_updated": args.update_readme}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
