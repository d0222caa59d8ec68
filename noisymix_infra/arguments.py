"""``OneLineParser``: an argument parser whose errors are one line, as every other error of ``noisymix``.

argparse prints its usage text and then the error; the README promises one line on bad input.
The error here is ``PROG: error: WHAT (see PROG --help)``, exit status 2, and the subcommands'
parsers inherit the class (``add_subparsers`` makes parsers of the parent's type).
"""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["OneLineParser"]


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        from noisymix_infra.io import printable  # io imports torch; `noisymix --help` does not

        first = message.strip().splitlines()[0] if message.strip() else "bad arguments"
        self.exit(2, f"{self.prog}: error: {printable(first)} (see {self.prog} --help)\n")
