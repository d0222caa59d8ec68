"""Issue 63, goal 1: one verdict per claim, on every committed run of the recipe (noisymix_app.reproduce.pool)."""

from __future__ import annotations

import json

import pytest

from noisymix_app.reproduce.plans import PLANS
from noisymix_app.reproduce.pool import pool, recipe
from noisymix_app.reproduce.summary import derive
from noisymix_infra.stats import Seeds

SETS = {"c": "a" * 64, "p": "b" * 64}


def _plan(name: str) -> dict:
    return json.loads(json.dumps(PLANS[name].__dict__))


def _cell(values: dict[int, float]) -> dict:
    return {"values": list(values.values()), "seeds": list(values), "step": 100 / 300}


def _source(name: str, seeds: list[int], shift: float, sets: dict = SETS) -> dict:
    """A committed summary of plan ``name``: NoisyMix ``shift`` points above AugMix on every seed."""
    table = {m: {"corrupted": _cell({s: 80.0 + (shift if m == "noisymix" else 0.0) + 0.3 * (s % 3) for s in seeds})}
             for m in ("augmix_jsd", "noisymix")}
    return {"plan": {**_plan(name), "seeds": seeds}, "plan_name": name, "table": table, "sets": sets}


def _own() -> tuple[dict, dict]:
    record = {"plan": _plan("laptop"), "plan_name": "laptop", "sets": SETS}
    values = {m: {"corrupted": Seeds({s: 80.0 + (1.0 if m == "noisymix" else 0.0) + 0.3 * (s % 3) + 0.1 * (s % 2)
                                      for s in range(9)}, step=100 / 300)} for m in ("augmix_jsd", "noisymix")}
    return record, values


def test_runs_of_the_recipe_and_sets_pool_and_others_are_named_not_pooled(tmp_path):
    (tmp_path / "central.json").write_text(json.dumps(_source("central", list(range(20, 30)), 2.0)))
    (tmp_path / "other-sets.json").write_text(json.dumps(_source("central", [40, 41], 9.0, {"c": "c" * 64})))
    (tmp_path / "quick.json").write_text(json.dumps(_source("quick", [50], 9.0)))
    record, values = _own()
    pooled, what, _ = pool(values, record, tmp_path)
    assert sorted(pooled["noisymix"]["corrupted"]) == [*range(9), *range(20, 30)]
    # the pooled paired differences: this run's 9 and the source's 10, nothing else
    diffs = [pooled["noisymix"]["corrupted"][s] - pooled["augmix_jsd"]["corrupted"][s] for s in range(20, 30)]
    assert diffs == pytest.approx([2.0] * 10)
    assert {s["file"]: s["why"] for s in what["not_pooled"]} == {"other-sets.json": "other sets",
                                                                 "quick.json": "another recipe"}
    assert what["sources"][0]["file"] == "central.json" and len(what["sources"][0]["sha256"]) == 64
    assert values["noisymix"]["corrupted"].keys() == set(range(9))  # the summary's own values are not changed


def test_a_seed_in_two_places_is_refused_in_one_line(tmp_path):
    (tmp_path / "central.json").write_text(json.dumps(_source("central", [7, 20], 2.0)))
    record, values = _own()
    with pytest.raises(ValueError, match=r"central\.json: augmix_jsd seed 7 .*also in this run: no seed counts twice"):
        pool(values, record, tmp_path)


def test_a_source_of_the_summarys_own_plan_is_its_own_runs_not_pooled(tmp_path):
    (tmp_path / "laptop.json").write_text(json.dumps(_source("laptop", list(range(9)), 5.0)))
    record, values = _own()
    pooled, what, _ = pool(values, record, tmp_path)
    assert what["not_pooled"] == [{"file": "laptop.json", "plan": "laptop", "why": "its own plan's runs"}]
    assert pooled["noisymix"]["corrupted"] == values["noisymix"]["corrupted"]


def test_the_recipe_ignores_which_runs_a_plan_makes_only():
    assert recipe(_plan("laptop")) == recipe(_plan("analogue-methods")) == recipe(_plan("central"))
    assert recipe(_plan("laptop")) != recipe(_plan("laptop-published-rows"))


def test_the_main_job_decides_on_the_pooled_seeds_and_a_pooled_plan_decides_nothing(tmp_path, monkeypatch):
    import noisymix_app.reproduce.pool as pool_module

    (tmp_path / "central.json").write_text(json.dumps(_source("central", list(range(20, 40)), 1.5)))
    monkeypatch.setattr(pool_module, "POOLED", tmp_path)
    record, values = _own()
    derived = derive(values, record, {})
    claim = next(c for c in derived["claims"] if c["id"] == "robust_noisymix_vs_augmix_jsd")
    assert claim["difference"]["n"] == 29 and derived["pooled"]["sources"][0]["file"] == "central.json"
    alone = derive(values, record, {}, pooled=False)
    assert next(c for c in alone["claims"] if c["id"] == claim["id"])["difference"]["n"] == 9
    central = derive(values, {**record, "plan": _plan("central"), "plan_name": "central"}, {})
    assert central["claims"] == [] and central["pooled"] is None


def test_the_central_plan_runs_the_seeds_the_committed_power_analysis_fixed():
    """Issue 63, goal 2: the power analysis was committed before the runs; the plan runs exactly its seeds, and they
    are seeds no other committed run of the two methods holds."""
    from pathlib import Path

    power = json.loads((Path(__file__).resolve().parents[2] / "docs" / "central-power.json").read_text())
    assert list(PLANS["central"].seeds) == power["new_seeds"]
    assert power["pooled_before_new"] + len(power["new_seeds"]) >= power["pairs_needed"]
    before = set(PLANS["laptop"].seeds) | set(PLANS["analogue-methods"].seeds)
    assert len(before) == power["pooled_before_new"] and not before & set(power["new_seeds"])


def test_the_power_rule_is_an_interval_no_wider_than_the_papers_effect():
    """The committed rule (noisymix_infra.stats.seeds_to_decide), checked by simulation at its answer: with the true
    sd, intervals at alpha/m of n pairs are no wider than the effect in at least 80 % of draws, of n - 1 in fewer."""
    import numpy as np

    from noisymix_infra.stats import seeds_to_decide, t_quantile

    sd, width, alpha = 1.8, 2.4, 0.05 / 16
    n = seeds_to_decide(sd, width, alpha)
    rng = np.random.default_rng(0)

    def share(k: int) -> float:
        s = rng.normal(0, sd, (20000, k)).std(axis=1, ddof=1)
        return float(np.mean(2 * t_quantile(1 - alpha / 2, k - 1) * s / k ** 0.5 <= width))

    assert share(n) >= 0.79 and share(n - 1) < 0.80
