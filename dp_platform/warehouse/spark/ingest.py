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
version. A failed or crashed ingest is undone by restoring each event table to the versions
the last committed ingest recorded (``RESTORE TABLE … TO VERSION AS OF``): at once on a
failure, on the next open after a crash — see :func:`recover`. An ingest's first commit is its
first load id in ``ingests``, so an open looks for a cut ingest only when one started without
committing its loads (records.ingest_in_doubt).

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
from dp_platform.warehouse.spark.ingest_checks import (
    CheckedFile,
    inspect_file,
    read_and_check,
)
from dp_platform.warehouse.spark.records import (
    EVENT_TABLES,
    LoadRecord,
    WarehouseRecords,
    last_commit,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dp_platform.warehouse.spark.runner import SparkSqlRunner

__all__ = ["SparkTables", "ingest_files", "recover"]


class SparkTables(Protocol):
    """What an ingest uses of the Spark warehouse (store.SparkWarehouse, which calls this
    module when it opens and ingests: typed here, not imported, so the two are no circle)."""

    spark: SparkSession
    root: str
    records: WarehouseRecords
    sql: SparkSqlRunner


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
) -> KindReport:
    """Spark half of one file: its appends and, for impressions, the touched days replaced in
    one commit (dynamic partition overwrite); returns its report."""
    spark, sql, source = warehouse.spark, warehouse.sql, staged.source
    kind = source.kind
    staged.register()
    spark.sql(f"SELECT user_key, {_ID[kind]} AS id FROM {kind}").createOrReplaceTempView(
        "loaded_ids"
    )
    sql.run("ingest_duplicates")
    sql.run("ingest_keys", load_id=load_id)
    sql.run(f"ingest_insert_{kind}", load_id=load_id, tie_room=TIE_ROOM, max_tie=TIE_ROOM)
    if staged.dimensions:
        _insert_dimensions(warehouse, kind, dimensions, load_id)
    if kind == "impressions":
        sql.write(spark.table("rewritten_impressions"), "impressions", replace_partitions=True)
    reasons = sql.run("ingest_quarantine", load_id=load_id, kind=kind, source_file=source.path)
    report = KindReport(source_file=source.path, rows=staged.rows)
    report.reasons = {reason: int(n) for reason, n in reasons}
    report.quarantined = sum(report.reasons.values())
    report.accepted = report.rows - report.quarantined
    sql.release()
    return report


def _moved(warehouse: SparkTables, table: str, version: int) -> bool:
    """The table has commits after ``version`` other than a last restore to it (a restore is
    a commit too: without this, every open after a cut ingest restored each table again, until
    the next ingest committed)."""
    last = last_commit(warehouse.spark, table)
    if int(last["version"]) <= version:
        return False
    restored_to = (last["operationParameters"] or {}).get("version")
    return not (last["operation"] == "RESTORE" and str(restored_to) == str(version))


def _restore(warehouse: SparkTables, versions: dict[str, int]) -> None:
    """Each event table back at ``versions`` (a commit per table that moved since): what an
    ingest that never committed its loads wrote is gone, and nothing read it."""
    for table in EVENT_TABLES:
        if _moved(warehouse, table, versions[table]):
            warehouse.sql.query(f"RESTORE TABLE {table} TO VERSION AS OF {int(versions[table])}")


def recover(warehouse: SparkTables) -> None:
    """Undo an ingest a crash interrupted (run on every open): the event tables back at the
    versions the last committed ingest recorded. Each table's last commit is read only when an
    ingest is in doubt (ten ``DESCRIBE HISTORY`` otherwise paid by every open)."""
    if warehouse.records.ingest_in_doubt():
        _restore(warehouse, warehouse.records.event_versions())


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
    before = warehouse.records.event_versions()
    first = warehouse.records.next_load_id()
    load_ids = list(range(first, first + len(todo)))
    warehouse.records.begin_ingest(first)  # before any event table moves (see recover)
    try:
        for held, load_id in zip(todo, load_ids, strict=True):
            reports[held.kind] = _load(warehouse, held, load_id, own[held.kind])
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
        warehouse.records.commit_loads(loads)
    except BaseException:
        warehouse.sql.release()
        _restore(warehouse, before)
        raise


def _engine_error(error: BaseException) -> bool:
    """An error raised by Spark (through Py4J)."""
    module = type(error).__module__
    return module.startswith(("pyspark", "py4j"))


@contextmanager
def _writing(warehouse: SparkTables) -> Iterator[None]:
    """A failed write is one line naming the tables' root and the operating system's reason,
    as DuckDB's ingest says it; any other engine failure is one line naming its kind. The
    engines' own texts (which may quote values from the files) are never shown. The load was
    rolled back before this runs, so nothing was loaded."""
    try:
        yield
    except (IngestError, FileNotFoundError):
        raise
    except Exception as error:
        if not _engine_error(error) and not isinstance(error, OSError):
            raise
        where = shown(warehouse.root)
        cause = write_cause(error)
        if cause is not None:
            raise WarehouseWriteError(
                f"warehouse {where}: could not write ({cause}); nothing was loaded"
            ) from None
        raise IngestError(
            f"warehouse {where}: ingest failed ({type(error).__name__}); nothing was loaded"
        ) from None
