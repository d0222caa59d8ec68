"""Make ``puzzlemix_reference`` (the public code's formulation, restated) importable from these
tests (the suite runs with --import-mode=importlib, which puts no test folder on sys.path)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
