"""The plumbing every package shares, and nothing about the method: atomic file writes and
safe readers (``infra.io``), progress bars (``infra.progress``), the one ``--set key=value``
override dialect for config dataclasses (``infra.config``), and the provenance stamped into
every results file (``infra.provenance``).  It imports nothing else of the project."""
