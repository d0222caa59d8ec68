"""CIFAR pickle batches and the built-in digits."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fullscale.data import ImageSet, load_dataset, read_cifar, write_cifar_fixture


@settings(max_examples=8)
@given(st.sampled_from(["cifar10", "cifar100"]), st.integers(1, 30), st.integers(1, 12), st.integers(0, 99))
def test_fixture_round_trip(tmp_path_factory, kind, n_train, n_test, seed):
    root = tmp_path_factory.mktemp("cifar")
    folder = write_cifar_fixture(root, kind, n_train=n_train, n_test=n_test, seed=seed)
    train = load_dataset(kind, "train", root)
    test = read_cifar(folder, kind, "test")  # the folder itself works as root too
    assert (len(train), len(test)) == (n_train, n_test)
    assert train.images.dtype == torch.uint8 and train.images.shape[1:] == (3, 32, 32)
    # Independently decode the first training batch: rows are R, G, B planes of 32x32.
    first = "data_batch_1" if kind == "cifar10" else "train"
    with open(folder / first, "rb") as handle:
        raw = pickle.load(handle, encoding="bytes")
    data = np.asarray(raw[b"data"])
    img = data[0]
    assert np.array_equal(train.images[0, 0].numpy(), img[:1024].reshape(32, 32))
    assert np.array_equal(train.images[0, 2].numpy(), img[2048:].reshape(32, 32))
    label_key = b"labels" if kind == "cifar10" else b"fine_labels"
    assert train.labels[0].item() == raw[label_key][0]


def test_wrong_directory_names_the_expected_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="data_batch_1"):
        load_dataset("cifar10", "train", tmp_path)
    with pytest.raises(ValueError, match="data root"):
        load_dataset("cifar10", "train")
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("svhn", "train")


def test_truncated_and_malformed_batches_name_the_file(tmp_path):
    folder = write_cifar_fixture(tmp_path, "cifar10", n_train=10, n_test=5)
    batch = folder / "data_batch_3"
    batch.write_bytes(batch.read_bytes()[:50])
    with pytest.raises(ValueError, match="data_batch_3"):
        load_dataset("cifar10", "train", tmp_path)
    with open(batch, "wb") as handle:
        pickle.dump({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, handle)
    with pytest.raises(ValueError, match=r"data_batch_3.*3072"):
        load_dataset("cifar10", "train", tmp_path)
    with open(batch, "wb") as handle:
        pickle.dump({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 11]}, handle)
    with pytest.raises(ValueError, match="labels outside"):
        load_dataset("cifar10", "train", tmp_path)


def test_digits_split_is_fixed_disjoint_and_stratified():
    train, test, fit = (load_dataset("digits", s) for s in ("train", "test", "fit"))
    # 75/25 by class, the held-out quarter split again by class: two thirds tested, a third for the fits
    assert (len(train), len(test), len(fit)) == (1347, 300, 150)
    assert train.images.shape[1:] == (3, 32, 32) and train.num_classes == 10
    counts = torch.bincount(test.labels, minlength=10)
    assert counts.min() >= 28 and counts.max() <= 32
    assert torch.bincount(fit.labels, minlength=10).tolist() == [15] * 10
    flat = {bytes(img.numpy().tobytes()) for img in test.images}
    assert not any(bytes(img.numpy().tobytes()) in flat for img in train.images[:200])
    assert not any(bytes(img.numpy().tobytes()) in flat for img in fit.images)
    with pytest.raises(ValueError, match="fit"):
        load_dataset("digits", "validation")
    again = load_dataset("digits", "test")
    assert torch.equal(again.images, test.images)
    # The three channels are one grey image; strokes are bright on black like the source.
    assert torch.equal(test.images[:, 0], test.images[:, 2])
    from sklearn.datasets import load_digits
    assert test.images.float().mean().item() == pytest.approx(load_digits().images.mean() / 16 * 255, rel=0.1)


def test_imageset_validates():
    with pytest.raises(ValueError, match="uint8"):
        ImageSet(torch.zeros(2, 3, 4, 4), torch.zeros(2, dtype=torch.long), 2, "x", "")
    with pytest.raises(ValueError, match="labels"):
        ImageSet(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.zeros(3, dtype=torch.long), 2, "x", "")


class _Hostile:
    """A pickle payload that, under a plain ``pickle.load``, would create ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("where", ["top", "inside"])
def test_a_batch_that_would_run_code_is_refused_in_one_line(tmp_path, where):
    folder = write_cifar_fixture(tmp_path, "cifar10", n_train=10, n_test=5)
    marker = tmp_path / "pwned"
    payload = _Hostile(marker) if where == "top" else {b"data": _Hostile(marker), b"labels": [0]}
    (folder / "data_batch_2").write_bytes(pickle.dumps(payload, protocol=2))
    # the same bytes under plain pickle would run the command: the test's payload is live
    with pytest.raises(ValueError) as caught:
        load_dataset("cifar10", "train", tmp_path)
    assert not marker.exists()
    message = str(caught.value)
    assert "\n" not in message and "data_batch_2" in message and "system" in message


def test_the_original_format_is_read_protocol_2_numpy_arrays_and_lists(tmp_path):
    """The distributed batches: protocol 2, numpy uint8 ``data``, int ``labels``, bytes names."""
    folder = write_cifar_fixture(tmp_path, "cifar10", n_train=10, n_test=5)
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, size=(4, 3072), dtype=np.uint8)
    labels = [3, 1, 4, 1]
    content = {b"batch_label": b"training batch 1 of 5", b"data": data, b"labels": labels,
               b"filenames": [b"a.png", b"b.png", b"c.png", b"d.png"],
               b"extra": np.array(labels, dtype=np.int64)[0]}  # a numpy scalar pickles too
    for name in [f"data_batch_{i}" for i in range(1, 6)]:
        (folder / name).write_bytes(pickle.dumps(content, protocol=2))
    train = load_dataset("cifar10", "train", tmp_path)
    assert len(train) == 20
    expected = data.reshape(4, 3, 32, 32)
    assert np.array_equal(train.images[:4].numpy(), expected)
    assert train.labels[:4].tolist() == labels


@pytest.mark.parametrize("junk", [b"", b"\x80\x02}q\x00", bytes(range(256)) * 40, b"\x80\x04\x95" + b"\xff" * 8])
def test_random_or_truncated_bytes_give_one_line_naming_the_file(tmp_path, junk):
    folder = write_cifar_fixture(tmp_path, "cifar10", n_train=10, n_test=5)
    (folder / "test_batch").write_bytes(junk)
    with pytest.raises(ValueError, match="test_batch") as caught:
        load_dataset("cifar10", "test", tmp_path)
    assert "\n" not in str(caught.value)


def test_object_arrays_and_non_array_data_are_refused(tmp_path):
    folder = write_cifar_fixture(tmp_path, "cifar10", n_train=10, n_test=5)
    for data in (np.array([b"x"] * 3072, dtype=object).reshape(1, 3072), [[0] * 3072]):
        (folder / "test_batch").write_bytes(pickle.dumps({b"data": data, b"labels": [0]}, protocol=2))
        with pytest.raises(ValueError, match="test_batch"):
            load_dataset("cifar10", "test", tmp_path)
