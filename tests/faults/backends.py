"""Ledger backends the harness runs against: the catalogue's ``ledger:`` block per schedule.

A backend is only what the harness writes into the catalogue it generates; the platform reads
that block like any operator's catalogue. ``sqlite`` (the default, the home's own
``ledger.sqlite``) writes nothing. A ``postgresql://…`` URL gives each schedule a fresh
database on that server, named ``faults_<seed>_<schedule>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from dp_platform.home import Home
from dp_platform.ledger import Ledger

SQLITE = "sqlite"


def backend_name(ledger_url: str | None) -> str:
    """``sqlite`` or the URL's scheme (what the report prints)."""
    return SQLITE if not ledger_url else urlsplit(ledger_url).scheme


def schedule_ledger(ledger_url: str | None, database: str) -> dict | None:
    """The ``ledger:`` block of one schedule's catalogue; None: the home's SQLite ledger.

    A server URL gets a fresh, empty database ``database`` (created here), so schedules never
    see each other's ledgers."""
    if not ledger_url or ledger_url == SQLITE:
        return None
    parts = urlsplit(ledger_url)
    if not parts.scheme.startswith("postgres"):
        raise ValueError(f"--ledger-url: unsupported scheme {parts.scheme!r}")
    import psycopg

    with psycopg.connect(ledger_url, autocommit=True) as server:
        server.execute(f'DROP DATABASE IF EXISTS "{database}"')
        server.execute(f'CREATE DATABASE "{database}"')
    return {"url": urlunsplit(parts._replace(path=f"/{database}"))}


@contextmanager
def open_ledger(home: Home, ledger_block: dict | None) -> Iterator[Ledger]:
    """The schedule's ledger, read-only: the home's SQLite file, or the block's URL (a
    ``Ledger`` opens a ``postgresql://`` URL once the PostgreSQL backend is in the code base)."""
    where = home.ledger if ledger_block is None else ledger_block["url"]
    with Ledger(where, read_only=True) as ledger:
        yield ledger
