"""The difficulty-matched digits analogue: its fits and its test (issues 46, 51 and 54).

- ``fit_c`` — ``noisymix fit-analogue``: the Digits-C strengths (and the command for every ``--kind``);
- ``fit_p`` — ``--kind p``: the Digits-P strengths; ``severities`` — ``--kind severities``: the per-severity
  profile; ``freeze`` — writing a fit into the package's file, guarded;
- ``methods`` — ``noisymix analogue``: the eight methods on the matched sets against the paper's.

The package's ``__init__`` imports nothing."""
