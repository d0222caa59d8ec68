"""``--protocol robustbench``: RobustBench's ImageNet-C image selection (its list of 5,000 images;
here a fixture list) and preprocessing (Res224 for the corruption sets, Res256Crop224 clean),
checked against an independent decode with PIL; and how far our defaults are from it on the
fixture (the numbers the README quotes)."""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from fullscale.api import benchmark
from fullscale.data import Preprocess, imagenet_wnids
from fullscale.evaluation import EvalOptions
from fullscale.vocabulary import CORRUPTIONS
from noisymix_app.cli import main

ROOT = Path(__file__).resolve().parents[2]
WNIDS = imagenet_wnids()[:2]
SIZES = ((40, 56), (56, 40), (48, 48))  # (width, height) of each class's three images


class Brightness(nn.Module):
    """A 1000-class model that looks at the centre: class 0 where the middle third is brighter
    than the whole image's mean, class 1 otherwise (crop and resize move the answer)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        centre = x[..., h // 3:2 * h // 3, w // 3:2 * w // 3].mean((1, 2, 3))
        score = 40 * (centre - x.mean((1, 2, 3)) - 0.02)
        logits = torch.full((x.shape[0], 1000), -1e4, dtype=x.dtype, device=x.device)
        logits[:, 0], logits[:, 1] = score, -score
        return logits


def _image(k: int, i: int, corruption: int, severity: int) -> Image.Image:
    w, h = SIZES[i]
    yy, xx = np.mgrid[0:h, 0:w]
    r = np.hypot((yy - h / 2) / h, (xx - w / 2) / w)
    ring = 0.18 + 0.04 * i + 0.01 * corruption + 0.015 * severity  # radius of the bright disc
    level = 200 - 10 * severity
    # class 1's second image (not in the list) looks like class 0: our 6 images per set score below the list's 4
    bright = (r < ring) if k == 0 or i == 1 else (r > ring + 0.12)
    if (k, i) == (0, 0):  # a disc so wide that the 1.14x zoom of resize 256 + crop 224 fills the centre's
        bright, level = r < 0.485, 190  # surroundings: right at 224 x 224, wrong at 256 / 224 (ours)
    base = np.where(bright, level, 60).astype(np.uint8)
    return Image.fromarray(np.repeat(base[..., None], 3, axis=2))


@pytest.fixture(scope="module")
def imagenet_c(tmp_path_factory):
    root = tmp_path_factory.mktemp("imagenet-c")
    for c, name in enumerate(CORRUPTIONS):
        for s in range(1, 6):
            for k, wnid in enumerate(WNIDS):
                folder = root / name / str(s) / wnid
                folder.mkdir(parents=True)
                for i in range(3):
                    _image(k, i, c, s).save(folder / f"ILSVRC2012_val_{k}{i:07d}.png")
    listed = [f"{WNIDS[1]}/ILSVRC2012_val_10000002.png", f"{WNIDS[0]}/ILSVRC2012_val_00000000.png",
              f"{WNIDS[0]}/ILSVRC2012_val_00000001.png", f"{WNIDS[1]}/ILSVRC2012_val_10000000.png"]
    (root.parent / "ids.txt").write_text("\n".join(listed) + "\n")
    return root, root.parent / "ids.txt", listed


def _res224(path: Path) -> torch.Tensor:
    """RobustBench's Res224 (torchvision Resize([224, 224]) on a PIL image: PIL bilinear)."""
    image = Image.open(path).convert("RGB").resize((224, 224), Image.Resampling.BILINEAR)
    return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1)


def _res256_crop224(path: Path) -> torch.Tensor:
    """Res256Crop224: torchvision's Resize(256) (shorter side, the longer truncated) and CenterCrop(224)."""
    image = Image.open(path).convert("RGB")
    w, h = image.size
    size = (256, int(256 * h / w)) if w <= h else (int(256 * w / h), 256)
    array = np.asarray(image.resize(size, Image.Resampling.BILINEAR))
    top, left = round((array.shape[0] - 224) / 2.0), round((array.shape[1] - 224) / 2.0)
    return torch.from_numpy(array[top:top + 224, left:left + 224].copy()).permute(2, 0, 1)


def _accuracy(files: list[Path], decode) -> float:
    x = torch.stack([decode(f) for f in files]).float() / 255
    labels = torch.tensor([WNIDS.index(f.parent.name) for f in files])
    with torch.no_grad():
        return float((Brightness()(x).argmax(1) == labels).float().mean())


def _both(imagenet_c, tmp_path) -> tuple[dict, dict]:
    root, ids, _ = imagenet_c
    ours = benchmark(Brightness(), "imagenet-c", root, out=tmp_path / "ours", options=EvalOptions(workers=0))
    rb = benchmark(Brightness(), "imagenet-c", root, out=tmp_path / "rb",
                   options=EvalOptions(workers=0, protocol="robustbench", image_list=str(ids)))
    return ours, rb


def test_imagenet_c_listed_images_resized_to_224(imagenet_c, tmp_path):
    root, ids, listed = imagenet_c
    _, rb = _both(imagenet_c, tmp_path)
    cells = []
    for name in CORRUPTIONS:
        for s in range(1, 6):
            expected = _accuracy([root / name / str(s) / line for line in listed], _res224)
            assert rb["results"][name][str(s)] == pytest.approx({**rb["results"][name][str(s)], "accuracy": expected})
            assert rb["results"][name][str(s)]["n"] == len(listed)
            cells.append(expected)
    assert rb["summary"]["robustbench"] == {"corruptions_accuracy": pytest.approx(float(np.mean(cells))),
                                            "cells": 75, "images_per_set": 4, "preprocessing": "Res224"}
    assert rb["options"]["protocol"] == "robustbench" and rb["options"]["image_list"] == str(ids)
    assert rb["data"]["files"][0]["count"] == 4  # the list itself, hashed


def test_the_command_takes_the_protocol_and_refuses_a_missing_list_or_image(imagenet_c, tmp_path, capsys,
                                                                            monkeypatch):
    root, ids, listed = imagenet_c
    (tmp_path / "bright_39.py").write_text("import torch\nfrom torch import nn\n\n\n" + inspect.getsource(Brightness)
                                           + "\n\ndef net():\n    return Brightness()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "bright_39", raising=False)
    torch.save({}, tmp_path / "weights.pt")  # the model has no parameters
    base = ["evaluate", str(tmp_path / "weights.pt"), "--model", "bright_39:net", "--suite", "imagenet-c",
            "--data-root", str(root), "--protocol", "robustbench", "--workers", "0"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 2  # no --image-list
    assert "needs --image-list FILE" in capsys.readouterr().err
    assert not (tmp_path / "a" / "eval").exists()
    assert main([*base, "--out", str(tmp_path / "b"), "--image-list", str(ids)]) == 0
    written = json.loads((tmp_path / "b" / "eval" / "imagenet-c.json").read_text())
    in_python = benchmark(Brightness(), "imagenet-c", root, out=tmp_path / "c",
                          options=EvalOptions(workers=0, protocol="robustbench", image_list=str(ids)))
    assert written["results"] == in_python["results"]
    assert main([*base[:5], "imagenet-r", *base[6:], "--out", str(tmp_path / "d"), "--image-list", str(ids)]) == 2
    assert "--protocol robustbench is defined for clean, cifar10-c, cifar100-c, imagenet-c" in capsys.readouterr().err
    (tmp_path / "bad.txt").write_text(listed[0] + "\nn01440764/ILSVRC2012_val_99999999.png\n")
    from fullscale.evaluation.robustbench import RES224, listed_images, read_image_list

    with pytest.raises(FileNotFoundError, match=r"lacks 1 of the 2 listed images \(first: n01440764/"):
        listed_images(root / "fog" / "1", read_image_list(tmp_path / "bad.txt"), imagenet_wnids(), RES224)
    (tmp_path / "junk.txt").write_text("not a line of the list\n")
    with pytest.raises(ValueError, match="expected lines <wnid>/<file>"):
        read_image_list(tmp_path / "junk.txt")


def test_clean_imagenet_listed_and_res256_crop224(imagenet_c, tmp_path):
    root, ids, listed = imagenet_c
    val = root / "fog" / "3"  # any class folders of the listed files
    record = benchmark(Brightness(), "clean", val, out=tmp_path / "clean",
                       options=EvalOptions(workers=0, protocol="robustbench", image_list=str(ids)))
    expected = _accuracy([val / line for line in listed], _res256_crop224)
    assert record["summary"]["accuracy"] == pytest.approx(expected)
    assert record["results"]["clean"]["n"] == 4


def test_how_far_our_defaults_are_on_the_fixture_is_what_the_readme_says(imagenet_c, tmp_path):
    """Each default apart: ours (all images, resize 256 + crop 224), ours at RobustBench's Res224
    (the preprocessing's share), RobustBench's (the listed images too)."""
    root, _, _ = imagenet_c
    ours, rb = _both(imagenet_c, tmp_path)
    res224 = benchmark(Brightness(), "imagenet-c", root, out=tmp_path / "res224",
                       options=EvalOptions(workers=0, preprocess=Preprocess(224, 224, exact=True)))
    values = [ours["summary"]["mean_accuracy"], res224["summary"]["mean_accuracy"],
              rb["summary"]["robustbench"]["corruptions_accuracy"]]
    assert values[0] < values[1] < values[2]  # the fixture tells each choice apart
    line = next((x for x in (ROOT / "README.md").read_text().splitlines() if "robustbench-fixture:" in x), "")
    said = [f"{100 * v:.1f}" for v in values]
    assert re.findall(r"(\d+\.\d) %", line) == said, f"README's robustbench-fixture line should say {said}"
