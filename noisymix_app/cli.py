"""``noisymix``: the single front door.

Each command lives next to the code it drives, in a module with two functions:
``add_arguments(parser)`` and ``run(args) -> int | None``.  This registry names them; only the
module of the command being run is imported, so ``noisymix --help`` stays fast.

Every command accepts ``--threads N`` the same way (``noisymix_infra.threads``): torch's CPU threads while
it runs, 0 for ``NOISYMIX_THREADS`` or the cores free at the start; a module's ``THREADS`` names its
default.

Bad input (a ``ValueError``, a missing file, an argument argparse refuses) and a system error (a
full disk: ``OSError``) end the command with exit status 2 and one line saying why; a finished
command exits 0.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple

from noisymix_infra.arguments import OneLineParser
from noisymix_infra.threads import add_threads_argument, torch_threads

__all__ = ["COMMANDS", "OneLineParser", "main"]


class Command(NamedTuple):
    module: str
    help: str


COMMANDS: dict[str, Command] = {
    "verify": Command("theory.cli", "check Lemma 1, Prop. 1, Theorems 1-3 numerically and symbolically"),
    "toy": Command("toy.cli", "the 2-D decision-boundary experiment over many seeds"),
    "train": Command("fullscale.cli_train", "train a CIFAR/digits model with any method of the tables"),
    "evaluate": Command("fullscale.cli_evaluate", "evaluate a run on clean/-C/-P/-R/calibration/FGSM"),
    "corrupt": Command("fullscale.cli_corrupt", "generate a -C or -P set in the standard layout"),
    "figures": Command("noisymix_figures.cli", "the paper's tables and figures from run results"),
    "reproduce": Command("noisymix_app.reproduce.command", "the main job on a CPU with built-in data, one report"),
    "fit-analogue": Command("noisymix_app.analogue.fit_command",
                            "fit the difficulty-matched Digits-C's strengths on Baseline models of unused seeds"),
    "analogue": Command("noisymix_app.analogue.methods",
                        "the analogue's test: the eight methods' order and gains against the paper's (issue 51)"),
    "screen": Command("noisymix_app.screen.command", "your augmentation on the digits proxy: its CIFAR-10-C/-P place"),
    "sweep": Command("noisymix_app.sweep.command",
                     "every run of a paper table (local or SLURM), resumable; `status DIR`"),
    "bench": Command("noisymix_app.bench.cli", "speed benchmarks, written as JSON"),
}

_INPUT_ERRORS = (ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError,
                 PermissionError)


def _parser(selected: str | None) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = OneLineParser(
        prog="noisymix",
        description="NoisyMix, made checkable: theory, toy figure, full-scale training and evaluation.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parsers = {}
    for name, command in COMMANDS.items():
        parsers[name] = sub.add_parser(name, help=command.help, description=command.help)
    if selected in COMMANDS:
        module = importlib.import_module(COMMANDS[selected].module)
        module.add_arguments(parsers[selected])
        add_threads_argument(parsers[selected], getattr(module, "THREADS", None))
    return parser, parsers


def _continue_hint(command: str, argv: list[str]) -> str:
    """How to pick up where an interrupted command stopped: ``train`` resumes from its last
    checkpoint with ``--resume``; reproduce, sweep, corrupt, evaluate and screen skip what they finished."""
    again = shlex.join(["noisymix", *argv])
    if command == "train":
        if "--resume" not in argv:
            again += " --resume"
        return f"continue from the last checkpoint with: {again}"
    if command in ("reproduce", "sweep", "corrupt", "evaluate", "screen"):
        return f"rerun to continue (finished work is kept): {again}"
    return "nothing was kept"


#: an error line's words longer than this are the user's own text (a value, a name, a line of a
#: file), cut; our words, lists and paths stay whole
_LONGEST_WORD = 160
_LONGEST_LINE = 4000


def _bounded(message: str) -> str:
    """``message`` with each word over ``_LONGEST_WORD`` characters cut to its start and its length,
    and the whole cut at ``_LONGEST_LINE``: a value of 100,000 characters given to ``--set``,
    ``--epsilons`` or ``--corruptions`` was quoted whole, a 100,000-character error line (issue 48)."""
    def cut(word: re.Match) -> str:
        text = word.group()
        closing = text[len(text.rstrip("'\";:,.)]}")):]  # the quote and punctuation after it stay
        return f"{text[:100]}...({len(text) - len(closing)} characters){closing}"

    message = re.sub(rf"\S{{{_LONGEST_WORD + 1},}}", cut, message)
    if len(message) > _LONGEST_LINE:
        message = f"{message[:_LONGEST_LINE]}...({len(message)} characters)"
    return message


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    selected = next((a for a in argv if not a.startswith("-")), None)
    try:
        parser, parsers = _parser(selected)
    except ModuleNotFoundError as error:
        print(f"noisymix {selected}: error: this command is not available ({error})", file=sys.stderr)
        return 2
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser, so the line names the command
        parsers[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    module = importlib.import_module(COMMANDS[args.command].module)

    def command() -> int | None:
        try:
            with torch_threads(args.threads):
                return module.run(args)
        except KeyboardInterrupt:
            print(f"noisymix {args.command}: interrupted; {_continue_hint(args.command, argv)}", file=sys.stderr)
            return 130

    return main_in_one_line(f"noisymix {args.command}", command)


def error_line(error: BaseException) -> str | None:
    """The one line a command ends with for ``error``: bad input (``_INPUT_ERRORS``: its message's first
    line) or a system error (a full disk, a read-only folder: the system's reason and the file); None for
    anything else, which is a bug to show whole."""
    from noisymix_infra.io import printable  # here, not at the top: `noisymix --help` imports no torch

    if isinstance(error, _INPUT_ERRORS):
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return _bounded(printable(message))
    if isinstance(error, OSError) and error.errno is not None:
        where = f": {printable(error.filename)}" if error.filename else ""
        reason = error.strerror or errno.errorcode.get(error.errno, str(error.errno))
        return _bounded(reason + where)
    return None


def main_in_one_line(prog: str, module_main: Callable[[], int | None]) -> int:
    """``module_main()``'s exit status, ending as a ``noisymix`` command does (``error_line``: one line
    ``PROG: error: ...`` and status 2): for a module's own command line (``python -m MODULE``), which
    the front door does not run (issue 60: ``python -m noisymix_app.reproduce.summary --rerender`` of a
    missing file was a traceback)."""
    try:
        return int(module_main() or 0)
    except (*_INPUT_ERRORS, OSError) as error:
        line = error_line(error)
        if line is None:
            raise
        print(f"{prog}: error: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
