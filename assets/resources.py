"""Resources: the catalogue, the warehouse and the ledger, all under one platform home.

Each resource opens its store per use and closes it after, so a run never holds the DuckDB
file between steps and two runs (or a run and the CLI) take turns instead of failing. The
warehouse's engine is the catalogue's ``warehouse:`` block; Spark's session is started lazily,
on the first step that opens the warehouse, so a DuckDB catalogue never starts a JVM.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from dp_platform.config import Catalogue
from dp_platform.config_loader import load_catalogue
from dp_platform.home import Home
from dp_platform.journal import ReleaseJournal
from dp_platform.ledger import Ledger
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse.base import WarehouseEngine, open_warehouse


class CatalogueResource(dg.ConfigurableResource):
    """The campaign catalogue (YAML) the code location was built from."""

    path: str

    def load(self) -> Catalogue:
        return load_catalogue(self.path)


class WarehouseResource(dg.ConfigurableResource):
    """The warehouse the catalogue names (DuckDB by default); one writer at a time across
    processes (each engine's own lock). Spark starts on the first ``open``."""

    home: str
    catalogue: str | None = None  # the catalogue's path; None: the embedded default (DuckDB)

    @contextmanager
    def open(self) -> Iterator[WarehouseEngine]:
        settings = load_catalogue(self.catalogue).warehouse if self.catalogue else WarehouseConfig()
        with open_warehouse(settings, Home.at(self.home)) as warehouse:
            yield warehouse


class LedgerResource(dg.ConfigurableResource):
    """The privacy ledger the catalogue names (the home's SQLite file by default): budgets,
    write-once releases, secret bound state.

    Every asset that reads or draws opens the ledger here, so this is the one place every path
    (a run, a single-asset materialisation, a retry, a backfill) goes through: the ledger is
    checked against the release journal before use (a stale restore is refused before anything
    is drawn) and what the step drew is journaled on the way out (dp_platform/journal.py)."""

    home: str
    catalogue: str | None = None  # the catalogue's path; None: whatever the home records

    @contextmanager
    def open(self) -> Iterator[Ledger]:
        declared = load_catalogue(self.catalogue).ledger if self.catalogue else None
        with (
            Ledger.at_home(self.home, declared=declared) as ledger,
            ReleaseJournal.at_home(self.home).guarding(ledger),
        ):
            yield ledger
