"""CIFAR-10/100 from the python pickle batches, exactly as distributed.

    cifar-10-batches-py/  data_batch_1 ... data_batch_5, test_batch, batches.meta
    cifar-100-python/     train, test, meta

Each batch is a pickled dict with ``b"data"`` (N, 3072) uint8 — 1024 red, then green, then
blue values per image, rows of 32 — and ``b"labels"`` (CIFAR-10) or ``b"fine_labels"``
(CIFAR-100).  Unpickling is unavoidable for this format, so it goes through a restricted
unpickler that admits only what the batches hold (dicts, lists, bytes/str, ints and numpy
arrays): a crafted file that names any other global (``os.system``, ``builtins.eval``, ...)
is refused before anything is called.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch

from fullscale.data.imageset import ImageSet, Split
from noisymix_infra.io import printable, write_bytes

LAYOUT = {
    "cifar10": {
        "folder": "cifar-10-batches-py",
        "train": [f"data_batch_{i}" for i in range(1, 6)],
        "test": ["test_batch"],
        "meta": "batches.meta",
        "label_key": b"labels",
        "classes": 10,
    },
    "cifar100": {
        "folder": "cifar-100-python",
        "train": ["train"],
        "test": ["test"],
        "meta": "meta",
        "label_key": b"fine_labels",
        "classes": 100,
    },
}


# The globals a CIFAR batch may name, and nothing else.  numpy arrays pickle as
# ``_reconstruct(ndarray, ...)`` + ``dtype(...)`` (``numpy.core`` before numpy 2, ``numpy._core``
# after), numpy scalars as ``multiarray.scalar``; Python 3 writes bytes under protocol 2 as
# ``_codecs.encode(text, "latin1")`` and an empty bytes as ``bytes()``.  None of them can run code or touch files.
_ALLOWED_GLOBALS = frozenset({
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("_codecs", "encode"),
    ("__builtin__", "bytes"),
    ("builtins", "bytes"),
})


class _BatchUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only the globals of ``_ALLOWED_GLOBALS``."""

    def find_class(self, module: str, name: str):
        if (module, name) not in _ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(f"refused global {module}.{name} (not part of the CIFAR format)")
        return super().find_class(module, name)


def load_batch_pickle(path: str | Path) -> object:
    """Unpickle one CIFAR batch file with the restricted unpickler (``encoding="bytes"``, as the
    files were written by Python 2).  Any failure is a one-line ``ValueError`` naming the file."""
    try:
        with open(path, "rb") as handle:
            return _BatchUnpickler(handle, encoding="bytes").load()
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as error:  # random bytes raise MemoryError/OverflowError/...
        detail = str(error).strip().splitlines()[0] if str(error).strip() else "truncated"
        raise ValueError(f"{printable(path)}: not a readable CIFAR pickle batch "
                         f"({type(error).__name__}: {detail})") from None


def batches_folder(root: Path, kind: str) -> Path:
    layout = LAYOUT[kind]
    for candidate in (root / layout["folder"], root):
        if all((candidate / f).is_file() for f in layout["train"] + layout["test"]):
            return candidate
    expected = ", ".join(layout["train"] + layout["test"])
    raise FileNotFoundError(
        f"no {kind} pickle batches under {printable(root)}: expected {layout['folder']}/ with {expected}"
    )


def _show(item: object) -> str:
    """A label that is not an integer, briefly: its value for a scalar (cut before ``repr``, which
    could be gigabytes), its type alone for a container (a memo-shared list is N x N)."""
    if isinstance(item, (float, np.floating)):
        return f"{float(item)!r} (a float)"
    if isinstance(item, (str, bytes)):
        return f"{printable(repr(item[:20]))} ({type(item).__name__})"
    return f"a {type(item).__name__}"


def _labels(path: Path, raw: object, label_key: bytes, count: int, num_classes: int) -> np.ndarray:
    """The labels of one batch as int64, checked before anything is allocated for them: a flat
    list (or 1-D integer array) of ``count`` integers in ``0 .. num_classes - 1``.  ``np.asarray``
    would cast floats (3.7 -> 3) and digit strings without a word, and a list whose items are the
    same long list many times over (a pickle can refer to one object any number of times: a few
    kB on disk) would ask for N x N int64s."""
    where = f"{printable(path)}: {label_key.decode()}"
    if isinstance(raw, np.ndarray):
        if raw.ndim != 1 or raw.dtype.kind not in "iu":
            raise ValueError(f"{where} must be a flat list of integers, got an array of {raw.dtype} {raw.shape}")
        labels = raw.astype(np.int64)
    elif isinstance(raw, list):
        if len(raw) != count:
            raise ValueError(f"{where} holds {len(raw)} entries for {count} images")
        odd = next((i for i, x in enumerate(raw) if not isinstance(x, (int, np.integer)) or isinstance(x, bool)),
                   None)
        if odd is not None:
            raise ValueError(f"{where} must be a flat list of integers; entry {odd} is {_show(raw[odd])}")
        try:
            labels = np.array(raw, dtype=np.int64)
        except OverflowError:
            raise ValueError(f"{where} holds integers beyond int64") from None
    else:
        raise ValueError(f"{where} must be a list of integers, got {type(raw).__name__}")
    if labels.shape != (count,):
        raise ValueError(f"{where} holds {labels.shape[0]} entries for {count} images")
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        bad = int(np.flatnonzero((labels < 0) | (labels >= num_classes))[0])
        raise ValueError(f"{where} outside 0..{num_classes - 1} (entry {bad} is {labels[bad]})")
    return labels


def _read_batch(path: Path, label_key: bytes, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    batch = load_batch_pickle(path)
    if not isinstance(batch, dict) or b"data" not in batch or label_key not in batch:
        raise ValueError(f"{printable(path)}: expected a dict with b'data' and {label_key!r}")
    data = batch[b"data"]
    if not isinstance(data, np.ndarray):
        raise ValueError(f"{printable(path)}: b'data' must be a numpy array, got {type(data).__name__}")
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(f"{printable(path)}: b'data' must be uint8 of shape (N, 3072), got {data.dtype} {data.shape}")
    labels = _labels(path, batch[label_key], label_key, data.shape[0], num_classes)
    return data.reshape(-1, 3, 32, 32), labels


def read_cifar(root: str | Path, kind: str, split: Split) -> ImageSet:
    """Read the ``split`` of CIFAR ``kind`` ("cifar10"/"cifar100") under ``root``.

    ``root`` may be the extracted folder itself or its parent.  A split of no images is refused
    in one line (an empty test batch would be a 0-image -C set, or a division by zero in evaluation).
    """
    if kind not in LAYOUT:
        raise ValueError(f"unknown CIFAR kind {kind!r}; known: {', '.join(LAYOUT)}")
    layout = LAYOUT[kind]
    folder = batches_folder(Path(root), kind)
    parts = [_read_batch(folder / f, layout["label_key"], layout["classes"]) for f in layout[split]]
    images = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    if not len(labels):
        raise ValueError(f"{printable(folder)}: the {split} split ({', '.join(layout[split])}) holds 0 image(s); "
                         f"replace it with the {kind} batches as distributed")
    return ImageSet(
        images=torch.from_numpy(np.ascontiguousarray(images)),
        labels=torch.from_numpy(labels),
        num_classes=layout["classes"],
        name=kind,
        source=str(folder),
    )


def write_cifar_fixture(root: str | Path, kind: str = "cifar10", *, n_train: int = 50,
                        n_test: int = 20, seed: int = 0) -> Path:
    """Write a tiny CIFAR directory in the real pickle format (for tests); returns its folder.

    Images are random uint8 with a class-dependent mean colour, so a model can learn them.
    """
    layout = LAYOUT[kind]
    folder = Path(root) / layout["folder"]
    rng = np.random.default_rng(seed)
    n_classes = layout["classes"]
    palette = rng.integers(0, 256, size=(n_classes, 3))

    def batch(n: int, files: list[str]) -> None:
        for i, name in enumerate(files):
            count = n // len(files) + (1 if i < n % len(files) else 0)
            labels = rng.integers(0, n_classes, size=count)
            noise = rng.normal(0, 40, size=(count, 3, 32, 32))
            images = np.clip(palette[labels][:, :, None, None] + noise, 0, 255).astype(np.uint8)
            content = {b"data": images.reshape(count, 3072), layout["label_key"]: labels.tolist(),
                       b"filenames": [f"{name}_{j}.png".encode() for j in range(count)]}
            if kind == "cifar100":
                content[b"coarse_labels"] = (labels // 5).tolist()
            write_bytes(folder / name, pickle.dumps(content, protocol=2))

    batch(n_train, layout["train"])
    batch(n_test, layout["test"])
    names = [f"class{k}".encode() for k in range(n_classes)]
    meta_key = b"label_names" if kind == "cifar10" else b"fine_label_names"
    write_bytes(folder / layout["meta"], pickle.dumps({meta_key: names}, protocol=2))
    return folder

