"""Issue 64, the screen's side: the contract with user code holds on every batch (targets' values, global
draws), a ``Method`` sets only its own keys, the identity covers the user's helper modules; ``--out`` that is
no screen's folder is refused and ``--fresh`` removes only what a screen made; SPECs are imported in a child
process (an ``os._exit(0)`` at import is one line and status 2); a failure names its real cause and removes
no finished run; the reference is bound to its sets, its paper numbers are the
package's and the page counts its real methods.

None of these tests trains: the checks are called where they live (the batch op, the folder check, the
failure report, the sets' check) or end the command before any run."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from noisymix_app.cli import main
from noisymix_app.reproduce.plans import EIGHT_METHODS
from noisymix_app.screen.command import MethodFailed, _check_folder, _failure, screen_runs
from noisymix_app.screen.plan import screen_plan
from noisymix_app.screen.reference import read_reference
from noisymix_app.screen.report import page_record, render_markdown
from noisymix_app.screen.sets import check_sets
from noisymix_app.screen.spec import Spec, resolve_spec
from noisymix_figures.paper import method_columns
from tests.app.test_screen import make_summary, user_module  # noqa: F401 - a fixture of this module's tests too

FUNCTIONS = """
import random

import numpy as np
import torch


def bad_rows(images, labels, generator):
    if images.shape[0] == 32:  # a training batch: the dry call's 8 digits pass
        targets = torch.zeros(len(labels), 10)
        targets[:, 0], targets[:, 1] = -1.0, 2.0  # rows summing to 1, one weight negative
        return images, targets
    return images, labels


def heavy_rows(images, labels, generator):
    if images.shape[0] == 32:
        return images, torch.full((len(labels), 10), 0.2)  # rows summing to 2
    return images, labels


def python_draw(images, labels, generator):
    if images.shape[0] == 32:
        random.random()
    return images, labels


def numpy_draw(images, labels, generator):
    if images.shape[0] == 32:
        np.random.rand()
    return images, labels


def torch_draw(images, labels, generator):
    if images.shape[0] == 32:
        torch.rand(1)
    return images, labels


def fine(images, labels, generator):
    keep = torch.rand(len(labels), generator=generator) < 2.0
    return images * keep.view(-1, 1, 1, 1), labels


def labels_out(images, labels, generator):
    return images, labels + 10
"""


def _batch(n: int = 32):
    return torch.rand(n, 3, 32, 32), torch.arange(n) % 10


def _op(spec: str):
    from fullscale.training.user_method import load_method, pin

    kind = load_method(pin(spec)).kind
    return kind.batch_op, kind.loss


@pytest.mark.parametrize(("name", "words"), [
    ("bad_rows", "negative weights"),
    ("heavy_rows", "rows summing to 2"),
    ("python_draw", "Python's global random"),
    ("numpy_draw", "NumPy's global generator"),
    ("torch_draw", "torch's global generator"),
])
def test_every_batch_is_held_to_the_contract_and_the_error_names_the_batch(name, words, user_module):  # noqa: F811
    """The first two calls of a run are fine batches; the third breaks the contract behind a branch the dry
    call (8 digits) does not take: one line naming batch 3 of the run; a new run (generator) counts anew."""
    from fullscale.training.user_method import CONTRACT

    op, _ = _op(f"{user_module('contract64', FUNCTIONS)}:{name}")
    g = torch.Generator().manual_seed(0)
    for _ in range(2):
        op(None, *_batch(8), None, None, generator=g)
    with pytest.raises(ValueError) as caught:
        op(None, *_batch(32), None, None, generator=g)
    text = str(caught.value)
    assert len(text.splitlines()) == 1 and CONTRACT in text and "batch 3 of its run" in text and words in text, text
    with pytest.raises(ValueError, match="batch 1 of its run"):
        op(None, *_batch(32), None, None, generator=torch.Generator().manual_seed(0))


def test_a_function_keeping_the_contract_passes_every_batch_and_leaves_the_global_states(user_module):  # noqa: F811
    op, _ = _op(f"{user_module('contract64ok', FUNCTIONS)}:fine")
    batches = [_batch(32) for _ in range(3)]  # drawn before the states are read
    states = random.getstate(), np.random.get_state()[1].copy(), torch.random.get_rng_state()  # noqa: NPY002
    g = torch.Generator().manual_seed(0)
    for batch in batches:
        images, _, _ = op(None, *batch, None, None, generator=g)
        assert images.shape == (32, 3, 32, 32)
    assert random.getstate() == states[0] and np.array_equal(np.random.get_state()[1], states[1])  # noqa: NPY002
    assert torch.equal(torch.random.get_rng_state(), states[2])
    _, _, labels = _op(f"{user_module('contract64lab', FUNCTIONS)}:labels_out")[0](
        None, *_batch(4), None, None, generator=g)
    with pytest.raises(ValueError, match=r"labels outside 0\.\.9"):
        _op("contract64lab:labels_out")[1](torch.zeros(4, 10), None, labels, None)


METHODS = """
from fullscale.training.methods import Method

fast = Method("fast", "Mixup at lr 1", mixing="input", strengths=(("mix.alpha", 1.0), ("optim.lr", 1.0)))
short = Method("short", "Mixup, 3 epochs", mixing="input", strengths=(("optim.epochs", 3),))
own = Method("own", "NFM, louder", mixing="manifold", noise=True,
             strengths=(("mix.alpha", 1.0), ("mix.noise.add", 0.8), ("mix.noise.mult", 0.4)))
"""


def test_a_method_setting_a_key_of_the_recipe_is_refused_in_one_line(tmp_path, user_module, capsys):  # noqa: F811
    module = user_module("recipe64", METHODS)
    assert resolve_spec(f"{module}:own").form == "method"  # its own keys: taken
    with pytest.raises(ValueError, match=r"sets optim\.epochs, a key of the recipe"):
        resolve_spec(f"{module}:short")
    summary = make_summary(tmp_path / "summary.json")
    out = tmp_path / "out"
    assert main(["screen", f"{module}:fast", "--out", str(out), "--summary", str(summary)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sets optim.lr, a key of the recipe" in err, err
    assert not out.exists()


def test_the_identity_covers_the_users_own_modules_it_imports(tmp_path, monkeypatch):
    """A helper module of the user's (imported from the SPEC's module, a package beside it, relatively) is part
    of the pinned digest; the project's packages, the standard library and installed packages are not; a
    module importing none of the user's keeps its file's own sha256 (the identity earlier runs recorded)."""
    import hashlib

    from fullscale.training.user_method import load_method, own_sources, pin

    root = tmp_path / "code"
    (root / "pkg64").mkdir(parents=True)
    (root / "pkg64" / "__init__.py").write_text("")
    (root / "pkg64" / "helper.py").write_text("def shift(x):\n    return x\n")
    (root / "pkg64" / "aug.py").write_text("import json\n\nimport torch\n\nimport fullscale.mixings\n"
                                           "from .helper import shift\n\n\n"
                                           "def aug(images, labels, generator):\n    return shift(images), labels\n")
    (root / "alone64.py").write_text("import torch\n\n\ndef aug(images, labels, generator):\n"
                                     "    return images, labels\n")
    monkeypatch.syspath_prepend(str(root))
    for name in ("pkg64", "pkg64.aug", "pkg64.helper", "alone64"):
        sys.modules.pop(name, None)
    try:
        import importlib

        found = own_sources(importlib.import_module("pkg64.aug"))
        assert found[0].name == "aug.py" and {p.name for p in found[1:]} == {"helper.py", "__init__.py"}
        before = pin("pkg64.aug:aug")
        load_method(before)
        (root / "pkg64" / "helper.py").write_text("def shift(x):\n    return x + 0.0\n")  # the helper edited
        after = pin("pkg64.aug:aug")
        assert after != before
        with pytest.raises(ValueError, match="or one of the 2 modules of yours it imports changed since"):
            _reload_refused(before)
        alone = root / "alone64.py"
        assert pin("alone64:aug").endswith(hashlib.sha256(alone.read_bytes()).hexdigest()[:16])
    finally:
        for name in ("pkg64", "pkg64.aug", "pkg64.helper", "alone64"):
            sys.modules.pop(name, None)


def _reload_refused(pinned: str):
    """``load_method`` of ``pinned`` as a new process would (its cache of this process left out)."""
    from fullscale.training import user_method

    cached = user_method._LOADED.pop(pinned)
    try:
        return user_method.load_method(pinned)
    finally:
        user_method._LOADED[pinned] = cached


# ----------------------------------------------------------------------------- the folder (goal 5)

def _builtin(tmp_path, out):
    reference = read_reference(make_summary(tmp_path / "summary.json"))
    plan = screen_plan(reference)
    spec = resolve_spec("baseline")
    return spec, screen_runs(spec, plan, out), reference, plan


def test_a_folder_that_is_no_screens_is_refused_before_anything_is_touched(tmp_path, capsys):
    summary = make_summary(tmp_path / "summary.json")
    mine = tmp_path / "mine"
    (mine / "runs" / "mywork").mkdir(parents=True)
    (mine / "runs" / "mywork" / "notes.txt").write_text("mine")
    (mine / "screen.png").write_bytes(b"my picture")
    for fresh in ([], ["--fresh"]):
        assert main(["screen", "baseline", "--out", str(mine), "--summary", str(summary), *fresh]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "is not a screen's folder" in err, err
    assert (mine / "screen.png").read_bytes() == b"my picture" and (mine / "runs" / "mywork" / "notes.txt").is_file()
    assert sorted(p.name for p in mine.iterdir()) == ["runs", "screen.png"]  # no marker, no lock, no log
    # an empty folder, or none, is fine
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (empty, tmp_path / "none"):
        spec, runs, _, _ = _builtin(tmp_path, out)
        assert _check_folder(out, spec, runs, fresh=False) == ([], {"steps": []})


def test_fresh_removes_only_runs_a_screen_made_and_an_unreadable_log_is_refused_first(tmp_path, capsys):
    from noisymix_infra.folder_kind import mark_folder

    out = tmp_path / "screen"
    mark_folder(out, "screen")
    (out / "runs" / "mywork").mkdir(parents=True)
    spec, runs, _, _ = _builtin(tmp_path, out)
    with pytest.raises(ValueError, match=r"mywork is no run of a screen"):
        _check_folder(out, spec, runs, fresh=True)
    assert (out / "runs" / "mywork").is_dir()
    (out / "runs" / "mywork").rmdir()
    mark_folder(out / "runs" / "nfm-seed0", "run")  # another method's run: a run, which --fresh may clear
    assert _check_folder(out, spec, runs, fresh=True)[0] == ["nfm-seed0"]
    (out / "screen-log.json").write_text('{"spec": {"method": "baseline"}, "steps": [')  # truncated
    summary = make_summary(tmp_path / "summary.json")
    assert main(["screen", "baseline", "--out", str(out), "--summary", str(summary)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "screen-log.json is unreadable" in err and "--fresh" in err, err
    assert (out / "runs" / "nfm-seed0").is_dir()  # nothing removed
    assert _check_folder(out, spec, runs, fresh=True) == (["nfm-seed0"], {"steps": []})


# ----------------------------------------------------------------------------- the process model (goal 6)

def test_a_spec_ending_its_process_at_import_is_one_line_and_status_2(tmp_path, user_module, capsys):  # noqa: F811
    module = user_module("exits64", "import os\n\nos._exit(0)\n\n\ndef aug(images, labels, generator):\n"
                                    "    return images, labels\n")
    summary = make_summary(tmp_path / "summary.json")
    out = tmp_path / "out"
    assert main(["screen", f"{module}:aug", "--out", str(out), "--summary", str(summary)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "its process ended (exit status 0) while importing exits64" in err, err
    assert not out.exists()


def _state(out: Path, name: str, **fields) -> None:
    from noisymix_app.sweep.state import write_state

    write_state(out, name, **fields)


def test_a_failure_names_its_real_cause_and_keeps_another_workers_finished_run(tmp_path):
    from fullscale.training.user_method import CONTRACT

    out = tmp_path / "screen"
    spec, runs, _, _ = _builtin(tmp_path, out)
    spec = Spec("mine:aug", "mine:aug@0123456789abcdef", "aug", "aug", "function", "/x/mine.py", "0" * 64)
    failed, other = runs.runs[0].name, runs.runs[1].name
    for name in (failed, other):
        (out / "runs" / name).mkdir(parents=True)
    (out / "runs" / other / "final.pt").write_bytes(b"weights")  # the other worker's finished run
    _state(out, failed, state="failed", error="its worker process was killed by SIGKILL (exit status -9)")
    error = _failure(out, spec, runs, failed)
    assert isinstance(error, MethodFailed) and "killed by SIGKILL" in str(error) and "retried" in str(error)
    assert "sweep status" not in str(error) and not str(error).startswith("mine:aug")  # not blamed on it
    assert not (out / "runs" / failed).exists() and (out / "runs" / other / "final.pt").is_file()
    _state(out, failed, state="failed", error=f"ValueError: method mine:aug {CONTRACT} on batch 7 of its run: x",
           traceback="Traceback ...")
    error = _failure(out, spec, runs, failed)
    assert isinstance(error, ValueError) and len(str(error).splitlines()) == 1 and "batch 7" in str(error)
    assert f"run {failed}" in str(error) and (out / "runs" / other / "final.pt").is_file()
    _state(out, failed, state="failed", error="RuntimeError: the user's bug", traceback=None)
    error = _failure(out, spec, runs, failed)
    assert "no traceback was written" in str(error) and "sweep status" not in str(error)


_KILLS = r'''
import os
import signal
import subprocess
from pathlib import Path

from noisymix_app.sweep.execute import execute_run


def job(spec, out, **kwargs):
    """Seed 0 starts a process of its own (as a user's function may) and finishes; seed 1's worker is killed
    by SIGKILL in training, on every attempt."""
    if spec.seed == 1:
        import fullscale.training.loop as loop

        loop.train = lambda cfg, run, resume: os.kill(os.getpid(), signal.SIGKILL)
    child = subprocess.Popen(["sleep", "600"])
    (Path(out) / "child.pid").write_text(str(child.pid))
    return execute_run(spec, out, **kwargs)
'''


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_killed_workers_run_is_retried_once_named_by_its_signal_and_a_runs_processes_end(tmp_path, monkeypatch,
                                                                                           capsys):
    import importlib
    import os
    import signal
    import textwrap

    from noisymix_app.sweep import local as sweep_local
    from noisymix_app.sweep.local import run_local
    from noisymix_app.sweep.state import read_state
    from tests.app.test_sweep_pool import _plan

    monkeypatch.setenv("NOISYMIX_PROGRESS", "0")
    (tmp_path / "kills64.py").write_text(textwrap.dedent(_KILLS))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sweep_local, "execute_run", importlib.import_module("kills64").job)
    out = tmp_path / "out"
    plan = _plan((0, 1))
    try:
        states = run_local(plan, out, workers=1, threads=1, retries=1, tabulate=False)
    finally:
        sys.modules.pop("kills64", None)
        child = int((out / "child.pid").read_text()) if (out / "child.pid").is_file() else None
    names = [spec.name for spec in plan.runs]
    assert states == {names[0]: "done", names[1]: "failed"}
    why = "its worker process was killed by SIGKILL (exit status -9)"
    assert f"run {names[1]} failed ({why}); retry 1/1" in capsys.readouterr().err
    assert read_state(out, names[1])["error"] == why
    # the process the run started ends with its worker's group (the worker leaves on its own: a bounded wait)
    for _ in range(600):
        if not _alive(child):
            break
        import time

        time.sleep(0.05)
    alive = _alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive


# ----------------------------------------------------------------------------- the reference (goal 4)

def _sets_made(plan, out: Path) -> None:
    from noisymix_app.reproduce.steps import _corrupted, _perturbed

    for folder, kind in ((_corrupted(plan, out), "c"), (_perturbed(plan, out), "p")):
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps({"dataset": "digits", "kind": kind, "names": ["x"]}))


def test_the_reference_is_bound_to_its_sets(tmp_path):
    from noisymix_app.reproduce.steps import _corrupted, _perturbed
    from noisymix_app.reproduce.summary import set_identity

    out = tmp_path / "screen"
    reference = read_reference(make_summary(tmp_path / "summary.json"))
    plan = screen_plan(reference)
    _sets_made(plan, out)
    assert check_sets(reference, plan, out)["verified"] is False  # no sets in the summary: unverified
    ours = {"c": set_identity(_corrupted(plan, out)), "p": set_identity(_perturbed(plan, out))}
    data = json.loads(Path(reference.path).read_text())
    (tmp_path / "bound.json").write_text(json.dumps({**data, "sets": ours}))
    assert check_sets(read_reference(tmp_path / "bound.json"), plan, out) == {**ours, "verified": True}
    (tmp_path / "other.json").write_text(json.dumps({**data, "sets": {**ours, "p": "0" * 64}}))
    with pytest.raises(ValueError, match=r"measured on other Digits-C/-P sets .*; rerun the eight-method plan"):
        check_sets(read_reference(tmp_path / "other.json"), plan, out)
    (tmp_path / "bad.json").write_text(json.dumps({**data, "sets": {"c": "x"}}))
    with pytest.raises(ValueError, match="sets is not"):
        read_reference(tmp_path / "bad.json")


def test_the_papers_numbers_are_the_packages_and_the_page_counts_the_real_methods(tmp_path):
    data = json.loads(make_summary(tmp_path / "summary.json").read_text())
    for row in data["table"]:  # a copy of the paper's numbers, +10
        row["paper_corrupted"] += 10.0
        row["paper_mfr"] += 10.0
    data["table"] = [r for r in data["table"] if r["method"] != next(m for m in EIGHT_METHODS
                                                                       if m not in ("baseline", "noisymix"))]
    (tmp_path / "seven.json").write_text(json.dumps(data))
    reference = read_reference(tmp_path / "seven.json")
    paper = method_columns(reference.methods)
    assert len(reference.rows) == 7
    for row in reference.rows:
        assert (row["paper_corrupted"], row["paper_mfr"]) == (paper[row["method"]]["corrupted"],
                                                               paper[row["method"]]["mfr"])
    spec = Spec("mine:aug", "mine:aug@0123456789abcdef", "aug", "aug", "function", "/x/mine.py", "0" * 64)
    ours = {k: [v + 0.5 for v in reference.rows[0]["per_seed"][k]] for k in ("clean", "corrupted", "mean_flip")}
    plan = {"name": "analogue-methods", "model": "preactresnet18", "width": 4, "epochs": 1, "train_overrides": [],
            "perturbed_limit": 4, "corruptions": None, "perturbations": None}
    record = page_record(spec, reference, ours, plan=plan, runs={}, wall_seconds=None)
    record["sets_identity"] = {"c": None, "p": None, "verified": False}
    text = render_markdown(record)
    assert "## Among the seven reference methods" in text and "the eight " not in text
    assert "the other six" in text and "Digits-C/-P sets are unverified" in text
    assert record["place"]["corrupted"]["of"] == 8  # seven and the screened one


def test_a_reference_whose_methods_share_one_value_is_refused_before_any_training(tmp_path):
    """Issue 64, cause 2: a --summary whose methods all have one Digits-C mean was refused only after training."""
    import json as _json

    from noisymix_app.screen.reference import read_reference

    root = Path(__file__).resolve().parents[2]
    data = _json.loads((root / "docs" / "analogue-methods-summary.json").read_text())
    for row in data["table"]:
        row["corrupted"]["mean"] = 80.0
        row["per_seed"]["corrupted"] = [80.0] * len(row["per_seed"]["corrupted"])
    path = tmp_path / "summary.json"
    path.write_text(_json.dumps(data))
    with pytest.raises(ValueError, match="every method has the same corrupted mean"):
        read_reference(path)


def test_the_method_keys_cover_every_built_in_methods_strengths():
    """A Method may set the keys the built-in methods set (METHOD_KEYS is a literal, not read from the registry)."""
    from fullscale.training.methods import METHODS
    from fullscale.training.user_method import METHOD_KEYS

    assert {key.split(".")[0] for m in METHODS.values() for key, _ in m.strengths} <= METHOD_KEYS
    assert not {"optim", "epochs", "batch_size", "width", "model"} & METHOD_KEYS
