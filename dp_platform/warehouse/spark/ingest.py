"""Loading event files into the Spark warehouse: the same checks, keys, tie order and quarantine
as the DuckDB ingest (../ingest.py), all or nothing.

Two halves, split where the work stops being a function of the file alone:

1. *File and row checks* read only the file, as Spark jobs over it (ingest_checks.py): the
   DuckDB ingest's file refusals, record numbering, malformed records and row rules (unparsable
   times, future times…) in Spark SQL, checked for parity with DuckDB on the ingest corpus
   (tests/test_spark_ingest_checks.py). Each file's checked rows (reason, row number, UTC
   microseconds) are one checkpoint; no event is read on the driver, and input and tables may
   be at any URI Spark reads.
2. *Everything that needs the warehouse* runs as Spark SQL (``ingest_*.sql`` here): duplicates
   against loaded ids, surrogate keys, the tie order of impressions, inserts, quarantine.

All or nothing across tables: each write is a Delta commit of one table (rows tagged with
their load id appended; the impression days the file touches replaced in one commit), and the
ingest is data once its rows in ``loads`` commit, last (records.py), with every event table's
version. Until then its rows are in no view of the loaded tables (visibility.py): an ingest
that fails, is cut or loses to another leaves rows that are never read, and nothing is undone.
Its first commit reserves its load ids (unique however many ingests run); its last commits its
loads only if no other ingest committed since it began — of two at once, the other one stops
with one line and loaded nothing (:data:`LOST`).

Messages and reports name files, columns, reasons and counts — never ids or values.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pandas as pd

from dp_platform.warehouse.ingest import (
    TIE_ROOM,
    DimensionLists,
    IngestError,
    IngestReport,
    KindReport,
    WarehouseWriteError,
    ingest_moment,
    stored_values,
    write_cause,
)
from dp_platform.warehouse.ingest_sources import shown
from dp_platform.warehouse.spark.commits import is_conflict
from dp_platform.warehouse.spark.ingest_checks import (
    CheckedFile,
    inspect_file,
    read_and_check,
)
from dp_platform.warehouse.spark.records import LoadRecord, WarehouseRecords
from dp_platform.warehouse.spark.visibility import show_loads

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dp_platform.warehouse.spark.runner import SparkSqlRunner

__all__ = ["LOST", "SparkTables", "ingest_files", "show_committed"]


class SparkTables(Protocol):
    """What an ingest uses of the Spark warehouse (store.SparkWarehouse, which calls this
    module when it opens and ingests: typed here, not imported, so the two are no circle)."""

    spark: SparkSession
    root: str
    database: str
    records: WarehouseRecords
    sql: SparkSqlRunner


LOST = "another ingest committed first; nothing was loaded; run it again"
"""The end of the one line an ingest that lost to another one stops with."""


_ID = {"impressions": "impression_id", "conversions": "conversion_id"}


_DIMENSION_INSERTS = {
    "conversions": "ingest_insert_dimensions",
    "impressions": "ingest_insert_impression_dimensions",
}
"""Per event file: the SQL that stores its accepted events' dimension rows."""


def _insert_dimensions(
    warehouse: SparkTables, kind: str, dimensions: DimensionLists, load_id: int
) -> None:
    """The load's accepted events' dimension values as small integers (DuckDB's
    ``_insert_dimensions``): each listed value gets a key in ``dimension_values`` once (keys
    never change), each event one row per dimension in ``conversion_dimensions`` (by
    conversion_key) or ``impression_dimensions`` (by load and row: impressions have no other
    fixed key). The lists (public) arrive as the view ``listed_dimension_values``, the values
    as ``checked_dimensions`` (ingest_checks.CheckedFile.register)."""
    listed = pd.DataFrame(
        [
            (name, position, value)
            for name, dimension in dimensions.items()
            for position, value in enumerate(stored_values(dimension))
        ],
        columns=["dimension", "position", "value"],
    )
    warehouse.spark.createDataFrame(
        listed, schema="dimension STRING, position INT, value STRING"
    ).createOrReplaceTempView("listed_dimension_values")
    warehouse.sql.run("ingest_dimension_values", load_id=load_id)
    warehouse.sql.run(_DIMENSION_INSERTS[kind], load_id=load_id)
    for view in ("listed_dimension_values", "checked_dimensions"):
        warehouse.spark.catalog.dropTempView(view)


def _load(
    warehouse: SparkTables,
    staged: CheckedFile,
    load_id: int,
    dimensions: DimensionLists,
    last: int,
) -> KindReport:
    """Spark half of one file: its appends and, for impressions, the touched days replaced in
    one commit (ingest_rewrite_impressions.sql); returns its report. ``last``: the last load
    committed when the ingest began (which other loads' rows it keeps)."""
    spark, sql, source = warehouse.spark, warehouse.sql, staged.source
    kind = source.kind
    staged.register()
    spark.sql(f"SELECT user_key, {_ID[kind]} AS id FROM {kind}").createOrReplaceTempView(
        "loaded_ids"
    )
    sql.run("ingest_duplicates")
    sql.run("ingest_keys", load_id=load_id)
    sql.run(f"ingest_insert_{kind}", load_id=load_id, max_tie=TIE_ROOM, last=last)
    if staged.dimensions:
        _insert_dimensions(warehouse, kind, dimensions, load_id)
    if kind == "impressions":
        first, last_day = sql.query("SELECT min(day), max(day) FROM new_impressions")[0]
        if first is not None:
            sql.run(
                "ingest_rewrite_impressions",
                first=first,
                last_day=last_day,
                last=last,
                tie_room=TIE_ROOM,
            )
    reasons = sql.run("ingest_quarantine", load_id=load_id, kind=kind, source_file=source.path)
    report = KindReport(source_file=source.path, rows=staged.rows)
    report.reasons = {reason: int(n) for reason, n in reasons}
    report.quarantined = sum(report.reasons.values())
    report.accepted = report.rows - report.quarantined
    sql.release()
    return report


def show_committed(warehouse: SparkTables, *own: int) -> None:
    """The loaded tables' views show the committed loads' rows, and ``own`` loads' (an
    ingest's, while it runs: it reads its own keys and rows)."""
    loads = [int(row[0]) for row in warehouse.records.committed_loads()]
    show_loads(warehouse.spark, warehouse.database, loads, own)


def ingest_files(
    warehouse: SparkTables,
    impressions: str | Path,
    conversions: str | Path,
    *,
    now: datetime | None = None,
    dimensions: DimensionLists | None = None,
    impression_dimensions: DimensionLists | None = None,
) -> IngestReport:
    """Check both files, then load both (all or nothing); the DuckDB ingest's report, and its
    one-line refusals (the same file and row checks run first). ``dimensions`` and
    ``impression_dimensions``: the catalogue's dimensions of each file (columns required,
    values checked and stored)."""
    moment = ingest_moment(now)
    own: dict[str, DimensionLists] = {
        "impressions": dict(impression_dimensions or {}),
        "conversions": dict(dimensions or {}),
    }
    sources = [
        inspect_file(warehouse.spark, kind, path, tuple(own[kind]))
        for kind, path in (("impressions", impressions), ("conversions", conversions))
    ]
    checked: list[CheckedFile] = []
    try:
        for source in sources:  # both files are checked (and keyed) before either is loaded
            checked.append(read_and_check(warehouse.spark, source, moment, own[source.kind]))
        reports = {c.kind: KindReport(source_file=c.source.path) for c in checked}
        todo = [c for c in checked if not warehouse.records.loaded(c.kind, c.source.sha256)]
        for held in checked:
            reports[held.kind].already_loaded = held not in todo
        if todo:
            with _writing(warehouse):
                _load_all(warehouse, todo, reports, own)
    finally:
        for held in checked:  # the checkpoints of the checked rows
            held.release()
    return IngestReport(impressions=reports["impressions"], conversions=reports["conversions"])


def _load_all(
    warehouse: SparkTables,
    todo: list[CheckedFile],
    reports: dict[str, KindReport],
    own: dict[str, DimensionLists],
) -> None:
    """Load the checked files not loaded before and commit their loads (see module doc; their
    checkpoints are freed by the caller); ``own``: each kind's catalogue dimensions."""
    last = warehouse.records.last_load()
    load_ids = warehouse.records.reserve_loads(len(todo), last)  # before any event table moves
    show_committed(warehouse, *load_ids)
    try:
        for held, load_id in zip(todo, load_ids, strict=True):
            reports[held.kind] = _load(warehouse, held, load_id, own[held.kind], last)
        loads: list[LoadRecord] = [
            (
                load_id,
                held.kind,
                str(held.source.path),
                held.source.sha256,
                reports[held.kind].rows,
                reports[held.kind].accepted,
                reports[held.kind].quarantined,
                list(own[held.kind]),
            )
            for held, load_id in zip(todo, load_ids, strict=True)
        ]
        if not warehouse.records.commit_loads(loads, last):
            raise IngestError(f"warehouse {shown(warehouse.root)}: {LOST}")
    finally:
        warehouse.sql.release()
        show_committed(warehouse)


def _engine_error(error: BaseException) -> bool:
    """An error raised by Spark (through Py4J)."""
    module = type(error).__module__
    return module.startswith(("pyspark", "py4j"))


@contextmanager
def _writing(warehouse: SparkTables) -> Iterator[None]:
    """A failed write is one line naming the tables' root and the operating system's reason,
    as DuckDB's ingest says it; any other engine failure is one line naming its kind. The
    engines' own texts (which may quote values from the files) are never shown. The load's
    rows are in no view (its loads never committed), so nothing was loaded; a commit Delta
    refused because another ingest wrote the same tables is :data:`LOST`."""
    try:
        yield
    except (IngestError, FileNotFoundError):
        raise
    except Exception as error:
        if not _engine_error(error) and not isinstance(error, OSError):
            raise
        where = shown(warehouse.root)
        if is_conflict(error):
            raise IngestError(f"warehouse {where}: {LOST}") from None
        cause = write_cause(error)
        if cause is not None:
            raise WarehouseWriteError(
                f"warehouse {where}: could not write ({cause}); nothing was loaded"
            ) from None
        raise IngestError(
            f"warehouse {where}: ingest failed ({type(error).__name__}); nothing was loaded"
        ) from None
