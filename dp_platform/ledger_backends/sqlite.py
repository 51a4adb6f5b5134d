"""The ledger in one SQLite file (the default: ``<home>/ledger.sqlite``).

Locking: ``BEGIN IMMEDIATE`` takes the database's write lock up front, so every write
transaction excludes every other writer — the account lock Postgres needs is implied.
Write-ahead logging lets the views read while a run writes (dp_platform/sqlite_files.py).

Ledgers made before versioned migrations carried ``PRAGMA user_version = 2`` and the tables of
migration 1; they are adopted as version 1 when first opened for writing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from dp_platform.errors import LedgerError, StorageError
from dp_platform.ledger_backends.base import (
    VERSION_TABLE,
    LedgerBackend,
    Session,
    check_version,
    migrations,
    statements,
    storage_error,
)
from dp_platform.sqlite_files import open_shared

__all__ = ["SqliteBackend"]


class SqliteBackend(LedgerBackend):
    storage_errors = (sqlite3.OperationalError, OSError)

    def __init__(self, path: Path, *, timeout: float = 300.0, read_only: bool = False) -> None:
        self.path = path
        self.where = str(path)
        try:
            self._db = self._open_read_only(timeout) if read_only else self._open(timeout)
            version = self.schema_version()
        except self.storage_errors as error:
            raise storage_error(self.where, "open", error) from None
        try:
            check_version(self.where, version, read_only=read_only)
        except LedgerError:
            self._db.close()
            raise

    def _open(self, timeout: float) -> sqlite3.Connection:
        db = open_shared(self.path, timeout=timeout)
        db.execute("PRAGMA foreign_keys=ON")
        try:
            self._migrate(db)
        except BaseException:
            db.close()
            raise
        return db

    def _open_read_only(self, timeout: float) -> sqlite3.Connection:
        """``mode=ro``; in a directory where SQLite cannot create its shared-memory file, and
        with no write-ahead log left to replay, ``immutable=1`` (no writer can exist there)."""
        if not self.path.is_file():
            raise StorageError(f"{self.path}: no ledger here (nothing was registered in this home)")
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        db = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            db.close()
            wal = self.path.with_name(self.path.name + "-wal")
            if wal.exists() and wal.stat().st_size > 0:
                raise
        db = sqlite3.connect(f"{uri}&immutable=1", uri=True, isolation_level=None)
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        """Apply the missing migrations in one write transaction (safe if openers race)."""
        db.execute("BEGIN IMMEDIATE")
        try:
            current = self._version(db)
            db.execute(VERSION_TABLE)
            now = datetime.now(UTC).isoformat(timespec="seconds")
            recorded = db.execute("SELECT count(*) FROM schema_version").fetchone()[0]
            if current == 1 and recorded == 0:  # adopted (PRAGMA user_version 2): record it
                db.execute("INSERT INTO schema_version VALUES (1, 'initial', ?)", (now,))
            for migration in migrations()[current:]:
                for statement in statements(migration.sql):
                    db.execute(statement)
                db.execute(
                    "INSERT INTO schema_version VALUES (?, ?, ?)",
                    (migration.version, migration.name, now),
                )
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    @staticmethod
    def _has_table(db: sqlite3.Connection, name: str) -> bool:
        row = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return row is not None

    def _version(self, db: sqlite3.Connection) -> int:
        if self._has_table(db, "schema_version"):
            row = db.execute("SELECT max(version) FROM schema_version").fetchone()
            if row[0] is not None:
                return int(row[0])
        if not self._has_table(db, "campaigns"):
            return 0
        columns = {row[1] for row in db.execute("PRAGMA table_info(campaigns)")}
        if "config_json" not in columns:
            raise LedgerError(
                f"{self.path}: written by an earlier version of dp-platform (no registered "
                "configurations); keep it for the record and start a new home"
            )
        return 1  # the tables of migration 1, from before versioned migrations

    @property
    def session(self) -> Session:
        return self._db

    def schema_version(self) -> int:
        return self._version(self._db)

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """BEGIN IMMEDIATE: the write lock is taken up front, so check-then-write cannot race."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        else:
            self._db.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        """A deferred read transaction: in WAL mode it reads one snapshot until it ends."""
        self._db.execute("BEGIN")
        try:
            yield self._db
        finally:
            self._db.execute("COMMIT")

    def lock_account(
        self, db: Session, *, account: str | None = None, campaign: str | None = None
    ) -> None:
        """Nothing to do: BEGIN IMMEDIATE already excludes every other writer."""

    def backup(self, destination: Path) -> None:
        """SQLite's online backup API: a consistent copy even while a run writes
        (dp_platform/ledger_backup.py: integrity-checked, never over an existing file)."""
        from dp_platform.ledger_backup import backup_sqlite_ledger

        backup_sqlite_ledger(self.path, destination)

    def close(self) -> None:
        self._db.close()
