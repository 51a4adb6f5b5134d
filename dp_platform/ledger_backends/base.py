"""What the ledger needs from a database, so its SQL and its protocol are written once.

A backend opens one connection (read-write, or read-only for the views), runs a write
transaction with the locking that makes check-then-write safe across processes, brings the
schema to the current version from the migration files, and backs itself up. ``Ledger``
(dp_platform/ledger.py) holds all the SQL, written with ``?`` placeholders; a backend whose
driver wants another style translates them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

from dp_platform.errors import LedgerError, StorageError

__all__ = [
    "VERSION_TABLE",
    "LedgerBackend",
    "Migration",
    "Rows",
    "Session",
    "check_version",
    "migrations",
    "statements",
    "storage_error",
]

Params = Sequence[object]


class Rows(Protocol):
    """The result of one statement: DB-API cursors (sqlite3's, psycopg's) fit."""

    def fetchone(self) -> tuple | None: ...

    def fetchall(self) -> list[tuple]: ...

    def __iter__(self) -> Iterator[tuple]: ...


class Session(Protocol):
    """Runs the ledger's SQL (``?`` placeholders) on one connection."""

    def execute(self, sql: str, parameters: Params = ..., /) -> Rows: ...

    def executemany(self, sql: str, rows: Iterable[Params], /) -> object: ...


@dataclass(frozen=True)
class Migration:
    """One versioned schema step: ``migrations/NNNN_name.sql``, portable SQL."""

    version: int
    name: str
    sql: str


_MIGRATIONS = Path(__file__).with_name("migrations")


@cache
def migrations() -> tuple[Migration, ...]:
    """Every migration, in version order (the file names' numbers, 1, 2, … without gaps)."""
    found = []
    for path in sorted(_MIGRATIONS.glob("[0-9][0-9][0-9][0-9]_*.sql")):
        number, _, name = path.stem.partition("_")
        found.append(Migration(int(number), name, path.read_text()))
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"{_MIGRATIONS}: migration numbers must run 1, 2, … without gaps")
    return tuple(found)


def statements(sql: str) -> list[str]:
    """A migration's statements (split at ``;`` ending a line; comments dropped)."""
    lines = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
    parts = "\n".join(lines).split(";\n")
    return [part.strip().rstrip(";") for part in parts if part.strip()]


VERSION_TABLE = """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
)"""
"""One row per applied migration (kept by the backends, outside the migration files)."""


VIEWS_NEED = 1
"""The schema version the read-only views need. Later migrations only add what writers use
(0002: the campaign-to-warehouse bindings), so a view reads an older ledger as it is; raise
this with a migration that changes what a view reads."""


def check_version(where: str, version: int, *, read_only: bool) -> None:
    """Refuse a ledger this code cannot use: newer than it knows, or, while read-only, older
    than the views need (the views never write, so they do not upgrade)."""
    latest = len(migrations())
    if read_only and version == 0:
        raise StorageError(f"{where}: no ledger here (nothing was registered in it)")
    if version > latest:
        raise LedgerError(
            f"{where}: ledger schema version {version} is newer than this dp-platform knows "
            f"({latest}); use the version that wrote it"
        )
    if read_only and version < VIEWS_NEED:
        raise LedgerError(
            f"{where}: ledger schema version {version} predates what this dp-platform's views "
            f"read ({VIEWS_NEED}); "
            "run a command that writes (`dp-platform run`) once to upgrade it"
        )


def storage_error(where: str, doing: str, error: BaseException) -> StorageError:
    """A storage fault as one line naming the ledger (a driver's message may span lines)."""
    text = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return StorageError(f"{where}: cannot {doing} the ledger ({' '.join(text.split())})")


class LedgerBackend(ABC):
    """One open ledger database. ``where`` names it in errors (a path, or a URL that never
    holds a password: the catalogue refuses one)."""

    where: str
    storage_errors: tuple[type[BaseException], ...]
    """Faults of the storage itself (disk full, server gone, lock timeout): raised by the
    ledger as one StorageError; rule errors pass through unchanged."""

    @property
    @abstractmethod
    def session(self) -> Session:
        """The connection for reads outside a transaction (each statement on its own)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Session]:
        """A write transaction: commits on exit, rolls back on any exception. It excludes
        every other writer that could change what it read (see :meth:`lock_account`)."""

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[Session]:
        """A read-only transaction whose statements all see one committed state."""

    @abstractmethod
    def lock_account(
        self, db: Session, *, account: str | None = None, campaign: str | None = None
    ) -> None:
        """Inside a transaction, before its first read: hold the budget account (``account``,
        or the one ``campaign`` belongs to) until commit, so check-then-write cannot race with
        another writer of the same account. A no-op where the transaction already excludes
        every other writer."""

    @abstractmethod
    def schema_version(self) -> int:
        """The last migration applied (0: an empty database)."""

    @abstractmethod
    def backup(self, destination: Path) -> None:
        """A consistent copy of the whole ledger at ``destination`` (a new file), taken while
        other processes may be writing."""

    @abstractmethod
    def close(self) -> None: ...
