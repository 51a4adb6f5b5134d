"""Which rows of the Spark warehouse's event tables are read: those of committed loads.

An ingest is many Delta commits (one per table) and is data once its rows in ``loads`` commit,
last (records.py). Nothing undoes the commits before that: a table of loaded rows is stored as
``<name>_rows`` and read through a view ``<name>`` of the rows whose ``load_id`` is committed
(and, during an ingest, of its own loads), so the rows of an ingest that failed, was cut or lost
to another one are never read, and no open has to tell a crash from an ingest still running
(docs/scale.md §5).

The key tables are read whole: a surrogate key, once written, is the key of its id whether or
not its ingest committed, so two ingests can never give one user two keys (a key row of a load
that never committed is referenced by no event anyone reads).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "EVENT_TABLES",
    "KEY_TABLES",
    "LOADED_TABLES",
    "committed_only",
    "last_shown",
    "logical_name",
    "show_loads",
    "stored",
]

KEY_TABLES = ("users", "publishers", "advertisers", "dimension_values")
"""Ids → surrogate keys: every row is read."""

LOADED_TABLES = (
    "advertiser_publishers",
    "impressions",
    "conversions",
    "quarantine",
    "conversion_dimensions",
    "impression_dimensions",
)
"""Rows of loads: stored in ``<name>_rows``, read through the view ``<name>``."""

EVENT_TABLES = (*KEY_TABLES, *LOADED_TABLES)
"""The tables an ingest writes (and only an ingest)."""

_SUFFIX = "_rows"


def stored(table: str) -> str:
    """The Delta table that holds ``table``'s rows (what a write and ``DESCRIBE HISTORY``
    name)."""
    return table + _SUFFIX if table in LOADED_TABLES else table


def logical_name(table: str) -> str:
    """The name reads use for a stored table (the inverse of :func:`stored`)."""
    name = table.removesuffix(_SUFFIX)
    return name if name in LOADED_TABLES else table


def committed_only(loads: Iterable[int]) -> str:
    """A predicate on ``load_id`` true for exactly ``loads``: runs of consecutive ids as
    ``BETWEEN`` (a warehouse's committed loads are one run but for the ids of ingests that
    never committed), ``FALSE`` for none. Ids are the platform's own integers."""
    ids = sorted({int(load) for load in loads})
    if not ids:
        return "FALSE"
    runs: list[tuple[int, int]] = []
    for load in ids:
        if runs and load == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], load)
        else:
            runs.append((load, load))
    parts = [f"load_id = {a}" if a == b else f"load_id BETWEEN {a} AND {b}" for a, b in runs]
    return "(" + " OR ".join(parts) + ")"


_shown: dict[str, str] = {}
"""Per database of this process (its views are the JVM catalogue's, shared by every session):
the predicate its views were last made with."""

_last: dict[str, int] = {}
"""Per database of this process: the last committed load its views show."""


def show_loads(
    spark: SparkSession, database: str, committed: Iterable[int], own: Iterable[int] = ()
) -> None:
    """Make each loaded table's view in ``database`` show the rows of the ``committed`` loads
    and of ``own`` (an ingest's, while it runs) — not again when they show exactly those
    already: an open is then no statement more."""
    committed = [int(load) for load in committed]
    _last[database] = max(committed, default=0)
    predicate = committed_only([*committed, *own])
    if _shown.get(database) == predicate:
        return
    for table in LOADED_TABLES:
        spark.sql(
            f"CREATE OR REPLACE VIEW {database}.{table} AS "
            f"SELECT * FROM {database}.{stored(table)} WHERE {predicate}"
        )
    _shown[database] = predicate


def last_shown(database: str) -> int:
    """The last committed load the views of ``database`` show: what a partition built from
    them read, whatever another process has committed since (0 for none)."""
    return _last.get(database, 0)
