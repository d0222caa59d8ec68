"""Issue 65, the screen's page and options: per CIFAR-10-C family and corruption the method's accuracy, its
paired differences with the Baseline and NoisyMix and the reference methods' means, each beside the analogue's
multiplier of CIFAR's strength; the words, before any prediction, where the gain lies in corruptions the proxy
scales far from CIFAR's; the second view at the published rows (``--also-published``) and where the views
disagree; its committed reference absent, said in one line; bad input to the new options one line, nothing
written.

None of these tests trains: the page is made from fixture summaries and per-seed numbers, the evaluation
files from fixture JSONs.  Every expected number is computed here (numpy, scipy, the fit file read as JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from noisymix_app.cli import main
from noisymix_app.reproduce.plans import EIGHT_METHODS
from noisymix_app.screen.reference import read_reference
from noisymix_app.screen.report import page_record, render_markdown, write_page
from noisymix_app.screen.spec import Spec
from noisymix_figures.paper import method_columns
from tests.app.test_screen import make_summary

SEEDS = (4, 5, 6)
#: the 15 corruptions by family, written out here (not read from the package's vocabulary)
FAMILIES = {"noise": ("gaussian_noise", "shot_noise", "impulse_noise"),
            "blur": ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur"),
            "weather": ("snow", "frost", "fog", "brightness"),
            "digital": ("contrast", "elastic_transform", "pixelate", "jpeg_compression")}
NAMES = [c for group in FAMILIES.values() for c in group]
PLAN = {"name": "analogue-methods", "model": "preactresnet18", "width": 16, "epochs": 10, "train_overrides": [],
        "perturbed_limit": 200, "corruptions": None, "perturbations": None, "corruption_params": "digits-matched"}
SPEC = Spec("mine:aug", "mine:aug@0123456789abcdef", "aug", "aug", "function", "/x/mine.py", "0" * 64)
FIT = json.loads((Path(__file__).resolve().parents[2] / "fullscale" / "corruptions" /
                  "digits_matched.json").read_text())["strengths"]
SCALE = {"params": "digits-matched", "source": "fullscale/corruptions/digits_matched.json", "values": FIT}


def _per_corruption(base: float, gains: dict[str, float], rng) -> dict[str, list[float]]:
    """Per corruption, per seed: a level of its own plus ``gains`` (points), with seed noise."""
    return {c: [float(v) for v in base + 2 * i % 7 + gains.get(c, 0.0) + rng.normal(0, 0.4, len(SEEDS))]
            for i, c in enumerate(NAMES)}


def _family_means(per_c: dict[str, list[float]]) -> dict[str, list[float]]:
    return {f: [float(np.mean([per_c[c][s] for c in group])) for s in range(len(SEEDS))]
            for f, group in FAMILIES.items()}


def _row(method: str, per_c: dict, *, breakdown: bool = True, paper: bool = True) -> dict:
    p = method_columns([method])[method]
    per_seed = {"clean": [90.0, 91.0, 92.0], "corrupted": [float(np.mean([per_c[c][s] for c in NAMES]))
                                                           for s in range(len(SEEDS))],
                "mean_flip": [float(p["mfr"] + 1 + 0.1 * s) for s in range(len(SEEDS))]}
    if breakdown:
        per_seed["per_corruption"] = per_c
        per_seed["per_family"] = _family_means(per_c)
    row = {"method": method, "row": p["row"], "per_seed": per_seed}
    if paper:
        row.update({"paper_corrupted": p["corrupted"], "paper_mfr": p["mfr"]})
    row.update({k: {"mean": float(np.mean(per_seed[k])), "half_width": 1.0} for k in ("clean", "corrupted",
                                                                                     "mean_flip")})
    return row


#: each reference method's gain over the Baseline by family (points), the Baseline's own 0
OFFSETS = {m: {"noise": 0.8 * i, "blur": 0.3 * i, "weather": 0.5 * (i % 3), "digital": 0.2 * i}
           for i, m in enumerate(EIGHT_METHODS)}


def _rows(seed: int = 0, *, breakdown: bool = True, paper: bool = True) -> dict[str, dict]:
    rng = np.random.default_rng(seed)
    out = {}
    for m in EIGHT_METHODS:
        gains = {c: OFFSETS[m][f] for f, group in FAMILIES.items() for c in group}
        out[m] = _row(m, _per_corruption(60.0, gains, rng), breakdown=breakdown, paper=paper)
    return out


def _summary(tmp_path: Path, rows: dict[str, dict], name: str = "summary.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"plan": {"name": "analogue-methods", "seeds": list(SEEDS)},
                                "table": list(rows.values())}))
    return path


def _ours(base_rows: dict[str, dict], gains: dict[str, float], seed: int = 99) -> dict:
    """The screened method: the Baseline's per-seed numbers plus ``gains`` and noise of its own."""
    rng = np.random.default_rng(seed)
    base = base_rows["baseline"]["per_seed"]["per_corruption"]
    per_c = {c: [float(v + gains.get(c, 0.0) + rng.normal(0, 0.5)) for v in base[c]] for c in NAMES}
    return {"clean": [93.0, 94.0, 95.0], "corrupted": [float(np.mean([per_c[c][s] for c in NAMES]))
                                                        for s in range(len(SEEDS))],
            "mean_flip": [9.0, 9.5, 9.2], "per_corruption": per_c, "per_family": _family_means(per_c)}


def _t_interval(a, b) -> tuple[float, float]:
    found = scipy.stats.ttest_1samp(np.asarray(a) - np.asarray(b), 0).confidence_interval(0.95)
    return float(found.low), float(found.high)


#: a noise-type augmentation at CIFAR's strength: it helps against the three noises, little elsewhere
NOISE_GAINS = {"gaussian_noise": 9.0, "shot_noise": 11.0, "impulse_noise": 7.0, "snow": 0.5, "contrast": 0.4}
#: a Cutout-like one: a little everywhere, most in weather and digital at ~1x
CUTOUT_GAINS = {"snow": 3.0, "frost": 2.5, "brightness": 2.0, "elastic_transform": 3.5, "pixelate": 2.5,
                "defocus_blur": 0.5}


def test_a_noise_augmentation_is_told_before_any_prediction_that_the_proxys_noise_is_several_times_cifars(tmp_path):
    rows = _rows()
    reference = read_reference(_summary(tmp_path, rows))
    ours = _ours(rows, NOISE_GAINS)
    record = page_record(SPEC, reference, ours, plan=PLAN, runs={}, wall_seconds=None, scale=SCALE)
    found = record["by_family"]
    assert found["reference"] is None
    # per family: our mean and the paired difference with the Baseline and NoisyMix, seed by seed (scipy)
    noise = next(e for e in found["families"] if e["name"] == "noise")
    ours_noise = np.mean([ours["per_corruption"][c] for c in FAMILIES["noise"]], axis=0)
    assert noise["ours"]["mean"] == pytest.approx(float(ours_noise.mean()))
    for against in ("baseline", "noisymix"):
        theirs = np.mean([rows[against]["per_seed"]["per_corruption"][c] for c in FAMILIES["noise"]], axis=0)
        d = noise["paired"][against]["difference"]
        assert (d["mean"] - d["half_width"], d["mean"] + d["half_width"]) == pytest.approx(
            _t_interval(ours_noise, theirs))
    assert noise["reference"]["mixup"] == pytest.approx(np.mean(rows["mixup"]["per_seed"]["per_family"]["noise"]))
    # the multiplier: the fit's own, the family's range
    assert noise["multiplier"]["low"] == min(FIT[c] for c in FAMILIES["noise"])
    assert noise["multiplier"]["high"] == max(FIT[c] for c in FAMILIES["noise"])
    # the share of the positive gain in corruptions scaled beyond 2x or below 0.5x, computed here
    base = rows["baseline"]["per_seed"]["per_corruption"]
    gains = {c: float(np.mean(np.subtract(ours["per_corruption"][c], base[c]))) for c in NAMES}
    positive = {c: g for c, g in gains.items() if g > 0}
    far = sum(g for c, g in positive.items() if FIT[c] > 2 or FIT[c] < 0.5)
    share = far / sum(positive.values())
    assert share > 0.5 and found["finding"]["share"] == pytest.approx(share)
    words = found["finding"]["words"]
    low, high = min(FIT[c] for c in FAMILIES["noise"]), max(FIT[c] for c in FAMILIES["noise"])
    span = f"{low:.1f}–{high:.1f}×"
    assert f"noise corruptions the proxy makes {span} CIFAR's strength" in words
    assert f"{span} weaker against them here than against CIFAR-10-C's" in words
    assert f"{round(100 * share)} % of its summed per-corruption gain" in words
    assert "the prediction for them is the least trustworthy" in words
    # before any prediction: in the finding ahead of "Predicted", and the page's first paragraph
    finding = record["finding"]
    assert finding.index(words) < finding.index("Predicted:")
    text = render_markdown(record)
    assert text.index(words) < text.index("## Predicted standing")
    assert "## By family and corruption" in text and f"| fog | {FIT['fog']:.2f}× |" in text


def test_a_cutout_like_methods_page_shows_its_gain_by_family_beside_the_eights(tmp_path):
    rows = _rows(1)
    reference = read_reference(_summary(tmp_path, rows))
    ours = _ours(rows, CUTOUT_GAINS, seed=5)
    record = page_record(SPEC, reference, ours, plan=PLAN, runs={}, wall_seconds=None, scale=SCALE)
    found = record["by_family"]
    assert not found["finding"]["concentrated"] and found["finding"]["words"] is None
    text = render_markdown(record)
    assert "lies in corruptions whose strength the proxy scales far" not in record["finding"]
    weather = next(e for e in found["families"] if e["name"] == "weather")
    ours_w = np.mean([ours["per_corruption"][c] for c in FAMILIES["weather"]], axis=0)
    base_w = np.mean([rows["baseline"]["per_seed"]["per_corruption"][c] for c in FAMILIES["weather"]], axis=0)
    assert weather["paired"]["baseline"]["difference"]["mean"] == pytest.approx(float((ours_w - base_w).mean()))
    # the weather row of the page: our mean, its difference with the Baseline, the eight's means in order
    line = next(x for x in text.splitlines() if x.startswith("| weather |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[3].startswith(f"{float((ours_w - base_w).mean()):+.1f}")
    assert cells[5:] == [f"{np.mean(rows[m]['per_seed']['per_family']['weather']):.1f}" for m in EIGHT_METHODS]
    assert "|---|" in text and "| Gaussian noise |" in text
    # the figure has a second row (per family, per corruption), and the page is written whole
    write_page(tmp_path, record)
    assert {p.name for p in tmp_path.iterdir()} >= {"screen.png", "SCREEN.md", "screen.json"}
    assert json.loads((tmp_path / "screen.json").read_text())["by_family"]["families"][2]["name"] == "weather"


def test_a_summary_without_per_family_numbers_is_said_in_one_line_not_a_crash(tmp_path):
    rows = _rows(2, breakdown=False)
    reference = read_reference(_summary(tmp_path, rows))
    ours = _ours(_rows(2), NOISE_GAINS)
    record = page_record(SPEC, reference, ours, plan=PLAN, runs={}, wall_seconds=None, scale=SCALE)
    assert "per-family reference is not in this summary" in record["by_family"]["reference"]
    assert record["by_family"]["finding"] is None
    text = render_markdown(record)
    said = [x for x in text.splitlines() if "per-family reference is not in this summary" in x]
    assert len(said) == 1
    noise = next(e for e in record["by_family"]["families"] if e["name"] == "noise")
    assert noise["paired"] == {} and noise["ours"]["mean"] == pytest.approx(
        np.mean([ours["per_corruption"][c] for c in FAMILIES["noise"]]))


def test_the_committed_summary_gives_a_page_with_or_without_its_per_family_numbers():
    reference = read_reference()
    n = len(reference.seeds)
    per_c = {c: [70.0 + s for s in range(n)] for c in NAMES}
    ours = {"clean": [95.0] * n, "corrupted": [71.0] * n, "mean_flip": [5.0] * n, "per_corruption": per_c,
            "per_family": _family_means_n(per_c, n)}
    record = page_record(SPEC, reference, ours, plan=PLAN, runs={}, wall_seconds=None, scale=SCALE)
    assert "## By family and corruption" in render_markdown(record)


def _family_means_n(per_c, n):
    return {f: [float(np.mean([per_c[c][s] for c in group])) for s in range(n)] for f, group in FAMILIES.items()}


@pytest.mark.parametrize(("change", "words"), [
    (lambda row: row["per_seed"]["per_corruption"].__setitem__("fog", [1.0]), "per_corruption.fog is not 3 numbers"),
    (lambda row: row["per_seed"]["per_corruption"].__setitem__("fogg", [1.0, 2.0, 3.0]), "names 'fogg'"),
    (lambda row: row["per_seed"].__setitem__("per_family", [1.0]), "per_family is not an object"),
])
def test_a_bad_per_family_block_is_refused_in_one_line(change, words, tmp_path):
    rows = _rows(3)
    change(rows["mixup"])
    with pytest.raises(ValueError) as caught:
        read_reference(_summary(tmp_path, rows))
    assert len(str(caught.value).splitlines()) == 1 and words in str(caught.value), str(caught.value)


# ----------------------------------------------------------------------------- the second view

def _published(tmp_path: Path, rows: dict[str, dict], **extra) -> Path:
    path = tmp_path / "published.json"
    data = {"params": "cifar", "plan": {"name": "analogue-methods", "seeds": list(SEEDS)}, "seeds": list(SEEDS),
            "table": list(rows.values()), **extra}
    path.write_text(json.dumps(data))
    return path


def _view(ours_pub: dict, published_reference) -> dict:
    return {"published_ours": ours_pub, "published_reference": published_reference, "sets": None,
            "scale_p": None}


def test_the_published_view_says_where_the_two_views_disagree(tmp_path):
    from noisymix_app.screen.published import read_published

    rows = _rows(4)
    reference = read_reference(_summary(tmp_path, rows))
    ours = _ours(rows, NOISE_GAINS | dict.fromkeys(FAMILIES["blur"], 1.5))
    # at the published rows: the noise gain turns negative (-3 points); blur's per-seed gains are the matched
    # view's, moved by a tenth of a point at most
    pub_rows = _rows(5, paper=False)
    ours_pub = _ours(pub_rows, dict.fromkeys(FAMILIES["noise"], -3.0), seed=7)
    base_m, base_p = rows["baseline"]["per_seed"]["per_corruption"], pub_rows["baseline"]["per_seed"]["per_corruption"]
    for c in FAMILIES["blur"]:
        ours_pub["per_corruption"][c] = [p + (o - m) + d for p, o, m, d in zip(
            base_p[c], ours["per_corruption"][c], base_m[c], (0.1, -0.1, 0.05), strict=True)]
    ours_pub["per_family"] = _family_means(ours_pub["per_corruption"])
    published = read_published(_published(tmp_path, pub_rows), reference, given=True)
    record = page_record(SPEC, reference, ours, plan=PLAN, runs={}, wall_seconds=None, scale=SCALE,
                         published=_view(ours_pub, published))
    view = record["published"]
    noise = next(e for e in view["families"] if e["name"] == "noise")["comparison"]
    fam = lambda per_c, f: np.mean([per_c[c] for c in FAMILIES[f]], axis=0)  # noqa: E731
    gain_m = fam(ours["per_corruption"], "noise") - fam(rows["baseline"]["per_seed"]["per_corruption"], "noise")
    gain_p = fam(ours_pub["per_corruption"], "noise") - fam(pub_rows["baseline"]["per_seed"]["per_corruption"],
                                                             "noise")
    assert noise["matched_gain"]["mean"] == pytest.approx(gain_m.mean())
    assert noise["published_gain"]["mean"] == pytest.approx(gain_p.mean())
    low, high = _t_interval(gain_p, gain_m)
    assert (noise["change"]["mean"] - noise["change"]["half_width"]) == pytest.approx(low)
    assert noise["disagree"] and "the gain's sign differs" in noise["why"] and high < 0
    assert "noise" in view["disagree"]
    # a family whose gain is the same in both views (all within noise): no disagreement
    blur = next(e for e in view["families"] if e["name"] == "blur")["comparison"]
    assert not blur["disagree"] and "blur" not in view["disagree"]
    # said before any prediction
    assert record["finding"].index("The two views disagree on noise") < record["finding"].index("Predicted:")
    span = f"{min(FIT[c] for c in FAMILIES['noise']):.1f}–{max(FIT[c] for c in FAMILIES['noise']):.1f}×"
    assert f"disagree on noise ({span} CIFAR's strength on the matched sets; the gain's sign" in record["finding"]
    text = render_markdown(record)
    assert "## A second view at the published strengths" in text and "**disagree**" in text


def test_without_its_committed_reference_the_published_view_says_how_it_is_made(tmp_path):
    from noisymix_app.screen.published import COMMAND

    rows = _rows(6)
    reference = read_reference(_summary(tmp_path, rows))
    ours = _ours(rows, NOISE_GAINS)
    ours_pub = _ours(rows, {}, seed=8)
    record = page_record(SPEC, reference, ours, plan=PLAN, runs={}, wall_seconds=None, scale=SCALE,
                         published=_view(ours_pub, None))
    view = record["published"]
    assert view["missing"] == f"no committed reference at the published rows; made by: {COMMAND}"
    assert view["ours"]["corrupted"]["mean"] == pytest.approx(np.mean(ours_pub["corrupted"]))
    words = view["words"]
    assert f"{np.mean(ours_pub['corrupted']):.1f}" in words and "made by:" in words
    text = render_markdown(record)
    assert "no committed reference at the published rows; made by: python -m noisymix_app.screen.published" in text
    assert all(e["comparison"] is None for e in view["families"])


def test_published_numbers_are_read_from_the_screens_own_published_folder(tmp_path):
    """Fixture evaluation files under ``DIR/published/<run>/eval``: the per-family numbers are the means of
    their members, the mean flip over the plan's perturbations."""
    from noisymix_app.reproduce.plans import PLANS
    from noisymix_app.screen.published import published_numbers

    plan = PLANS["analogue-methods"]
    rng = np.random.default_rng(3)
    acc = {}
    for s in SEEDS:
        folder = tmp_path / "published" / f"aug-seed{s}" / "eval"
        folder.mkdir(parents=True)
        acc[s] = {c: float(rng.uniform(0.3, 0.9)) for c in NAMES}
        flips = {p: {"flip_probability": 0.01 * (i + 1)} for i, p in enumerate(plan.perturbations or
                                                                               ("gaussian_noise", "shot_noise",
                                                                                "motion_blur", "zoom_blur", "snow",
                                                                                "brightness", "translate", "rotate",
                                                                                "tilt", "scale"))}
        (folder / f"{plan.corrupted_suite}.json").write_text(json.dumps({"summary": {"per_corruption": acc[s]}}))
        (folder / f"{plan.perturbed_suite}.json").write_text(json.dumps({"results": flips}))
    found = published_numbers(tmp_path, [f"aug-seed{s}" for s in SEEDS], plan)
    for f, group in FAMILIES.items():
        assert found["per_family"][f] == pytest.approx([100 * np.mean([acc[s][c] for c in group]) for s in SEEDS])
    assert found["mean_flip"] == pytest.approx([100 * np.mean([0.01 * (i + 1) for i in range(10)])] * 3)
    assert "clean" not in found


def test_a_published_reference_of_other_seeds_or_plan_is_one_line(tmp_path):
    from noisymix_app.screen.published import read_published

    rows = _rows(7)
    reference = read_reference(_summary(tmp_path, rows))
    for extra, words in (({"plan": {"name": "analogue-methods", "seeds": [1, 2, 3]}}, "are not the eight-method"),
                         ({"params": "digits-matched"}, "not 'cifar'"),
                         ({"plan": {"name": "analogue-methods --set epochs=2", "seeds": list(SEEDS)}},
                          "is not the eight-method summary's")):
        with pytest.raises(ValueError) as caught:
            read_published(_published(tmp_path, rows, **extra), reference, given=True)
        assert len(str(caught.value).splitlines()) == 1 and words in str(caught.value), str(caught.value)
    assert read_published(tmp_path / "absent.json", reference, given=False) is None
    with pytest.raises(ValueError, match="no such file"):
        read_published(tmp_path / "absent.json", reference, given=True)


@pytest.mark.parametrize(("extra", "words"), [
    (["--published-summary", "x.json"], "give it with --also-published"),
    (["--also-published", "--published-summary", "absent.json"], "--published-summary absent.json: no such file"),
])
def test_bad_input_to_the_new_options_is_one_line_and_nothing_is_written(extra, words, tmp_path, capsys,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    summary = make_summary(tmp_path / "summary.json")
    out = tmp_path / "out"
    assert main(["screen", "baseline", "--out", str(out), "--summary", str(summary), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err
    assert not out.exists()


def test_fresh_clears_a_removed_runs_published_evaluations(tmp_path):
    from noisymix_app.screen.command import _clear

    run = tmp_path / "published" / "old-seed1" / "eval"
    run.mkdir(parents=True)
    (run / "digits-c.json").write_text("{}")
    keep = tmp_path / "published" / "aug-seed1"
    keep.mkdir()
    _clear(tmp_path, ["old-seed1"])
    assert not (tmp_path / "published" / "old-seed1").exists() and keep.is_dir()


def test_the_builder_of_the_published_reference_refuses_a_folder_without_the_runs(tmp_path):
    from noisymix_app.screen.published import build_published_summary

    summary = make_summary(tmp_path / "summary.json")
    out = tmp_path / "published.json"
    with pytest.raises(ValueError) as caught:
        build_published_summary(tmp_path / "nothing", out, summary=summary)
    assert len(str(caught.value).splitlines()) == 1 and "no finished run" in str(caught.value)
    assert not out.exists() and not (tmp_path / "nothing").exists()


def test_the_published_evaluations_are_of_the_runs_weights_beside_their_own_and_kept_while_they_hold(tmp_path,
                                                                                                   monkeypatch):
    """``evaluate_published``: each run's ``final.pt`` on the published sets, into ``DIR/published/<run>/eval``
    (the run's own ``eval/`` untouched), with the plan's partial flags; a complete result of the same weights on
    the same set is kept, one of other weights is made again.  The evaluation itself is a stand-in."""
    import hashlib

    import fullscale.evaluation.evaluate_run as evaluate_run
    import fullscale.run_model as run_model
    from noisymix_app.reproduce.plans import PLANS
    from noisymix_app.screen.published import evaluate_published
    from noisymix_infra.io import data_fingerprint

    plan = PLANS["analogue-methods"]
    for kind in ("c", "p"):
        folder = tmp_path / "data" / f"digits-{kind}"
        folder.mkdir(parents=True)
        (folder / "labels.npy").write_bytes(b"0")
    runs = []
    for s in SEEDS[:2]:
        run = tmp_path / "runs" / f"aug-seed{s}"
        run.mkdir(parents=True)
        (run / "final.pt").write_bytes(f"weights {s}".encode())
        runs.append((run.name, run))
    calls = []

    def fake_evaluate(net, config, suite, run_dir, *, weights, digest, own_run, data_root, device, options):
        calls.append((suite, Path(run_dir).name, Path(data_root).name, options.partial))
        (Path(run_dir) / "eval").mkdir(parents=True, exist_ok=True)
        (Path(run_dir) / "eval" / f"{suite}.json").write_text(json.dumps({
            "complete": True, "checkpoint": {"sha256": digest}, "data_root": str(Path(data_root).resolve()),
            "data_fingerprint": data_fingerprint(data_root)}))

    monkeypatch.setattr(run_model, "load_run_model", lambda run, checkpoint, device: (object(), {}))
    monkeypatch.setattr(evaluate_run, "evaluate_model", fake_evaluate)
    made = evaluate_published(plan, tmp_path, runs, device="cpu")
    # the partial flags are those the sweep evaluates the plan's own runs with (its EvalSpecs)
    from noisymix_app.sweep.plan import plan_from_reproduce

    partial = {ev.suite: ev.partial for ev in plan_from_reproduce(plan, "c", perturbed="p").runs[0].evals}
    assert sorted(calls) == sorted((suite, name, f"digits-{k}", partial[suite]) for name, _ in runs
                                   for suite, k in ((plan.corrupted_suite, "c"), (plan.perturbed_suite, "p")))
    assert len(made) == 4 and not (runs[0][1] / "eval").exists()
    written = json.loads((tmp_path / "published" / "aug-seed4" / "eval" / f"{plan.corrupted_suite}.json").read_text())
    assert written["checkpoint"]["sha256"] == hashlib.sha256(b"weights 4").hexdigest()
    calls.clear()
    assert evaluate_published(plan, tmp_path, runs, device="cpu") == [] and calls == []
    (runs[1][1] / "final.pt").write_bytes(b"retrained")  # other weights: evaluated again, the other run kept
    assert evaluate_published(plan, tmp_path, runs, device="cpu") == [f"aug-seed5 {plan.corrupted_suite}",
                                                                        f"aug-seed5 {plan.perturbed_suite}"]


def test_a_published_reference_beside_a_summary_without_per_family_numbers_gives_the_published_gain_alone(tmp_path):
    from noisymix_app.screen.published import read_published

    rows = _rows(8, breakdown=False)
    reference = read_reference(_summary(tmp_path, rows))
    pub_rows = _rows(9, paper=False)
    ours_pub = _ours(pub_rows, dict.fromkeys(FAMILIES["noise"], 4.0), seed=3)
    published = read_published(_published(tmp_path, pub_rows), reference, given=True)
    record = page_record(SPEC, reference, _ours(_rows(8), {}), plan=PLAN, runs={}, wall_seconds=None, scale=SCALE,
                         published=_view(ours_pub, published))
    view = record["published"]
    noise = next(e for e in view["families"] if e["name"] == "noise")
    gain = (np.mean([ours_pub["per_corruption"][c] for c in FAMILIES["noise"]], axis=0)
            - np.mean([pub_rows["baseline"]["per_seed"]["per_corruption"][c] for c in FAMILIES["noise"]], axis=0))
    assert noise["comparison"] is None and noise["published_gain"]["mean"] == pytest.approx(gain.mean())
    assert f"noise {gain.mean():+.1f}" in view["words"]
    assert "the eight-method summary has no per-family numbers" in view["words"] and view["disagree"] == []


# ----------------------------------------------------------------------------- goal 6: five of the seeds

def test_a_screen_trains_five_of_the_summarys_seeds_paired_with_the_same_seeds():
    """By default the summary's first five seeds; ``--set seeds=...`` names others of them; every per-seed list
    of the reference (per corruption and per family too) is cut to those seeds, in their order, its means kept."""
    from noisymix_app.screen.plan import screen_plan, screen_seeds
    from noisymix_app.screen.reference import DEFAULT_SUMMARY, read_reference

    whole = read_reference(DEFAULT_SUMMARY)
    reference, rest = screen_seeds(whole, ["workers=1"])
    assert rest == ["workers=1"] and reference.seeds == whole.seeds[:5] and reference.summary_seeds == whole.seeds
    assert screen_plan(reference, rest).seeds == whole.seeds[:5]
    picked, _ = screen_seeds(whole, [f"seeds={whole.seeds[7]},{whole.seeds[2]}"])
    for row, full in zip(picked.rows, whole.rows, strict=True):
        assert row["per_seed"]["corrupted"] == [full["per_seed"]["corrupted"][7], full["per_seed"]["corrupted"][2]]
        for name, values in row["per_seed"]["per_corruption"].items():
            assert values == [full["per_seed"]["per_corruption"][name][i] for i in (7, 2)]
        assert row["corrupted"] == full["corrupted"]  # the summary's mean over all its seeds
    for bad, why in (("seeds=999", "no runs of seed 999"), (f"seeds={whole.seeds[0]}", "two seeds at least"),
                     (f"seeds={whole.seeds[0]},{whole.seeds[0]}", "named twice"), ("seeds=x", "integer")):
        with pytest.raises(ValueError, match=why):
            screen_seeds(whole, [bad])


def test_the_committed_reference_at_the_published_rows_is_of_the_committed_summarys_runs():
    """docs/published-strengths-summary.json (goal 3: made once from the eight-method plan's finished models)
    reads as a reference of the committed summary: its plan and seeds, every method of it, a run per method and
    seed, and the sha256 of the summary it was made from."""
    from noisymix_app.screen.published import PUBLISHED_SUMMARY, read_published
    from noisymix_app.screen.reference import DEFAULT_SUMMARY, read_reference

    if not PUBLISHED_SUMMARY.is_file():
        pytest.skip("no committed reference at the published rows")
    reference = read_reference(DEFAULT_SUMMARY)
    published = read_published(None, reference, given=False)
    assert {r["method"] for r in published.rows} == set(reference.methods)
    data = json.loads(PUBLISHED_SUMMARY.read_text())
    assert data["analogue_summary"]["sha256"] == reference.sha256
    assert set(data["runs"]) == {f"{m}-seed{s}" for m in reference.methods for s in reference.seeds}
    assert published.sets is not None and published.sets != reference.sets  # other sets than the matched ones


def test_a_noise_augmentation_too_weak_for_the_proxys_noise_is_still_told_the_scale_before_any_prediction(tmp_path):
    """The real screen of docs/examples/gaussian_noise.py (CIFAR-10-C's own sigmas) gained +4.9 on the matched
    noise and more in weather: no concentration, so no warning; the page still says, before the prediction, each
    family's multiplier and the share of the gain in the far corruptions, and the second view's disagreement on
    noise names the multiplier."""
    rows = _rows(2)
    reference = read_reference(_summary(tmp_path, rows))
    weak = {"gaussian_noise": 1.5, "shot_noise": 1.0, "snow": 4.0, "frost": 3.0, "elastic_transform": 3.0}
    record = page_record(SPEC, reference, _ours(rows, weak), plan=PLAN, runs={}, wall_seconds=None, scale=SCALE)
    scale = record["by_family"]["finding"]
    assert scale["words"] is None and not scale["concentrated"]
    finding = record["finding"]
    noise = f"noise {min(FIT[c] for c in FAMILIES['noise']):.1f}–{max(FIT[c] for c in FAMILIES['noise']):.1f}×"
    assert noise in finding and f"{round(100 * scale['share'])} % of its gain lies in those scaled" in finding
    assert finding.index(noise) < finding.index("Predicted:")
