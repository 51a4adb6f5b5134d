"""Where a ledger lives, and which backend opens it — decided here and nowhere else.

A ledger location is a path (a SQLite file) or a ``postgresql://`` URL. A platform home
records the location its ledger uses in ``<home>/ledger.json`` the first time a catalogue-driven
command (``run``, ``demo``) opens it for writing; every later command — the views ``budget``,
``releases``, ``campaign`` included — opens what the home records, so a home's budgets and
releases are always read from, and charged to, the one ledger that holds them. A catalogue that
names another ledger for an existing home is refused: a fresh ledger would hold a fresh budget.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from dp_platform.errors import LedgerError, StorageError
from dp_platform.ledger_backends.base import LedgerBackend
from dp_platform.settings import LedgerConfig

__all__ = ["LEDGER_RECORD", "LedgerBackend", "backend_name", "home_ledger", "open_backend"]

LEDGER_RECORD = "ledger.json"
SQLITE_FILE = "ledger.sqlite"
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def backend_name(declared: LedgerConfig) -> str:
    """``postgres`` or ``sqlite``: the backend of a catalogue's ``ledger:`` block (the Dagster
    UI draws it as a kind on the assets that go through the ledger)."""
    return "sqlite" if declared.url is None else "postgres"


def open_backend(
    where: str | Path, *, timeout: float = 300.0, read_only: bool = False
) -> LedgerBackend:
    """The backend for ``where``: a ``postgresql://`` URL, else the path of a SQLite file."""
    if isinstance(where, str) and where.startswith(_POSTGRES_SCHEMES):
        from dp_platform.ledger_backends.postgres import PostgresBackend  # psycopg only if used

        return PostgresBackend(where, timeout=timeout, read_only=read_only)
    from dp_platform.ledger_backends.sqlite import SqliteBackend

    return SqliteBackend(Path(where), timeout=timeout, read_only=read_only)


def home_ledger(
    home: str | Path, declared: LedgerConfig | None = None, *, read_only: bool = False
) -> str | Path:
    """The ledger location of the platform home ``home``.

    ``declared``: the catalogue's ``ledger:`` block, from commands that run a catalogue; the
    first such use records it in the home, and a different one later is refused. ``None``
    (the views, the Dagster resources): whatever the home records — a home that records
    nothing uses ``<home>/ledger.sqlite``, as every home did before PostgreSQL was possible.
    """
    root = Path(home)
    recorded = _recorded(root)
    if declared is not None:
        if recorded is _UNRECORDED:
            recorded = declared.url if read_only else _record(root, declared.url)
        elif recorded != declared.url:
            raise LedgerError(
                f"{root}: this home's ledger is {_describe(root, recorded)} but the catalogue "
                f"names {_describe(root, declared.url)}; a home keeps one ledger (its budgets "
                "and releases are there): use the catalogue's earlier ledger or a new --home"
            )
    elif recorded is _UNRECORDED:
        recorded = None
    return root / SQLITE_FILE if recorded is None else str(recorded)


class _Unrecorded:
    """A home whose ledger is not known yet (no record, no SQLite file)."""


_UNRECORDED = _Unrecorded()


def _recorded(root: Path) -> str | _Unrecorded | None:
    """The URL the home records (None: its SQLite file), or _UNRECORDED."""
    record = root / LEDGER_RECORD
    try:
        text = record.read_text()
    except FileNotFoundError:
        return None if (root / SQLITE_FILE).exists() else _UNRECORDED
    except OSError as error:
        raise StorageError(f"{record}: cannot read ({error.strerror or error})") from None
    try:
        document = json.loads(text)
        url = document["url"]
        if url is not None and not isinstance(url, str):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise StorageError(
            f'{record}: not a ledger record (expected {{"url": null or "postgresql://…"}})'
        ) from None
    return url


def _record(root: Path, url: str | None) -> str | None:
    """Write the record once: created whole, never replaced (a racing writer's record wins
    and is returned, so two runs started together agree or the second is refused)."""
    record = root / LEDGER_RECORD
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=root, prefix=".ledger-", delete=False) as temp:
            json.dump({"url": url}, temp)
            temp.flush()
            os.fsync(temp.fileno())
        try:
            os.link(temp.name, record)  # fails if the record exists: first writer wins
        except FileExistsError:
            pass
        finally:
            os.unlink(temp.name)
    except OSError as error:
        raise StorageError(f"{record}: cannot write ({error.strerror or error})") from None
    found = _recorded(root)
    if found != url:
        raise LedgerError(
            f"{root}: another run recorded {_describe(root, found)} as this home's ledger "
            f"at the same time; the catalogue names {_describe(root, url)}"
        )
    return url


def _describe(root: Path, url: str | _Unrecorded | None) -> str:
    return f"the SQLite file {root / SQLITE_FILE}" if url is None else str(url)
