"""The reproduce summary: t-intervals over seeds and paired claims (the quick plan's summary end to end:
tests/app/test_reproduce.py, one run of the plan for both)."""

from __future__ import annotations

import dataclasses
import json

from noisymix_app.reproduce.plans import PLANS
from noisymix_app.reproduce.summary import render, write_summary

T975_DF2 = 4.302652729911275  # Student t, 97.5 % quantile, 2 degrees of freedom (printed tables: 4.303)
T80_DF2 = 1.0606601717798212  # Student t, 80 % quantile, 2 degrees of freedom (printed tables: 1.061)


def _fake_folder(tmp_path, numbers):
    """A reproduce folder with only the evaluation files: numbers[method] = [(clean, c, rms[, flip]) per seed]."""
    out = tmp_path / "out"
    plan = dataclasses.replace(PLANS["laptop"], methods=tuple(numbers), seeds=(0, 1, 2))
    (out).mkdir()
    (out / "reproduce.json").write_text(json.dumps({"plan": dataclasses.asdict(plan), "steps": [], "seconds": 60}))
    for method, rows in numbers.items():
        for seed, (clean, corrupted, rms, *flip) in enumerate(rows):
            ev = out / "runs" / f"{method}-seed{seed}" / "eval"
            ev.mkdir(parents=True)
            (ev / "clean.json").write_text(json.dumps({"summary": {"accuracy": clean}}))
            if flip:
                (ev / f"{plan.perturbed_suite}.json").write_text(json.dumps(
                    {"summary": {"mean_flip_probability": flip[0]}}))
            (ev / f"{plan.corrupted_suite}.json").write_text(json.dumps(
                {"summary": {"mean_accuracy": corrupted, "per_corruption": {f"c{i}": 0 for i in range(15)}}}))
            (ev / "calibration.json").write_text(json.dumps({"summary": {"rms_calibration_error": rms}}))
    return out


def test_intervals_and_verdicts_match_a_hand_computation(tmp_path):
    out = _fake_folder(tmp_path, {
        "baseline": [(0.90, 0.70, 0.05), (0.92, 0.71, 0.06), (0.91, 0.72, 0.07)],
        # robustness +10 +10 +11 (holds); clean -0.5 -3 -1 (within noise of the 1-point tolerance)
        "noisymix": [(0.895, 0.80, 0.10), (0.89, 0.81, 0.10), (0.90, 0.83, 0.10)],
        # robustness -5 -6 -5 (fails)
        "nfm": [(0.90, 0.65, 0.1), (0.92, 0.65, 0.1), (0.91, 0.67, 0.1)],
    })
    summary = write_summary(out, "laptop")
    base = summary["table"]["baseline"]["clean"]
    # mean 91, sd 1 (values 90, 92, 91): half width t * 1 / sqrt(3)
    assert abs(base["mean"] - 91.0) < 1e-9
    assert abs(base["half_width"] - T975_DF2 / 3 ** 0.5) < 1e-9
    verdicts = {c["id"]: c for c in summary["claims"]}
    assert verdicts["robust_noisymix_vs_baseline"]["verdict"] == "holds"
    assert verdicts["clean_noisymix_vs_baseline"]["verdict"] == "within noise"
    assert verdicts["robust_noisymix_vs_nfm"]["verdict"] == "holds"
    # NFM minus Baseline is no claim of the paper: a descriptive row, its interval below 0
    nfm = {c["id"]: c for c in summary["descriptive"]}["robust_nfm_vs_baseline"]["difference"]
    assert nfm["mean"] + nfm["half_width"] < 0
    # paired differences 10, 10, 11: sd 1/sqrt(3); the minimum detectable difference from the noncentral t (issue
    # 63, goal 5): at it a two-sided 5 % paired test has 80 % power, above the normal-style (t.975 + t.80) sd / sqrt(3)
    from scipy.stats import nct

    d = verdicts["robust_noisymix_vs_baseline"]["difference"]
    assert abs(d["mean"] - 31 / 3) < 1e-9
    delta = d["mdd80"] / ((1 / 3 ** 0.5) / 3 ** 0.5)
    assert abs(nct.sf(T975_DF2, 2, delta) + nct.cdf(-T975_DF2, 2, delta) - 0.80) < 1e-6
    assert d["mdd80"] > (T975_DF2 + T80_DF2) * (1 / 3 ** 0.5) / 3 ** 0.5
    text = (out / "SUMMARY.md").read_text()
    assert "| Baseline | 91.0 ± 2.5 | 71.0 ± 2.5 |" in text
    # the committed JSON renders to the same text (the README test relies on it)
    assert render(json.loads((out / "summary.json").read_text())) == text


def test_stability_claims_compare_flip_probabilities_lower_is_better(tmp_path):
    out = _fake_folder(tmp_path, {
        "baseline": [(0.90, 0.70, 0.05, 0.040), (0.92, 0.71, 0.06, 0.050), (0.91, 0.72, 0.07, 0.045)],
        "augmix_jsd": [(0.90, 0.75, 0.05, 0.020), (0.92, 0.76, 0.06, 0.029), (0.91, 0.77, 0.07, 0.026)],
        "noisymix": [(0.90, 0.80, 0.10, 0.030), (0.89, 0.81, 0.10, 0.0395), (0.90, 0.83, 0.10, 0.0355)],
    })
    summary = write_summary(out, "laptop")
    claims = {c["id"]: c for c in summary["claims"]}
    # Baseline flips more (4.0, 5.0, 4.5 % against 3.0, 3.95, 3.55 %): differences 1.0, 1.05, 0.95 points
    base = claims["stable_noisymix_vs_baseline"]
    assert abs(base["difference"]["mean"] - 1.0) < 1e-9 and base["verdict"] == "holds"
    # AugMix flips less than NoisyMix here: the claim fails
    assert claims["stable_noisymix_vs_augmix_jsd"]["verdict"] == "fails"
    text = (out / "SUMMARY.md").read_text()
    assert "mean flip probability |" in text and "| 4.5 ± " in text


def test_the_summary_records_the_machine_that_made_it():
    """Issue 22, item 3: torch and numpy versions, CPU model and vector capability, threads."""
    import platform

    import numpy
    import torch

    from noisymix_infra.provenance import machine

    m = machine()
    assert m["versions"]["torch"].split("+")[0] == torch.__version__.split("+")[0]
    assert m["versions"]["numpy"] == numpy.__version__
    assert m["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert m["torch_threads"] == torch.get_num_threads()
    if platform.system() == "Linux":
        with open("/proc/cpuinfo") as info:
            names = [line.split(":", 1)[1].strip() for line in info if line.startswith("model name")]
        if names:
            assert m["cpu_model"] == names[0]


def test_the_wall_time_is_the_invocations_own_and_the_step_sum_named_as_such(tmp_path):
    """Issue 57, goal 7: summary.json's wall_seconds was the sum of the steps (1,786 s for a 1,005 s job); the
    wall time is the job's invocations' own seconds, the step sum named apart."""
    out = _fake_folder(tmp_path, {"baseline": [(0.9, 0.7, 0.05)] * 3, "noisymix": [(0.9, 0.8, 0.1)] * 3})
    log = json.loads((out / "reproduce.json").read_text())
    log["steps"] = [{"name": "train a", "seconds": 600.0}, {"name": "train b", "seconds": 500.0}]
    log["wall_seconds"] = 640.0
    (out / "reproduce.json").write_text(json.dumps(log))
    summary = write_summary(out, "laptop")
    assert summary["wall_seconds"] == 640.0 and summary["seconds"] == 1100.0
    assert "10.7 min wall (18.3 min summed over steps that ran side by side)" in (out / "SUMMARY.md").read_text()


def test_a_plan_without_baseline_claims_noisymix_beats_each_ablation_row(tmp_path):
    """The ablation plan (tab:ablation: "all components are needed") has no Baseline: its claims
    are NoisyMix against each row that drops a component."""
    out = _fake_folder(tmp_path, {
        "noisymix": [(0.90, 0.80, 0.1), (0.91, 0.81, 0.1), (0.90, 0.82, 0.1)],
        # 2, 3, 3 points less robust: NoisyMix beats this row
        "augmix_noise_jsd": [(0.90, 0.78, 0.1), (0.91, 0.78, 0.1), (0.90, 0.79, 0.1)],
        # 2, 3, 2 points more robust: the claim fails for this row (the same margin at every seed would
        # be a zero spread: no verdict, issue 54)
        "augmix_nfm": [(0.90, 0.82, 0.1), (0.91, 0.84, 0.1), (0.90, 0.84, 0.1)],
    })
    claims = {c["id"]: c for c in write_summary(out, "ablation")["claims"]}
    assert set(claims) == {"robust_noisymix_vs_augmix_noise_jsd", "robust_noisymix_vs_augmix_nfm"}
    assert claims["robust_noisymix_vs_augmix_noise_jsd"]["verdict"] == "holds"
    assert abs(claims["robust_noisymix_vs_augmix_noise_jsd"]["difference"]["mean"] - 8 / 3) < 1e-9
    assert claims["robust_noisymix_vs_augmix_nfm"]["verdict"] == "fails"
    assert "NoisyMix is more robust than the row without feature mixing (A-NJ)" in (out / "SUMMARY.md").read_text()
