"""Resources: the catalogue, the warehouse and the ledger, all under one platform home.

Each resource opens its store per use and closes it after, so a run never holds the DuckDB
file between steps and two runs (or a run and the CLI) take turns instead of failing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from dp_platform.config import Catalogue, load_catalogue
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.warehouse import Warehouse


class CatalogueResource(dg.ConfigurableResource):
    """The campaign catalogue (YAML) the code location was built from."""

    path: str

    def load(self) -> Catalogue:
        return load_catalogue(self.path)


class WarehouseResource(dg.ConfigurableResource):
    """The DuckDB warehouse; one writer at a time across processes (a blocking file lock)."""

    home: str

    @contextmanager
    def open(self) -> Iterator[Warehouse]:
        home = Home.at(self.home)
        with home.warehouse_lock():
            warehouse = Warehouse(home.warehouse)
            try:
                yield warehouse
            finally:
                warehouse.close()


class LedgerResource(dg.ConfigurableResource):
    """The privacy ledger (SQLite): budgets, write-once releases, secret bound state."""

    home: str

    @contextmanager
    def open(self) -> Iterator[Ledger]:
        with Ledger.at_home(self.home) as ledger:
            yield ledger
