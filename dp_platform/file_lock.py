"""An exclusive lock on a file, shared by every process on this machine that takes it.

Why a module of its own: the warehouse's one-writer rule, the Spark catalogue's, the release
journal's appends and Dagster's first instance set-up all need the same thing — a blocking
``flock`` that the kernel releases when the holder exits or dies, so a SIGKILLed process never
leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["exclusive"]


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) until the block ends. Blocks
    while another process holds it. An OSError opening the file propagates (callers word it)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
