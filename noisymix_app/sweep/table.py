"""The sweep's table, regenerated whenever a run finishes, under the sweep's table lock.

What the table holds (the paper's tables this sweep fills, ours beside the paper's: mean (min / max)
over seeds; the JSON adds the std and the per-seed values) is ``noisymix_figures.sweep_table``'s
business; this module only keeps two jobs from writing it at once.
"""

from __future__ import annotations

import time
from pathlib import Path

from noisymix_app.sweep.plan import Plan
from noisymix_app.sweep.state import sweep_dir
from noisymix_figures.sweep_table import write_table
from noisymix_infra.io import directory_lock

__all__ = ["refresh_table"]


def refresh_table(out: Path, plan: Plan) -> None:
    """``write_table`` under the sweep's table lock; a busy lock (another job writing it) is
    waited for a few seconds, then left to that job."""
    for _ in range(10):
        try:
            with directory_lock(sweep_dir(out) / "locks" / "_table", "writing the table"):
                write_table(out, plan)
            return
        except ValueError as error:
            if "in use" not in str(error):
                raise
            time.sleep(1)
