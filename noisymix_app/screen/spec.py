"""What ``noisymix screen SPEC`` screens (issue 59, goal 1): a built-in method by name, or the user's own as
``package.module:name``, a batch function ``(images, labels, generator) -> (images, targets)`` or a
``fullscale.training.methods.Method`` (the two forms: ``fullscale.training.user_method``).

``resolve_spec`` imports it and pins it to its source (the method name its runs record); ``dry_run`` then
calls it on a small batch of digits and runs one training step of it, so that a SPEC that cannot train
(not importable, a wrong signature, results of the wrong shapes or dtypes, NaN, a changed batch size, a
draw from a global generator) is refused in one line before any folder is made or any run starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from noisymix_infra.io import printable

__all__ = ["DRY_BATCH", "Spec", "dry_run", "resolve_spec"]

#: digits of the dry call (a batch of the plan's training set)
DRY_BATCH = 8


@dataclass(frozen=True)
class Spec:
    """A screened method: as given, the method name its runs record (a built-in's name, or
    ``module:name@digest``), a short label (its runs' names, the page), its title, its form
    (``built-in``, ``function`` or ``method``) and, for the user's own, its source file and sha256."""

    given: str
    method: str
    label: str
    title: str
    form: str
    source: str | None = None
    source_sha256: str | None = None

    @property
    def builtin(self) -> bool:
        return self.form == "built-in"


def resolve_spec(text: str) -> Spec:
    """The ``Spec`` of ``text``: a registered method, or ``package.module:name`` imported and pinned;
    one line for anything else (an unknown name, a module that does not import, an attribute of
    neither form)."""
    from fullscale.training.methods import METHODS, NOT_IMPLEMENTED
    from fullscale.training.user_method import is_user_spec, load_method, pin, source_file, split_spec

    if not isinstance(text, str) or not text.strip():
        raise ValueError("SPEC is empty: give a method name or package.module:name")
    if not is_user_spec(text):
        if text not in METHODS:
            hint = f" ({NOT_IMPLEMENTED[text]})" if text in NOT_IMPLEMENTED else ""
            raise ValueError(f"SPEC {printable(repr(text))} is not a built-in method{hint} (known: "
                             f"{', '.join(METHODS)}) nor package.module:name")
        method = METHODS[text]
        return Spec(text, text, text, method.title, "built-in")
    module_name, attr, digest = split_spec(text)
    if digest is not None:
        raise ValueError(f"SPEC {printable(text)}: give package.module:name; the screen pins it to its source itself")
    pinned = pin(text)
    method = load_method(pinned)
    import hashlib
    import importlib

    path = source_file(importlib.import_module(module_name))
    label = attr if attr not in METHODS else f"{attr}-user"  # its runs are never taken for a built-in's
    form = "function" if method.kind.name.startswith("function ") else "method"
    title = attr if form == "function" else method.title
    return Spec(text, pinned, label, title, form, str(path), hashlib.sha256(path.read_bytes()).hexdigest())


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
