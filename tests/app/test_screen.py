"""``noisymix screen`` end to end on a tiny recipe (issue 59, goal 5): a built-in screened by name is its
eight-method run (the weights of ``noisymix reproduce --plan analogue-methods``'s run, bit for bit); a
``module:name`` equal to a built-in gives the built-in's weights; a rerun resumes, an edited source is
refused and retrained with --fresh; a method that raises mid-run is reported with its own frames and leaves
no page and no half-made run; every bad SPEC, summary or folder is one line before anything is written.

The reference numbers are fixture summaries in the schema ``noisymix analogue`` writes (per-seed values
aligned with ``plan.seeds``), never the committed file (it is regenerated; the slow test reads it)."""

from __future__ import annotations

import hashlib
import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from noisymix_app.cli import main
from noisymix_app.reproduce.plans import EIGHT_METHODS
from noisymix_app.screen.command import method_frames, screen
from noisymix_app.screen.plan import screen_plan
from noisymix_app.screen.reference import DEFAULT_SUMMARY, read_reference
from noisymix_figures.paper import method_columns

#: the tiny recipe: the analogue-methods plan at width 4, one epoch of 64 digits, two corruptions and
#: two perturbations of 4 sequences
TINY = ("width=4", "epochs=1", "train_overrides=batch_size=32,stem_stride=2,train_subset=64",
        "corruptions=gaussian_noise,contrast", "perturbations=gaussian_noise,rotate", "perturbed_limit=4")
SEEDS = (0, 1)
CORRUPTIONS, PERTURBATIONS = ("gaussian_noise", "contrast"), ("gaussian_noise", "rotate")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _measured(run: Path) -> dict[str, float]:
    """One run's three numbers from its evaluation files, computed here from the per-corruption and
    per-perturbation values (not by the screen's code)."""
    ev = run / "eval"
    clean = json.loads((ev / "clean.json").read_text())["summary"]["accuracy"]
    per_c = json.loads((ev / "digits-c.json").read_text())["summary"]["per_corruption"]
    per_p = json.loads((ev / "digits-p.json").read_text())["results"]
    return {"clean": 100 * clean, "corrupted": 100 * sum(per_c[c] for c in CORRUPTIONS) / len(CORRUPTIONS),
            "mean_flip": 100 * sum(per_p[p]["flip_probability"] for p in PERTURBATIONS) / len(PERTURBATIONS)}


def make_summary(path: Path, *, seeds=SEEDS, tiny=TINY, measured: dict | None = None, plan: str = "analogue-methods",
                 drop: str | None = None) -> Path:
    """A summary in the schema of ``noisymix analogue`` (module docstring): the eight methods with the
    paper's values, made-up per-seed numbers (or ``measured[method]``: its per-seed numbers), their means."""
    paper = method_columns(EIGHT_METHODS)
    rng = np.random.default_rng(7)
    table = []
    for m in EIGHT_METHODS:
        p = paper[m]
        per_seed = (measured or {}).get(m) or {
            "clean": list(90 + rng.normal(0, 1, len(seeds))),
            "corrupted": list(p["corrupted"] - 6 + rng.normal(0, 2, len(seeds))),
            "mean_flip": list(p["mfr"] + 2 + rng.normal(0, 1, len(seeds)))}
        row = {"method": m, "row": p["row"], "paper_clean": p["clean"], "paper_corrupted": p["corrupted"],
               "paper_mfr": p["mfr"], "per_seed": {k: [float(v) for v in vs] for k, vs in per_seed.items()}}
        for k, vs in row["per_seed"].items():
            row[k] = {"mean": sum(vs) / len(vs), "half_width": 1.0}
        if drop:
            row.pop(drop)
        table.append(row)
    name = " ".join([plan, *(f"--set {t}" for t in tiny), "--set workers=2"])
    path.write_text(json.dumps({"plan": {"name": name, "seeds": list(seeds), "width": 4}, "table": table}))
    return path


def _cheap_command(argv: list[str]) -> int:
    """``noisymix reproduce``'s commands: the sets for real; verify, toy and figures as their smallest
    finished files (they shape no run)."""
    if argv[0] == "corrupt":
        return main(argv)
    out = Path(argv[argv.index("--out") + 1])
    out.mkdir(parents=True, exist_ok=True)
    done = {"verify": "theory.json", "toy": "toy.json", "figures": "REPORT.md"}[argv[0]]
    (out / done).write_text({"verify": "[]", "toy": '{"experiment": {"seeds": 0}, "claims": []}'}.get(argv[0], "{}"))
    return 0


@pytest.fixture(scope="module")
def analogue_runs(tmp_path_factory) -> Path:
    """Baseline and Mixup on the tiny recipe through ``noisymix reproduce``'s analogue-methods path."""
    from noisymix_app.reproduce.command import reproduce, resolve_plan

    out = tmp_path_factory.mktemp("analogue")
    plan, name = resolve_plan("analogue-methods", [*TINY, "methods=baseline,mixup", "perturbed_methods=baseline,mixup",
                                                   f"seeds={','.join(map(str, SEEDS))}", "workers=1"])
    # named apart from "analogue-methods ...", whose finished job also writes the analogue's test (all 15
    # corruptions); the runs are the plan's whatever it is called
    reproduce(plan, out, command=_cheap_command, name=name.replace("analogue-methods", "analogue-methods-tiny"))
    return out


@pytest.fixture()
def user_module(tmp_path, monkeypatch):
    """``write(name, source) -> module name``: a module of the user's own in a folder on ``sys.path``
    (spawned workers inherit it)."""
    folder = tmp_path / "usercode"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))

    def write(name: str, source: str) -> str:
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
        sys.modules.pop(name, None)
        return name

    return write


EQUALS = """
import torch
from fullscale.training.methods import Method

def identity(images, labels, generator):
    return images, labels

# Mixup in the trainer's own method protocol: the fields of the built-in
mixup = Method("mixup_copy", "Mixup, a copy", mixing="input", strengths=(("mix.alpha", 1.0),))
"""


def test_a_builtin_screened_by_name_is_its_eight_method_run(analogue_runs, tmp_path):
    measured = {m: {k: [_measured(analogue_runs / "runs" / f"{m}-seed{s}")[k] for s in SEEDS]
                    for k in ("clean", "corrupted", "mean_flip")} for m in ("baseline", "mixup")}
    summary = make_summary(tmp_path / "summary.json", measured=measured)
    record = screen("mixup", tmp_path / "out", summary=summary)
    for s in SEEDS:  # the same RunSpec, the same code: the same weights
        assert _sha(tmp_path / "out" / "runs" / f"mixup-seed{s}" / "final.pt") == \
            _sha(analogue_runs / "runs" / f"mixup-seed{s}" / "final.pt")
    for k in ("clean", "corrupted", "mean_flip"):
        assert record["ours"][k]["values"] == pytest.approx(measured["mixup"][k], abs=1e-12)
    assert max(record["reproduces"]["max_abs_difference"].values()) < 1e-9
    text = (tmp_path / "out" / "SCREEN.md").read_text()
    assert "equal the summary's" in text and (tmp_path / "out" / "screen.png").stat().st_size > 10_000
    # its prediction is its own leave-one-out row: the line never saw it
    row = next(r for r in record["maps"]["corrupted"]["loo"] if r["method"] == "mixup")
    assert record["maps"]["corrupted"]["prediction"]["half_width"] == pytest.approx(row["half_width"])


# slow (38 s on a 2-core Intel Xeon): the fast suite keeps the built-in's end-to-end screen
@pytest.mark.slow
def test_a_function_or_method_equal_to_a_builtin_gives_its_numbers(analogue_runs, tmp_path, user_module, capsys):
    module = user_module("equals", EQUALS)
    summary = make_summary(tmp_path / "summary.json")
    # the identity function is a Baseline step exactly; in two spawned workers, which import the module
    record = screen(f"{module}:identity", tmp_path / "identity", summary=summary, overrides=["workers=2"])
    assert record["spec"]["form"] == "function"
    for s in SEEDS:
        assert _sha(tmp_path / "identity" / "runs" / f"identity-seed{s}" / "final.pt") == \
            _sha(analogue_runs / "runs" / f"baseline-seed{s}" / "final.pt")
    record = screen(f"{module}:mixup", tmp_path / "mixup", summary=summary, overrides=["workers=1"])  # in this process
    assert record["spec"]["form"] == "method"
    for s in SEEDS:  # "mixup" is a built-in's name: its runs are named apart
        assert _sha(tmp_path / "mixup" / "runs" / f"mixup-user-seed{s}" / "final.pt") == \
            _sha(analogue_runs / "runs" / f"mixup-seed{s}" / "final.pt")
    config = json.loads((tmp_path / "mixup" / "runs" / "mixup-user-seed0" / "config.json").read_text())["config"]
    assert config["method"] == f"{module}:mixup@{_sha(Path(sys.modules[module].__file__))[:16]}"
    assert config["mix"]["alpha"] == 1.0


# slow (47 s on a 2-core Intel Xeon): three screens end to end; the identity's parts are tested fast
# (tests/app/test_screen_issue64.py: own_sources, the pinned digest)
@pytest.mark.slow
def test_a_rerun_resumes_and_an_edited_source_is_another_run(tmp_path, user_module, capsys):
    module = user_module("cut", "def keep(images, labels, generator):\n    return images * 1.0, labels\n")
    summary = make_summary(tmp_path / "summary.json")
    out = tmp_path / "out"
    screen(f"{module}:keep", out, summary=summary, overrides=["workers=1"])
    weights = out / "runs" / "keep-seed0" / "final.pt"
    stamp = weights.stat().st_mtime_ns
    capsys.readouterr()
    screen(f"{module}:keep", out, summary=summary, overrides=["workers=1"])
    assert "2 runs done, 0 to train" in capsys.readouterr().out and weights.stat().st_mtime_ns == stamp
    page = (out / "SCREEN.md").stat().st_mtime_ns
    # the function edited: its runs are of another method; refused in one line, nothing touched
    source = Path(sys.modules[module].__file__)
    source.write_text(source.read_text() + "# edited\n")
    sys.modules.pop(module)
    assert main(["screen", f"{module}:keep", "--out", str(out), "--summary", str(summary)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--fresh" in err and "source changed" in err
    assert (out / "SCREEN.md").stat().st_mtime_ns == page and weights.stat().st_mtime_ns == stamp
    assert main(["screen", f"{module}:keep", "--out", str(out), "--summary", str(summary), "--fresh",
                 "--set", "workers=1"]) == 0
    config = json.loads((out / "runs" / "keep-seed0" / "config.json").read_text())["config"]
    assert config["method"].endswith(_sha(source)[:16])


RAISES = """
def _inner(images):
    if images.shape[0] == 32:  # a training batch; the dry call's 8 digits pass
        raise RuntimeError("the user's bug")
    return images

def buggy(images, labels, generator):
    return _inner(images), labels
"""


def test_a_method_raising_mid_run_is_reported_with_its_own_frames(tmp_path, user_module, capsys):
    module = user_module("buggy_aug", RAISES)
    summary = make_summary(tmp_path / "summary.json")
    out = tmp_path / "out"
    assert main(["screen", f"{module}:buggy", "--out", str(out), "--summary", str(summary)]) == 1
    err = capsys.readouterr().err
    source = str(Path(sys.modules[module].__file__))
    assert "RuntimeError: the user's bug" in err and "buggy-seed" in err
    assert f'File "{source}", line 4, in _inner' in err and 'raise RuntimeError("the user\'s bug")' in err
    assert f'File "{source}", line 8, in buggy' in err
    assert "fullscale/training" not in err  # its own frames, not ours
    assert not any((out / name).exists() for name in ("SCREEN.md", "screen.json", "screen.png"))
    assert [p for p in (out / "runs").iterdir()] == []  # no run was left half-made


BAD = """
import torch
from fullscale.training.methods import Method

def two_arguments(images, labels):
    return images, labels

def cropped(images, labels, generator):
    return images[:, :, :16], labels

def shrinks(images, labels, generator):
    return images[:-1], labels[:-1]

def doubles(images, labels, generator):
    return images.double(), labels

def nan(images, labels, generator):
    return images * float("nan"), labels

def global_draw(images, labels, generator):
    return images + torch.rand(images.shape), labels

def not_soft(images, labels, generator):
    return images, torch.full((len(labels), 10), 0.5)

def one_thing(images, labels, generator):
    return images

def raises(images, labels, generator):
    raise KeyError("at once")

number = 3
"""


@pytest.mark.parametrize(("name", "words"), [
    ("two_arguments", "cannot be called as fn(images, labels, generator)"),
    ("cropped", "returned images of shape (8, 3, 16, 32)"),
    ("shrinks", "the batch size changed"),
    ("doubles", "dtype torch.float64, expected torch.float32"),
    ("nan", "NaN or infinite"),
    ("global_draw", "global random state"),
    ("not_soft", "not soft labels"),
    ("one_thing", "not (images, targets)"),
    ("raises", "raised KeyError"),
    ("number", "neither a batch function"),
    ("missing", "has no 'missing'"),
])
def test_a_bad_spec_is_refused_in_one_line_before_anything_is_written(name, words, tmp_path, user_module, capsys):
    module = user_module("bad_augs", BAD)
    summary = make_summary(tmp_path / "summary.json")
    out = tmp_path / "out"
    assert main(["screen", f"{module}:{name}", "--out", str(out), "--summary", str(summary)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err
    assert f"{module}:{name}" in err and "@" not in err  # named as given, not by its pinned name
    assert not out.exists()


@pytest.mark.parametrize(("spec", "words"), [
    ("no_such_module_here:fn", "cannot import no_such_module_here"),
    ("augmax", "not a built-in method"),
    ("not a spec:x y", "expected a built-in method name or package.module:name"),
    ("json:loads", "cannot be called as fn(images, labels, generator)"),
    ("math:sqrt", "has no source file"),
])
def test_unknown_or_unimportable_specs_are_one_line(spec, words, tmp_path, capsys):
    summary = make_summary(tmp_path / "summary.json")
    assert main(["screen", spec, "--out", str(tmp_path / "out"), "--summary", str(summary)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err
    assert not (tmp_path / "out").exists()


def test_a_summary_without_per_seed_numbers_is_refused_saying_how_to_make_them(tmp_path, capsys):
    summary = make_summary(tmp_path / "summary.json", drop="per_seed")
    assert main(["screen", "noisymix", "--out", str(tmp_path / "out"), "--summary", str(summary)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "per_seed" in err and "noisymix analogue --results DIR" in err
    assert not (tmp_path / "out").exists()


def test_the_committed_summary_is_read_with_its_per_seed_numbers():
    """The committed file (written by `noisymix analogue --update-readme`, per-seed values rounded to 4
    decimals beside means of the unrounded ones) is one the screen reads: every method, every seed."""
    from noisymix_app.reproduce.plans import PLANS

    reference = read_reference(DEFAULT_SUMMARY)
    n = len(PLANS["analogue-methods"].seeds)  # the plan's seeds (10 since issue 63)
    assert set(EIGHT_METHODS) <= set(reference.methods) and len(reference.seeds) == n
    for method in EIGHT_METHODS:
        per_seed = reference.row(method)["per_seed"]
        assert all(len(v) == n for v in per_seed.values() if isinstance(v, list))
        # per corruption and per family (issue 65): one value per seed each
        assert all(len(v) == n for k in ("per_corruption", "per_family") for v in per_seed[k].values())


def test_summaries_that_cannot_be_compared_with_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not analogue-methods"):
        read_reference(make_summary(tmp_path / "a.json", plan="laptop"))
    bad = json.loads(make_summary(tmp_path / "b.json").read_text())
    bad["table"] = [r for r in bad["table"] if r["method"] != "noisymix"]
    (tmp_path / "b.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="no noisymix row"):
        read_reference(tmp_path / "b.json")
    bad = json.loads(make_summary(tmp_path / "c.json").read_text())
    bad["table"][2]["corrupted"]["mean"] += 1.0  # a mean that is not its seeds'
    (tmp_path / "c.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="not the mean of its per_seed"):
        read_reference(tmp_path / "c.json")
    bad = json.loads(make_summary(tmp_path / "d.json").read_text())
    bad["table"][0]["per_seed"]["mean_flip"] = [1.0]  # not aligned with the seeds
    (tmp_path / "d.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="not 2 numbers"):
        read_reference(tmp_path / "d.json")
    with pytest.raises(ValueError, match="no eight-method summary"):
        read_reference(tmp_path / "none.json")


def test_the_recipe_is_the_summarys_and_only_workers_may_be_set(tmp_path):
    reference = read_reference(make_summary(tmp_path / "s.json", seeds=(3, 5)))
    plan = screen_plan(reference)
    assert plan.width == 4 and plan.epochs == 1 and plan.seeds == (3, 5) and plan.perturbed_limit == 4
    assert screen_plan(reference, ["workers=1"]).workers == 1
    assert screen_plan(reference, ["width=4"]).width == 4  # the summary's own value: no change
    for bad in (["width=8"], ["epochs=2"], ["seeds=0,1"], ["methods=baseline"]):
        with pytest.raises(ValueError, match="workers=N only"):
            screen_plan(reference, bad)


def test_a_folder_of_another_kind_or_another_method_is_refused(tmp_path, capsys):
    from noisymix_infra.folder_kind import mark_folder

    summary = make_summary(tmp_path / "summary.json")
    run = tmp_path / "run"
    mark_folder(run, "run")
    assert main(["screen", "baseline", "--out", str(run), "--summary", str(summary)]) == 2
    assert "training run" in capsys.readouterr().err
    other = tmp_path / "other"
    other.mkdir()
    (other / "noisymix-folder.json").write_text(json.dumps({"kind": "screen"}))
    (other / "screen-log.json").write_text(json.dumps({"spec": {"method": "nfm"}, "steps": []}))
    assert main(["screen", "baseline", "--out", str(other), "--summary", str(summary)]) == 2
    err = capsys.readouterr().err.strip()
    assert "a screen of nfm" in err and "--fresh" in err and len(err.splitlines()) == 1


def test_method_frames_keeps_the_methods_own_file():
    trace = textwrap.dedent('''\
        Traceback (most recent call last):
          File "/x/noisymix_app/sweep/execute.py", line 65, in execute_run
            _train_and_evaluate(spec)
          File "/u/aug.py", line 9, in aug
            return helper(x)
          File "/u/aug.py", line 3, in helper
            raise ValueError("no")
        ValueError: no
        ''')
    assert method_frames(trace, "/u/aug.py") == ['  File "/u/aug.py", line 9, in aug', "    return helper(x)",
                                                 '  File "/u/aug.py", line 3, in helper', '    raise ValueError("no")']
    assert len(method_frames(trace, None)) == 6  # a built-in: the last three frames


def test_the_cutout_example_is_cutout_and_passes_the_dry_call(monkeypatch):
    """docs/examples/cutout.py against the public Cutout code's per-image mask (uoguelph-mlrg/Cutout,
    ``Cutout.__call__``: rows clip(y - L/2, 0, h) to clip(y + L/2, 0, h), columns likewise, set to 0), at
    the centres the same generator draws; the labels kept; and the screen's dry call takes it."""
    import torch

    from fullscale.augment import to_float
    from fullscale.data import load_dataset
    from fullscale.training.user_method import check_function, pin

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    from docs.examples.cutout import SIDE, cutout

    images, labels = torch.rand(6, 3, 32, 32), torch.arange(6)
    out, kept = cutout(images, labels, torch.Generator().manual_seed(3))
    g = torch.Generator().manual_seed(3)
    ys, xs = torch.randint(0, 32, (6, 1, 1), generator=g), torch.randint(0, 32, (6, 1, 1), generator=g)
    for i in range(6):
        mask = np.ones((32, 32), np.float32)
        y, x = int(ys[i]), int(xs[i])
        y1, y2 = np.clip(y - SIDE // 2, 0, 32), np.clip(y + SIDE // 2, 0, 32)
        x1, x2 = np.clip(x - SIDE // 2, 0, 32), np.clip(x + SIDE // 2, 0, 32)
        mask[y1:y2, x1:x2] = 0.0
        assert torch.equal(out[i], images[i] * torch.from_numpy(mask))
    assert torch.equal(kept, labels)
    digits = load_dataset("digits", "train")
    check_function(pin("docs.examples.cutout:cutout"), to_float(digits.images[:8]), digits.labels[:8].long(), 10)


@pytest.mark.slow
@pytest.mark.parametrize("method", EIGHT_METHODS)
def test_each_builtin_screened_by_name_reproduces_the_committed_summary(method, tmp_path):
    """The committed eight-method summary's per-seed numbers, by the screen's runs of the same seeds
    (minutes per method on 2 cores); skipped while the committed file has no per-seed numbers."""
    try:
        reference = read_reference(DEFAULT_SUMMARY)
    except ValueError as error:
        pytest.skip(f"the committed summary cannot be screened against: {error}")
    record = screen(method, tmp_path / "out")
    committed = reference.row(method)["per_seed"]
    at = [reference.seeds.index(s) for s in record["seeds"]]  # the screen's seeds: the summary's first five
    assert record["seeds"] == list(reference.seeds[:5])
    for k in ("clean", "corrupted", "mean_flip"):
        # the committed values are rounded to 4 decimals
        assert record["ours"][k]["values"] == pytest.approx([committed[k][i] for i in at], abs=5.1e-5), k
