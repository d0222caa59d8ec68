"""The screen's page says what its numbers say (issue 59, goal 2): the place among the eight, the paired
differences' words, "cannot place" exactly where the leave-one-out error reaches the spread, and a built-in
screened by name predicted by the line fitted without it; each checked against numbers computed here."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats

from noisymix_app.reproduce.plans import EIGHT_METHODS
from noisymix_app.screen.reference import read_reference
from noisymix_app.screen.report import page_record, render_markdown
from noisymix_app.screen.spec import Spec
from noisymix_figures.paper import method_columns

SEEDS = (4, 5, 6)
PLAN = {"name": "analogue-methods", "model": "preactresnet18", "width": 16, "epochs": 10, "train_overrides": [],
        "perturbed_limit": 200, "corruptions": None, "perturbations": None}


def _reference(tmp_path, ours_c, ours_p):
    """A summary whose methods' means on the proxy are ``ours_c`` / ``ours_p`` (by method), seeds spread
    by +-1 around them."""
    paper = method_columns(EIGHT_METHODS)
    table = []
    for m in EIGHT_METHODS:
        per_seed = {"clean": [90.0, 91.0, 92.0], "corrupted": [ours_c[m] - 1, ours_c[m], ours_c[m] + 1],
                    "mean_flip": [ours_p[m] - 0.5, ours_p[m], ours_p[m] + 0.5]}
        row = {"method": m, "row": paper[m]["row"], "paper_corrupted": paper[m]["corrupted"],
               "paper_mfr": paper[m]["mfr"], "per_seed": per_seed}
        row.update({k: {"mean": float(np.mean(v)), "half_width": 1.0} for k, v in per_seed.items()})
        table.append(row)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"plan": {"name": "analogue-methods", "seeds": list(SEEDS)}, "table": table}))
    return read_reference(path)


def _linear(tmp_path):
    paper = method_columns(EIGHT_METHODS)
    ours_c = {m: paper[m]["corrupted"] - 8 + 0.3 * (i % 3 - 1) for i, m in enumerate(EIGHT_METHODS)}
    ours_p = {m: paper[m]["mfr"] + 1 + 0.2 * (i % 2) for i, m in enumerate(EIGHT_METHODS)}
    return _reference(tmp_path, ours_c, ours_p), ours_c, ours_p


SPEC = Spec("mine:aug", "mine:aug@0123456789abcdef", "aug", "aug", "function", "/x/mine.py", "0" * 64)


def test_place_paired_words_and_prediction_follow_the_numbers(tmp_path):
    reference, ours_c, ours_p = _linear(tmp_path)
    ours = {"clean": [93.0, 94.0, 95.0], "corrupted": [80.0, 81.0, 82.5], "mean_flip": [9.0, 9.5, 9.2]}
    record = page_record(SPEC, reference, ours, plan=PLAN, runs={}, wall_seconds=1.0)
    # place: one more than the methods above it
    assert record["place"]["corrupted"]["rank"] == 1 + sum(v > np.mean(ours["corrupted"]) for v in ours_c.values())
    assert record["place"]["mean_flip"]["rank"] == 1 + sum(v < np.mean(ours["mean_flip"]) for v in ours_p.values())
    # a paired difference: the t-interval of the per-seed differences (scipy)
    base = reference.row("baseline")["per_seed"]["corrupted"]
    diffs = np.array(ours["corrupted"]) - np.array(base)
    entry = next(p for p in record["paired"] if p["against"] == "baseline" and p["measure"] == "corrupted")
    found = scipy.stats.ttest_1samp(diffs, 0).confidence_interval(0.95)
    assert entry["difference"]["mean"] - entry["difference"]["half_width"] == pytest.approx(found.low)
    assert entry["reads"] == ("higher" if found.low > 0 else "lower" if found.high < 0 else entry["reads"])
    # the prediction: the least-squares line of the paper's values on ours (numpy.linalg.lstsq), at our mean
    x = np.array([ours_c[m] for m in EIGHT_METHODS])
    y = np.array([method_columns(EIGHT_METHODS)[m]["corrupted"] for m in EIGHT_METHODS])
    coef = np.linalg.lstsq(np.column_stack([np.ones(8), x]), y, rcond=None)[0]
    predicted = record["maps"]["corrupted"]["prediction"]["value"]
    assert predicted == pytest.approx(coef[0] + coef[1] * np.mean(ours["corrupted"]))
    text = render_markdown(record)
    assert record["finding"] in text and "cannot place" not in text
    assert f"{record['maps']['corrupted']['covered']} of 8 intervals" in text


def test_the_page_says_the_proxy_cannot_place_a_method_where_it_misses_by_the_spread(tmp_path):
    paper = method_columns(EIGHT_METHODS)
    # Digits-P flips unrelated to the paper's mFR (a reversed order): the line misses by more than the spread
    order = sorted(EIGHT_METHODS, key=lambda m: paper[m]["mfr"])
    ours_p = {m: 5.0 + (i * 7) % 8 for i, m in enumerate(order)}
    ours_c = {m: paper[m]["corrupted"] - 8 for m in EIGHT_METHODS}
    reference = _reference(tmp_path, ours_c, ours_p)
    ours = {"clean": [93.0, 94.0, 95.0], "corrupted": [80.0, 81.0, 82.0], "mean_flip": [7.0, 7.5, 8.0]}
    record = page_record(SPEC, reference, ours, plan=PLAN, runs={}, wall_seconds=None)
    flips = record["maps"]["mean_flip"]
    assert flips["rmse"] >= flips["spread"] and not flips["placeable"]
    assert record["maps"]["corrupted"]["placeable"]
    assert "cannot place it on CIFAR-10-P" in record["finding"]
    assert "cannot place it on CIFAR-10-C" not in record["finding"]
    assert "**no**" in render_markdown(record)


def test_a_builtin_screened_by_name_is_predicted_without_itself_and_compared_with_its_row(tmp_path):
    reference, _, _ = _linear(tmp_path)
    committed = reference.row("nfm")["per_seed"]
    spec = Spec("nfm", "nfm", "nfm", "NFM", "built-in")
    record = page_record(spec, reference, {k: list(v) for k, v in committed.items()}, plan=PLAN, runs={},
                         wall_seconds=None)
    assert max(record["reproduces"]["max_abs_difference"].values()) == 0
    row = next(r for r in record["maps"]["corrupted"]["loo"] if r["method"] == "nfm")
    assert record["maps"]["corrupted"]["prediction"]["value"] == pytest.approx(row["predicted"])
    assert record["place"]["corrupted"]["of"] == 8  # among the seven others
    assert all(p["against"] != "nfm" for p in record["paired"])
    assert "equal the summary's" in render_markdown(record)
    # the unrounded values a screen computes (the summary's are written to 4 decimals) are equal too;
    # a difference past half that last place is told as one
    near = {k: [v + 4e-5 for v in values] for k, values in committed.items()}
    record = page_record(spec, reference, near, plan=PLAN, runs={}, wall_seconds=None)
    assert "equal the summary's (to its 4 decimals)" in render_markdown(record)
    far = {k: [v + 2e-4 for v in values] for k, values in committed.items()}
    record = page_record(spec, reference, far, plan=PLAN, runs={}, wall_seconds=None)
    assert "differ from the summary's by up to 0.0002 points" in render_markdown(record)
