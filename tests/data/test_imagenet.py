"""The streaming ImageNet reader: listing, crop boxes, reduced-size decoding, bad files, sampler."""

from __future__ import annotations

import importlib.util
import math
import shutil

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from fullscale.data import imagenet_wnids
from fullscale.data.imagenet import (
    BadFiles,
    RunSampler,
    TrainCrop,
    crop_box,
    decode_train,
    epoch_permutation,
    read_imagenet,
    sample_seed,
    train_loader,
    val_loader,
)
from fullscale.data.imagenet_crops import _draft_factor
from fullscale.data.imagenet_fixture import AWKWARD, sample_photos, write_imagenet_tree


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return write_imagenet_tree(tmp_path_factory.mktemp("imagenet"), awkward=True)


# ---- listing ------------------------------------------------------------------------------------

def test_class_index_is_sorted_wnids(tree):
    train, val = read_imagenet(tree, "train"), read_imagenet(tree, "val")
    wnids = imagenet_wnids()[:10]
    assert train.classes == val.classes == tuple(sorted(wnids))
    for files in (train, val):
        for path, label in files.samples:
            assert path.parent.name == wnids[label]
    assert len(train) == 10 * 8 + len(AWKWARD) and len(val) == 10 * 3


def _flat_val(tree, root, boxes: str) -> list[str]:
    """``root``: the tree's train folders and its val images flat; the solution CSV's rows (header
    first), each image's wnid followed by ``boxes``."""
    shutil.copytree(tree / "train", root / "train")
    (root / "val").mkdir()
    rows = ["ImageId,PredictionString"]
    for folder in sorted((tree / "val").iterdir()):
        for image in sorted(folder.iterdir()):
            shutil.copy(image, root / "val" / image.name)
            rows.append(f"{image.stem},{folder.name} {boxes.format(wnid=folder.name)}")
    return rows


def test_flat_val_with_solution_csv_matches_class_folders(tree, tmp_path):
    rows = _flat_val(tree, tmp_path, "1 2 30 40 {wnid} 5 6 7 8")
    (tmp_path / "LOC_val_solution.csv").write_text("\n".join(rows) + "\n")
    flat = read_imagenet(tmp_path, "val")
    folders = read_imagenet(tree, "val")
    assert sorted((p.name, y) for p, y in flat.samples) == sorted((p.name, y) for p, y in folders.samples)


def test_empty_class_folder_and_class_mismatch_name_the_folders(tree, tmp_path):
    shutil.copytree(tree, tmp_path / "r")
    wnids = imagenet_wnids()
    (tmp_path / "r" / "train" / wnids[20]).mkdir()
    with pytest.raises(ValueError, match=f"empty class folders.*{wnids[20]}"):
        read_imagenet(tmp_path / "r", "train")
    shutil.copytree(tree / "val" / wnids[0], tmp_path / "r" / "train" / wnids[20], dirs_exist_ok=True)
    shutil.copytree(tree / "val" / wnids[0], tmp_path / "r" / "val" / wnids[30])
    with pytest.raises(ValueError, match=f"mismatch.*only in .*train.*{wnids[20]}.*only in .*val.*{wnids[30]}"):
        read_imagenet(tmp_path / "r", "val")
    (tmp_path / "r" / "train" / "not_a_wnid").mkdir()
    shutil.copy(next((tree / "val" / wnids[0]).iterdir()), tmp_path / "r" / "train" / "not_a_wnid" / "a.JPEG")
    with pytest.raises(ValueError, match="not_a_wnid"):
        read_imagenet(tmp_path / "r", "train")


# ---- crop box (torchvision's RandomResizedCrop.get_params) --------------------------------------

def test_crop_box_fallback_is_the_ratio_clamped_centre_crop():
    # scale >= 0.9 of a 1000x100 image needs h >= sqrt(90000 / (4/3)) = 260 > 100: every attempt
    # fails, so torchvision falls back to h = 100, w = round(100 * 4/3) = 133, centred.
    g = torch.Generator().manual_seed(0)
    assert crop_box(1000, 100, (0.9, 1.0), (3 / 4, 4 / 3), g) == (0, (1000 - 133) // 2, 100, 133)
    assert crop_box(100, 1000, (0.9, 1.0), (3 / 4, 4 / 3), g) == ((1000 - 133) // 2, 0, 133, 100)
    # a square image below the ratio range (2..3): full width, height round(50 / 2) = 25, centred
    assert crop_box(50, 50, (1.0, 1.0), (2.0, 3.0), g) == ((50 - 25) // 2, 0, 25, 50)


@settings(max_examples=60, deadline=None)
@given(st.integers(8, 800), st.integers(8, 800), st.integers(0, 2**31))
def test_crop_box_lies_inside_with_area_and_ratio_in_range(width, height, seed):
    top, left, h, w = crop_box(width, height, (0.08, 1.0), (3 / 4, 4 / 3), torch.Generator().manual_seed(seed))
    assert 0 <= top and top + h <= height and 0 <= left and left + w <= width and h > 0 and w > 0
    fallback = (w == width or h == height) and top == (height - h) // 2 and left == (width - w) // 2
    if not fallback:  # an accepted draw: rounding moves each side by at most 1/2 pixel
        assert (h - 0.5) * (w - 0.5) <= 1.0 * width * height + 1e-9
        assert (h + 0.5) * (w + 0.5) >= 0.08 * width * height - 1e-9
        assert (w - 0.5) / (h + 0.5) <= 4 / 3 + 1e-9 and (w + 0.5) / (h - 0.5) >= 3 / 4 - 1e-9


def test_sample_seed_separates_seed_epoch_index():
    seeds = {sample_seed(s, e, i) for s in range(3) for e in range(3) for i in range(50)}
    assert len(seeds) == 3 * 3 * 50 and all(0 <= x < 2**63 for x in seeds)


# ---- reduced-size decoding ----------------------------------------------------------------------

def _psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    mse = float(((a.double() - b.double()) ** 2).mean())
    return math.inf if mse == 0 else 10 * math.log10(255**2 / mse)


@pytest.mark.parametrize("decoder", ["pil-draft", "simplejpeg"])
def test_reduced_size_decoding_keeps_the_crop_within_35db(decoder, tmp_path):
    if decoder == "simplejpeg":
        pytest.importorskip("simplejpeg")
    # The photos at their own size (e.g. 640x427) with a 112 crop, so that a box of >= 224
    # pixels is decoded at 1/2 or 1/4: the reduced path must actually be taken.
    paths = []
    for k, photo in enumerate(sample_photos()):
        paths.append(tmp_path / f"{k}.JPEG")
        Image.fromarray(photo).save(paths[-1], quality=90)
    full, reduced = TrainCrop(size=112, decoder="pil"), TrainCrop(size=112, decoder=decoder)
    engaged, worst = 0, math.inf
    for path in paths:
        width, height = Image.open(path).size
        for i in range(12):
            seed = sample_seed(0, 0, i)
            _, _, h, w = crop_box(width, height, full.scale, full.ratio, torch.Generator().manual_seed(seed))
            engaged += _draft_factor(h, w, 112) > 1
            worst = min(worst, _psnr(decode_train(path, full, seed), decode_train(path, reduced, seed)))
    assert engaged >= 5
    assert worst >= 35.0


def test_awkward_files_become_rgb_and_truncated_is_an_error(tree):
    folder = tree / "train" / imagenet_wnids()[0]
    for kind in ("gray", "cmyk", "png"):
        for decoder in ("pil", "pil-draft"):
            out = decode_train(folder / AWKWARD[kind], TrainCrop(size=24, decoder=decoder), 1)
            assert out.dtype == torch.uint8 and out.shape == (3, 24, 24)
    # grey stays grey after the RGB conversion: the three channels are equal
    grey = decode_train(folder / AWKWARD["gray"], TrainCrop(size=24), 1)
    assert torch.equal(grey[0], grey[1]) and torch.equal(grey[1], grey[2])
    with pytest.raises(ValueError, match=AWKWARD["truncated"]):
        decode_train(folder / AWKWARD["truncated"], TrainCrop(size=24), 1)


# ---- sampler and loader -------------------------------------------------------------------------

def test_sampler_shards_cover_the_epoch_and_reshuffle():
    n, world, batch = 103, 3, 4
    per_epoch = []
    for epoch in range(2):
        shards = [[i for b in RunSampler(n, batch, 7, epoch + 1, rank=r, world=world, start_epoch=epoch) for i, _ in b]
                  for r in range(world)]
        flat = [i for s in shards for i in s]
        assert len(flat) == len(set(flat)) == world * ((n // world) // batch) * batch
        perm = epoch_permutation(n, 7, epoch).tolist()
        assert set(flat) <= set(perm[: world * (n // world)])
        per_epoch.append(shards[0])
    assert per_epoch[0] != per_epoch[1]


def test_sampler_resume_mid_epoch_equals_the_tail():
    whole = list(RunSampler(50, 4, 3, 3))
    steps = RunSampler(50, 4, 3, 3).steps_per_epoch
    resumed = list(RunSampler(50, 4, 3, 3, start_epoch=1, start_step=5))
    assert resumed == whole[steps + 5:]
    assert {e for b in whole for _, e in b} == {0, 1, 2}


def test_crops_do_not_depend_on_workers_and_bad_files_are_counted(tree):
    files = read_imagenet(tree, "train")
    crop = TrainCrop(size=32)

    def epoch(workers):
        batches = list(train_loader(files, crop, RunSampler(len(files), 8, 5, 1), workers=workers, seed=5))
        return (torch.cat([b.images for b in batches]), torch.cat([b.labels for b in batches]),
                [p for b in batches for p in b.bad])

    images0, labels0, bad0 = epoch(0)
    images2, labels2, bad2 = epoch(2)
    assert torch.equal(images0, images2) and torch.equal(labels0, labels2)
    steps = (len(files) // 8) * 8
    assert bad0 == bad2 and len(bad0) <= 1 and images0.shape == (steps - len(bad0), 3, 32, 32)
    truncated = [str(p) for p, _ in files.samples if p.name == AWKWARD["truncated"]]
    counter = BadFiles(len(files), max_fraction=0.5)
    counter.add(truncated)
    assert counter.count == 1
    with pytest.raises(ValueError, match=f"2 of {len(files)} files.*{AWKWARD['truncated']}"):
        BadFiles(len(files), max_fraction=0.01).add([*truncated, "other.JPEG"])


def test_val_loader_is_resize_and_centre_crop_in_file_order(tree):
    files = read_imagenet(tree, "val")
    batches = list(val_loader(files, 7, workers=0, size=32))
    images = torch.cat([b.images for b in batches])
    assert images.shape == (len(files), 3, 32, 32)
    assert torch.equal(torch.cat([b.labels for b in batches]), torch.tensor([y for _, y in files.samples]))
    # first file by hand: 48x64 -> shorter side round(32 * 256 / 224) = 37 -> 37x49, centre 32
    with Image.open(files.samples[0][0]) as image:
        ref = np.asarray(image.convert("RGB").resize((49, 37), Image.Resampling.BILINEAR))
    top, left = round((37 - 32) / 2), round((49 - 32) / 2)
    assert torch.equal(images[0], torch.from_numpy(ref[top:top + 32, left:left + 32].copy()).permute(2, 0, 1))


def test_train_crop_equals_the_public_pil_transform(tmp_path):
    """decoder "pil" against the public pipeline written out with PIL: the same box from the same
    seed, ``crop(box).resize(BILINEAR)``, then the flip; torch's antialiased resize differs from
    PIL's by rounding only."""
    paths = []
    for k, photo in enumerate(sample_photos()):
        paths.append(tmp_path / f"{k}.JPEG")
        Image.fromarray(photo).save(paths[-1], quality=90)
    flips = 0
    for k, path in enumerate(paths):
        for i in range(6):
            seed = sample_seed(3, k, i)
            g = torch.Generator().manual_seed(seed)
            with Image.open(path) as f:
                image = f.convert("RGB")
            top, left, h, w = crop_box(image.size[0], image.size[1], (0.08, 1.0), (3 / 4, 4 / 3), g)
            ref = image.crop((left, top, left + w, top + h)).resize((64, 64), Image.Resampling.BILINEAR)
            if float(torch.rand((), generator=g)) < 0.5:
                ref, flips = ref.transpose(Image.Transpose.FLIP_LEFT_RIGHT), flips + 1
            ours = decode_train(path, TrainCrop(size=64, decoder="pil"), seed)
            expected = torch.from_numpy(np.array(ref)).permute(2, 0, 1)
            assert (ours.int() - expected.int()).abs().float().mean() < 0.05
            assert _psnr(ours, expected) > 50
    assert 0 < flips < 6 * len(paths)


def test_simplejpeg_gives_the_crops_of_pil(tree, tmp_path):
    """decoder="auto" picks simplejpeg where installed: it must not change what a run computes."""
    pytest.importorskip("simplejpeg")
    paths = []
    for k, photo in enumerate(sample_photos()):
        paths.append(tmp_path / f"{k}.JPEG")
        Image.fromarray(photo).save(paths[-1], quality=90)
    paths += [tree / "train" / imagenet_wnids()[0] / name for kind, name in AWKWARD.items() if kind != "truncated"]
    for size in (64, 224):
        for i, path in enumerate(paths):
            seed = sample_seed(0, 1, i)
            assert torch.equal(decode_train(path, TrainCrop(size=size, decoder="simplejpeg"), seed),
                               decode_train(path, TrainCrop(size=size, decoder="pil-draft"), seed)), path
    with pytest.raises(ValueError, match=AWKWARD["truncated"]):
        decode_train(tree / "train" / imagenet_wnids()[0] / AWKWARD["truncated"], TrainCrop(decoder="simplejpeg"), 1)


def test_loader_benchmark_reports_consistent_ratios():
    import argparse

    from noisymix_app.bench import bench_imagenet_loader

    parser = argparse.ArgumentParser()
    bench_imagenet_loader.add_arguments(parser)
    result = bench_imagenet_loader.run(parser.parse_args(["--files", "6", "--repeats", "1", "--memory-batches", "0"]))
    rates = result["images_per_s_per_core"]
    reference = rates["reference (public PIL pipeline)"]
    for name, ratio in result["ratio_vs_reference"].items():
        assert ratio == pytest.approx(rates[name] / reference, abs=0.01)
        assert result["cores_to_feed_target"][name] == pytest.approx(2750 / rates[name], abs=0.1)
    assert {"ours (pil)", "ours (pil-draft)"} <= set(result["ratio_vs_reference"])


def test_a_batch_of_only_bad_files_is_an_error_naming_them(tmp_path):
    from fullscale.data.imagenet import StreamingImageNet

    tree = write_imagenet_tree(tmp_path, n_train=1, n_val=1)
    for path in (tree / "train").rglob("*.JPEG"):
        path.write_bytes(b"not a jpeg")
    data = StreamingImageNet(tree, seed=0, crop=TrainCrop(size=16), workers=0, device=torch.device("cpu"),
                             max_bad_fraction=1.0)

    class Process:
        rank, world = 0, 1

    with pytest.raises(ValueError, match=r"whole batch of epoch 0.*_train_0000\.JPEG"):
        list(data.batches(None, 10, Process()))
    assert data.bad.count == 10


# ---- hostile files (issue 23) -------------------------------------------------------------------

def _not_regular_entries(folder):
    """A FIFO, a folder and a symlink loop, each named like an image: 3 entries no reader may open."""
    import os

    os.mkfifo(folder / "x.JPEG")
    (folder / "d.JPEG").mkdir()
    (folder / "loop.JPEG").symlink_to(folder / "loop.JPEG")


def test_listing_skips_and_reports_entries_that_are_not_regular_files(tmp_path, capsys):
    """Issue 23: the train listing skipped FIFOs, folders named .JPEG and symlink loops silently."""
    tree = write_imagenet_tree(tmp_path, n_train=2, n_val=1)
    wnids = imagenet_wnids()
    for split in ("train", "val"):
        _not_regular_entries(tree / split / wnids[2])
    for split, n in (("train", 20), ("val", 10)):
        files = read_imagenet(tree, split)
        assert len(files) == n and all(p.is_file() for p, _ in files.samples)
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "3 entries" in err[0] and "not regular files" in err[0], err
        assert str(tree / split / wnids[2]) in err[0]


@pytest.mark.parametrize("kind", ["long_field", "not_utf8"])
def test_a_bad_solution_csv_is_an_error_naming_it(tree, tmp_path, kind):
    """Issue 23: a 200 kB field raised `_csv.Error` (not a ValueError: a traceback at the front door);
    a non-UTF-8 file raised a decoding error without the file's name."""
    rows = _flat_val(tree, tmp_path, "1 2 30 40")
    body = ("\n".join(rows) + "\n").encode()
    body += {"long_field": b"x," + b"y" * 200_000 + b"\n", "not_utf8": b"\xff\xfe,\xff\n"}[kind]
    (tmp_path / "LOC_val_solution.csv").write_bytes(body)
    with pytest.raises(ValueError, match=r"LOC_val_solution\.csv") as caught:
        read_imagenet(tmp_path, "val")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("same_wnid", [False, True])
def test_a_solution_csv_labelling_an_image_twice_is_an_error_naming_it_and_the_id(tree, tmp_path, same_wnid):
    """Issue 32: a duplicated ImageId was read silently, its last row winning."""
    from fullscale.data.imagenet import read_val_folder

    rows = _flat_val(tree, tmp_path, "1 2 30 40")
    image_id, wnid = rows[3].split(",")[0], rows[3].split(",")[1].split()[0]
    other = wnid if same_wnid else next(r.split(",")[1].split()[0] for r in rows[1:] if wnid not in r)
    rows.append(f"{image_id},{other} 5 6 7 8")
    (tmp_path / "LOC_val_solution.csv").write_text("\n".join(rows) + "\n")
    for read in (lambda: read_imagenet(tmp_path, "val"),
                 lambda: read_val_folder(tmp_path / "val", read_imagenet(tmp_path, "train").classes)):
        with pytest.raises(ValueError, match=rf"LOC_val_solution\.csv line {len(rows)}: ImageId {image_id} .*"
                                             r"first on line 4") as caught:
            read()
        assert "\n" not in str(caught.value)


def test_the_pixel_limit_is_checked_from_the_header_before_decoding(tmp_path):
    """Issue 23: a 12000 x 12000 1-bit PNG (17.5 kB) decoded to 1.8 GB per worker."""
    import time

    from fullscale.data.folders import Preprocess, decode
    from fullscale.data.image_files import MAX_IMAGE_PIXELS
    from fullscale.data.imagenet_fixture import write_hostile_image

    assert MAX_IMAGE_PIXELS <= Image.MAX_IMAGE_PIXELS == 89_478_485  # PIL's own warning threshold
    path = write_hostile_image(tmp_path / "huge.JPEG", "huge_1bit")
    assert path.stat().st_size < 20_000
    start = time.perf_counter()
    for decoder in ("pil", "pil-draft", "simplejpeg"):
        if decoder == "simplejpeg" and importlib.util.find_spec("simplejpeg") is None:
            continue
        with pytest.raises(ValueError, match=r"huge\.JPEG.*144000000 pixels.*limit"):
            decode_train(path, TrainCrop(size=16, decoder=decoder), 0)
    with pytest.raises(ValueError, match=r"huge\.JPEG.*144000000 pixels.*limit"):
        decode(path, Preprocess(20, 16))
    assert time.perf_counter() - start < 2.0  # refused from the header: nothing was decoded


def test_the_decoders_agree_on_what_is_bad(tree, tmp_path):
    """Issue 23: `pil` took a JPEG whose scan was cut short as a good image where `simplejpeg`
    refused it; a run's bad files must not depend on the decoder (or on what is installed)."""
    from PIL import ImageFile

    from fullscale.data.imagenet_fixture import HOSTILE, write_hostile_image

    pytest.importorskip("simplejpeg")
    assert not ImageFile.LOAD_TRUNCATED_IMAGES  # else PIL would take cut files as images
    paths = [write_hostile_image(tmp_path / f"{kind}.JPEG", kind) for kind in HOSTILE]
    paths += [tree / "train" / imagenet_wnids()[0] / name for name in AWKWARD.values()]
    for path in paths:
        outcomes = {}
        for decoder in ("pil", "pil-draft", "simplejpeg"):
            try:
                decode_train(path, TrainCrop(size=16, decoder=decoder), 3)
                outcomes[decoder] = "good"
            except ValueError as error:
                assert path.name in str(error)
                outcomes[decoder] = "bad"
        assert len(set(outcomes.values())) == 1, (path.name, outcomes)
        assert outcomes["pil"] == ("bad" if path.stem in ("truncated", "empty", "bomb", "huge_header", "huge_1bit")
                                   or path.name == AWKWARD["truncated"] else "good"), (path.name, outcomes)


def test_loader_workers_exit_when_their_parent_is_killed(tmp_path):
    """Issue 23: after kill -9 of a training run its DataLoader workers lived on for ~4.5 s (until
    torch's watchdog looked), holding the run folder's lock; they must go with their parent."""
    import os
    import signal
    import subprocess
    import sys
    import time

    write_imagenet_tree(tmp_path / "tree", n_train=2, n_val=1)
    script = (
        "import sys, time\n"
        "from fullscale.data.imagenet import RunSampler, TrainCrop, read_imagenet, train_loader\n"
        "files = read_imagenet(sys.argv[1], 'train')\n"
        "loader = train_loader(files, TrainCrop(size=16, decoder='pil'), RunSampler(len(files), 2, 0, 1),"
        " workers=2, seed=0)\n"
        "batches = iter(loader)\n"
        "next(batches)\n"
        "print(' '.join(str(w.pid) for w in batches._workers), flush=True)\n"
        "time.sleep(120)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "tree")], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    workers = []
    try:
        workers = [int(pid) for pid in child.stdout.readline().split()]
        assert len(workers) == 2
        child.send_signal(signal.SIGKILL)
        child.wait()

        def alive(pid):
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
            except FileNotFoundError:
                return False

        deadline = time.monotonic() + 1.5
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in workers)
    finally:
        child.kill()
        child.wait()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
