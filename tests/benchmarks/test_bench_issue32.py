"""Issue 32: the GPU suite's steps run (one argument object with ``bench train-step``), a figure
that errors fails the command, and bad sizes or devices are one line before any work."""

from __future__ import annotations

import importlib
import json

import pytest

from noisymix_app.bench import bench_gpu, bench_train_step
from noisymix_app.bench._options import options, parser_for
from noisymix_app.bench.cli import BENCHMARKS
from noisymix_app.cli import main

STEPS = ("step_bf16_channels_last", "step_fp32_channels_last", "step_bf16_contiguous")


def test_the_quick_suites_training_steps_run_on_the_cpu(tmp_path, capsys):
    """The three step figures failed with AttributeError ('stem_stride') while the command exited 0."""
    assert main(["bench", "gpu", "--device", "cpu", "--quick", "--out", str(tmp_path), "--only", ",".join(STEPS),
                 "--threads", "1"]) == 0
    figures = json.loads((tmp_path / "gpu.json").read_text())["figures"]
    for name in STEPS:
        assert "error" not in figures[name], figures[name]
        assert figures[name]["noisymix_step_s"] > 0 and figures[name]["plain_step_s"] > 0  # measured: a smoke run
        assert figures[name]["status"] == "smoke only"  # no GPU verdict from a CPU


def test_a_figure_that_errors_fails_the_command_and_is_named(tmp_path, capsys, monkeypatch):
    def fake(name, ctx, deadline):
        return {"error": "AttributeError: boom"} if name == "augmix_32" else {"value": 1.0, "unit": "x"}

    monkeypatch.setattr(bench_gpu, "_figure_in_child", fake)
    assert main(["bench", "gpu", "--device", "cpu", "--quick", "--out", str(tmp_path),
                 "--only", "augmix_32,augmix_224"]) == 1
    err = capsys.readouterr().err
    assert "1 figure(s) failed: augmix_32: AttributeError: boom" in err
    assert json.loads((tmp_path / "gpu.json").read_text())["figures"]["augmix_224"]["value"] == 1.0


def test_a_rerun_into_its_own_folder_is_taken_and_a_foreign_gpu_json_is_refused(tmp_path, capsys, monkeypatch):
    """The gpu.json of a first run carries ``environment``, not ``machine``: the second run into the
    same --out was refused as 'a gpu.json that noisymix bench did not write'."""
    monkeypatch.setattr(bench_gpu, "_figure_in_child", lambda name, ctx, deadline: {"value": 1.0, "unit": "x"})
    argv = ["bench", "gpu", "--device", "cpu", "--quick", "--out", str(tmp_path / "ours"), "--only", "augmix_32"]
    assert main(argv) == 0 and main(argv) == 0
    assert "did not write" not in capsys.readouterr().err
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "gpu.json").write_text(json.dumps({"benchmark": "gpu", "figures": {}}))
    assert main([*argv[:-3], str(tmp_path / "theirs"), "--only", "augmix_32"]) == 2
    assert "holds a gpu.json that noisymix bench did not write" in capsys.readouterr().err


def test_options_take_every_default_from_the_benchmarks_own_parser_and_refuse_unknown_keys():
    args = options(bench_train_step, device="cpu", batch=4)
    defaults = vars(parser_for(bench_train_step).parse_args([]))
    assert set(vars(args)) == set(defaults) and args.batch == 4 and args.stem_stride == defaults["stem_stride"]
    with pytest.raises(ValueError, match="has no option"):
        options(bench_train_step, stem_strides=2)


def test_the_gpu_suites_optional_benchmarks_exist():
    assert set(bench_gpu.OPTIONAL_BENCHMARKS.values()) <= set(BENCHMARKS)


def _least_cases() -> list[tuple[str, str, int]]:
    """(benchmark, option, a value below its least) for every numeric option of every benchmark."""
    cases = []
    for name, module_name in sorted(BENCHMARKS.items()):
        parser = parser_for(importlib.import_module(module_name))
        for action in parser._actions:
            if action.type not in (int, float) or not action.option_strings or action.choices:
                continue
            least = 0 if action.default == 0 or action.dest == "warmup" else 1
            cases.append((name, action.option_strings[-1], least - 1))
    return cases


@pytest.mark.parametrize(("name", "option", "value"), _least_cases())
def test_a_size_count_or_repeat_below_its_least_is_one_line(name, option, value, capsys, tmp_path, monkeypatch):
    module = importlib.import_module(BENCHMARKS[name])
    monkeypatch.setattr(module, "run", lambda args: pytest.fail("the benchmark ran"))
    argv = ["bench", name, "--out", str(tmp_path / "x.json"), "--", option, str(value)]
    try:
        code = main(argv)
    except SystemExit as stop:  # an argparse type check: the same one line
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and option in err, err


@pytest.mark.parametrize("device", ["cuda:7", "cuda", "tpu", "nonsense"])
def test_a_device_that_is_not_here_is_one_line(device, capsys, monkeypatch):
    import torch

    if torch.cuda.is_available() and device == "cuda":
        pytest.skip("this machine has CUDA")
    monkeypatch.setattr(bench_train_step, "run", lambda args: pytest.fail("the benchmark ran"))
    assert main(["bench", "train-step", "--device", device]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--device" in err, err


def test_bench_threads_times_each_policy_as_a_whole_process(tmp_path, capsys):
    """The smallest run of `noisymix bench threads`: one policy, one load, one round."""
    out = tmp_path / "threads.json"
    assert main(["bench", "threads", "--out", str(out), "--", "--loads", "0", "--policies", "one,auto",
                 "--work", "reproduce", "--epochs", "1", "--repeats", "1", "--workdir", str(tmp_path / "w")]) == 0
    result = json.loads(out.read_text())
    for policy in ("one", "auto"):
        (seconds,) = result["seconds"]["reproduce"][policy]["0"]
        assert seconds > 0
    assert "| reproduce | 0 |" in result["table"]


def _float_options() -> list[tuple[str, str]]:
    return [(name, option) for name, option, _ in _least_cases()
            if any(a.type is float and option in a.option_strings
                   for a in parser_for(importlib.import_module(BENCHMARKS[name]))._actions)]


@pytest.mark.parametrize(("name", "option"), _float_options())
def test_seconds_take_any_positive_value_and_refuse_nan(name, option):
    """A float option (seconds, a rate) is not a count: 0.5 is fine, nan is refused like 0 (or like a
    negative value, where 0 is its default: off)."""
    from noisymix_app.bench._options import check

    parser = parser_for(importlib.import_module(BENCHMARKS[name]))
    check(parser, parser.parse_args(["--device", "cpu", option, "0.5"]))
    default = next(a.default for a in parser._actions if option in a.option_strings)
    least = ">= 0 \\(its default\\)" if default == 0 else "> 0"
    with pytest.raises(ValueError, match=f"{option} must be {least}, got nan"):
        check(parser, parser.parse_args(["--device", "cpu", option, "nan"]))


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
@pytest.mark.parametrize("before", [True, False], ids=["device-before-name", "device-after-name"])
def test_every_benchmark_refuses_a_missing_cuda_device_before_any_work(name, before, capsys, monkeypatch):
    import torch

    if torch.cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")
    monkeypatch.setattr(importlib.import_module(BENCHMARKS[name]), "run", lambda args: pytest.fail("it ran"))
    argv = ["bench", "--device", "cuda:7", name] if before else ["bench", name, "--device", "cuda:7"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cuda:7" in err, err
