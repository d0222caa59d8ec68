"""Issue 60, root cause 2: issue 54's fixes of the matched -C set were made for -C only.

Probed: after the Digits-P strengths changed, ``noisymix reproduce`` said "corrupt-p: done (kept)" and kept
the old -P set and every ``digits-p.json`` (the -C step carried the strengths' sha256, the -P step did
not); a -P set half made before a refit blocked every rerun ("rerun to continue" was untrue); and a
broken ``digits_p_matched.json``, or a perturbation the plan asks for that the fit did not fit, was refused
only after verify, toy and corrupt had run.  Every kind of matched set now goes through one registry
(``fullscale.corruptions.matched_sets``): the step identity, the kept/stale decision, the half-made-set
restart, the evaluations' invalidation and the plan check.  Here the real ``corrupt`` makes the sets
(one name, a few images)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from fullscale.corruptions import matched, matched_p
from fullscale.corruptions.matched_sets import MATCHED_SETS, strengths_identity
from noisymix_app.cli import main
from noisymix_app.reproduce import command as reproduce_command
from noisymix_app.reproduce.plan_check import check_plan
from noisymix_app.reproduce.plans import PLANS
from noisymix_app.reproduce.steps import _command_step, _remade_suites, _steps

PLAN = dataclasses.replace(PLANS["laptop"], corruptions=("contrast",), perturbations=("rotate",), perturbed_limit=4)
SET = ("data", "digits-p-digits-matched")


@pytest.fixture()
def packages(tmp_path, monkeypatch):
    """Both package files copied where a test may refit or break them."""
    paths = {}
    for module, attr, cache in ((matched, "MATCHED_FILE", matched.matched_fit),
                                (matched_p, "MATCHED_P_FILE", matched_p.matched_p_fit)):
        path = tmp_path / "pkg" / getattr(module, attr).name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(getattr(module, attr).read_bytes())
        monkeypatch.setattr(module, attr, path)
        cache.cache_clear()
        paths[attr] = path
    yield paths
    matched.matched_fit.cache_clear()
    matched_p.matched_p_fit.cache_clear()


def _refit(path, cache, name, factor=2.0) -> None:
    """A refit of ``name``, frozen: its strength in ``strengths`` and in its ``fit`` entry."""
    record = json.loads(path.read_text())
    record["strengths"][name] = record["fit"][name]["strength"] = round(record["strengths"][name] * factor, 6)
    path.write_text(json.dumps(record))
    cache.cache_clear()


def _refit_p(path, name="rotate", factor=2.0) -> None:
    _refit(path, matched_p.matched_p_fit, name, factor)


def _step(out, name="corrupt-p"):
    """The plan's step ``name`` (the -P set's by default) for the job folder ``out``."""
    return next(s for s in _steps(PLAN, out, None)[0] if s.name == name)


# each kind of matched set of the registry: its step, its set's folder, the name refitted, its package file
KINDS = {"c": ("corrupt", ("data", "digits-c-digits-matched"), "contrast", "MATCHED_FILE", matched.matched_fit),
         "p": ("corrupt-p", SET, "rotate", "MATCHED_P_FILE", matched_p.matched_p_fit)}


def _finished(log, *, inputs=True):
    return {(e["name"], tuple(e["argv"])): tuple(e["inputs"]) if inputs else None for e in log["steps"]}


def _strength_made(out, name="rotate") -> float:
    return json.loads(out.joinpath(*SET, "manifest.json").read_text())["strengths"][name]


def _run(step, finished, out, log, *, fresh=False) -> bool:
    return _command_step(step, finished, [], main, log, out / "reproduce.json", 0.0, fresh=fresh)


def test_the_registry_gives_the_c_steps_identity_of_issue_54():
    """The -C step's identity is unchanged (a folder made before keeps its set); -P's is of its own file."""
    c = MATCHED_SETS["c"].identity()
    assert c == (f"strengths_sha256={matched.strengths_sha256(matched.matched_fit()['strengths'])}",)
    assert MATCHED_SETS["p"].identity() == strengths_identity(matched_p.matched_p_fit()["strengths"]) != c


@pytest.mark.parametrize("kind", sorted(MATCHED_SETS))
def test_a_refit_remakes_the_set_of_every_kind(kind, tmp_path, packages, capsys):
    """Issue 54's rule for -C, issue 60's for -P, one rule: the step's identity is its strengths' sha256, so
    the same step after a refit makes its set anew (not "done (kept)") with the new strength.  A kind the
    registry gains needs its row in KINDS (a KeyError here until it has one)."""
    name, folder, refitted, package, cache = KINDS[kind]
    out = tmp_path / "job"
    out.mkdir()
    log: dict = {"steps": []}
    first = _step(out, name)
    assert first.inputs and first.inputs[0].startswith("strengths_sha256=")
    assert _run(first, {}, out, log)
    assert log["steps"][0]["inputs"] == list(first.inputs)
    assert not _run(_step(out, name), _finished(log), out, log)  # nothing changed: kept
    assert f"{name}: done (kept)" in capsys.readouterr().out
    manifest = out.joinpath(*folder, "manifest.json")
    old = json.loads(manifest.read_text())["strengths"][refitted]
    _refit(packages[package], cache, refitted)
    again = _step(out, name)
    assert again.argv == first.argv and again.inputs != first.inputs
    assert _run(again, _finished(log), out, log)  # made anew, not "done (kept)"
    assert json.loads(manifest.read_text())["strengths"][refitted] == pytest.approx(2 * old, abs=1e-5)


def test_a_log_written_before_the_p_step_had_inputs_is_judged_by_the_sets_manifest(tmp_path, packages):
    """A folder made before issue 60 logged the -P step with ``inputs: []``: its set, of today's strengths,
    is kept (not remade with all its evaluations), and a refit since is seen."""
    out = tmp_path / "job"
    out.mkdir()
    log: dict = {"steps": []}
    assert _run(_step(out), {}, out, log)
    log["steps"][0]["inputs"] = []  # as the -P step was logged before
    assert not _run(_step(out), _finished(log), out, log)
    assert not _run(_step(out), _finished(log, inputs=False), out, log)
    _refit_p(packages["MATCHED_P_FILE"])
    assert _run(_step(out), _finished(log), out, log)


def test_a_half_made_p_set_of_other_strengths_is_made_anew(tmp_path, packages):
    """A -P step killed mid-way (no log entry, no labels.npy) before a refit: ``corrupt`` refuses to resume
    a set of other strengths, so the step starts it afresh instead of failing each rerun."""
    out = tmp_path / "job"
    out.mkdir()
    assert _run(_step(out), {}, out, {"steps": []})
    out.joinpath(*SET, "labels.npy").unlink()  # as if killed before its last file
    old = _strength_made(out)
    _refit_p(packages["MATCHED_P_FILE"])
    assert _run(_step(out), {}, out, {"steps": []})
    assert _strength_made(out) == pytest.approx(2 * old, abs=1e-5)


def test_the_suites_of_a_remade_set_are_the_ones_forgotten(tmp_path):
    """The runs' evaluations on a set made anew are deleted, for -C and -P alike (one rule)."""
    out = tmp_path / "job"
    steps = {s.name: s for s in _steps(PLAN, out, None)[0]}
    folder = {name: steps[name].done.parent for name in ("corrupt", "corrupt-p")}
    assert _remade_suites(PLAN, out, []) == ()
    assert _remade_suites(PLAN, out, [folder["corrupt-p"]]) == ("digits-p",)
    assert _remade_suites(PLAN, out, [folder["corrupt"], folder["corrupt-p"]]) == ("digits-c", "digits-p")


# ---- the plan check: every matched set's file and names, before any step or folder --------------

def _refused_before_anything(plan, tmp_path, monkeypatch) -> str:
    ran = []
    monkeypatch.setattr(reproduce_command, "_claim", lambda out: ran.append("claim"))
    with pytest.raises(ValueError) as error:
        reproduce_command.reproduce(plan, tmp_path / "job", command=lambda argv: ran.append(argv) or 0)
    assert ran == [] and not (tmp_path / "job").exists()
    text = str(error.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("kind", ["MATCHED_FILE", "MATCHED_P_FILE"])
@pytest.mark.parametrize("damage", ["truncated", "null fit", "strength NaN"])
def test_a_broken_matched_file_is_refused_before_any_step(tmp_path, packages, monkeypatch, kind, damage):
    path = packages[kind]
    text = path.read_text()
    if damage == "truncated":
        path.write_text(text[: len(text) // 2])
    else:
        record = json.loads(text)
        if damage == "null fit":
            record["fit"] = None
        else:
            record["strengths"][next(iter(record["strengths"]))] = float("nan")
        path.write_text(json.dumps(record))
    assert path.name in _refused_before_anything(PLAN, tmp_path, monkeypatch)


@pytest.mark.parametrize("field, names", [("perturbations", ("speckle_noise",)),
                                          ("corruptions", ("speckle_noise",))])
def test_a_name_the_fit_did_not_fit_is_refused_before_any_step(tmp_path, packages, monkeypatch, field, names):
    """speckle_noise is a perturbation of CIFAR-10-P and an extra corruption of CIFAR-10-C, but neither fit
    gave it a strength: ``corrupt`` refused it only after verify and toy had run."""
    plan = dataclasses.replace(PLAN, **{field: names})
    text = _refused_before_anything(plan, tmp_path, monkeypatch)
    assert field in text and "speckle_noise" in text and "only, not 'speckle_noise'" in text


def test_a_plan_without_a_p_set_does_not_read_the_p_file(tmp_path, packages):
    packages["MATCHED_P_FILE"].write_text("{")
    check_plan(dataclasses.replace(PLAN, perturbed_suite=None))  # no -P set: its file is not the plan's
    with pytest.raises(ValueError, match=r"digits_p_matched\.json"):
        check_plan(PLAN)


# ---- the whole job: a Digits-P refit remakes the -P set and every evaluation on it, nothing else ------

SMALL = dataclasses.replace(
    PLANS["quick"], dataset="digits", eval_suites=("clean",), corrupted_suite="digits-c", corruptions=("contrast",),
    perturbed_suite="digits-p", perturbations=("rotate",), perturbed_limit=4, perturbation_params="digits-matched",
    perturbed_methods=("baseline",), methods=("baseline",))


def _job(out, monkeypatch, capsys) -> str:
    """``reproduce`` of SMALL: the real corrupt steps, runs and evaluations; verify, toy and figures (which
    read no set) and the report stand-ins that write their done file."""
    from pathlib import Path

    import noisymix_app.reproduce.summary as summary

    def command(argv):
        if argv[0] == "corrupt":
            return main(argv)
        folder = Path(argv[argv.index("--out") + 1])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / {"verify": "theory.json", "toy": "toy.json", "figures": "REPORT.md"}[argv[0]]).write_text("{}")
        return 0

    monkeypatch.setattr(summary, "write_summary", lambda out, name: None)
    monkeypatch.setattr(reproduce_command, "_write_index", lambda *args: None)
    reproduce_command.reproduce(SMALL, out, command=command, name="custom")
    return capsys.readouterr().out


def test_a_digits_p_refit_redoes_the_p_evaluations_and_keeps_the_others(tmp_path, packages, monkeypatch, capsys):
    out = tmp_path / "job"
    _job(out, monkeypatch, capsys)
    evals = out / "runs" / "baseline-seed0" / "eval"
    before = {p.name: json.loads(p.read_text()) for p in evals.glob("*.json")}
    assert set(before) == {"clean.json", "digits-p.json"}
    kept = _job(out, monkeypatch, capsys)
    assert "corrupt-p: done (kept)" in kept and "1 of 1 runs already done" in kept
    old = _strength_made(out)
    _refit_p(packages["MATCHED_P_FILE"])
    redone = _job(out, monkeypatch, capsys)
    assert "corrupt-p: done (kept)" not in redone and "corrupt: done (kept)" in redone
    assert _strength_made(out) == pytest.approx(2 * old, abs=1e-5)
    after = {p.name: json.loads(p.read_text()) for p in evals.glob("*.json")}
    # evaluated on the set made anew (its file's content differs), the clean evaluation kept as it was
    assert after["digits-p.json"]["data_identity"]["rotate"] != before["digits-p.json"]["data_identity"]["rotate"]
    assert after["clean.json"] == before["clean.json"]
