"""Online backup and restore of the SQLite ledger, with SQLite's backup API.

Why the backup API and not a file copy: the ledger is in write-ahead-log mode and may be written
by a run at the same moment; copying ``ledger.sqlite`` alone can miss committed pages still in
the log, or catch a half-checkpointed file. The backup API copies one consistent snapshot (a
single step under one read transaction: writers carry on, the copy is of one instant) into a
self-contained file (rollback journal, no ``-wal`` beside it), checked with ``integrity_check``.

A restore writes the backup into the live ledger through the same API (under SQLite's own write
lock, so it never interleaves with a run's transaction), after keeping the current ledger as a
backup of its own. It does *not* make a stale ledger usable: the release journal
(dp_platform/journal.py) still refuses a ledger that lacks a published day.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from dp_platform.errors import LedgerError, StorageError
from dp_platform.sqlite_files import open_shared

__all__ = ["backup_sqlite_ledger", "restore_sqlite_ledger"]


def backup_sqlite_ledger(ledger: Path, destination: Path) -> Path:
    """Copy the ledger at ``ledger`` into the new file ``destination`` (refused if it exists)."""
    if not ledger.is_file():
        raise StorageError(f"{ledger}: no ledger here (nothing was registered in this home)")
    destination = destination.expanduser().resolve()
    if destination.exists():
        raise StorageError(f"{destination}: exists; a backup never overwrites a file")
    partial = destination.with_name(f".{destination.name}.partial-{os.getpid()}")
    try:
        with (
            closing(sqlite3.connect(ledger, timeout=300.0)) as source,
            closing(sqlite3.connect(partial, isolation_level=None)) as target,
        ):
            source.backup(target)  # pages=-1: the whole database in one consistent step
            target.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            _check_integrity(target, destination)
        _fsync(partial)
        os.replace(partial, destination)
        _fsync(destination.parent)
    except sqlite3.Error as error:
        raise StorageError(f"{destination}: cannot back up {ledger} ({error})") from None
    except OSError as error:
        raise StorageError(
            f"{destination}: cannot write the backup ({error.strerror or error})"
        ) from None
    finally:
        partial.unlink(missing_ok=True)
    return destination


def restore_sqlite_ledger(backup: Path, ledger: Path) -> Path | None:
    """Replace the ledger's contents with ``backup``'s. The current ledger, if any, is first
    kept as ``ledger-before-restore-<UTC time>.sqlite`` beside it; returns that path."""
    backup = backup.expanduser().resolve()
    if not backup.is_file():
        raise StorageError(f"{backup}: no such backup file")
    kept = None
    if ledger.is_file():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        kept = backup_sqlite_ledger(
            ledger, ledger.with_name(f"ledger-before-restore-{stamp}.sqlite")
        )
    try:
        uri = f"file:{quote(str(backup))}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as source:
            _check_integrity(source, backup)
            columns = {row[1] for row in source.execute("PRAGMA table_info(campaigns)")}
            if "config_json" not in columns:
                raise LedgerError(f"{backup}: not a dp-platform ledger backup (no campaigns table)")
            with closing(open_shared(ledger)) as target:
                source.backup(target)
    except sqlite3.Error as error:
        raise StorageError(f"{ledger}: cannot restore from {backup} ({error})") from None
    return kept


def _check_integrity(db: sqlite3.Connection, named: Path) -> None:
    result = db.execute("PRAGMA integrity_check").fetchone()[0]
    if result != "ok":
        raise LedgerError(f"{named}: the SQLite integrity check failed; not a usable ledger copy")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
