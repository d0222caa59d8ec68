"""`noisymix evaluate` end to end (via noisymix_app.cli.main) on tiny generated -C/-P sets and ImageNet-style
folders, against predictions computed directly from the model; resume; clear errors."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from fullscale.corruptions import CORRUPTIONS
from fullscale.data import imagenet_r_indices, imagenet_r_wnids, imagenet_wnids, load_dataset
from fullscale.metrics import ALEXNET_ERR, expected_calibration_error, rms_calibration_error
from fullscale.models import create_model
from noisymix_app.cli import main
from noisymix_infra.io import save_npy, save_torch, write_json

COUNT = 60  # images per severity in the -C fixture


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", "test")


def _init(model, seed=0):
    """He-normal weights from a generator (no global seed), BN at identity."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * (2 / p[0].numel()) ** 0.5)
    return model


@pytest.fixture(scope="module")
def trained_state():
    """Random He features with a least-squares linear head fitted on digits (no SGD: cheap), so the
    predictions vary with the input and accuracy falls with darkening."""
    model = _init(create_model("preactresnet18", 10, width=4)).eval()
    train = load_dataset("digits", "train")
    head = [m for m in model.modules() if isinstance(m, torch.nn.Linear)][-1]
    features = []
    hook = head.register_forward_hook(lambda module, inputs, output: features.append(inputs[0]))
    with torch.no_grad():
        model(train.images[:400].float() / 255)
    hook.remove()
    f = torch.cat([features[0], torch.ones(len(features[0]), 1)], 1)
    target = torch.nn.functional.one_hot(train.labels[:400], 10).float()
    w = torch.linalg.solve(f.T @ f + 1e-3 * torch.eye(f.shape[1]), f.T @ target)
    with torch.no_grad():
        head.weight.copy_(w[:-1].T)
        head.bias.copy_(w[-1])
    return {k: v.clone() for k, v in model.state_dict().items()}


def _run(tmp_path, state=None, dataset="digits", classes=10):
    run = tmp_path / f"run-{dataset}"
    model = create_model("preactresnet18", classes, width=4)
    if state is None:
        _init(model)
    else:
        model.load_state_dict(state)
    save_torch(run / "final.pt", model.state_dict())
    write_json(run / "config.json", {"model": "preactresnet18", "model_kwargs": {"width": 4}, "num_classes": classes,
                                     "dataset": dataset, "method": "baseline", "preset": "baseline", "seed": 0})
    return run, model.eval()


def _predict(model, images_u8: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        return model(images_u8.float() / 255).argmax(1).numpy()


def _read(run, suite):
    return json.loads((run / "eval" / f"{suite}.json").read_text())


def _severity(images, s):  # a different image set per severity: darker with s
    return (images.float() * (1 - 0.2 * (s - 1))).to(torch.uint8)


def test_clean_c_suite_and_resume(tmp_path, digits, trained_state):
    run, model = _run(tmp_path, trained_state)
    images, labels = digits.images[:COUNT], digits.labels[:COUNT].numpy()
    root = tmp_path / "digits-c"
    for name in ("fog", "contrast"):
        blocks = [_severity(images, s) for s in range(1, 6)]
        save_npy(root / f"{name}.npy", torch.cat(blocks).permute(0, 2, 3, 1).numpy())
    save_npy(root / "labels.npy", np.tile(labels, 5))

    assert main(["evaluate", str(run), "--suite", "clean"]) == 0
    clean = _read(run, "clean")
    assert clean["complete"] and clean["results"]["clean"]["n"] == len(digits)
    direct = (_predict(model, digits.images) == digits.labels.numpy()).mean()
    assert clean["summary"]["accuracy"] == pytest.approx(direct, abs=1.5 / len(digits))

    # two of the 15: refused unless a partial suite is asked for (its means are not the benchmark's)
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(root)]) == 2
    assert not (run / "eval" / "digits-c.json").exists()
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(root), "--partial"]) == 0
    result = _read(run, "digits-c")
    expected = {s: (_predict(model, _severity(images, s)) == labels).mean() for s in range(1, 6)}
    assert len(set(expected.values())) > 1  # the severities differ, so a mix-up would show
    for c in ("fog", "contrast"):
        for s in range(1, 6):
            cell = result["results"][c][str(s)]
            assert {k: cell[k] for k in ("accuracy", "n")} == {"accuracy": pytest.approx(expected[s], abs=1.5 / COUNT),
                                                               "n": COUNT}
    # calibration of each corrupted set (issue 31), from the model's own softmax by the metrics' definitions
    with torch.no_grad():
        probabilities = model(_severity(images, 3).float() / 255).softmax(1).numpy()
    confidence, correct = probabilities.max(1), probabilities.argmax(1) == labels
    cell = result["results"]["fog"]["3"]
    assert cell["mean_confidence"] == pytest.approx(confidence.mean(), abs=1e-4)
    assert cell["confidence_gap"] == pytest.approx(confidence.mean() - correct.mean(), abs=1.5 / COUNT)
    assert cell["rms_calibration_error"] == pytest.approx(rms_calibration_error(confidence, correct), abs=2e-3)
    assert cell["ece"] == pytest.approx(expected_calibration_error(confidence, correct), abs=2e-3)
    pooled = result["summary"]["calibration"]
    assert "not the clean test images" in pooled["data"]
    cells = [result["results"][c][str(s)] for c in ("fog", "contrast") for s in range(1, 6)]
    assert pooled["rms_calibration_error"] == pytest.approx(np.mean([e["rms_calibration_error"] for e in cells]))
    assert pooled["per_severity"]["3"]["confidence_gap"] == pytest.approx(
        np.mean([result["results"][c]["3"]["confidence_gap"] for c in ("fog", "contrast")]))
    mean = np.mean(list(expected.values()))
    summary = result["summary"]
    assert summary["mean_accuracy"] == pytest.approx(mean, abs=1.5 / COUNT)
    assert summary["per_category"] == {"weather": pytest.approx(mean, abs=1.5 / COUNT),
                                       "digital": pytest.approx(mean, abs=1.5 / COUNT)}
    assert summary["clean_accuracy"] == clean["summary"]["accuracy"] and "mce" not in summary
    assert "gaussian_noise" in summary["missing_corruptions"] and len(summary["missing_corruptions"]) == 13
    # every mean says how many corruptions it covers
    assert summary["n_corruptions"] == 2 and summary["n_corruptions_no_noise"] == 2
    assert summary["per_category_n_corruptions"] == {"weather": 1, "digital": 1}
    files = {f["path"].rsplit("/", 1)[-1]: f for f in result["data"]["files"]}
    assert set(files) == {"labels.npy", "fog.npy", "contrast.npy"} and len(files["fog.npy"]["sha256"]) == 64
    assert result["checkpoint"]["sha256"] and result["model"] == "preactresnet18" and result["seconds"] > 0

    # resume: a partial file with fog done is completed without recomputing fog
    partial = {**result, "complete": False, "results": {"fog": {str(s): {"accuracy": -1.0, "n": COUNT}
                                                                for s in range(1, 6)}}}
    write_json(run / "eval" / "digits-c.json", partial)
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(root), "--partial"]) == 0
    resumed = _read(run, "digits-c")
    assert resumed["complete"] and resumed["results"]["fog"]["1"]["accuracy"] == -1.0  # kept, not recomputed
    assert resumed["results"]["contrast"] == result["results"]["contrast"]
    # other options (here the batch size) do not resume from the partial file
    write_json(run / "eval" / "digits-c.json", partial)
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(root), "--batch-size", "7",
                 "--corruptions", "fog"]) == 0
    assert _read(run, "digits-c")["results"]["fog"]["1"]["accuracy"] == pytest.approx(expected[1], abs=1.5 / COUNT)

    # issue 23: a partial result is bound to the data it read.  Another folder (set B) of the same
    # shape: nothing of set A is kept; the same folder re-generated with other images: fog is redone
    partial = {**result, "complete": False, "results": {"fog": {str(s): {"accuracy": -1.0, "n": COUNT}
                                                                for s in range(1, 6)}}}
    other = tmp_path / "digits-c-b"
    shutil.copytree(root, other)
    write_json(run / "eval" / "digits-c.json", partial)
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(other), "--partial"]) == 0
    assert _read(run, "digits-c")["results"]["fog"]["1"]["accuracy"] >= 0  # recomputed on B
    write_json(run / "eval" / "digits-c.json", partial)
    save_npy(root / "fog.npy", np.zeros_like(np.load(root / "fog.npy")))  # re-generated in place
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(root), "--partial"]) == 0
    regenerated = _read(run, "digits-c")["results"]["fog"]
    blank = (_predict(model, torch.zeros_like(images)) == labels).mean()
    assert regenerated["1"]["accuracy"] == pytest.approx(blank, abs=1.5 / COUNT)


def test_full_c_suite_states_fifteen_corruptions(tmp_path, digits, trained_state):
    """All 15 present: no option needed, and the means say they cover 15 (3 noise, 4 blur,
    4 weather, 4 digital: Hendrycks & Dietterich's categories)."""
    run, _ = _run(tmp_path, trained_state)
    images, labels = digits.images[:COUNT], digits.labels[:COUNT].numpy()
    root = tmp_path / "digits-c"
    block = torch.cat([_severity(images, s) for s in range(1, 6)]).permute(0, 2, 3, 1).numpy()
    for name in CORRUPTIONS:
        save_npy(root / f"{name}.npy", block)
    save_npy(root / "labels.npy", np.tile(labels, 5))
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(root), "--threads", "1"]) == 0
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True).stdout.strip()
    assert _read(run, "digits-c")["provenance"]["commit"] == (head or None)  # None outside a checkout
    summary = _read(run, "digits-c")["summary"]
    assert summary["n_corruptions"] == 15 and summary["n_corruptions_no_noise"] == 12
    assert summary["per_category_n_corruptions"] == {"noise": 3, "blur": 4, "weather": 4, "digital": 4}
    assert "missing_corruptions" not in summary


def test_calibration_and_fgsm(tmp_path, digits, trained_state):
    run, model = _run(tmp_path, trained_state)
    assert main(["evaluate", str(run), "--suite", "calibration", "--rms-estimator", "public"]) == 0
    cal = _read(run, "calibration")["summary"]
    with torch.no_grad():
        probs = model(digits.images.float() / 255).softmax(1)
    conf, pred = probs.max(1)
    correct = (pred == digits.labels).numpy().astype(float)
    assert cal["rms_estimator"] == "public" and cal["accuracy"] == pytest.approx(correct.mean(), abs=1.5 / len(digits))
    assert cal["rms_calibration_error"] == pytest.approx(
        rms_calibration_error(conf.numpy(), correct, estimator="public"), abs=1e-3)
    assert 0 <= cal["ece"] <= 1 and 0 <= cal["aurra"] <= 1

    assert main(["evaluate", str(run), "--suite", "fgsm", "--epsilons", "0,8/255"]) == 0
    fg = _read(run, "fgsm")
    assert fg["summary"]["epsilons"] == [0.0, pytest.approx(8 / 255)]
    assert set(fg["results"]) == {"eps=0", "eps=0.0313725"}
    assert fg["results"]["eps=0"]["accuracy"] == pytest.approx(correct.mean(), abs=1.5 / len(digits))


def test_p_suite_flip_probabilities(tmp_path, digits, trained_state):
    run, model = _run(tmp_path, trained_state)
    a, b = digits.images[:8], digits.images[8:16]
    frames = torch.stack([a, b, b, a, b], 1)  # (8 sequences, 5 frames, 3, 32, 32)
    root = tmp_path / "digits-p"
    for name in ("gaussian_noise", "rotate", "spatter", "gaussian_noise_2"):  # the last outside the paper's ten
        save_npy(root / f"{name}.npy", frames.permute(0, 1, 3, 4, 2).numpy())
    differ = (_predict(model, a) != _predict(model, b)).astype(float)  # per sequence
    alexnet = tmp_path / "alexnet.json"
    alexnet.write_text(json.dumps({"gaussian_noise": 0.5, "rotate": 0.25, "spatter": 0.5}))
    assert main(["evaluate", str(run), "--suite", "digits-p", "--data-root", str(root), "--weather", "spatter",
                 "--alexnet-flip", str(alexnet)]) == 0
    p = _read(run, "digits-p")
    consecutive = differ.mean() * 3 / 4  # a|b, b|b, b|a, a|b: 3 of 4 pairs flip where a and b differ
    against_first = differ.mean() * 3 / 4  # b, b, a, b against a
    assert p["results"]["rotate"] == {"flip_probability": pytest.approx(consecutive), "n_sequences": 8, "frames": 5}
    assert p["results"]["gaussian_noise"]["flip_probability"] == pytest.approx(against_first)
    summary = p["summary"]
    assert summary["weather_perturbation"] == "spatter" and "spatter" in p["results"]
    assert summary["mean_flip_probability"] == pytest.approx(consecutive)
    assert summary["mfr"] == pytest.approx(np.mean([consecutive / 0.5, consecutive / 0.25, consecutive / 0.5]))
    assert "snow" not in p["results"] and "scale" in summary["missing_perturbations"]
    # the other released sets are evaluated and listed, outside the paper's mean and mFR
    assert summary["other_perturbations"] == {"gaussian_noise_2": pytest.approx(against_first)}
    assert "gaussian_noise_2" not in summary["flip_rate"]


def _png(path, image_u8):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image_u8.permute(1, 2, 0).numpy()).save(path)


def test_imagenet_suites_on_class_folders(tmp_path, digits):
    run, model = _run(tmp_path, None, "imagenet", 1000)
    wnids, images = imagenet_wnids(), digits.images[:4]
    with torch.no_grad():
        logits = model(images.float() / 255)
    pred = logits.argmax(1).tolist()
    # validation folders: images 0, 1 under their predicted class (correct), 2, 3 under another
    for i in range(4):
        wnid = wnids[pred[i]] if i < 2 else wnids[(pred[i] + 1) % 1000]
        _png(tmp_path / "val" / wnid / f"{i}.png", images[i])
    common = ["--resize", "0", "--crop", "32", "--workers", "0"]
    assert main(["evaluate", str(run), "--suite", "clean", "--data-root", str(tmp_path / "val"), *common]) == 0
    assert _read(run, "clean")["summary"]["accuracy"] == 0.5

    # ImageNet-C: all 15 corruptions, one image per severity, correct at odd severities
    for c in ALEXNET_ERR:
        for s in range(1, 6):
            wnid = wnids[pred[0]] if s % 2 else wnids[(pred[0] + 1) % 1000]
            _png(tmp_path / "imagenet-c" / c / str(s) / wnid / "x.png", images[0])
    assert main(["evaluate", str(run), "--suite", "imagenet-c", "--data-root", str(tmp_path / "imagenet-c"),
                 *common]) == 0
    ic = _read(run, "imagenet-c")
    assert {s: {k: e[k] for k in ("accuracy", "n")} for s, e in ic["results"]["fog"].items()} == \
        {str(s): {"accuracy": float(s % 2), "n": 1} for s in range(1, 6)}
    # one image a set: its calibration gap is its confidence minus 0 or 1
    for s, e in ic["results"]["fog"].items():
        assert e["confidence_gap"] == pytest.approx(e["mean_confidence"] - float(int(s) % 2))
        assert e["ece"] == pytest.approx(abs(e["confidence_gap"])) and e["rms_calibration_error"] == e["ece"]
    err = 2 / 5  # severities 2 and 4 wrong
    assert ic["summary"]["mean_accuracy"] == pytest.approx(0.6)
    assert ic["summary"]["mce"] == pytest.approx(np.mean([err / e for e in ALEXNET_ERR.values()]))
    assert ic["summary"]["relative_mce"] == pytest.approx(np.mean([(err - 0.5) / (e - 0.43478)
                                                                  for e in ALEXNET_ERR.values()]))
    assert len(ic["data"]["files"]) == 75
    assert ic["summary"]["clean_accuracy_from"]["options"]["preprocess"] == {"resize": 0, "crop": 32}
    # issue 23: clean.json was reused on its checkpoint alone; at another crop it is the accuracy of
    # other images, and relative mCE must not mix the two
    assert main(["evaluate", str(run), "--suite", "imagenet-c", "--data-root", str(tmp_path / "imagenet-c"),
                 "--resize", "0", "--crop", "24", "--workers", "0"]) == 0
    other = _read(run, "imagenet-c")["summary"]
    assert "mce" in other and "clean_accuracy" not in other and "relative_mce" not in other

    # ImageNet-R: 200-way masked logits; images 0..2 under their masked prediction, image 3 elsewhere
    r_pred = logits[:, imagenet_r_indices()].argmax(1).tolist()
    r = imagenet_r_wnids()
    for i in range(4):
        _png(tmp_path / "imagenet-r" / r[r_pred[i] if i < 3 else (r_pred[i] + 1) % 200] / f"{i}.png", images[i])
    assert main(["evaluate", str(run), "--suite", "imagenet-r", "--data-root", str(tmp_path / "imagenet-r"),
                 *common]) == 0
    ir = _read(run, "imagenet-r")
    assert ir["results"]["imagenet-r"] == {"accuracy": 0.75, "n": 4}
    assert set(ir["summary"]) >= {"rms_calibration_error", "ece", "aurra", "rms_estimator"}


def test_imagenet_p_videos(tmp_path, digits):
    cv2 = pytest.importorskip("cv2")
    from fullscale.data.videos import decode_video

    run, model = _run(tmp_path, None, "imagenet", 1000)
    wnid = imagenet_wnids()[0]
    for name in ("rotate", "shot_noise"):
        for v in range(2):
            path = tmp_path / "imagenet-p" / name / wnid / f"{v}.mp4"
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (32, 32))
            for f in (0, 1, 1, 0):
                writer.write(digits.images[2 * v + f].permute(1, 2, 0).numpy()[:, :, ::-1].copy())
            writer.release()
    assert main(["evaluate", str(run), "--suite", "imagenet-p", "--data-root", str(tmp_path / "imagenet-p"),
                 "--workers", "0"]) == 0
    p = _read(run, "imagenet-p")
    for name, noise in (("rotate", False), ("shot_noise", True)):
        rates = []
        for v in range(2):
            preds = _predict(model, decode_video(tmp_path / "imagenet-p" / name / wnid / f"{v}.mp4"))
            rates.append((preds[1:] != (preds[:1] if noise else preds[:-1])).mean())
        assert p["results"][name]["flip_probability"] == pytest.approx(np.mean(rates))
        assert p["results"][name]["n_sequences"] == 2 and p["results"][name]["frames"] == 4


def test_clear_errors(tmp_path, digits):
    run, _ = _run(tmp_path)
    assert main(["evaluate", str(tmp_path / "nope"), "--suite", "clean"]) == 2
    assert main(["evaluate", str(run), "--suite", "digits-c"]) == 2  # no --data-root
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(tmp_path)]) == 2  # no files
    assert main(["evaluate", str(run), "--suite", "imagenet-r", "--data-root", str(tmp_path)]) == 2  # 10 classes
    assert main(["evaluate", str(run), "--suite", "fgsm", "--epsilons", "a/b"]) == 2
    assert main(["evaluate", str(run), "--suite", "clean", "--threads", "-1"]) == 2
    assert main(["evaluate", str(run), "--suite", "calibration", "--batch-size", "-1"]) == 2  # 0: by device
    root = tmp_path / "c"
    save_npy(root / "fog.npy", np.zeros((10, 32, 32, 3), np.uint8))
    save_npy(root / "labels.npy", np.full(2, 12))  # labels beyond the model's 10 classes
    assert main(["evaluate", str(run), "--suite", "digits-c", "--data-root", str(root)]) == 2
    assert not (run / "eval" / "digits-c.json").exists()


# --- hostile files (issue 10, item 8) -----------------------------------------------------------


class _RunsCode:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os
        return (os.system, (f"touch {self.marker}",))


def test_nan_weights_are_refused_not_reported_as_chance_accuracy(tmp_path, one_line_error):
    run, model = _run(tmp_path)
    state = model.state_dict()
    head = [k for k in state if k.endswith("weight")][-1]
    state[head] = torch.full_like(state[head], float("nan"))
    save_torch(run / "final.pt", state)
    for suite in ("clean", "fgsm"):
        assert main(["evaluate", str(run), "--suite", suite]) == 2
        line = one_line_error()  # refused with the weights, before any image (issue 32)
        assert "non-finite weights" in line and "final.pt" in line
        assert not (run / "eval" / f"{suite}.json").exists() or not _read(run, suite).get("complete")


@pytest.mark.parametrize("kind", ["random", "truncated", "runs_code", "a_list", "other_width", "empty"])
def test_hostile_or_foreign_checkpoints_give_one_line_naming_the_file(tmp_path, one_line_error, kind):
    run, _ = _run(tmp_path)
    weights = run / "final.pt"
    marker = tmp_path / "pwned"
    if kind == "random":
        weights.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    elif kind == "truncated":
        weights.write_bytes(weights.read_bytes()[:400])
    elif kind == "runs_code":
        torch.save({"conv.weight": _RunsCode(marker)}, weights)
    elif kind == "a_list":
        torch.save([torch.zeros(3)], weights)
    elif kind == "other_width":
        save_torch(weights, create_model("preactresnet18", 10, width=8).state_dict())
    else:
        weights.write_bytes(b"")
    assert main(["evaluate", str(run), "--suite", "clean"]) == 2
    assert "final.pt" in one_line_error()
    assert not marker.exists()


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "\udcff", ""])
def test_a_config_that_is_not_a_run_config_is_one_line(tmp_path, one_line_error, text):
    run, _ = _run(tmp_path)
    (run / "config.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    assert main(["evaluate", str(run), "--suite", "clean"]) == 2
    assert "config.json" in one_line_error()


def test_an_unusable_device_is_one_line(tmp_path, one_line_error):
    run, _ = _run(tmp_path)
    assert main(["evaluate", str(run), "--suite", "clean", "--device", "tpu"]) == 2
    assert "tpu" in one_line_error()


def test_evaluate_takes_the_same_set_dialect_as_train():
    from fullscale.evaluation import EvalOptions
    from noisymix_infra.config import apply_overrides

    options = apply_overrides(EvalOptions(), ["weather=spatter", "preprocess.crop=128", "batch_size=7"])
    assert (options.weather, options.preprocess.crop, options.batch_size) == ("spatter", 128, 7)
    with pytest.raises(ValueError, match="unknown config key 'batchsize'; valid keys: batch_size"):
        apply_overrides(EvalOptions(), ["batchsize=7"])
    assert main(["evaluate", "nowhere", "--suite", "clean", "--set", "batchsize=7"]) == 2


def test_the_model_batch_is_chosen_by_device_unless_given():
    """0 (the default) is a cache-sized batch on the CPU and a large one on accelerators; a given
    batch size is used as it is (the numbers do not depend on it: eval-mode BatchNorm)."""
    from fullscale.evaluation import ACCELERATOR_BATCH, CPU_BATCH, Context, EvalOptions

    model = torch.nn.Identity()
    assert Context(model, torch.device("cpu"), {}, None).batch_size == CPU_BATCH == 500  # issue 58
    assert Context(model, torch.device("meta"), {}, None).batch_size == ACCELERATOR_BATCH == 500
    assert Context(model, torch.device("cpu"), {}, None, EvalOptions(batch_size=7)).batch_size == 7


def test_the_cpu_inference_model_gives_the_eager_logits_or_is_not_used(monkeypatch):
    """The traced, frozen model of the -C suites is used only when it agrees with the eager model;
    a tracing failure or a disagreeing result leaves the eager model in place."""
    from fullscale.evaluation import cpu_inference_model
    from fullscale.models import create_model

    torch.manual_seed(0)
    model = create_model("preactresnet18", 10, width=4).eval()
    images = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    fast = cpu_inference_model(model, images)
    assert fast is not model
    others = torch.randint(0, 256, (5, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        x = others.float() / 255
        # BatchNorm folded into the convolutions: other float32 sums, the same logits to rounding
        torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-5)

    def broken(*_args, **_kwargs):
        raise RuntimeError("cannot trace")

    monkeypatch.setattr(torch.jit, "trace", broken)
    assert cpu_inference_model(model, images) is model

    class Wrong(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(x.shape[0], 10)

    monkeypatch.setattr(torch.jit, "trace", lambda *a, **k: torch.jit.script(Wrong()))
    assert cpu_inference_model(model, images) is model
