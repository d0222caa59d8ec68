"""A tiny ImageNet path pushed through to the paper's tables: the fixture JPEG tree, a few training
steps of two methods (ResNet-50 at width 4 on 32 x 32 crops), fixture ImageNet-C (made by
`noisymix corrupt` from one validation image per class), ImageNet-R (the validation images under
ImageNet-R class folders) and ImageNet-P (the CIFAR-10-P perturbation sequences of four validation
images, as videos), every suite of the results_imagenet sweep, then `noisymix figures` and the sweep's table.

Every ImageNet table and fig:robustCvsR must hold our values, equal to what the evaluation JSONs
give when recomputed here from their raw per-corruption / per-perturbation entries (AlexNet's
numbers as shipped, which test_alexnet_flip.py holds to Hendrycks & Dietterich's printed text).

ImageNet-P is read by OpenCV (the optional video extra).  Where it is not installed, the videos are
stored as raw frame arrays and the suite's decoder is replaced by one that reads them: what is
tested then is everything after decoding (tests/evaluation/test_evaluate.py decodes real mp4s
where OpenCV is installed).
"""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from fullscale.corruptions.perturbations import perturbation_sequence
from fullscale.data import imagenet_r_wnids, imagenet_wnids
from fullscale.data.imagenet_fixture import write_imagenet_tree
from fullscale.vocabulary import ALEXNET_ERR, CORRUPTIONS, P_COLUMNS
from noisymix_app.cli import main
from noisymix_figures.alexnet import alexnet_flip_probabilities

METHODS = ("baseline", "noisymix")
# two epochs over 1,190 images (20 of each fixture class, one of each other class): 46 steps of 50,
# enough for accuracies above zero on the fixture's ten classes
TRAIN = ["model=resnet50", "width=4", "image_size=32", "workers=0", "batch_size=50", "epochs=2", "lr=0.05"]
PREPROCESS = ["--resize", "36", "--crop", "32", "--workers", "0"]
VIDEOS = 4  # ImageNet-P sequences per perturbation (making them is the slow part)
IMAGENET_TABLES = ("results_imagenet", "results_imagenet_c", "results_imagenet_p", "results_imagenet_r_calibration")


def _write_videos(root: Path, val: Path, monkeypatch) -> None:
    """``root/<perturbation>/<wnid>/<i>.mp4`` for the paper's ten columns: each validation image
    (32 x 32) through ``perturbation_sequence``; mp4 with OpenCV, raw frames without it."""
    from PIL import Image

    images, wnids = [], []
    for path in sorted(val.glob("*/*.JPEG"))[:VIDEOS]:
        image = Image.open(path).convert("RGB").resize((32, 32))
        images.append(torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1))
        wnids.append(path.parent.name)
    batch = torch.stack(images)
    cv2 = importlib.import_module("cv2") if importlib.util.find_spec("cv2") else None
    for name in P_COLUMNS:
        frames = perturbation_sequence(batch, name, generator=torch.Generator().manual_seed(0))
        for i, (video, wnid) in enumerate(zip(frames, wnids, strict=True)):
            path = root / name / wnid / f"{i}.mp4"
            path.parent.mkdir(parents=True, exist_ok=True)
            rgb = video.permute(0, 2, 3, 1).numpy()
            if cv2 is None:
                with path.open("wb") as handle:
                    np.save(handle, rgb)
                continue
            writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (32, 32))
            for frame in rgb:
                writer.write(frame[:, :, ::-1].copy())
            writer.release()
    if cv2 is None:
        import fullscale.data.videos as videos

        monkeypatch.setattr(videos, "_cv2", lambda: None)
        monkeypatch.setattr(videos, "decode_video",
                            lambda path: torch.from_numpy(np.load(path)).permute(0, 3, 1, 2).contiguous())


def _cells(table: str, row: str) -> list[str]:
    line = next(line for line in table.splitlines() if line.startswith(f"| {row}"))
    return [c.strip() for c in line.strip("|").split("|")]


def _ours(table: str, header: list[str], row: str) -> dict[str, str]:
    """Our cells of a row, by the paper column they stand beside."""
    cells = _cells(table, row)
    return {header[i - 1].removesuffix(" paper"): cells[i] for i in range(1, len(cells)) if header[i] == "ours"}


def _header(table: str) -> list[str]:
    line = next(line for line in table.splitlines() if line.startswith("| Method"))
    return [c.strip() for c in line.strip("|").split("|")]


def _finished_sweep(root: Path, mp: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A results_imagenet sweep folder, ``runs/<name>`` trained and evaluated on every suite, and
    the report `noisymix figures` writes from its runs."""
    # the fixture tree's ten classes, and one image in each of the other 990 train folders: the
    # ImageNet suites evaluate 1000-class models, and a run's classes are its train folders
    tree = write_imagenet_tree(root / "imagenet", n_train=20, n_val=2)
    some = next((tree / "train").glob("*/*.JPEG")).read_bytes()
    for wnid in imagenet_wnids()[10:]:
        (tree / "train" / wnid).mkdir()
        (tree / "train" / wnid / f"{wnid}_0.JPEG").write_bytes(some)
    val = tree / "val"
    # ImageNet-C of one validation image per class (75 sets of 224 x 224 images are made)
    for folder in val.iterdir():
        first = sorted(folder.glob("*.JPEG"))[0]
        (root / "val-c" / folder.name).mkdir(parents=True)
        (root / "val-c" / folder.name / first.name).write_bytes(first.read_bytes())
    assert main(["corrupt", "--dataset", str(root / "val-c"), "--kind", "c", "--out", str(root / "imagenet-c")]) == 0
    # ImageNet-R: the validation images of its classes under their own class, the others under another
    r_wnids = imagenet_r_wnids()
    for i, path in enumerate(sorted(val.glob("*/*.JPEG"))):
        wnid = path.parent.name
        target = root / "imagenet-r" / (wnid if wnid in r_wnids else r_wnids[-1 - i]) / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    _write_videos(root / "imagenet-p", val, mp)
    sweep = root / "sweep"
    for method in METHODS:
        run = sweep / "runs" / f"imagenet-resnet50-{method}-seed0"
        sets = [a for kv in [*TRAIN, f"data_root={tree}"] for a in ("--set", kv)]
        assert main(["train", "--preset", f"imagenet-resnet50-{method}", "--out", str(run), *sets]) == 0
        for suite, data in (("clean", val), ("calibration", val), ("imagenet-c", root / "imagenet-c"),
                            ("imagenet-r", root / "imagenet-r"), ("imagenet-p", root / "imagenet-p")):
            options = ["--workers", "0"] if suite == "imagenet-p" else PREPROCESS
            assert main(["evaluate", str(run), "--suite", suite, "--data-root", str(data), *options]) == 0, suite
    report = root / "report"
    assert main(["figures", "--results", str(sweep / "runs"), "--out", str(report), "--no-examples"]) == 0
    return sweep, report


def _eval(sweep: Path, method: str, suite: str) -> dict:
    return json.loads((sweep / "runs" / f"imagenet-resnet50-{method}-seed0" / "eval" / f"{suite}.json").read_text())


def _expected(sweep: Path, method: str) -> dict[str, float]:
    """Our numbers recomputed from the raw entries of the evaluation JSONs (percent)."""
    c = _eval(sweep, method, "imagenet-c")["results"]
    per = {name: np.mean([c[name][str(s)]["accuracy"] for s in range(1, 6)]) for name in CORRUPTIONS}
    p = _eval(sweep, method, "imagenet-p")["results"]
    alexnet = alexnet_flip_probabilities()  # checked against the printed text in test_alexnet_flip.py
    fr = {name: p[name]["flip_probability"] / alexnet[name] for name in P_COLUMNS}
    r = _eval(sweep, method, "imagenet-r")
    return {"clean": 100 * _eval(sweep, method, "clean")["results"]["clean"]["accuracy"],
            "c_mean": 100 * np.mean(list(per.values())),
            "c_no_noise": 100 * np.mean([per[n] for n in CORRUPTIONS[3:]]),
            "mce": 100 * np.mean([(1 - per[n]) / ALEXNET_ERR[n] for n in CORRUPTIONS]),
            "r": 100 * r["results"]["imagenet-r"]["accuracy"],
            "rms": 100 * r["summary"]["rms_calibration_error"], "aurra": 100 * r["summary"]["aurra"],
            "mfr": 100 * np.mean(list(fr.values())), "mfr_no_noise": 100 * np.mean([fr[n] for n in P_COLUMNS[2:]]),
            **{f"c:{n}": 100 * v for n, v in per.items()}, **{f"p:{n}": 100 * v for n, v in fr.items()}}


ROWS = {"baseline": "Baseline", "noisymix": "NoisyMix (ours)"}


def test_a_tiny_imagenet_sweep_fills_every_imagenet_table_and_fig_robust_c_vs_r(tmp_path, monkeypatch):
    """One test: its set-up (about 20 s on one core) runs once, not once per xdist worker."""
    sweep, report = _finished_sweep(tmp_path, monkeypatch)
    _check_tables(sweep, report)
    _check_figure(sweep, report)
    _check_sweep_table(sweep)


def _check_tables(sweep: Path, report: Path) -> None:
    for method, row in ROWS.items():
        want = _expected(sweep, method)
        text = (report / "tables" / "results_imagenet.md").read_text()
        ours = _ours(text, _header(text), row)
        assert ours["ImageNet (↑%)"] == f"{want['clean']:.1f}"
        assert ours["ImageNet-C (↑%)"] == f"{want['c_mean']:.1f} ({want['c_no_noise']:.1f})"
        assert ours["ImageNet-R (↑%)"] == f"{want['r']:.1f}"
        assert ours["ImageNet-P (↓%)"] == f"{want['mfr']:.1f} ({want['mfr_no_noise']:.1f})"

        text = (report / "tables" / "results_imagenet_c.md").read_text()
        ours = _ours(text, _header(text), row)
        columns = json.loads((Path(__file__).parents[2] / "figures" / "paper_values.json").read_text())
        names = columns["tab:results_imagenet_c"]["columns"]
        assert [ours[n] for n in names] == [f"{want[f'c:{c}']:.1f}" for c in CORRUPTIONS]
        assert ours["mean (computed)"] == f"{want['c_mean']:.1f}" and ours["mCE (computed)"] == f"{want['mce']:.1f}"

        text = (report / "tables" / "results_imagenet_p.md").read_text()
        ours = _ours(text, _header(text), row)
        names = columns["tab:results_imagenet_p"]["columns"]
        assert [ours[n] for n in names[:10]] == [f"{want[f'p:{c}']:.1f}" for c in P_COLUMNS]
        assert ours["mFR"] == f"{want['mfr']:.1f}"

        text = (report / "tables" / "results_imagenet_r_calibration.md").read_text()
        calib_row = "Baseline ResNet-50" if method == "baseline" else row
        ours = _ours(text, _header(text), calib_row)
        assert ours["RMS Calibration Error (↓%)"] == f"{want['rms']:.1f}"
        assert ours["AURRA (↑%)"] == f"{want['aurra']:.1f}"
        assert "ImageNet-R" in text.splitlines()[0] and "not on the clean validation set" in text.splitlines()[0]
    # the paper's contradictions stay flagged beside our values
    assert "[1] the rows 'Adversarial Trained' and 'Puzzle Mix' print the same 15 numbers" in (
        report / "tables" / "results_imagenet_c.md").read_text()


def _check_figure(sweep: Path, report: Path) -> None:
    with (report / "robust_c_vs_r.csv").open() as handle:
        points = list(csv.DictReader(handle))
    ours = {p["method"]: p for p in points if p["source"] == "ours"}
    assert set(ours) == {"Baseline", "NoisyMix"} and sum(p["source"] == "paper" for p in points) == 10
    for method, title in (("baseline", "Baseline"), ("noisymix", "NoisyMix")):
        want = _expected(sweep, method)
        assert float(ours[title]["imagenet_c"]) == pytest.approx(want["c_mean"], abs=1e-3)
        assert float(ours[title]["imagenet_r"]) == pytest.approx(want["r"], abs=1e-3)
    text = (report / "REPORT.md").read_text()
    for label in ("fig:robustCvsR", "tab:results_imagenet", "tab:results_imagenet_c", "tab:results_imagenet_p",
                  "tab:results_imagenet_r_calibration", "fig:imagenet_type"):
        line = next(line for line in text.splitlines() if line.startswith(f"| `{label}`"))
        assert "**filled**" in line, line


def _check_sweep_table(sweep: Path) -> None:
    """`noisymix sweep results_imagenet` regenerates DIR/table/ from DIR/runs with the plan's
    comparisons: all four ImageNet tables, our values in them (before: no comparisons at all)."""
    from noisymix_app.sweep.plan import build_plan
    from noisymix_figures.sweep_table import write_table

    plan = build_plan("results_imagenet", [0])
    assert {r.name for r in plan.runs} >= {f"imagenet-resnet50-{m}-seed0" for m in METHODS}
    text = write_table(sweep, plan).read_text()
    record = json.loads((sweep / "table" / "results_imagenet.json").read_text())
    assert set(record["tables"]) == {f"tab:{t}" for t in IMAGENET_TABLES}
    want = _expected(sweep, "noisymix")
    noisymix = record["tables"]["tab:results_imagenet"]["NoisyMix (ours)"]
    assert noisymix["imagenet resnet50 ImageNet-P (↓%)"]["mean"] == pytest.approx(want["mfr"])
    assert noisymix["imagenet resnet50 ImageNet-R (↑%)"]["mean"] == pytest.approx(want["r"])
    assert f"{want['mfr']:.1f} ({want['mfr_no_noise']:.1f})" in text
