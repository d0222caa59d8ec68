"""Hostile CIFAR batches in the real on-disk format (issue 32, part 5): labels that are not
integers of the classes, a memo-shared nested label list, an empty test batch.  Each is one
line naming the file, before anything is allocated for it or written from it."""

from __future__ import annotations

import pickle
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fullscale.data import load_dataset, write_cifar_fixture
from noisymix_app.cli import main


def _write_batch(path: Path, labels: object, count: int | None = None, key: bytes = b"labels") -> None:
    """A batch as the CIFAR files hold it (a protocol-2 pickle of a dict), with ``labels`` as given."""
    n = len(labels) if count is None else count
    data = np.random.default_rng(0).integers(0, 256, (n, 3072), dtype=np.uint8)
    path.write_bytes(pickle.dumps({b"data": data, key: labels, b"filenames": [b"x.png"] * n}, protocol=2))


@pytest.fixture
def cifar(tmp_path):
    root = tmp_path / "data"
    return root, write_cifar_fixture(root, "cifar10", n_train=10, n_test=6)


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("labels, shown", [
    ([0, 1, 3.7, 2, 0, 1], "3.7"),  # was cast to 3 without a word
    ([0, 1, 3.0, 2, 0, 1], "3.0"),  # integral, but not what the format holds
    ([0, 1, "3", 2, 0, 1], "'3'"),  # was cast to 3
    ([0, 1, b"3", 2, 0, 1], "b'3'"),
    ([0, 1, True, 2, 0, 1], "bool"),
    ([0, 1, None, 2, 0, 1], "NoneType"),
    (np.array([0, 1, 3.7, 2, 0, 1]), "float64"),  # an array of floats
])
def test_labels_that_are_not_integers_are_refused_naming_the_file(cifar, labels, shown):
    root, folder = cifar
    _write_batch(folder / "test_batch", labels)
    with pytest.raises(ValueError) as caught:
        load_dataset("cifar10", "test", root)
    message = str(caught.value)
    assert "test_batch" in message and shown in message and "\n" not in message, message


@pytest.mark.parametrize("labels", [[0, 1, 10, 2, 0, 1], [0, -1, 2, 2, 0, 1], [0, 1, 2**70, 2, 0, 1]])
def test_labels_outside_the_classes_are_refused(cifar, labels):
    root, folder = cifar
    _write_batch(folder / "test_batch", labels)
    with pytest.raises(ValueError, match=r"test_batch: labels .*outside 0\.\.9|test_batch: labels .*int64"):
        load_dataset("cifar10", "test", root)


def test_cifar100_fine_labels_are_checked_against_100_classes(tmp_path):
    folder = write_cifar_fixture(tmp_path, "cifar100", n_train=4, n_test=3)
    _write_batch(folder / "test", [0, 99, 100], key=b"fine_labels")
    with pytest.raises(ValueError, match=r"cifar-100-python/test: fine_labels outside 0\.\.99 \(entry 2 is 100\)"):
        load_dataset("cifar100", "test", tmp_path)
    _write_batch(folder / "test", [0, 99, 7], key=b"fine_labels")
    assert load_dataset("cifar100", "test", tmp_path).labels.tolist() == [0, 99, 7]


def test_integer_arrays_and_numpy_integers_are_read(cifar):
    """What the checks must keep: a label array of an integer dtype, numpy integer scalars."""
    root, folder = cifar
    _write_batch(folder / "test_batch", np.array([3, 1, 4, 1, 5, 9], dtype=np.int32))
    assert load_dataset("cifar10", "test", root).labels.tolist() == [3, 1, 4, 1, 5, 9]
    _write_batch(folder / "test_batch", [np.int64(2), 7, np.uint8(1), 8, 2, 8])
    assert load_dataset("cifar10", "test", root).labels.tolist() == [2, 7, 1, 8, 2, 8]


def test_a_memo_shared_nested_label_list_is_refused_before_allocating(cifar):
    """The campaign's batch: ``labels`` is one long list referred to once per image (a pickle
    stores it once: a few MB on disk).  ``np.asarray`` made an (N, M) int64 array first
    (ArrayMemoryError at 12.8 GB); here 20 x 2,000,000 would be 320 MB."""
    root, folder = cifar
    shared = [0] * 2_000_000
    _write_batch(folder / "test_batch", [shared] * 20)
    assert (folder / "test_batch").stat().st_size < 8_000_000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as caught:
            load_dataset("cifar10", "test", root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000_000, f"{peak / 1e6:.0f} MB traced: the nested list was allocated"
    message = str(caught.value)
    assert "test_batch" in message and "flat list of integers" in message and "entry 0 is a list" in message


@pytest.mark.parametrize("labels, count", [([1, 2, 3], 5), ([1] * 7, 5), ({b"a": 1}, 5), (b"\x01" * 5, 5)])
def test_labels_that_do_not_match_the_images_are_refused(cifar, labels, count):
    root, folder = cifar
    _write_batch(folder / "test_batch", labels, count=count)
    with pytest.raises(ValueError, match="test_batch: labels"):
        load_dataset("cifar10", "test", root)


def test_an_empty_test_batch_is_one_line_and_corrupt_writes_nothing(tmp_path, capsys):
    """An empty test batch was a ZeroDivisionError in evaluation, and a 0-image set from `corrupt`."""
    root = tmp_path / "data"
    write_cifar_fixture(root, "cifar10", n_train=10, n_test=0)
    with pytest.raises(ValueError, match=r"the test split \(test_batch\) holds 0 image\(s\)"):
        load_dataset("cifar10", "test", root)
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", "cifar10", "--data-root", str(root), "--out", str(out),
                 "--corruptions", "contrast", "--severities", "1"]) == 2
    assert "holds 0 image(s)" in _one_line(capsys)
    assert not out.exists()


def test_float_labels_through_corrupt_are_one_line_and_write_nothing(cifar, tmp_path, capsys):
    root, folder = cifar
    _write_batch(folder / "test_batch", [0, 1, 3.7, 2, 0, 1])
    out = tmp_path / "c"
    assert main(["corrupt", "--dataset", "cifar10", "--data-root", str(root), "--out", str(out),
                 "--corruptions", "contrast", "--severities", "1"]) == 2
    line = _one_line(capsys)
    assert "test_batch" in line and "3.7" in line, line
    assert not out.exists()


_LABEL = st.one_of(st.integers(-3, 12), st.floats(allow_nan=True), st.text(max_size=3), st.booleans(), st.none())


@settings(max_examples=40, deadline=None)
@given(st.lists(_LABEL, min_size=1, max_size=8))
def test_a_batch_is_read_exactly_when_every_label_is_an_integer_of_the_classes(labels):
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_cifar_fixture(tmp, "cifar10", n_train=5, n_test=1)
        _write_batch(folder / "test_batch", labels)
        valid = all(type(x) is int and 0 <= x < 10 for x in labels)
        if valid:
            assert load_dataset("cifar10", "test", tmp).labels.tolist() == labels
        else:
            with pytest.raises(ValueError, match="test_batch: labels"):
                load_dataset("cifar10", "test", tmp)
