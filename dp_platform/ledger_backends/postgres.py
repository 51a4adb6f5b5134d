"""The ledger on a PostgreSQL server (``ledger: {url: postgresql://…}`` in the catalogue).

Locking: READ COMMITTED with ``SELECT … FOR UPDATE`` on the budget account's row, taken as a
write transaction's first statement. Every write that reads a budget (register, a day's bound
or release, a campaign-level release, end, set-cap) takes it, so writers of one account run one
after the other while other accounts proceed; under READ COMMITTED each later statement sees
everything committed before the lock was granted, so "is it stored? is there budget?" is
answered on the latest state. Why the account row: the day's own row does not exist before its
first release (``FOR UPDATE`` locks only rows that exist), and the cap check reads the charges
of every campaign in the account, so the account is the one row all competing writers share.
Why not SERIALIZABLE with retry: a retry re-runs the transaction, and with it the noise draw
inside it; a discarded draw would leak nothing (it was never stored or shown), but every draw
callback would have to be safe to repeat, and retries multiply under contention. Locking keeps
the protocol the SQLite backend follows (lock → stored? → budget → draw → store, charge →
commit), and ``lock_timeout`` bounds the wait like SQLite's busy timeout.

Passwords never appear in the URL (the catalogue refuses one): libpq reads ``PGPASSWORD`` or
``~/.pgpass``, and so does ``pg_dump`` for backups.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import psycopg

from dp_platform.errors import LedgerError, StorageError
from dp_platform.ledger_backends.base import (
    VERSION_TABLE,
    LedgerBackend,
    Params,
    Rows,
    Session,
    check_version,
    migrations,
    statements,
    storage_error,
)

__all__ = ["PostgresBackend"]

# pg_advisory_xact_lock key serialising schema migrations of one database ("dpledger" in ASCII)
_MIGRATION_LOCK = 0x6470_6C65_6467_6572


@cache
def _placeholders(sql: str) -> str:
    """The ledger's ``?`` placeholders in psycopg's ``%s`` style (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _PostgresSession:
    """The ledger's SQL on a psycopg connection."""

    def __init__(self, connection: psycopg.Connection) -> None:
        self._connection = connection

    def execute(self, sql: str, parameters: Params = (), /) -> Rows:
        return self._connection.execute(_placeholders(sql), tuple(parameters))

    def executemany(self, sql: str, rows: Iterable[Params], /) -> object:
        cursor = self._connection.cursor()
        cursor.executemany(_placeholders(sql), [tuple(row) for row in rows])
        return cursor


def _pg_dump() -> str:
    """``pg_dump`` on PATH, else the newest under Debian's /usr/lib/postgresql/*/bin."""
    found = shutil.which("pg_dump")
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_dump"), reverse=True):
        return str(candidate)
    raise StorageError("pg_dump not found: install the PostgreSQL client tools to back up")


class PostgresBackend(LedgerBackend):
    # ReadOnlySqlTransaction: a write through a read-only opening (SQLite's is an OperationalError)
    storage_errors = (psycopg.OperationalError, psycopg.errors.ReadOnlySqlTransaction, OSError)

    def __init__(self, url: str, *, timeout: float = 300.0, read_only: bool = False) -> None:
        self.url = url
        self.where = url
        options = f"-c lock_timeout={int(timeout * 1000)}"
        if read_only:
            options += " -c default_transaction_read_only=on"
        try:
            self._connection = psycopg.connect(
                url,
                autocommit=True,
                connect_timeout=10,
                options=options,
                application_name="dp-platform ledger",
            )
        except self.storage_errors as error:
            raise storage_error(self.where, "open", error) from None
        try:
            self._connection.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
            self._session = _PostgresSession(self._connection)
            if not read_only:
                self._migrate()
            version = self.schema_version()
            check_version(self.where, version, read_only=read_only)
        except self.storage_errors as error:
            self._connection.close()
            raise storage_error(self.where, "open", error) from None
        except LedgerError:
            self._connection.close()
            raise

    def _migrate(self) -> None:
        """Apply the missing migrations in one transaction; an advisory lock makes openers of
        a fresh database take turns (concurrent CREATE TABLE IF NOT EXISTS can collide)."""
        with self._connection.transaction():
            self._connection.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            self._connection.execute(VERSION_TABLE)
            current = self.schema_version()
            now = datetime.now(UTC).isoformat(timespec="seconds")
            for migration in migrations()[current:]:
                for statement in statements(migration.sql):
                    self._connection.execute(statement)
                self._connection.execute(
                    "INSERT INTO schema_version VALUES (%s, %s, %s)",
                    (migration.version, migration.name, now),
                )

    @property
    def session(self) -> Session:
        return self._session

    def schema_version(self) -> int:
        exists = self._connection.execute("SELECT to_regclass('schema_version')").fetchone()
        if exists is None or exists[0] is None:
            return 0
        row = self._connection.execute("SELECT max(version) FROM schema_version").fetchone()
        return 0 if row is None or row[0] is None else int(row[0])

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        with self._connection.transaction():
            yield self._session

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        """REPEATABLE READ, READ ONLY: every statement reads the transaction's first snapshot."""
        with self._connection.transaction():
            self._session.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield self._session

    def lock_account(
        self, db: Session, *, account: str | None = None, campaign: str | None = None
    ) -> None:
        """``SELECT … FOR UPDATE`` of the account row (held until commit or rollback)."""
        if account is not None:
            db.execute("SELECT name FROM accounts WHERE name = ? FOR UPDATE", (account,))
        else:
            db.execute(
                "SELECT a.name FROM accounts a JOIN campaigns c ON c.account = a.name "
                "WHERE c.name = ? FOR UPDATE OF a",
                (campaign,),
            )

    def backup(self, destination: Path) -> None:
        """``pg_dump --format=custom`` (one consistent snapshot; restore with pg_restore)."""
        if destination.exists():
            raise StorageError(f"{destination}: exists; a backup never overwrites a file")
        done = subprocess.run(
            [_pg_dump(), "--format=custom", f"--file={destination}", f"--dbname={self.url}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            reason = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
            raise StorageError(f"{self.url}: cannot back up the ledger (pg_dump: {reason})")

    def close(self) -> None:
        self._connection.close()
