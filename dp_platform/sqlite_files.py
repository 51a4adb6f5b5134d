"""Opening a SQLite file that several processes share (the ledger, Spark's catalogue).

Why a module of its own: switching a file to write-ahead logging needs a moment of exclusive
access, and SQLite answers ``database is locked`` to that switch *without* consulting the busy
timeout when another process is opening the same fresh file at the same instant (two runs started
together). Every other statement waits out the timeout as usual; only this one is retried here.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

__all__ = ["open_shared"]


def open_shared(path: Path, *, timeout: float = 300.0) -> sqlite3.Connection:
    """A connection in WAL mode with FULL sync, waiting up to ``timeout`` s for other openers."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    deadline = time.monotonic() + timeout
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL").fetchone()
            break
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error):
                db.close()
                raise
            if time.monotonic() >= deadline:
                db.close()
                raise
            time.sleep(0.02)
    db.execute("PRAGMA synchronous=FULL")
    return db
