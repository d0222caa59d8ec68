"""Worker processes that do not outlive the process that started them.

A DataLoader worker of a run killed with ``kill -9`` is re-parented and lives on until torch's
watchdog notices (it looks every 5 s), holding memory, the GPU's pinned buffers and any file it
shares with the dead run.  ``exit_with_parent`` (called first thing in a worker) asks the kernel
to end the worker with its parent.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

__all__ = ["exit_with_parent", "watch_parent", "worker_init_exiting_with_this_process"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def exit_with_parent(parent: int) -> None:
    """In a child process started by the process ``parent``: be sent SIGTERM when it dies (Linux
    ``prctl(PR_SET_PDEATHSIG)``; elsewhere nothing is asked), and end now if it already has
    (the child was re-parented before it could ask).

    The kernel sends the signal when the *thread* that started the child ends: call it only in
    children started by a thread that lives as long as its process (the main thread)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no libc to ask: the check below still holds
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def watch_parent(parent: int, poll_seconds: float = 0.5) -> threading.Thread:
    """The portable half of ``exit_with_parent``: a daemon thread that sends this process SIGTERM
    once ``parent`` is no longer its parent (it died and the child was re-parented), within
    ``poll_seconds``: for systems without ``PR_SET_PDEATHSIG`` (where the kernel's signal comes, it
    comes first)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="watch-parent", daemon=True)
    thread.start()
    return thread


def _exit_with(parent: int, _worker_id: int) -> None:
    exit_with_parent(parent)


def worker_init_exiting_with_this_process() -> Callable[[int], None]:
    """A DataLoader ``worker_init_fn`` whose workers end with the process that calls this (the
    main thread of a training or an evaluation): not ~5 s after a kill -9, when torch's watchdog
    looks.  (torch's worker loop already runs each worker with one intra-op thread.)"""
    return functools.partial(_exit_with, os.getpid())
