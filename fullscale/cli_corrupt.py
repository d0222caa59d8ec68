"""``noisymix corrupt --dataset NAME|PATH --kind c|p --out DIR``: a -C or -P set in the standard layout.

NAME (cifar10, cifar100, digits): ``<corruption>.npy`` uint8 (5 N, H, W, 3) + ``labels.npy`` as
CIFAR-10-C ships them, or ``<perturbation>.npy`` (N, frames, H, W, 3) for ``--kind p``; CIFAR
parameters by default.  PATH (a class-folder tree ``<wnid>/*.JPEG``): ImageNet-C's
``<corruption>/<severity>/<wnid>/*.JPEG`` with the ImageNet parameters; its images are decoded
once before anything is written, and a bad one is refused in one line counting and naming them.  Resumable (finished
files are kept), chunked (bounded memory), with a progress bar; ``manifest.json`` records what
was made (seed, parameters, source, frost photographs, skipped corruptions).  It is written
before the first file, and a rerun into the same folder must ask for the same set (same data,
seed, chunk, parameters, severities): the finished files it would skip were made with the stored
values, so any other value is refused instead of mixing two sets under one manifest.  The source
is bound by its content (``source_sha256``: the images and labels of a data set; every image's
name, size and bytes of a tree), so a source changed in place is another source too.  One
process at a time writes into a folder (a lock, as for `train`), and the folder is marked as a
-C or -P set (``noisymix_infra.folder_kind``): a run, a sweep or a report folder given as
``--out`` is refused in one line before anything is written.  ``--limit N`` takes the first N
test images of a named data set (0, the default: all; a negative N is refused).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
from pathlib import Path
from typing import Literal

import torch

from fullscale.corruptions import PARAMS, find_frost_dir
from fullscale.corruptions.matched_sets import matched_set
from fullscale.corruptions.registry import NATIVE_SIDE
from fullscale.corruptions.writer import check_names, check_tree, default_names, write_imagenet_c, write_npy_set
from fullscale.data import DATASETS, load_dataset
from noisymix_infra.config import add_set_argument, apply_overrides
from noisymix_infra.folder_kind import check_claim, claim_folder, folder_kind
from noisymix_infra.io import directory_lock, printable, read_json, write_json
from noisymix_infra.validate import check_device_name, check_seed

# The manifest fields that decide the content of every file: a rerun must match them all.
_IDENTITY = ("dataset", "kind", "count", "seed", "chunk", "params", "severities", "frost_sha256",
             "source_sha256", "pixel_scale", "strengths")
# identity fields that older manifests lack, with the value they were made with
_IDENTITY_DEFAULTS = {"pixel_scale": 1.0, "strengths": None}
# identity fields that only a run making one name sets (a rerun may leave that name out): the name -> its fields.
# A run that lacks them keeps the stored ones in the merged manifest (issue 60: a run without frost nulled
# them, and the next run's other photographs were taken and named for a frost.npy they did not make)
_NAME_IDENTITY = {"frost": ("frost_sha256", "frost_photographs")}


def _frost_digest(folder: str | None) -> str | None:
    """The frost photographs' content (sha256 of each file's name and sha256, in name order): a set's
    identity is the photographs, not the folder they were read from (the same code in another checkout
    made a set another checkout refused to resume, for the path alone)."""
    if folder is None:
        return None
    from noisymix_infra.io import sha256_file

    digest = hashlib.sha256()
    for path in sorted(p for p in Path(folder).iterdir() if p.is_file()):
        digest.update(f"{path.name}:{sha256_file(path)}\n".encode())
    return digest.hexdigest()



__all__ = ["MIN_SIDE", "THREADS", "CorruptOptions", "add_arguments", "check_matched", "check_rows", "pixel_scale_for",
           "resize_u8", "run"]


def check_matched(params: str, dataset: str, kind: str, size: int) -> None:
    """``--params digits-matched`` is the difficulty-matched Digits-C or Digits-P: their strengths were
    fitted on the digits at 32x32 (also ``reproduce``'s plan check, issue 54); ``kind`` is c or p."""
    if params == "digits-matched" and (dataset != "digits" or size not in (0, 32)):
        raise ValueError("--params digits-matched is the difficulty-matched Digits-C / Digits-P: --dataset digits "
                         "at its own 32x32 (its strengths were fitted there)")


def check_rows(names: list[str], params: str, severities: tuple[int, ...], pixel_scale: float) -> None:
    """Every (corruption, severity) row the set will use, as ``corrupt`` resolves it (the matched
    strength, the strength rule, the pixel scaling), before the folder is claimed: issue 54,
    ``--params digits-matched --corruptions speckle_noise`` (no fitted strength) and a strength of
    1e9 were refused after ``labels.npy`` was written, leaving a half-made set that blocked the
    corrected rerun."""
    from fullscale.corruptions.registry import SPECS, pixel_scaled, strengthened
    from fullscale.corruptions.specs import Strengthened

    for name in names:
        if params == "digits-matched":
            from fullscale.corruptions.matched import matched_strength

            table, strength = "cifar", matched_strength(name)
        else:
            table, strength = params, 1.0
        for severity in severities:
            row = strengthened(name, SPECS[name].row(table, severity), strength)
            pixel_scaled(name, row.row if isinstance(row, Strengthened) else row, pixel_scale)


def pixel_scale_for(side: int, params: str) -> float:
    """The factor for the parameter table's lengths in pixels at images of ``side``: 1.0 at the
    table's own side (CIFAR 32, ImageNet 224), else ``side / that``, rounded to 1e-6 so that a
    manifest's value is stable."""
    return 1.0 if side == NATIVE_SIDE[params] else round(side / NATIVE_SIDE[params], 6)


def resize_u8(images: torch.Tensor, side: int) -> torch.Tensor:
    """uint8 (N, 3, H, W) -> uint8 (N, 3, side, side), bilinear with antialiasing when shrinking
    (a box-like prefilter, as PIL's resize), rounded."""
    x = torch.nn.functional.interpolate(images.float(), size=(side, side), mode="bilinear", align_corners=False,
                                        antialias=side < images.shape[-1])
    return x.round_().clamp_(0, 255).to(torch.uint8)

#: the least ``--size``: at 1 or 2 pixels elastic_transform's solve fails, pixelate and spatter too
MIN_SIDE = 8

THREADS = 1
"""``--threads`` default: the work is many small tensor ops, and spinning OpenMP threads crawl
on a busy machine (0 gives torch's default)."""


@dataclasses.dataclass(frozen=True)
class CorruptOptions:
    """What ``corrupt`` makes, as ``--set`` keys (the dialect of ``train``): each flag sets the
    field of its name, and ``--set key=value`` (applied after the flags) the same field."""

    corruptions: str | None = None
    severities: str = "1,2,3,4,5"
    seed: int = 0
    # every table --params takes (issue 54: --set params=digits-matched was refused)
    params: Literal["cifar", "imagenet", "digits-matched"] | None = None
    chunk: int = 1000
    frost_dir: str | None = None
    device: str = "cpu"
    limit: int = 0
    size: int = 0

    def __post_init__(self) -> None:
        check_device_name(self.device)
        check_seed(self.seed)
        if not (self.size == 0 or MIN_SIDE <= self.size <= 4096):  # elastic_transform fails below 3 pixels
            raise ValueError(f"--size must be 0 (the data set's own side) or a side in pixels from {MIN_SIDE} to 4096, "
                             f"got {self.size}")
        if self.limit < 0:  # images[:-5] would be every image but the last five, without a word
            raise ValueError(f"--limit must be 0 (every test image) or a positive count, got {self.limit}")


def _apply_set(args: argparse.Namespace) -> None:
    """``--set`` over ``CorruptOptions``: the flags' values, then the overrides, back into ``args``."""
    names = [f.name for f in dataclasses.fields(CorruptOptions)]
    defaults = CorruptOptions()
    for item in args.overrides:  # a flag given and the same key by --set: which one was meant? (issue 41)
        key = item.split("=", 1)[0].strip()
        if key in names and getattr(args, key) != getattr(defaults, key):
            raise ValueError(f"{key} is given twice (--{key.replace('_', '-')} and --set {key}): give it once")
    options = apply_overrides(CorruptOptions(**{n: getattr(args, n) for n in names}), args.overrides)
    for name in names:
        setattr(args, name, getattr(options, name))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, help=f"one of {', '.join(DATASETS)}, or a class-folder tree")
    parser.add_argument("--kind", choices=("c", "p"), default="c")
    parser.add_argument("--out", required=True)
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--corruptions", default=None,
                        help="comma-separated subset (default: the 15 corruptions / every perturbation)")
    parser.add_argument("--severities", default="1,2,3,4,5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--params", choices=PARAMS, default=None,
                        help="parameter table (default: cifar for data sets, imagenet for a folder tree)")
    parser.add_argument("--chunk", type=int, default=1000, help="images per batch")
    parser.add_argument("--frost-dir", default=None,
                        help="folder of the frost photographs (default: the five bundled with noisymix, "
                             "fullscale/corruptions/frost_photos)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--limit", type=int, default=0,
                        help="the first N test images of a named data set only (0: all of them)")
    parser.add_argument("--size", type=int, default=0,
                        help="make the set at this side (the test images resized, antialiased; the parameter "
                             "table's lengths in pixels scaled by side / the table's side, "
                             "fullscale.corruptions.registry.PIXEL_FIELDS); 0: the data set's own side")
    add_set_argument(parser, "--set chunk=500 --set severities=1,3,5", "the options (CorruptOptions; after the flags)")


def run(args: argparse.Namespace) -> int:
    _apply_set(args)
    out, folder = Path(args.out), f"{args.kind}-set"
    # "" (the current folder), the root, a file, a folder inside a run or a set, a run, a sweep, a report,
    # the user's own labels.npy: refused in one line, before any work
    check_claim(args.out, folder)
    severities = tuple(int(s) for s in args.severities.split(","))
    if not severities or any(not 1 <= s <= 5 for s in severities):
        raise ValueError(f"--severities must be numbers in 1..5, got {args.severities!r}")
    if args.chunk < 1:
        raise ValueError(f"--chunk must be positive, got {args.chunk}")
    try:
        torch.empty(0, device=torch.device(args.device))  # fail now, not after reading the data
    except (RuntimeError, AssertionError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"--device {args.device!r} is not usable here ({detail[:160]}); use cpu or cuda[:N]") from None
    skipped = None
    if args.corruptions:
        names = list(dict.fromkeys(n.strip() for n in args.corruptions.split(",") if n.strip()))
        if not names:
            raise ValueError(f"--corruptions {args.corruptions!r} names no corruption: give names separated by commas")
    elif args.corruptions is not None:
        raise ValueError("--corruptions is empty: give names separated by commas, or leave it out for every one")
    else:
        names, skipped = default_names(args.kind, args.frost_dir)
    check_names(args.kind, names, args.frost_dir)  # before the manifest names them
    if out.is_dir() and folder_kind(out) is None:  # not a set of ours: its files are the user's (issue 41)
        theirs = [n for n in names if (out / f"{n}.npy").exists() or (out / n).exists()]
        if theirs:
            raise ValueError(f"{printable(str(out))} holds {printable(theirs[0])}, which noisymix did not write there "
                             "(the folder is no set of ours); give another --out")
    frost = None
    if args.kind == "c" and "frost" in names:
        frost = str(find_frost_dir(args.frost_dir))
    folder_tree = args.dataset not in DATASETS and Path(args.dataset).is_dir()
    if folder_tree:
        if args.kind != "c":
            raise ValueError("a folder tree makes ImageNet-C (--kind c); ImageNet-P is videos, not made here")
        if args.params not in (None, "imagenet"):
            raise ValueError("a folder tree is made with the ImageNet parameters (224x224)")
        if args.limit:
            raise ValueError("--limit takes the first N images of a named data set; a folder tree is made whole "
                             "(give a tree of the images wanted)")
        if args.size not in (0, NATIVE_SIDE["imagenet"]):
            raise ValueError(f"--size {args.size}: a folder tree is made at ImageNet-C's 224x224")
        # every image decoded (and hashed) once before the manifest: a bad one is refused with
        # nothing written, and a tree changed in place is another source (issue 32)
        count, source_sha256 = check_tree(args.dataset)
        source, params, matched = str(Path(args.dataset).resolve()), "imagenet", None
    else:
        if args.dataset not in DATASETS:
            raise FileNotFoundError(f"--dataset {args.dataset!r} is neither one of {', '.join(DATASETS)} "
                                    "nor a folder")
        data = load_dataset(args.dataset, "test", args.data_root)
        images, labels = data.images, data.labels
        if args.limit:
            images, labels = images[:args.limit], labels[:args.limit]
        params = args.params or "cifar"
        matched = matched_set(args.kind, params)
        check_matched(params, args.dataset, args.kind, args.size)
        if matched is not None:  # the difficulty-matched Digits-C or Digits-P (one registry: issue 60)
            if args.corruptions is None:  # every name: those that have a fitted strength (Digits-P's ten)
                names = [n for n in names if n in matched.strengths()]
            matched.check_names(names)
        if args.size and args.size != images.shape[-1]:
            images = resize_u8(images, args.size)
        count, source = len(labels), data.source
        # the content of the source images, not their folder: the same count from another
        # --data-root (or a re-generated set) must not resume into this one (issue 23)
        digest = hashlib.sha256(images.contiguous().numpy().tobytes())
        digest.update(labels.numpy().astype("int64").tobytes())
        source_sha256 = digest.hexdigest()
    manifest = {
        "dataset": args.dataset, "kind": args.kind, "source": source, "source_sha256": source_sha256,
        "count": count, "seed": args.seed,
        "chunk": args.chunk, "params": params, "severities": list(severities) if args.kind == "c" else None,
        "names": names, "skipped": skipped, "frost_photographs": frost, "frost_sha256": _frost_digest(frost),
        "size": None if folder_tree else int(images.shape[-1]),
        # the rows' lengths in pixels for images of this side (1.0: the table's own side)
        "pixel_scale": 1.0 if folder_tree else pixel_scale_for(int(images.shape[-1]), params),
        "generator": "per chunk: crc32(f'{seed}:{name}:{severity}:{chunk index}')",
        # the difficulty-matched rows' strengths: a refit is another set, never resumed into this one, and
        # what `reproduce` reads a set's identity from (``matched_sets.MatchedSet.manifest_identity``)
        "strengths": matched.strengths() if matched is not None else None,
    }
    if args.kind == "c" and not folder_tree:  # the rows, before the folder is claimed (issue 54)
        check_rows(names, params, severities, manifest["pixel_scale"])
    found = {p.name for p in out.iterdir()} if out.is_dir() else None  # None: this call makes the folder
    with directory_lock(out, "corrupting"):
        try:
            claim_folder(out, folder)
            manifest = _merge_manifest(out / "manifest.json", manifest)
            write_json(out / "manifest.json", manifest)  # before the first file: a killed run is checked too
            if folder_tree:
                write_imagenet_c(args.dataset, out, names, severities=severities, seed=args.seed,
                                 chunk=args.chunk, frost_dir=args.frost_dir, device=args.device)
            else:
                write_npy_set(images, labels, args.kind, out, names, severities=severities, seed=args.seed,
                              chunk=args.chunk, params=params, frost_dir=args.frost_dir, device=args.device,
                              pixel_scale=manifest["pixel_scale"])
        except BaseException:
            _undo_start(out, found)  # a refused or failed run that made no file leaves no lock or marker (issue 41)
            raise
    if skipped:
        print(printable(skipped))
    print(f"wrote {printable(args.out)}")
    return 0


def _undo_start(out: Path, found: set[str] | None) -> None:
    """Remove what a refused or failed run added when it wrote no file of the set: the lock, the marker
    and the manifest, and the folder when this run made it (``found``: the names the folder held;
    ``None``: none).  A run that wrote a file keeps everything: a rerun resumes it."""
    from noisymix_infra.folder_kind import MARKER

    before = found or set()
    added = {".lock", MARKER, "manifest.json"} - before
    if not out.is_dir() or not {p.name for p in out.iterdir()} <= before | added:
        return
    for name in added:
        (out / name).unlink(missing_ok=True)
    if found is None:
        with contextlib.suppress(OSError):
            out.rmdir()


def _merge_manifest(path: Path, new: dict) -> dict:
    """``new``, or with the names of the set already in the folder added and the stored identity of a name
    this run does not make kept (``_NAME_IDENTITY``); a one-line ``ValueError`` when the folder holds a set
    made with other values, or files whose identity its manifest lost."""
    if not path.exists():
        return new
    old = read_json(path)
    if not isinstance(old, dict):
        raise ValueError(f"{printable(path)} is not a manifest of `noisymix corrupt`")
    if str(old.get("source_sha256", "")).startswith("folder:"):
        raise ValueError(f"{printable(path.parent)} was made from a folder tree before sets bound its images' content "
                         "(source_sha256 'folder:...'): its images cannot be told from the tree's today; "
                         "give another --out, or delete the old set and make it again")
    # frost photographs matter only where both runs made frost (a rerun may leave frost out); a manifest
    # older than frost_sha256 is held to the folder it read them from, as it was then
    frost_key = "frost_sha256" if "frost_sha256" in old else "frost_photographs"
    identity = [frost_key if k == "frost_sha256" else k for k in _IDENTITY]
    differ = [k for k in identity if old.get(k, _IDENTITY_DEFAULTS.get(k)) != new[k]
              and not (k == frost_key and None in (old.get(k), new[k]))]
    if differ:
        detail = ", ".join(f"{k}: stored {old.get(k)!r}, asked {new[k]!r}" for k in differ[:3])
        raise ValueError(f"{printable(path.parent)} holds a set made with other values ({detail}); "
                         "give another --out or the stored values (source_sha256: the source images' content)")
    names = [n for n in old.get("names") or [] if isinstance(n, str)]
    merged = {**new, "names": names + [n for n in new["names"] if n not in names]}
    for name, fields in _NAME_IDENTITY.items():
        made = (path.parent / f"{name}.npy").exists() or (path.parent / name).is_dir()
        if made and name in names and new[fields[0]] is not None and all(old.get(f) is None for f in fields):
            raise ValueError(f"{printable(path.parent)}: its {name} was made with {name} photographs its manifest "
                             f"does not name ({fields[0]} null, merged by an older noisymix after a run without "
                             f"{name}); delete {name}.npy (or {name}/) to make it again, or give another --out")
        for field in fields:  # kept from the stored manifest where this run makes no such file
            if new[field] is None:
                if field in old:
                    merged[field] = old[field]
                else:  # a manifest older than the field stays judged by the ones it has
                    del merged[field]
    return merged
