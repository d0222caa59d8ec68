"""What ``noisymix screen SPEC`` screens (issue 59, goal 1): a built-in method by name, or the user's own as
``package.module:name``, a batch function ``(images, labels, generator) -> (images, targets)`` or a
``fullscale.training.methods.Method`` (the two forms: ``fullscale.training.user_method``).

``resolve_spec`` imports it and pins it to its source (the method name its runs record); ``dry_run`` then
calls it on a small batch of digits and runs one training step of it, so that a SPEC that cannot train
(not importable, a wrong signature, results of the wrong shapes or dtypes, NaN, a changed batch size, a
draw from a global generator) is refused in one line before any folder is made or any run starts.

Issue 64: both happen in a child process first (``checked_spec``), never in the command's own: a module
that ends its process at import (``os._exit(0)``, a signal) ended the command with status 0 and no word.
Now such an end is one line and status 2, and whatever the user's code starts there (its own process group)
ends with it.  The sources' identity is the method's file and every module of the user's own it imports
(``fullscale.training.user_method.own_sources``).
"""

from __future__ import annotations

from dataclasses import dataclass

from noisymix_infra.io import printable

__all__ = ["DRY_BATCH", "Spec", "checked_spec", "dry_run", "resolve_spec"]

#: digits of the dry call (a batch of the plan's training set)
DRY_BATCH = 8


@dataclass(frozen=True)
class Spec:
    """A screened method: as given, the method name its runs record (a built-in's name, or
    ``module:name@digest``), a short label (its runs' names, the page), its title, its form
    (``built-in``, ``function`` or ``method``) and, for the user's own, its source file, the sha256 of its
    sources (``user_method.sources_digest``) and those sources (its file, then the modules of the user's own
    it imports)."""

    given: str
    method: str
    label: str
    title: str
    form: str
    source: str | None = None
    source_sha256: str | None = None
    sources: tuple[str, ...] = ()

    @property
    def builtin(self) -> bool:
        return self.form == "built-in"


def resolve_spec(text: str) -> Spec:
    """The ``Spec`` of ``text``: a registered method, or ``package.module:name`` imported and pinned;
    one line for anything else (an unknown name, a module that does not import, an attribute of
    neither form)."""
    from fullscale.training import user_method as um
    from fullscale.training.methods import METHODS, NOT_IMPLEMENTED

    if not isinstance(text, str) or not text.strip():
        raise ValueError("SPEC is empty: give a method name or package.module:name")
    if not um.is_user_spec(text):
        if text not in METHODS:
            hint = f" ({NOT_IMPLEMENTED[text]})" if text in NOT_IMPLEMENTED else ""
            raise ValueError(f"SPEC {printable(repr(text))} is not a built-in method{hint} (known: "
                             f"{', '.join(METHODS)}) nor package.module:name")
        method = METHODS[text]
        return Spec(text, text, text, method.title, "built-in")
    module_name, attr, digest = um.split_spec(text)
    if digest is not None:
        raise ValueError(f"SPEC {printable(text)}: give package.module:name; the screen pins it to its source itself")
    pinned = um.pin(text)
    method = um.load_method(pinned)
    import importlib

    module = importlib.import_module(module_name)
    path = um.source_file(module)
    label = attr if attr not in METHODS else f"{attr}-user"  # its runs are never taken for a built-in's
    form = "function" if method.kind.name.startswith("function ") else "method"
    title = attr if form == "function" else method.title
    return Spec(text, pinned, label, title, form, str(path), um.sources_digest(module),
                tuple(str(p) for p in um.own_sources(module)))


def _probe(conn, given: str, parent: int) -> None:
    """The child of ``checked_spec``: resolve ``given``, send its ``Spec``; then dry-run it on the config the
    parent sends back.  Each answer is ``("spec", Spec)``, ``("ok",)`` or ``("error", one line)``."""
    import os

    from noisymix_infra.workers import exit_with_parent

    os.setpgrp()  # what the user's code starts here is killed with this group (checked_spec)
    exit_with_parent(parent)
    try:
        conn.send(("spec", resolve_spec(given)))
        cfg = conn.recv()
        dry_run(resolve_spec(given), cfg)
        conn.send(("ok",))
    except ValueError as error:
        conn.send(("error", str(error).strip().splitlines()[0] if str(error).strip() else "refused"))
    except Exception as error:  # whatever the user's code raised, as one line
        from fullscale.models.external import _whole_message

        conn.send(("error", f"method {printable(given)}: {_whole_message(error)}"))
    finally:
        conn.close()


def _ended(given: str, process, what: str) -> ValueError:
    import signal

    code = process.exitcode
    how = (f"killed by signal {signal.Signals(-code).name}" if isinstance(code, int) and code < 0
           and -code in {s.value for s in signal.Signals} else f"exit status {code}")
    return ValueError(f"SPEC {printable(given)}: its process ended ({how}) while {what}, without a word: a "
                      "module or method that ends its process (os._exit, a signal) cannot be screened")


def checked_spec(given: str, config_of) -> Spec:
    """``resolve_spec(given)`` then ``dry_run`` on ``config_of(spec)``, in a child process (module docstring):
    a refusal there is this process's one-line ``ValueError``, and so is the child ending without an
    answer.  A built-in is ours: resolved here, nothing to try."""
    import multiprocessing
    import os
    import signal
    from multiprocessing.connection import wait

    from fullscale.training.user_method import is_user_spec

    if not is_user_spec(given):
        return resolve_spec(given)
    ctx = multiprocessing.get_context("spawn")
    here, there = ctx.Pipe()
    process = ctx.Process(target=_probe, args=(there, given, os.getpid()), name="screen-spec-check", daemon=True)
    process.start()
    there.close()

    def answer(what: str):
        wait([here, process.sentinel])
        try:
            if here.poll():
                return here.recv()
        except (EOFError, OSError):
            pass
        process.join()
        raise _ended(given, process, what)

    try:
        found = answer(f"importing {given.partition(':')[0]}")
        if found[0] == "error":
            raise ValueError(found[1])
        spec = found[1]
        here.send(config_of(spec))
        done = answer(f"trying {given} on {DRY_BATCH} digits")
        if done[0] == "error":
            raise ValueError(done[1])
        return spec
    finally:
        here.close()
        process.join(10)
        if process.is_alive():
            process.kill()
            process.join()
        try:  # what the user's code started there ends with it
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def dry_run(spec: Spec, cfg) -> None:
    """Call the user's method on ``DRY_BATCH`` training images of ``cfg``'s data set and run one
    training step of it on ``cfg``'s model (``fullscale.training.step.step_loss``), in this process,
    writing nothing; one line if it fails or gives a loss that is not finite.  A built-in is ours:
    nothing to check."""
    if spec.builtin:
        return
    import torch

    from fullscale.augment import to_float
    from fullscale.data import load_dataset
    from fullscale.models.external import _whole_message
    from fullscale.models.registry import create_model
    from fullscale.training.methods import get_method
    from fullscale.training.step import step_loss
    from fullscale.training.user_method import check_function

    data = load_dataset(cfg.data.dataset, "train")
    x_u8, y = data.images[:DRY_BATCH], torch.as_tensor(data.labels[:DRY_BATCH]).long()
    check_function(spec.method, to_float(x_u8), y, data.num_classes)
    with torch.random.fork_rng(devices=[]):  # the caller's global generator is left as it was
        torch.manual_seed(0)
        model = create_model(cfg.model.name, data.num_classes, **cfg.model_kwargs)
        try:
            parts = step_loss(model, model, x_u8, y, get_method(spec.method), cfg, data.num_classes,
                              torch.Generator().manual_seed(1), torch.Generator().manual_seed(2))
            parts.total.backward()
        except Exception as error:
            raise ValueError(f"method {printable(spec.given)}: one training step on {DRY_BATCH} digits failed "
                             f"({_whole_message(error)})") from None
    if not bool(torch.isfinite(parts.total.detach())):
        raise ValueError(f"method {printable(spec.given)}: one training step on {DRY_BATCH} digits gave the loss "
                         f"{float(parts.total)}")
