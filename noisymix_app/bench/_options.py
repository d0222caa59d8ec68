"""The one argument object of every benchmark, and its checks.

A benchmark that runs another (``bench gpu`` runs ``bench train-step``'s step) builds that one's
arguments with ``options(module, key=value, ...)``: the other's own parser gives every default,
and a key it does not know is an error.  A hand-built ``argparse.Namespace`` once lost step with
``bench train-step`` (``stem_stride`` was added there, not in ``bench gpu``), and the GPU suite's
three step figures failed while every test stayed green (issue 32).

``check(parser, options)`` is the same check for every benchmark's command line: a size, count or
repeat below 1 (or below 0 where 0 means "the default", which the option's default says), a number
of seconds that is not positive (``--sleep-figure 0.5`` is fine; nan is not) and a
device that is not here are refused in one line before any work.
"""

from __future__ import annotations

import argparse
from types import ModuleType

import torch

from noisymix_infra.arguments import OneLineParser

__all__ = ["check", "check_device", "options", "parser_for"]

#: options whose 0 means something even though their default is not 0 (untimed calls first)
_ZERO_ALLOWED = {"warmup"}


def parser_for(module: ModuleType, prog: str | None = None) -> argparse.ArgumentParser:
    """``module``'s own parser with the options ``noisymix bench`` adds to every benchmark."""
    parser = OneLineParser(prog=prog or f"noisymix bench {module.__name__}", add_help=prog is not None)
    parser.add_argument("--out", default=None, help="write the result JSON here")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    module.add_arguments(parser)
    return parser


def options(module: ModuleType, **values: object) -> argparse.Namespace:
    """The arguments ``module.run`` takes: its parser's defaults, with ``values`` in their place; a
    key that is not one of its options is a ``ValueError``, so a rename cannot pass unnoticed."""
    parser = parser_for(module)
    namespace = parser.parse_args([])
    unknown = sorted(set(values) - set(vars(namespace)) - {"threads"})
    if unknown:
        raise ValueError(f"{module.__name__} has no option(s) {', '.join(unknown)}; "
                         f"it has {', '.join(sorted(vars(namespace)))}")
    for key, value in values.items():
        setattr(namespace, key, value)
    check(parser, namespace)
    return namespace


def check_device(text: str) -> torch.device:
    """``text`` as a device that exists here, or a one-line ``ValueError``."""
    try:
        device = torch.device(text)
    except (RuntimeError, TypeError):
        raise ValueError(f"--device {text!r} is not a device (cpu, cuda or cuda:N)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {text}: no CUDA device here; use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"--device {text}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                             f"cuda:0..cuda:{torch.cuda.device_count() - 1}")
    elif device.type not in ("cpu", "mps"):
        raise ValueError(f"--device {text}: only cpu and cuda[:N] are benchmarked")
    return device


def check(parser: argparse.ArgumentParser, namespace: argparse.Namespace) -> None:
    """Refuse, in one line, a numeric option below its least meaningful value, and a missing device."""
    for action in parser._actions:
        if action.type not in (int, float) or action.dest not in vars(namespace):
            continue
        value = getattr(namespace, action.dest)
        if value is None:
            continue
        name = action.option_strings[-1] if action.option_strings else action.dest
        if action.type is float and action.default != 0:  # seconds or a rate: any positive value, 0.5 too
            if not value > 0:  # also refuses nan
                raise ValueError(f"{name} must be > 0, got {value}")
            continue
        least = 0 if action.default == 0 or action.dest in _ZERO_ALLOWED else 1
        if not value >= least:
            shown = "0 (its default)" if least == 0 and action.default == 0 else str(least)
            raise ValueError(f"{name} must be >= {shown}, got {value}")
    if getattr(namespace, "device", None) is not None:
        check_device(str(namespace.device))
