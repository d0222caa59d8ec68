"""A method of the user's own, named ``package.module:name`` wherever the trainer takes a method name
(``--set method=...``, ``noisymix screen SPEC``; issue 59), in one of two forms:

1. **An input-space batch function** (Mixup-, CutMix-, Cutout-, AugMix-like)
   ``fn(images, labels, generator) -> (images, targets)``:

   - ``images``: float32 ``(B, 3, H, W)`` in [0, 1], the batch as a Baseline step sees it (after the data
     set's own crop and flip), on the training device;
   - ``labels``: int64 ``(B,)``;
   - ``generator``: the run's device generator (``fullscale.training.generators.Generators.aug``, the
     stream CutMix's box and the noise of M_{lambda,xi} draw from, saved in every checkpoint, so a
     resumed run draws what an uninterrupted one would).  Draw every random number from it, on its
     device (``torch.rand(..., generator=generator, device=generator.device)``); a function that
     draws from a global generator is refused (``check_function``);
   - returns ``images``, float32 of the same shape (the network's input; the model normalises it),
     and ``targets``: float32 ``(B, classes)``, each row non-negative weights that sum to 1 (soft labels,
     as Mixup's), or, for an augmentation that keeps the labels, the int64 labels ``(B,)`` themselves
     (one-hot rows).  The loss is the cross-entropy on ``targets`` (``noisymix.loss.noisymix_loss`` with
     one view, as a Baseline or Mixup step).

   It enters the trainer where a kind of mixing's batch op does (``fullscale.mixings``: step 2 of
   ``fullscale.training.step``, after the views and draws): it is filed as a kind of its own
   (``function <spec>``: the batch op calls it, the loss reads its targets), and the method is a
   ``Method`` of that kind, so the epochs, draws, checkpoints and checks are the trainer's own.  With
   nothing drawn and the labels one-hot, a step is a Baseline step exactly (tests/app/test_screen*.py).
   Mixup written as such a function trains Mixup's law, not the built-in's very draws: the built-in
   draws a chunk of steps' lambdas at once from generators keyed by (seed, epoch, chunk)
   (``fullscale.training.draws``, issue 38) and mixes the normalised image (its stage ``input``), so no
   function of one batch and one generator can replay its numbers bit for bit; Mixup in the second
   form (``Method(..., mixing="input", strengths=(("mix.alpha", 1.0),))``) is the built-in exactly.

2. **A feature-space method** (NFM-, Manifold-Mixup-like): a ``fullscale.training.methods.Method``,
   the trainer's own record of a method: AugMix views on or off, the kind of mixing (``fullscale.mixings``:
   ``manifold`` mixes features at a stage drawn from the model's ``stages``), noise, the JSD loss and
   its strengths (``Method.strengths``: ``("mix.alpha", 1.0)``, ``("mix.noise.add", 0.4)``, ...).  A new
   kind (its own batch op and loss) is registered by the user's module itself
   (``fullscale.mixings.register_mixing``, at import).  The method trains exactly as a built-in of the
   same fields does.

**Identity.**  ``pin(spec)`` appends a sha256 of the method's sources (16 hex digits):
``docs.examples.cutout:cutout@1f2e...``.  That is the method name a run records, so it is part of the
run's identity (its config): a function edited since is another run, never resumed as the old one,
and ``load_method`` refuses a pinned name whose sources no longer have that hash.  The sources are the
module's own file and every module of the user's own it imports, directly or through another
(``own_sources``: read from the files' ``import`` statements, so every process finds the same set
whatever it imported before; the user's own: a file under the directory tree the SPEC's module was
imported from, not the standard library, an installed package or this project's packages).  Issue 64:
editing a helper module was not a new method, and the old numbers were printed as the edited one's.  A
module that imports nothing of the user's own keeps the sha256 of its file alone (the identity runs
made before issue 64 recorded).  The module is imported by name, so worker processes (spawned) import it
as this process did (they inherit ``sys.path``).

**The contract, on every batch** (issue 64: it was checked on one dry batch only).  Each call of a batch
function is checked (``batch_op``) for what the dry call checks and could miss behind a branch: targets
finite, non-negative, rows summing to 1 (labels within the classes), and no draw from Python's global
``random``, NumPy's global generator or torch's (the global states compared before and after the call;
a few microseconds).  A violation is a ``ValueError`` naming the batch (deterministic: never retried).  A
``Method`` may set only a method's own keys (``METHOD_KEYS``: the mixing's and its strengths), never the
recipe's (``optim.*``, ``model.*``, ...): a screen compares methods trained with one recipe.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import random
import re
import sys
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from fullscale.mixings import MIXINGS, Mixing, register_mixing
from fullscale.training.method_record import Method
from noisymix.loss import LossParts, noisymix_loss
from noisymix_infra.io import printable

__all__ = ["CONTRACT", "METHOD_KEYS", "check_function", "is_user_spec", "load_method", "own_sources", "pin",
           "source_file", "sources_digest", "split_spec"]

#: ``package.module:name`` with an optional ``@<16 hex digits>`` (the source's hash)
_SPEC = re.compile(r"^(?P<module>[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*):(?P<attr>[A-Za-z_]\w*)"
                   r"(?:@(?P<digest>[0-9a-f]{16}))?$")
#: the loaded methods of this process, by the name they were asked for
_LOADED: dict[str, Method] = {}
#: the config keys' first parts a ``Method``'s strengths may set: the method's own (its mixing's ``mix.*``,
#: AugMix's ``augmix.*``, the JSD's weight and form), never the recipe's (issue 64); the groups the built-in
#: methods' strengths use (``puzzlemix.*``) are added when the registry is read (``_method_keys``)
#: (with the groups the built-in methods' strengths set, ``puzzlemix``: a test holds it to the registry, so this
#: module need not import the registry that imports it)
METHOD_KEYS = frozenset({"mix", "augmix", "jsd_weight", "jsd_variant", "puzzlemix"})
#: the words every per-batch contract error carries (the screen reports such a run's failure in one line)
CONTRACT = "broke the batch-function contract"
#: this project's checkout (its own packages are not the user's sources)
_PROJECT = Path(__file__).resolve().parents[2]


def _shown(spec: str) -> str:
    """A pinned name as the user gave it (its digest left out of messages)."""
    return spec.split("@")[0]


def is_user_spec(name: object) -> bool:
    """Whether ``name`` names a user's method (``package.module:name``) rather than a built-in one."""
    return isinstance(name, str) and ":" in name


def split_spec(spec: str) -> tuple[str, str, str | None]:
    """``(module, attribute, digest or None)`` of ``package.module:name[@digest]``; one line otherwise."""
    found = _SPEC.match(spec) if isinstance(spec, str) else None
    if found is None:
        raise ValueError(f"method {printable(repr(spec))}: expected a built-in method name or package.module:name "
                         "(a batch function or a fullscale.training.methods.Method)")
    return found["module"], found["attr"], found["digest"]


def _import(module_name: str, spec: str) -> Any:
    from fullscale.models.external import _not_found_hint, _whole_message

    try:
        return importlib.import_module(module_name)
    except SystemExit as done:
        raise ValueError(f"method {printable(spec)}: importing {printable(module_name)} called "
                         f"sys.exit({printable(repr(done.code))[:80]})") from None
    except Exception as error:
        raise ValueError(f"method {printable(spec)}: cannot import {printable(module_name)} "
                         f"({_whole_message(error)}){_not_found_hint(error, module_name)}") from None


def source_file(module: Any) -> Path:
    """The file the module was read from (its source); one line for a module without one."""
    try:
        path = inspect.getsourcefile(module)
    except TypeError:
        path = None
    if not path or not Path(path).is_file():
        raise ValueError(f"module {printable(module.__name__)} has no source file to identify it by "
                         "(a built-in or compiled module): put the method in a .py file")
    return Path(path)


def _installed(path: Path) -> bool:
    """Whether ``path`` is of the standard library or an installed package (no user's tree to walk)."""
    if {"site-packages", "dist-packages"} & set(path.parts):
        return True
    return any(path.is_relative_to(Path(p).resolve()) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})


def _is_users(path: Path, root: Path) -> bool:
    """Whether ``path`` is a source of the user's own: under ``root`` (the tree the SPEC's module was imported
    from), and not the standard library, an installed package or one of this project's packages."""
    try:
        path.relative_to(root)
    except ValueError:
        return False
    if {"site-packages", "dist-packages"} & set(path.parts):
        return False
    for prefix in {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.exec_prefix).resolve()}:
        if prefix != root and path.is_relative_to(prefix) and not root.is_relative_to(prefix):
            return False
    try:
        first = path.relative_to(_PROJECT).parts[0]
    except ValueError:
        return True
    return not (_PROJECT / first / "__init__.py").is_file()  # fullscale, noisymix_app, ...: ours


def _imported_names(tree: ast.AST, package: str | None) -> list[str]:
    """The module names a file's ``import`` statements name (relative ones resolved against ``package``);
    for ``from a import b``, both ``a`` and ``a.b`` (``b`` may be a module)."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                try:
                    base = importlib.util.resolve_name("." * node.level + base, package or "")
                except (ImportError, ValueError):
                    continue
            if base:
                names.append(base)
                names += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names


def _find(name: str) -> tuple[str, Path, bool] | None:
    """``(name, file, is a package)`` of module ``name`` as an import would find it; None when it has no
    source file or is not found (``find_spec`` imports the parents, as the module's own import did)."""
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None
    except Exception:  # a parent package failing to import: the import itself would have said
        return None
    if found is None or not found.origin or not found.has_location or not found.origin.endswith(".py"):
        return None
    return found.name, Path(found.origin).resolve(), found.submodule_search_locations is not None


def own_sources(module: Any) -> list[Path]:
    """The method's sources (module docstring, "Identity"): the module's file first, then every file of
    the user's own it imports, directly or through another, by path."""
    first = source_file(module).resolve()
    depth = module.__name__.count(".") + (first.name == "__init__.py")
    root = first.parents[depth] if depth < len(first.parents) else first.parent
    if _installed(first):  # a module of the standard library or an installed package: its file alone
        return [first]
    seen = {first}
    package = module.__name__ if first.name == "__init__.py" else module.__name__.rpartition(".")[0]
    todo = [(first, package)]
    parts = package.split(".") if package else []
    for i in range(1, len(parts) + 1):  # the SPEC module's own parent packages
        found = _find(".".join(parts[:i]))
        if found is not None and found[1] not in seen and _is_users(found[1], root):
            seen.add(found[1])
            todo.append((found[1], found[0]))
    while todo:
        path, package = todo.pop()
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (OSError, SyntaxError, ValueError):
            continue
        names = _imported_names(tree, package)
        # a module's parent packages run when it is imported: theirs are its sources too
        for name in list(names):
            parts = name.split(".")
            names += [".".join(parts[:i]) for i in range(1, len(parts))]
        for name in names:
            found = _find(name)
            if found is None or found[1] in seen or not _is_users(found[1], root):
                continue
            seen.add(found[1])
            todo.append((found[1], found[0] if found[2] else found[0].rpartition(".")[0]))
    return [first, *sorted(seen - {first})]


def sources_digest(module: Any) -> str:
    """The sha256 (hex) of the method's sources: its file's alone when it imports none of the user's own (the
    identity of runs made before issue 64), else of each file's path (relative to the module's folder) and
    sha256."""
    files = own_sources(module)
    if len(files) == 1:
        return hashlib.sha256(files[0].read_bytes()).hexdigest()
    home = files[0].parent
    lines = []
    for path in files:
        try:
            shown = path.relative_to(home).as_posix()
        except ValueError:
            shown = path.as_posix()
        lines.append(f"{shown}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _digest(module: Any) -> str:
    return sources_digest(module)[:16]


def pin(spec: str) -> str:
    """``spec`` with the hash of its module's source file now (``module:name@digest``): the method
    name a run records (module docstring, "Identity")."""
    module_name, attr, _ = split_spec(spec)
    return f"{module_name}:{attr}@{_digest(_import(module_name, spec))}"


def load_method(spec: str) -> Method:
    """The ``Method`` that ``spec`` names (see the module docstring); a pinned name whose source file
    changed since, a missing module or attribute, or an object of neither form is one line."""
    if spec in _LOADED:
        return _LOADED[spec]
    module_name, attr, digest = split_spec(spec)
    module = _import(module_name, spec)
    if digest is not None:
        now = _digest(module)
        if now != digest:
            helpers = len(own_sources(module)) - 1
            raise ValueError(f"method {printable(spec)}: {printable(str(source_file(module)))}"
                             + (f" or one of the {helpers} modules of yours it imports" if helpers else "")
                             + f" changed since this run was configured (sources sha256 {digest}..., now {now}...): "
                             "a changed method is another run; screen or train it anew")
    obj = getattr(module, attr, None)
    if isinstance(obj, Method):
        _check_keys(spec, obj)
        # its own fields, under the name the run records (it takes no place in our tables)
        method = dataclasses.replace(obj, name=spec, order=None)
    elif callable(obj):
        method = Method(spec, attr, mixing=_function_kind(spec, obj).name)
    elif obj is None and not hasattr(module, attr):
        raise ValueError(f"method {printable(_shown(spec))}: {printable(module_name)} has no {printable(repr(attr))}")
    else:
        raise ValueError(f"method {printable(_shown(spec))}: {printable(attr)} is of type {type(obj).__name__}, "
                         "neither a batch "
                         "function (images, labels, generator) -> (images, targets) nor a "
                         "fullscale.training.methods.Method")
    _LOADED[spec] = method
    return method


def _check_keys(spec: str, method: Method) -> None:
    """Refuse (one line) a ``Method`` whose strengths set a key of the recipe (issue 64: ``optim.lr=1.0`` trained
    at that rate while the page said the reference methods' recipe; ``optim.epochs=3`` was silently overridden)."""
    allowed = METHOD_KEYS
    for item in method.strengths:
        key = item[0] if isinstance(item, tuple | list) and item and isinstance(item[0], str) else None
        if key is None:
            raise ValueError(f"method {printable(_shown(spec))}: its strengths hold {printable(repr(item))[:80]}, not "
                             "a (key, value) pair")
        if key.split(".")[0] not in allowed:
            raise ValueError(f"method {printable(_shown(spec))} sets {printable(key)}, a key of the recipe, not of the "
                             f"method (a Method's strengths may set {', '.join(sorted(allowed))} keys only): a "
                             "screen trains every method with one recipe")


# ----------------------------------------------------------------------------- the batch function's kind

def _function_kind(spec: str, fn: Any) -> Mixing:
    """The kind of mixing that runs ``fn``: its batch op and the loss of its targets (module docstring)."""
    name = f"function {spec}"
    if name in MIXINGS:
        return MIXINGS[name]

    # the batches of the run in progress: counted from 1 per generator (each run has its own), so an error
    # names the batch of the run (from its start, or its resume)
    count: dict[str, Any] = {"generator": None, "batch": 0}

    def batch_op(core: Any, x: Tensor, y: Tensor, draw: Any, options: None, *, generator: torch.Generator):
        if count["generator"] is not generator:
            count["generator"], count["batch"] = generator, 0
        count["batch"] += 1
        before = _global_states(x.device)
        result = fn(x, y, generator)
        _no_global_draw(before, _global_states(x.device), spec, count["batch"])
        images, targets = _checked(result, x, spec)
        _check_values(targets, spec, count["batch"])
        return images, draw, targets

    def loss(logits: Tensor, targets: Tensor, extra: Tensor, options: None) -> LossParts:
        """Cross-entropy on the function's own targets (``extra``; labels as one-hot rows, made by a scatter
        as ``noisymix.mixing.mix_targets`` makes them), as a one-view step's loss."""
        if not extra.is_floating_point():
            classes = logits.shape[-1]
            if bool(((extra < 0) | (extra >= classes)).any()):
                raise ValueError(f"method {printable(_shown(spec))} {CONTRACT} on batch {count['batch']} of its run: "
                                 f"it returned labels outside 0..{classes - 1}")
            extra = torch.zeros(*extra.shape, classes, device=extra.device).scatter_(-1, extra.unsqueeze(-1), 1.0)
        return noisymix_loss(logits.float(), extra, views=1)

    # per_pair: seeds of it train one at a time (its draws are its own, not stacked members'); combines:
    # the function is the whole method (no AugMix views, noise or JSD around it)
    return register_mixing(Mixing(name, batch_op=batch_op, loss=loss, per_pair=True, combines=False))


def _global_states(device: torch.device) -> tuple:
    """Python's, NumPy's and torch's global random states (CPU, and the batch's CUDA device), to compare."""
    import numpy as np

    state = np.random.get_state(legacy=False)  # noqa: NPY002 - the global state a draw from it changes
    cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    return random.getstate(), (state["state"]["key"].copy(), state["state"]["pos"], state["has_gauss"]), \
        torch.random.get_rng_state(), cuda


def _no_global_draw(before: tuple, after: tuple, spec: str, batch: int) -> None:
    """One line when a call changed a global random state (issue 64: a draw behind a branch the dry call did
    not take was accepted, and two screens of one seed differed)."""
    import numpy as np

    names = ("Python's global random", "NumPy's global generator", "torch's global generator",
             "torch's global CUDA generator")
    same = (before[0] == after[0], np.array_equal(before[1][0], after[1][0]) and before[1][1:] == after[1][1:],
            torch.equal(before[2], after[2]), before[3] is None or torch.equal(before[3], after[3]))
    for name, kept in zip(names, same, strict=True):
        if not kept:
            raise ValueError(f"method {printable(_shown(spec))} {CONTRACT} on batch {batch} of its run: it drew from "
                             f"{name}; draw every random number from the generator it is given")


def _check_values(targets: Tensor, spec: str, batch: int) -> None:
    """Soft targets finite, non-negative, their rows summing to 1 (within float32's tolerance), checked on every
    batch with one read of the device (issue 64: rows of -1 and 2 trained to a loss of -16.88)."""
    if not targets.is_floating_point():
        return
    rows = targets.sum(-1)
    good = torch.isfinite(targets).all() & (targets >= 0).all() & ((rows - 1).abs() <= 1e-4).all()
    if not bool(good):
        why = ("NaN or infinite values" if not bool(torch.isfinite(targets).all()) else "negative weights"
               if bool((targets < 0).any()) else
               f"rows summing to {float(rows[(rows - 1).abs().argmax()]):.6g}, not 1")
        raise ValueError(f"method {printable(_shown(spec))} {CONTRACT} on batch {batch} of its run: its targets hold "
                         f"{why} (soft labels are rows of non-negative weights summing to 1)")


def _checked(result: Any, images: Tensor, spec: str) -> tuple[Tensor, Tensor]:
    """The function's result, its shapes and dtypes checked (no value read: nothing waits for the
    device); every step, so a batch of another size (the last of an epoch) cannot slip through."""
    name = printable(_shown(spec))
    if not (isinstance(result, tuple | list) and len(result) == 2):
        raise ValueError(f"method {name} returned {type(result).__name__}, not (images, targets)")
    out, targets = result
    for what, value in (("images", out), ("targets", targets)):
        if not isinstance(value, Tensor):
            raise ValueError(f"method {name} returned {what} of type {type(value).__name__}, not a tensor")
        labels = what == "targets" and value.dtype == torch.int64 and value.ndim == 1
        if value.dtype != torch.float32 and not labels:
            raise ValueError(f"method {name} returned {what} of dtype {value.dtype}, expected torch.float32"
                             + (" (soft labels) or the int64 labels" if what == "targets" else ""))
        if value.device != images.device:
            raise ValueError(f"method {name} returned {what} on {value.device}, the batch is on "
                             f"{images.device}")
    if out.shape != images.shape:
        changed = " (the batch size changed)" if out.ndim and out.shape[0] != images.shape[0] else ""
        raise ValueError(f"method {name} returned images of shape {tuple(out.shape)} for a batch of "
                         f"shape {tuple(images.shape)}{changed}; return one image per input, of the same shape")
    if targets.ndim != (1 if targets.dtype == torch.int64 else 2) or targets.shape[0] != images.shape[0]:
        changed = " (the batch size changed)" if targets.ndim and targets.shape[0] != images.shape[0] else ""
        raise ValueError(f"method {name} returned targets of shape {tuple(targets.shape)} for "
                         f"{images.shape[0]} images{changed}; expected (images, classes) soft labels or (images,) "
                         "labels")
    return out, targets


def check_function(spec: str, images: Tensor, labels: Tensor, num_classes: int) -> None:
    """Refuse (one line) a batch function that would fail or mislead in training, by calling it on a
    small batch before any run starts (issue 59): a wrong signature; a result that is not (images,
    targets) of the batch's shapes and float32 dtype; targets of another class count, negative, or
    rows not summing to 1; a NaN or infinite value; and a result that changes with torch's, NumPy's or
    Python's global generator (it must draw from the generator it is given: a run is reproducible
    from its seed alone).  A ``Method`` (the feature-space form) is left to a step's check."""
    name = printable(_shown(spec))
    import random

    import numpy as np

    method = load_method(spec)
    kind = method.kind
    if not kind.name.startswith("function "):
        return
    fn = getattr(importlib.import_module(split_spec(spec)[0]), split_spec(spec)[1])
    try:
        inspect.signature(fn).bind(images, labels, torch.Generator())
    except TypeError as error:
        raise ValueError(f"method {name}: cannot be called as fn(images, labels, generator) ({error})"
                         ) from None
    except ValueError:  # a builtin without a signature: the call below says
        pass
    results = []
    saved = np.random.get_state(), random.getstate()  # noqa: NPY002 - the global state the check varies
    try:
        with torch.random.fork_rng(devices=[]):
            for salt in (1, 2):  # the same generator state, other global states: the same result
                torch.manual_seed(salt)
                np.random.seed(salt)  # noqa: NPY002 - a function drawing from it must be found out
                random.seed(salt)
                generator = torch.Generator(device=images.device).manual_seed(0)
                try:
                    result = fn(images.clone(), labels.clone(), generator)
                except Exception as error:
                    from fullscale.models.external import _whole_message

                    raise ValueError(f"method {name} raised {_whole_message(error)} on a batch of "
                                     f"{images.shape[0]} digits") from None
                results.append(_checked(result, images, spec))
    finally:
        np.random.set_state(saved[0])  # noqa: NPY002
        random.setstate(saved[1])
    (out, targets), (out2, targets2) = results
    if not targets.is_floating_point():
        if bool((targets < 0).any()) or bool((targets >= num_classes).any()):
            raise ValueError(f"method {name} returned labels outside 0..{num_classes - 1}")
        targets = torch.zeros(len(targets), num_classes).scatter_(1, targets.view(-1, 1), 1.0)
        targets2 = torch.zeros(len(targets2), num_classes).scatter_(1, targets2.view(-1, 1), 1.0)
    if targets.shape[1] != num_classes:
        raise ValueError(f"method {name} returned targets of {targets.shape[1]} classes; the data has "
                         f"{num_classes}")
    for what, value in (("images", out), ("targets", targets)):
        if not bool(torch.isfinite(value).all()):
            raise ValueError(f"method {name} returned {what} with NaN or infinite values")
    if bool((targets < 0).any()) or not torch.allclose(targets.sum(1), torch.ones(len(targets)), atol=1e-4):
        raise ValueError(f"method {name} returned targets that are not soft labels (rows of non-negative "
                         "weights summing to 1)")
    if not (torch.equal(out, out2) and torch.equal(targets, targets2)):
        raise ValueError(f"method {name} gives another result when torch's, NumPy's or Python's global "
                         "random state changes: draw every random number from the generator it is given")
