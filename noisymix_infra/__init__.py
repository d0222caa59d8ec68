"""The plumbing every package shares, and nothing about the method: atomic file writes and
safe readers (``noisymix_infra.io``), progress bars (``noisymix_infra.progress``), the one ``--set key=value``
override dialect for config dataclasses (``noisymix_infra.config``), and the provenance stamped into
every results file (``noisymix_infra.provenance``).  It imports nothing else of the project."""
