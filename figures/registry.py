"""The registry of the paper's labelled tables and figures (``tab:...`` / ``fig:...``).

Each label is registered where its generator is defined (``noisymix_figures.tables`` for the
tables, ``noisymix_figures.plots`` for the figures), with what REPORT.md's label-by-label section
says about it: the files written for it, where our numbers come from, and what filling it takes
(data or hardware).  A new table is then its paper values (``paper_values.json``) and its
``Comparison`` record (``noisymix_figures.table_defs``: the record says what the report says of it, and
``noisymix_figures.tables`` registers it); a new figure, its drawing function and one ``register``
beside it.  ``labels()`` is the registry in the report's order (``position``);
tests/figures/test_registry.py runs every generator and holds the registry equal to the paper's
labels (tests/figures/test_label_coverage.py walks the LaTeX).

A generator is ``generate(results, out)``: a table's returns its ``Table``s (written by
``noisymix figures`` under ``out/tables/``), a figure's draws under ``out`` and returns the path
(None when there is nothing to draw).  A figure also says which of our results it draws
(``found(results, drawn)``: cells, runs or inputs; empty when none), for the report's status.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noisymix_infra.registry import file_once

__all__ = ["NEEDS_IMAGENET", "NEEDS_TOY", "REGISTRY", "UNPORTABLE", "Coverage", "has_suite", "labels", "needs_cifar",
           "needs_cifar_p", "portable", "register", "table_files"]

NEEDS_IMAGENET = ("ImageNet-1k (data: licensed, about 150 GB, not downloadable by this toolkit) with ImageNet-C, -R "
                  "and -P (data), and ResNet-50s trained 200 epochs (hardware: one run on 8 GPUs each; "
                  "`noisymix sweep results_imagenet`)")
NEEDS_TOY = "`noisymix toy` (a laptop CPU, minutes); no toy.json in these results"


def needs_cifar(sweep: str) -> str:
    """What a CIFAR -C table or figure takes, filled by ``noisymix sweep SWEEP``."""
    return ("CIFAR-10/100 (data) with CIFAR-10-C/100-C (data: the released sets, or `noisymix corrupt`) and "
            f"200-epoch runs, 5 seeds x 8 methods (hardware: GPUs; `noisymix sweep {sweep}`)")


def needs_cifar_p(sweep: str) -> str:
    """What a CIFAR-10-P table takes, filled by ``noisymix sweep SWEEP``."""
    return ("CIFAR-10 (data) with CIFAR-10-P (data: the released set, or `noisymix corrupt --kind p`) and 200-epoch "
            f"runs (hardware: GPUs; `noisymix sweep {sweep}` with `--suite-root cifar10-p=DIR`)")


#: characters no generated file name holds (issue 40: ``tables/fig:toy_example.md`` cannot be checked out
#: on Windows, and ``*``, ``?``, ``"`` are shell or file-system specials)
UNPORTABLE = re.compile(r'[:*?"<>|\\]')


def portable(name: str) -> str:
    """A label as a file name: the paper's prefixes dropped (``tab:``, ``fig:``), any other character
    a file system refuses replaced by ``_``."""
    return UNPORTABLE.sub("_", re.sub(r"^(tab|fig):", "", name))


def table_files(label: str, *suffixes: str) -> tuple[str, ...]:
    """The Markdown files ``noisymix figures`` writes for a table label (one per suffix)."""
    return tuple(f"tables/{portable(label)}{s}.md" for s in suffixes or ("",))


def has_suite(results: Any, datasets: tuple[str, ...], suite: str, model: str | None = None) -> list[str]:
    """The cells ("dataset/model/method") of runs of ``datasets`` (and ``model``) evaluated on ``suite``."""
    return sorted({"/".join(r.key) for r in results.runs if r.key[0] in datasets
                   and (model is None or r.key[1] == model) and suite.format(r.key[0]) in r.evals})


@dataclass(frozen=True)
class Coverage:
    """One label: the files written for it, where our numbers come from, what filling it takes, its
    generator and, for a figure, which of our results it draws."""

    label: str
    files: tuple[str, ...]  # written under the report folder
    ours: str
    needs: str
    generate: Callable[[Any, Path], Any] = field(repr=False, compare=False)
    position: int = 0  # its line in REPORT.md's label-by-label section
    found: Callable[[Any, bool], list[str]] | None = field(default=None, repr=False, compare=False)


REGISTRY: dict[str, Coverage] = {}


def register(label: str, *, position: int, files: tuple[str, ...], ours: str, needs: str,
             found: Callable[[Any, bool], list[str]] | None = None) -> Callable:
    """Decorator: file ``generate(results, out)`` as the generator of ``label``."""
    if not label.startswith(("tab:", "fig:")):
        raise ValueError(f"{label!r}: a paper label starts with tab: or fig:")
    if label.startswith("fig:") and found is None:
        raise ValueError(f"{label}: a figure says which results it draws (found)")

    def wrap(generate: Callable[[Any, Path], Any]) -> Callable[[Any, Path], Any]:
        file_once(REGISTRY, label, Coverage(label, files, ours, needs, generate, position, found), "paper label")
        return generate

    return wrap


def labels() -> dict[str, Coverage]:
    """Every registered label, in the report's order: imports the modules that register them."""
    import noisymix_figures.plots
    import noisymix_figures.plots_examples
    import noisymix_figures.tables  # noqa: F401  (they register on import)

    return dict(sorted(REGISTRY.items(), key=lambda item: item[1].position))
