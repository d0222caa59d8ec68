"""What `train` refuses or reports instead of doing silently (issue 32, training side): a folder of
another kind as --out, a folder left behind by a refused run, data changed in place under a
resumed run, a finite divergence marked finished, seeds the documented range allows, presets
mistyped."""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from fullscale.data.cifar import write_cifar_fixture
from fullscale.training.checks import NonFiniteLoss, divergence
from fullscale.training.generators import Generators, stream_seed
from fullscale.training.loop import train
from fullscale.training.presets import resolve_config
from fullscale.training.process import Process
from noisymix_app.cli import main
from noisymix_infra.folder_kind import MARKER, folder_kind, mark_folder

QUICK = ["dataset=digits", "width=4", "epochs=1", "batch_size=32", "train_subset=64"]
QUICK_ARGS = [a for kv in QUICK for a in ("--set", kv)]


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Tiny models: a second intra-op thread only waits on a busy machine."""


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


# --- part 4: a folder says what it is -------------------------------------------------------

@pytest.mark.parametrize("kind", ["c-set-manifest", "p-set", "sweep", "figures"])
def test_train_refuses_a_folder_of_another_kind_and_writes_nothing(tmp_path, capsys, kind):
    folder = tmp_path / "data" / "digits-c"
    folder.mkdir(parents=True)
    if kind == "c-set-manifest":  # a -C set written before the marker existed: its manifest says so
        (folder / "manifest.json").write_text(json.dumps({"kind": "c", "names": ["gaussian_noise"]}))
        (folder / "gaussian_noise.npy").write_bytes(b"images")
    elif kind == "sweep":
        (folder / "sweep").mkdir()
        (folder / "sweep" / "plan.json").write_text("{}")
    else:
        mark_folder(folder, kind)
    before = _listing(folder)
    assert main(["train", "--preset", "baseline", "--out", str(folder), *QUICK_ARGS]) == 2
    err = _one_line_error(capsys)
    assert "--out" in err and "not a training run" in err
    assert _listing(folder) == before  # no model, no config.json, no lock, no marker


def test_a_new_run_folder_is_marked_and_an_old_unmarked_run_still_resumes(tmp_path, crash_after_first_checkpoint):
    cfg = resolve_config("baseline", [*QUICK, "epochs=2"])
    out = tmp_path / "r"
    crash_after_first_checkpoint(cfg, out)
    assert (out / MARKER).is_file() and folder_kind(out) == "run"
    (out / MARKER).unlink()  # a run made before the marker existed
    train(cfg, out, resume=True)
    assert (out / "final.pt").is_file() and folder_kind(out) == "run" and (out / MARKER).is_file()


def test_a_cifar_run_without_its_data_leaves_no_folder_behind(tmp_path, capsys):
    out = tmp_path / "runs" / "cifar"
    assert main(["train", "--preset", "baseline", "--out", str(out), "--set", "epochs=1"]) == 2
    assert "cifar10" in _one_line_error(capsys)
    assert not out.exists()  # was: runs/cifar/.lock


@pytest.mark.parametrize("existing", [False, True])
def test_a_late_error_leaves_the_folder_as_it_was(tmp_path, monkeypatch, existing):
    import fullscale.training.trainee as trainee_module

    def late_error(*args, **kwargs):
        raise ValueError("a setting only the first step finds wrong")
    monkeypatch.setattr(trainee_module, "drawn_step_loss", late_error)
    out = tmp_path / "r"
    if existing:
        out.mkdir()
    with pytest.raises(ValueError, match="first step"):
        train(resolve_config("baseline", QUICK), out)
    assert (out.is_dir() and _listing(out) == []) if existing else not out.exists()


def test_a_mistyped_preset_suggests_the_closest_names(capsys):
    with pytest.raises(ValueError, match="did you mean digits-noisymix"):
        resolve_config("digit-noisymix", [])
    assert main(["train", "--preset", "cifar100-wrn28-4-noisymix", "--out", "unused"]) == 2
    err = _one_line_error(capsys)
    assert "cifar100-wrn28_4-noisymix" in err and "list-presets" in err


# --- part 5: data changed in place under a resumed run ---------------------------------------

def test_resume_refuses_cifar_batches_replaced_in_place(tmp_path, capsys, crash_after_first_checkpoint):
    root = tmp_path / "cifar"
    write_cifar_fixture(root, n_train=64, n_test=8, seed=0)
    sets = ["dataset=cifar10", f"data_root={root}", "width=4", "epochs=2", "batch_size=32"]
    out = tmp_path / "r"
    crash_after_first_checkpoint(resolve_config("baseline", sets), out)
    write_cifar_fixture(root, n_train=64, n_test=8, seed=1)  # same files, same sizes, new images
    args = ["train", "--preset", "baseline", "--out", str(out), "--resume", *[a for kv in sets for a in ("--set", kv)]]
    assert main(args) == 2
    err = _one_line_error(capsys)
    assert "training data" in err and "changed since the run started" in err
    assert not (out / "final.pt").exists()
    write_cifar_fixture(root, n_train=64, n_test=8, seed=0)  # the data it started with: resumes
    assert main(args) == 0
    assert (out / "final.pt").is_file()


def test_a_run_recorded_before_the_data_identity_resumes(tmp_path, crash_after_first_checkpoint):
    cfg = resolve_config("baseline", [*QUICK, "epochs=2"])
    out = tmp_path / "r"
    crash_after_first_checkpoint(cfg, out)
    record = json.loads((out / "config.json").read_text())
    assert len(record["run"]["data_sha256"]) == 64
    del record["run"]["data_sha256"]
    (out / "config.json").write_text(json.dumps(record))
    train(cfg, out, resume=True)
    assert (out / "final.pt").is_file()


# --- part 5: a finite divergence is not a finished run --------------------------------------

def test_a_finite_divergence_at_a_huge_lr_is_reported_not_finished(tmp_path, capsys):
    """lr=1.5 on 64 digits: the cross-entropy goes 2.8, 81, 3022 per epoch, every step finite;
    the run was marked finished with its final.pt."""
    out = tmp_path / "r"
    quick = [a for kv in QUICK if not kv.startswith("epochs=") for a in ("--set", kv)]  # a key is given once
    args = ["train", "--preset", "baseline", "--out", str(out), *quick, "--set", "epochs=3", "--set", "lr=1.5"]
    assert main(args) == 1
    err = _one_line_error(capsys)
    assert "diverged" in err or "non-finite" in err  # finite here; another CPU's rounding may reach NaN
    assert not (out / "final.pt").exists()
    run = json.loads((out / "config.json").read_text())["run"]
    assert "finished" not in run
    assert main([*args, "--resume"]) == 1  # a resume says the same, and finishes nothing
    assert not (out / "final.pt").exists()


def _epochs(*ce):
    return [{"epoch": i + 1, "loss": v, "cross_entropy": v} for i, v in enumerate(ce)]


def test_divergence_rules():
    never = lambda: pytest.fail("accuracy asked for a run whose loss never rose")  # noqa: E731
    # healthy runs (digits, epochs=2: baseline, NoisyMix, AugMix+JSD), the tests' 1-epoch runs
    for metrics in (_epochs(1.79, 0.84), _epochs(2.03, 1.61), _epochs(1.73, 0.90), _epochs(2.4), _epochs(2.49, 2.15)):
        assert divergence(metrics, 10, never) is None
    # ends far above its start, even when the first epoch had already blown up
    assert "ended at 3022" in divergence(_epochs(2.82, 81.5, 3022), 10, never)
    assert "ended at 1017" in divergence(_epochs(5000.0, 1017.0), 10, never)
    # a blow-up, then a dead network at ln(10) and chance accuracy; a recovered one is not diverged
    assert "at chance" in divergence(_epochs(2.3, 63.0, 2.3), 10, lambda: (0.1, 1000))
    assert divergence(_epochs(2.3, 63.0, 2.3), 10, lambda: (0.6, 1000)) is None
    assert divergence(_epochs(2.3, 63.0, 2.3), 10, lambda: None) is None  # not measurable: loss rule only
    # puzzlemix's bce loss starts near 0.33, not ln(classes)
    assert divergence(_epochs(0.33, 0.2), 10, never) is None
    assert divergence(_epochs(0.33, 0.9), 10, never) is not None


@pytest.mark.slow
def test_a_healthy_short_digits_run_is_not_diverged(tmp_path):
    train(resolve_config("digits-noisymix", ["epochs=2"]), tmp_path / "r")
    assert (tmp_path / "r" / "final.pt").is_file()


# --- part 5: the documented seed range -----------------------------------------------------

@given(st.integers(0, 2**63 - 1))
def test_every_documented_seed_gives_valid_generator_seeds(seed):
    cfg = resolve_config("baseline", [*QUICK, f"seed={seed}"])
    for rank in (0, 1, 7):
        generators = Generators.create(cfg, Process(torch.device("cpu"), rank, 8))
        for g in (generators.order, generators.aug):
            assert 0 <= g.initial_seed() < 2**64
    for stream in (1, 2, 501):
        value = stream_seed(seed, stream)
        assert 0 <= value < 2**64
        if seed * 1000 + stream < 2**64:  # the streams of every run made so far are unchanged
            assert value == seed * 1000 + stream


@given(st.integers(2**60, 2**63 - 1), st.integers(2**60, 2**63 - 1))
def test_large_seeds_keep_distinct_streams(a, b):
    if a != b:
        assert stream_seed(a, 1) != stream_seed(b, 1)
    assert stream_seed(a, 1) != stream_seed(a, 501)


def test_the_largest_seed_trains_and_one_beyond_is_one_line(tmp_path, capsys):
    train(resolve_config("baseline", [*QUICK, f"seed={2**63 - 1}"]), tmp_path / "r")  # was an overflow
    assert (tmp_path / "r" / "final.pt").is_file()
    for bad in (2**63, -1):
        assert main(["train", "--preset", "baseline", "--out", str(tmp_path / "s"), *QUICK_ARGS,
                     "--set", f"seed={bad}"]) == 2
        assert "0 .. 2**63 - 1" in _one_line_error(capsys)
    assert not (tmp_path / "s").exists()


# --- the same guards for seeds trained together (fullscale.training.members) --------------------------

def test_a_group_refuses_a_folder_of_another_kind_and_marks_its_runs(tmp_path):
    from fullscale.training.members import train_members

    cfg = resolve_config("baseline", QUICK)
    c_set = tmp_path / "c"
    mark_folder(c_set, "c-set")
    with pytest.raises(ValueError, match=r"members: .* not a training run"):
        train_members(cfg, (0, 1), [tmp_path / "a", c_set])
    assert not (tmp_path / "a").exists() and _listing(c_set) == [MARKER]
    train_members(cfg, (0, 1), [tmp_path / "a", tmp_path / "b"])
    assert folder_kind(tmp_path / "a") == folder_kind(tmp_path / "b") == "run"
    assert (tmp_path / "a" / MARKER).is_file()


def test_a_group_reports_its_diverged_members(tmp_path):
    """lr=1.5, 2 epochs of 64 digits: seed 0 ends at a cross-entropy of 34, seed 1 at 50, both finite."""
    from fullscale.training.members import train_members

    outs = [tmp_path / "a", tmp_path / "b"]
    with pytest.raises(NonFiniteLoss, match=r"diverged|non-finite"):
        train_members(resolve_config("baseline", [*QUICK, "epochs=2", "lr=1.5"]), (0, 1), outs)
    for out in outs:
        assert not (out / "final.pt").exists()
        assert "finished" not in json.loads((out / "config.json").read_text())["run"]


def test_a_group_refuses_to_resume_on_changed_data(tmp_path, crash_after_checkpoints):
    from fullscale.training.members import train_members

    root = tmp_path / "cifar"
    write_cifar_fixture(root, n_train=32, n_test=8, seed=0)
    cfg = resolve_config("baseline", ["dataset=cifar10", f"data_root={root}", "width=4", "epochs=2",
                                      "batch_size=16"])
    outs = [tmp_path / "a", tmp_path / "b"]
    crash_after_checkpoints(lambda: train_members(cfg, (0, 1), outs), 2)  # both members' first checkpoints
    write_cifar_fixture(root, n_train=32, n_test=8, seed=1)
    with pytest.raises(ValueError, match=r"training data .* changed since the run started"):
        train_members(cfg, (0, 1), outs)
    write_cifar_fixture(root, n_train=32, n_test=8, seed=0)
    train_members(cfg, (0, 1), outs)
    assert all((out / "final.pt").is_file() for out in outs)
