"""Where a number came from: the git commit of the code (and whether its tree was dirty), the
package versions, the machine.  Every results file carries ``provenance()`` under the key
``"provenance"`` (run ``config.json``'s ``run`` part, evaluation JSON, benchmark JSON, the
figures' ``REPORT.md``), so any number can be traced to the code that made it.

Outside a git checkout (an installed wheel) the commit is ``None``, never a guess.
"""

from __future__ import annotations

import datetime
import functools
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "ROOT", "git_state", "machine", "now", "provenance", "versions"]

ROOT = Path(__file__).resolve().parents[1]
#: the packages whose versions change numbers
PACKAGES = ("torch", "numpy", "scipy", "pillow", "scikit-learn", "sympy")


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_state(paths: tuple[str, ...] = ()) -> dict[str, Any]:
    """``{"commit", "dirty"}`` of the checkout holding this code; with ``paths``, also
    ``"code_dirty"``: whether any of those paths (files or folders) differ from the commit."""
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    state: dict[str, Any] = {"commit": commit, "dirty": None if status is None else bool(status)}
    if paths:
        code_status = _git("status", "--porcelain", "--untracked-files=all", "--", *paths)
        state["code_dirty"] = None if code_status is None else bool(code_status)
    return state


@functools.cache
def versions() -> dict[str, str | None]:
    """Python and the versions of ``PACKAGES`` (``None`` where one is not installed)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("noisymix", *PACKAGES):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def machine() -> dict[str, Any]:
    """What makes float results differ between machines (issue 22, item 3): the CPU model, the
    vector instructions torch's CPU kernels dispatch to, torch's thread count and the versions."""
    model = platform.processor() or None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), model)
    except OSError:  # not Linux
        pass
    try:
        import torch

        capability, threads = torch.backends.cpu.get_cpu_capability(), torch.get_num_threads()
    except ImportError:  # pragma: no cover - torch is a dependency
        capability = threads = None
    return {"cpu_model": model, "cpu_capability": capability, "cpu_count": os.cpu_count(),
            "torch_threads": threads, "versions": versions()}


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def provenance(paths: tuple[str, ...] = ()) -> dict[str, Any]:
    """The record every results file carries: git state, versions, host, time, load average."""
    try:
        load = [round(v, 2) for v in os.getloadavg()]
    except OSError:  # not available on this platform
        load = None
    return {**git_state(paths), "versions": versions(), "host": platform.node(),
            "cpu_count": os.cpu_count(), "load_average": load, "written": now()}
