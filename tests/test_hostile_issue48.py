"""Issue 48, a hostile campaign against the surfaces added in the wave before it (``evaluate
--model``, the Python API, ``reproduce --set``, the sweep's workers): every case is a one-line
refusal naming what was wrong (exit status 2 at the command line, a ``ValueError`` or ``TypeError``
in the API) or correct behaviour, and a refused command leaves nothing it made behind."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest
import torch
from torch import nn

from fullscale.api import NoisyMix, benchmark
from fullscale.data import load_dataset
from noisymix_app.cli import main
from noisymix_infra.io import save_torch

COUNT = 20  # test images in the little -C set

FACTORIES = '''
import sys

import torch
from torch import nn


class Pooled(nn.Module):
    """Mean colour -> ``classes`` logits: enough of a model to be scored."""

    def __init__(self, classes):
        super().__init__()
        self.head = nn.Linear(3, classes)

    def forward(self, x):
        return self.head(x.mean((2, 3)))


class Pair(Pooled):
    def forward(self, x):
        return super().forward(x), x


def ten():
    return Pooled(10)


def five():
    return Pooled(5)


def thousand():
    return Pooled(1000)


def pair():
    return Pair(10)


def exits_0():
    sys.exit(0)


def exits_3():
    sys.exit(3)


def two_lines():
    raise RuntimeError("the first line says what\\nthe second line says more")
'''


@pytest.fixture()
def user_code(tmp_path, monkeypatch):
    """``user_models_48``, a module of factories on the import path for the test."""
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "user_models_48.py").write_text(FACTORIES)
    # (not syspath_prepend: it imports pkg_resources, which some environments lack)
    monkeypatch.setattr(sys, "path", [str(folder), *sys.path])
    importlib.invalidate_caches()
    yield "user_models_48"
    sys.modules.pop("user_models_48", None)


@pytest.fixture(scope="module")
def digits16_c(tmp_path_factory):
    """A -C set of the 16x16 digits with one corruption (evaluated with --partial)."""
    root = tmp_path_factory.mktemp("digits16-c")
    test = load_dataset("digits16", "test")
    images = test.images[:COUNT].permute(0, 2, 3, 1).numpy()
    np.save(root / "gaussian_noise.npy", np.concatenate([images] * 5))
    np.save(root / "labels.npy", np.asarray(test.labels[:COUNT], dtype=np.int64))
    return root


@pytest.fixture()
def weights(tmp_path):
    """A state dict file for each factory of ``FACTORIES`` that has weights (same seed)."""
    def write(classes: int) -> str:
        torch.manual_seed(0)
        path = tmp_path / f"pooled{classes}.pt"
        save_torch(path, {"head.weight": torch.randn(classes, 3), "head.bias": torch.zeros(classes)})
        return str(path)
    return write


def _evaluate(file, spec, out, data_root, *extra):
    return main(["evaluate", str(file), "--model", spec, "--out", str(out), "--suite", "digits16-c",
                 "--data-root", str(data_root), "--partial", "--device", "cpu", *extra])


# --- 1. silently wrong ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("factory", "classes"), [("five", 5), ("thousand", 1000)])
def test_a_model_of_another_width_than_the_classes_is_refused(user_code, digits16_c, weights, tmp_path,
                                                              one_line_error, factory, classes):
    out = tmp_path / "out"
    assert _evaluate(weights(classes), f"{user_code}:{factory}", out, digits16_c) == 2
    line = one_line_error()
    assert f"the model gives {classes} outputs per image, the data set has 10 classes" in line
    assert not out.exists()  # made by the refused command: removed again


@pytest.mark.parametrize("classes", [5, 1000])
def test_benchmark_refuses_a_model_of_another_width(user_code, digits16_c, tmp_path, classes):
    module = importlib.import_module(user_code)
    with pytest.raises(ValueError, match=f"gives {classes} outputs per image, the data set has 10 classes"):
        benchmark(module.Pooled(classes), "digits16-c", digits16_c, out=tmp_path / "out",
                  options=_partial())
    assert not (tmp_path / "out").exists()


def _partial():
    from fullscale.evaluation import EvalOptions

    return EvalOptions(partial=True)


def test_a_model_of_the_right_width_is_scored(user_code, digits16_c, weights, tmp_path, capsys):
    """The probe refuses only what is wrong: the 10-way model is evaluated as before."""
    assert _evaluate(weights(10), f"{user_code}:ten", tmp_path / "out", digits16_c) == 0
    assert (tmp_path / "out" / "eval" / "digits16-c.json").is_file()


def test_an_image_list_without_the_robustbench_protocol_is_refused(user_code, digits16_c, weights, tmp_path,
                                                                    one_line_error):
    listing = tmp_path / "ids.txt"
    listing.write_text("n01440764/ILSVRC2012_val_00000293.JPEG\n")
    out = tmp_path / "out"
    assert _evaluate(weights(10), f"{user_code}:ten", out, digits16_c, "--image-list", str(listing)) == 2
    assert "--image-list is for --protocol robustbench" in one_line_error()
    assert not out.exists()
    # under robustbench on a suite that lists no images (CIFAR-10-C: all of them) it is refused too
    with pytest.raises(ValueError, match="--image-list names ImageNet images"):
        from fullscale.evaluation.robustbench import check_protocol

        check_protocol("cifar10-c", "robustbench", str(listing), imagenet=False)


# --- 3. tracebacks instead of one line ------------------------------------------------------------------------


def test_evaluate_a_model_whose_forward_returns_a_tuple_is_one_line(user_code, digits16_c, weights, tmp_path,
                                                                     one_line_error):
    assert _evaluate(weights(10), f"{user_code}:pair", tmp_path / "out", digits16_c) == 2
    assert "the model's forward returns tuple, not a tensor of logits" in one_line_error()
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(torch.cuda.device_count() > 7, reason="a machine with an 8th GPU can use cuda:7")
def test_benchmark_on_a_device_this_machine_lacks_is_one_line(user_code, digits16_c, tmp_path):
    module = importlib.import_module(user_code)
    with pytest.raises(ValueError, match=r"^device 'cuda:7' is not usable here \(.*\); use cpu or cuda\[:N\]$"):
        benchmark(module.Pooled(10), "digits16-c", digits16_c, out=tmp_path / "out", device="cuda:7")
    assert not (tmp_path / "out").exists()


def _tiny() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(4, 10))


class _Returns(nn.Module):
    def __init__(self, wrap):
        super().__init__()
        self.net, self.wrap = _tiny(), wrap

    def forward(self, x):
        return self.wrap(self.net(x))


_X = torch.randint(0, 256, (8, 3, 16, 16), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
_Y = torch.arange(8) % 10


def _loss(model=None, classes=10, generator="default", x=_X, y=_Y):
    generator = torch.Generator().manual_seed(0) if generator == "default" else generator
    model = _tiny() if model is None else model
    return NoisyMix(model, classes, generator=generator, stages=("input",)).loss(x, y)


@pytest.mark.parametrize(("call", "error", "says"), [
    (lambda: _loss(_Returns(lambda z: (z, z))), ValueError, "forward returns tuple, not a tensor of logits"),
    (lambda: _loss(_Returns(lambda z: {"logits": z})), ValueError, "forward returns dict, not a tensor of logits"),
    (lambda: _loss(generator=None), TypeError, "generator must be a torch.Generator .* got NoneType"),
    (lambda: _loss(generator=42), TypeError, "generator must be a torch.Generator .* got int"),
    (lambda: _loss(generator=np.random.default_rng(0)), TypeError, "got numpy.random.*Generator"),
    (lambda: _loss(x=_X[:0], y=_Y[:0]), ValueError, "empty batch"),
    (lambda: _loss(y=_Y[:5]), ValueError, "one label per image: 8 images, labels of shape \\(5,\\)"),
    (lambda: _loss(classes=0), ValueError, "num_classes must be >= 2.* got 0"),
    (lambda: _loss(classes=-1), ValueError, "num_classes must be >= 2.* got -1"),
    (lambda: _loss(classes=10.7), TypeError, "num_classes must be a whole number >= 2, got 10.7"),
    (lambda: _loss(y=_Y.to(torch.uint8)), TypeError, "class indices as int64 .* got torch.uint8"),
    (lambda: _loss(model=lambda x: x.mean((2, 3))), TypeError, "model must be a torch nn.Module .* got function"),
    (lambda: _loss(x=_X.float() / 255), TypeError, "x_u8 must be a uint8 image batch .* got torch.float32"),
    (lambda: _loss(_Returns(lambda z: z[:, :5])), ValueError,
     r"logits of shape \(24, 5\) for 24 images; expected \(24, 10\)"),  # 3 views of 8
], ids=["tuple", "dict", "generator None", "generator 42", "numpy generator", "batch of 0", "labels length",
        "classes 0", "classes -1", "classes 10.7", "uint8 labels", "function", "float input", "narrow logits"])
def test_the_api_loss_refuses_bad_input_in_one_line(call, error, says):
    with pytest.raises(error, match=says) as refused:
        call()
    assert "\n" not in str(refused.value)


def test_the_api_loss_still_takes_what_it_took():
    """The checks add no draw: two equal calls give equal losses, and int32 labels and a numpy
    integer class count are taken as before."""
    model = _tiny()
    first = _loss(model)
    assert torch.equal(first, _loss(model))
    assert torch.equal(first, _loss(model, y=_Y.to(torch.int32), classes=np.int64(10)))


# --- 4. other ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("factory", "code"), [("exits_0", "0"), ("exits_3", "3")])
def test_a_factory_that_calls_sys_exit_is_a_refusal(user_code, digits16_c, weights, tmp_path, one_line_error,
                                                    factory, code):
    assert _evaluate(weights(10), f"{user_code}:{factory}", tmp_path / "out", digits16_c) == 2
    assert f"the factory called sys.exit({code}) instead of returning a model" in one_line_error()


def test_a_factorys_error_of_two_lines_keeps_both(user_code, digits16_c, weights, tmp_path, one_line_error):
    assert _evaluate(weights(10), f"{user_code}:two_lines", tmp_path / "out", digits16_c) == 2
    assert "RuntimeError: the first line says what the second line says more" in one_line_error()


def test_a_factory_file_in_the_current_folder_gets_the_pythonpath_hint(digits16_c, weights, tmp_path, monkeypatch,
                                                                       one_line_error):
    (tmp_path / "mine_48.py").write_text(FACTORIES)
    monkeypatch.chdir(tmp_path)
    assert _evaluate(weights(10), "mine_48:ten", tmp_path / "out", digits16_c) == 2
    line = one_line_error()
    assert "No module named 'mine_48'" in line and "run with PYTHONPATH=." in line
    assert _evaluate(weights(10), "nowhere_48.sub:ten", tmp_path / "out", digits16_c) == 2
    assert "is the folder holding nowhere_48 on PYTHONPATH?" in one_line_error()


def test_benchmark_gives_the_model_back_in_its_own_mode(user_code, digits16_c, tmp_path):
    module = importlib.import_module(user_code)
    model = nn.Sequential(module.Pooled(10), nn.Dropout(0.0))
    model.train()
    model[1].eval()  # a mixed state, as a user's frozen part would be
    benchmark(model, "digits16-c", digits16_c, out=tmp_path / "out", options=_partial())
    assert model.training and model[0].training and not model[1].training
    model.eval()
    benchmark(model, "digits16-c", digits16_c, out=tmp_path / "out2", options=_partial())
    assert not any(m.training for m in model.modules())


def test_a_long_line_in_an_image_list_is_cut_in_the_error(tmp_path, one_line_error):
    listing = tmp_path / "ids.txt"
    listing.write_text("x" * 100_000 + "\n")
    assert main(["evaluate", str(tmp_path / "w.pt"), "--model", "resnet50", "--out", str(tmp_path / "out"),
                 "--suite", "imagenet-c", "--data-root", str(tmp_path), "--protocol", "robustbench",
                 "--image-list", str(listing), "--device", "cpu"]) == 2
    line = one_line_error()
    assert "(100000 characters)" in line and len(line) < 300


def test_a_refused_evaluate_removes_the_folder_it_made_and_keeps_a_users(user_code, weights, tmp_path,
                                                                       one_line_error):
    """``--suite clean`` of a bare model needs the ImageNet folders: refused inside the lock."""
    def refused(out):
        assert main(["evaluate", weights(1000), "--model", f"{user_code}:thousand", "--out", str(out),
                     "--suite", "clean", "--device", "cpu"]) == 2
        assert "needs --data-root" in one_line_error()

    refused(tmp_path / "new" / "out")
    assert not (tmp_path / "new" / "out").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    refused(mine)
    assert (mine / "notes.txt").read_text() == "mine"


# --- 2. a stray process -----------------------------------------------------------------------------------------

CHILD = '''
import os
import sys
import time
from pathlib import Path

from noisymix_infra.workers import exit_with_parent, watch_parent


def child(parent, kernel, ready):
    if kernel:
        exit_with_parent(parent)
    watch_parent(parent, 0.2)
    Path(ready, str(os.getpid())).touch()
    time.sleep(120)
'''

PARENT = '''
import multiprocessing, os, sys, time
from pathlib import Path

folder, kernel = sys.argv[1], sys.argv[2] == "1"
sys.path.insert(0, folder)
import child_48

ready = Path(folder, "ready")
ready.mkdir()
context = multiprocessing.get_context("spawn")
processes = [context.Process(target=child_48.child, args=(os.getpid(), kernel, str(ready))) for _ in range(2)]
for process in processes:
    process.start()
while len(list(ready.iterdir())) < 2:
    time.sleep(0.05)
children = []
for entry in Path("/proc").iterdir():
    try:
        if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
            children.append(entry.name)
    except OSError:
        pass
print(" ".join(children), flush=True)
time.sleep(120)
'''


def _alive(pid: str) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper does not)."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _kill_parent_and_wait(script: str, *args: str, within: float = 10.0) -> list[str]:
    """Start ``script`` (which prints its children's pids), kill -9 it, and return the children
    still alive ``within`` seconds later."""
    import os
    import signal
    import subprocess
    import time

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    parent = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True, env=env)
    try:
        children = parent.stdout.readline().split()
        assert len(children) >= 2, children
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + within
        while time.monotonic() < deadline and any(_alive(pid) for pid in children):
            time.sleep(0.1)
        alive = [pid for pid in children if _alive(pid)]
    finally:
        for pid in children if "children" in locals() else []:
            if _alive(pid):
                os.kill(int(pid), signal.SIGKILL)
    return alive


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("kernel", ["1", "0"], ids=["prctl and watchdog", "watchdog alone"])
def test_workers_end_with_their_parent_killed_by_sigkill(tmp_path, kernel):
    """Each of the two spawned workers, and the resource tracker beside them if one was started,
    is gone within seconds of a kill -9 of the process that started them: by the kernel's signal
    (Linux) or by the watchdog thread alone (the fallback elsewhere)."""
    (tmp_path / "child_48.py").write_text(CHILD)
    assert _kill_parent_and_wait(PARENT, str(tmp_path), kernel) == []


def _children(pid: int) -> dict[str, str]:
    """{pid: command line} of the processes whose parent is ``pid``."""
    from pathlib import Path

    found = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found[entry.name] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            pass
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_reproduce_workers_end_with_a_parent_killed_by_sigkill(tmp_path):
    """The campaign's case itself: ``noisymix reproduce --plan quick --set workers=2``, kill -9 as the
    sweep's two workers run: they and the resource tracker are gone within seconds."""
    import os
    import signal
    import subprocess
    import time

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    parent = subprocess.Popen([sys.executable, "-m", "noisymix_app.cli", "reproduce", "--plan", "quick",
                               "--set", "workers=2", "--out", str(tmp_path / "out")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    children: dict[str, str] = {}
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and parent.poll() is None:
            children = _children(parent.pid)
            if sum("multiprocessing" in line and "resource_tracker" not in line for line in children.values()) >= 2:
                break
            time.sleep(0.2)
        workers = [p for p, line in children.items() if "multiprocessing" in line]
        assert len(workers) >= 2, f"the sweep's workers never started: {children}"
        time.sleep(1.0)  # the workers past their start, into the run
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.1)
        assert [p for p in workers if _alive(p)] == []
    finally:
        if parent.poll() is None:
            parent.kill()
        for pid in children:
            if _alive(pid):
                os.kill(int(pid), signal.SIGKILL)


# --- 4. reproduce: the whole plan checked before any step ------------------------------------------------------


@pytest.mark.parametrize(("setting", "says"), [
    (["methods=bogus"], "plan field methods: unknown method 'bogus'"),
    (["perturbed_methods=bogus"], "plan field perturbed_methods: unknown method 'bogus'"),
    (["corruptions=bogus"], "plan field corruptions: unknown corruptions ['bogus']"),
    (["perturbations=bogus"], "plan field perturbations: unknown perturbations ['bogus']"),
    (["eval_suites=bogus"], "plan field eval_suites: unknown suite 'bogus'"),
    (["corrupted_suite=bogus"], "plan field corrupted_suite: unknown suite 'bogus'"),
    (["dataset=cifar10"], "plan field dataset=cifar10 needs --data-root DIR"),
    (["dataset=mnist"], "plan field dataset: unknown data set 'mnist'"),
    (["model=nonet"], "plan field model: unknown model 'nonet'"),
    (["toy_seeds=-1"], "plan field toy_seeds must be >= 1, got -1"),
    (["toy_epochs=0"], "plan field toy_epochs must be >= 1, got 0"),
    (["theory_points=0"], "plan field theory_points must be >= 3, got 0"),
    (["perturbed_limit=-5"], "plan field perturbed_limit must be >= 0 (0: every test image), got -5"),
    (["train_overrides=nope=1"], "the trainer refuses run baseline-seed0 (train_overrides nope=1): unknown config key"),
    (["train_overrides=batch_size=x"], "batch_size must be an integer, got 'x'"),
    (["seeds=99999999999999999999"], "seed=99999999999999999999 is out of range"),
    (["members=5", "workers=2"], "members=5 stacks more seeds than the plan has (1)"),
    (["seeds=0,1", "members=2", "workers=2"], "members=2 trains seeds as one model in one process: it needs workers=1"),
    (["seeds=0,1", "members=2", "workers=0"], "it needs workers=1, got workers=0"),
])
def test_reproduce_checks_the_whole_plan_before_any_step(tmp_path, one_line_error, setting, says):
    out = tmp_path / "out"
    assert main(["reproduce", "--plan", "quick", "--out", str(out),
                 *[a for s in setting for a in ("--set", s)]]) == 2
    assert says in one_line_error()
    assert not out.exists()  # refused before the folder was claimed: no step ran


def test_check_plan_takes_every_named_plan_and_the_library_door_checks_too(tmp_path):
    import dataclasses

    import torch

    from noisymix_app.reproduce.command import reproduce
    from noisymix_app.reproduce.plan_check import check_plan
    from noisymix_app.reproduce.plans import PLANS

    for name, plan in PLANS.items():
        if name == "gpu" and not torch.cuda.is_available():  # issue 53: it captures its steps as CUDA graphs
            with pytest.raises(ValueError, match=r"^plan: the trainer refuses run .*cuda_graph=true needs CUDA"):
                check_plan(plan)
            continue
        check_plan(plan, data_root="/cifar" if plan.needs_data_root else None)
    with pytest.raises(ValueError, match="plan field toy_seeds"):
        reproduce(dataclasses.replace(PLANS["quick"], toy_seeds=0), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_seeds_setting_of_one_number_is_one_seed_of_that_number():
    """``seeds=100000`` is the plan of the one seed 100000 (the dialect's tuple of one, as
    ``seeds=0,1`` is two seeds), within the trainer's range: the run is ``baseline-seed100000``."""
    from noisymix_app.reproduce.command import resolve_plan
    from noisymix_app.reproduce.plan_check import check_plan

    plan, name = resolve_plan("quick", ["seeds=100000"])
    assert plan.seeds == (100000,) and name == "quick --set seeds=100000"
    check_plan(plan)


def test_update_readme_refuses_the_smoke_plan(tmp_path, one_line_error):
    """Probed: ``--plan quick --update-readme --fresh`` ran and replaced the README's summary and
    figures with a smoke run's meaningless numbers (``--fresh`` itself changes nothing there)."""
    from noisymix_app.reproduce.summary import ROOT

    readme = (ROOT / "README.md").read_bytes()
    out = tmp_path / "out"
    assert main(["reproduce", "--plan", "quick", "--out", str(out), "--update-readme", "--fresh"]) == 2
    assert "the quick plan is a smoke run whose numbers are meaningless" in one_line_error()
    assert not out.exists() and (ROOT / "README.md").read_bytes() == readme


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_puzzle_mix_helper_falls_back_to_the_same_masks(recwarn):
    """Probed: a graph-cut helper killed between batches (or mid-batch, by hand) costs one warning
    and the in-thread cut, with the same masks; no helper is left behind."""
    import os
    import signal

    from fullscale.puzzlemix import masks as puzzlemix  # the graph cuts and their helper processes

    try:
        puzzlemix._gco()
    except (ImportError, ValueError):
        pytest.skip("pyGCO (gco-wrapper) is not installed")
    rng = np.random.default_rng(0)
    unary, edge_x, edge_y = rng.random((12, 8, 8, 3)), rng.random((12, 7, 8)), rng.random((12, 8, 7))
    alone = puzzlemix.solve_masks(unary, edge_x, edge_y, workers=1)
    assert np.array_equal(puzzlemix.solve_masks(unary, edge_x, edge_y, workers=3), alone)
    helpers = [pid for pid, line in _children(os.getpid()).items() if "puzzlemix" in line and "cuts" in line]
    if not helpers:
        pytest.skip("the helpers had failed before this test (cutting in-thread already)")
    os.kill(int(helpers[0]), signal.SIGKILL)
    try:
        assert np.array_equal(puzzlemix.solve_masks(unary, edge_x, edge_y, workers=3), alone)
        assert any("graph-cut helper process failed" in str(w.message) for w in recwarn)
        assert not [p for p in helpers if _alive(p)]
    finally:
        puzzlemix._HELPERS_FAILED = False  # the next test's cuts may use helpers again


@pytest.mark.parametrize("argv", [
    ["reproduce", "--plan", "quick", "--out", "{tmp}/rr", "--set", "methods={long}"],
    ["reproduce", "--plan", "quick", "--out", "{tmp}/rr", "--set", "{long}=1"],
    ["corrupt", "--dataset", "digits16", "--kind", "c", "--out", "{tmp}/cc", "--corruptions", "{long}"],
    ["evaluate", "{tmp}/w.pt", "--model", "{long}:x", "--suite", "digits16-c", "--out", "{tmp}/oo"],
    ["evaluate", "{tmp}/w.pt", "--model", "resnet18", "--suite", "digits16-c", "--out", "{tmp}/oo",
     "--epsilons", "{long}"],
], ids=["--set value", "--set key", "--corruptions", "--model", "--epsilons"])
def test_a_value_of_100000_characters_is_cut_in_the_error_line(tmp_path, one_line_error, argv):
    """Any command: the user's long word is quoted by its start and its length, the line stays short."""
    long = "x" * 100_000
    assert main([a.format(tmp=tmp_path, long=long) for a in argv]) == 2
    line = one_line_error()
    assert len(line) < 500 and "...(100" in line, line[:600]


def test_a_long_error_keeps_our_words_and_the_quote_around_the_users():
    from noisymix_app.cli import _bounded

    listing = ", ".join(f"name{i}" for i in range(300))  # ours: many short words, kept whole
    assert _bounded(f"unknown 'x'; known: {listing}") == f"unknown 'x'; known: {listing}"
    assert _bounded("unknown '" + "y" * 500 + "'; known: a, b") == \
        "unknown '" + "y" * 99 + "...(501 characters)'; known: a, b"  # the opening quote and 500
