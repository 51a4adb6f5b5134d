"""An exclusive lock on a file, shared by every process on this machine that takes it.

Why a module of its own: the warehouse's one-writer rule, the Spark catalogue's, the release
journal's appends and Dagster's first instance set-up all need the same thing — a blocking
``flock`` that the kernel releases when the holder exits or dies, so a SIGKILLed process never
leaves a stale lock behind.

A lock taken under a ``name`` also says who holds it: the holder writes its pid into the file,
and a process that finds the lock taken logs "waiting for the <name> lock held by pid N" on the
``dp_platform.locks`` logger before it blocks (Dagster puts that line in the run's event log:
``python_logs`` in dagster.yaml), and how long it waited once it has the lock.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["exclusive"]

log = logging.getLogger("dp_platform.locks")


def _holder(fd: int) -> str:
    """The pid the holder wrote (advisory: it may be changing hands as we read)."""
    try:
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    except OSError:
        return "unknown"
    return text if text.isdigit() else "unknown"


@contextmanager
def exclusive(path: Path, *, name: str | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) until the block ends. Blocks
    while another process holds it; with a ``name``, says so (the holder's pid) in the log.
    An OSError opening the file propagates (callers word it)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if name is not None:
                log.info("waiting for the %s lock held by pid %s (%s)", name, _holder(fd), path)
            began = time.monotonic()
            fcntl.flock(fd, fcntl.LOCK_EX)
            if name is not None:
                log.info("took the %s lock after %.1f s", name, time.monotonic() - began)
        if name is not None:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
