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

All or nothing without transactions: rows are tagged with their load id, the impression days
the file touches are rewritten from a staged copy, and the catalog (catalog.py) records the
ingest ``started`` → ``staged`` (counts and directory moves) → ``committed``. A crash before
``staged`` is rolled back on the next open (the load's partitions dropped), one after it rolled
forward (the moves redone) — see :func:`recover`.

Messages and reports name files, columns, reasons and counts — never ids or values.
"""

from __future__ import annotations

import uuid
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

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dp_platform.warehouse.spark.catalog import Catalog
    from dp_platform.warehouse.spark.files import TableFiles
    from dp_platform.warehouse.spark.runner import SparkSqlRunner

__all__ = ["APPEND_TABLES", "SparkTables", "ingest_files", "recover"]


class SparkTables(Protocol):
    """What an ingest uses of the Spark warehouse (store.SparkWarehouse, which calls this
    module when it opens and ingests: typed here, not imported, so the two are no circle)."""

    spark: SparkSession
    root: str
    catalog: Catalog
    files: TableFiles
    sql: SparkSqlRunner

    def refresh(self) -> None:
        """Forget cached file listings after files changed outside Spark's writers."""


APPEND_TABLES = (
    "users",
    "publishers",
    "advertisers",
    "advertiser_publishers",
    "quarantine",
    "dimension_values",
)
"""Tables partitioned by load_id (conversions and the dimension rows too, under their day
partitions: :data:`DAY_LOAD_TABLES`)."""

DAY_LOAD_TABLES = ("conversions", "conversion_dimensions", "impression_dimensions")

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
    staging: str,
    dimensions: DimensionLists,
) -> tuple[KindReport, list[tuple[str, str]]]:
    """Spark half of one file; returns its report and the impression-day moves still to do."""
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
    moves: list[tuple[str, str]] = []
    if kind == "impressions":
        days = [row[0] for row in sql.query("SELECT DISTINCT day FROM new_impressions")]
        target = f"{staging}/rewritten_impressions"
        spark.table("rewritten_impressions").write.partitionBy("day").parquet(target)
        moves = [
            (f"{target}/day={day.isoformat()}", f"{warehouse.root}/impressions/day={day}")
            for day in sorted(days)
        ]
    reasons = sql.run("ingest_quarantine", load_id=load_id, kind=kind, source_file=source.path)
    report = KindReport(source_file=source.path, rows=staged.rows)
    report.reasons = {reason: int(n) for reason, n in reasons}
    report.quarantined = sum(report.reasons.values())
    report.accepted = report.rows - report.quarantined
    sql.release()
    return report, moves


def _apply_moves(warehouse: SparkTables, moves: list[tuple[str, str]]) -> None:
    """Swap each rewritten impression day in (idempotent: a redo after a crash is safe)."""
    for staged, target in moves:
        if warehouse.files.exists(staged):
            warehouse.files.delete(target)
            warehouse.files.move(staged, target)


def _roll_back(warehouse: SparkTables, load_ids: list[int], staging: str | None) -> None:
    """Drop every partition a load wrote (it never committed, so nothing read them)."""
    for load_id in load_ids:
        for table in APPEND_TABLES:
            warehouse.files.delete(f"{warehouse.root}/{table}/load_id={load_id}")
        for table in DAY_LOAD_TABLES:
            for path in warehouse.files.glob(f"{warehouse.root}/{table}/day=*/load_id={load_id}"):
                warehouse.files.delete(path)
    if staging:
        warehouse.files.delete(staging)
    warehouse.refresh()


def recover(warehouse: SparkTables) -> None:
    """Finish or undo an ingest a crash interrupted (run on every open)."""
    for pending in warehouse.catalog.pending_ingests():
        if pending.status == "staged":
            _apply_moves(warehouse, pending.moves)
            if pending.staging:
                warehouse.files.delete(pending.staging)
            warehouse.catalog.finish_ingest(pending.ingest_id, "committed")
        else:
            _roll_back(warehouse, pending.load_ids, pending.staging)
            warehouse.catalog.finish_ingest(pending.ingest_id, "aborted")
        warehouse.refresh()


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
    staging = f"{warehouse.root}/_staging/{uuid.uuid4().hex}"
    sources = [
        inspect_file(warehouse.spark, kind, path, tuple(own[kind]))
        for kind, path in (("impressions", impressions), ("conversions", conversions))
    ]
    checked: list[CheckedFile] = []
    try:
        for source in sources:  # both files are checked (and keyed) before either is loaded
            checked.append(read_and_check(warehouse.spark, source, moment, own[source.kind]))
        reports = {c.kind: KindReport(source_file=c.source.path) for c in checked}
        todo = [c for c in checked if not warehouse.catalog.loaded(c.kind, c.source.sha256)]
        for held in checked:
            reports[held.kind].already_loaded = held not in todo
        if todo:
            with _writing(warehouse):
                _load_all(warehouse, todo, staging, reports, own)
    finally:
        # the checkpoints only: a crash after the catalog's "staged" record leaves the
        # rewritten days in the staging directory for recover() to move in
        for held in checked:
            held.release()
    return IngestReport(impressions=reports["impressions"], conversions=reports["conversions"])


def _load_all(
    warehouse: SparkTables,
    todo: list[CheckedFile],
    staging: str,
    reports: dict[str, KindReport],
    own: dict[str, DimensionLists],
) -> None:
    """Record, load, stage and commit the checked files not loaded before (see module doc;
    their checkpoints are freed by the caller); ``own``: each kind's catalogue dimensions."""
    load_ids = warehouse.catalog.begin_ingest(
        [(c.kind, str(c.source.path), c.source.sha256) for c in todo], staging
    )
    ingest = warehouse.catalog.ingest_of(load_ids[0])
    for held, load_id in zip(todo, load_ids, strict=True):
        warehouse.catalog.record_dimensions(load_id, list(own[held.kind]))
    moves: list[tuple[str, str]] = []
    try:
        for held, load_id in zip(todo, load_ids, strict=True):
            report, more = _load(warehouse, held, load_id, staging, own[held.kind])
            reports[held.kind] = report
            moves += more
        counts = [
            (reports[c.kind].rows, reports[c.kind].accepted, reports[c.kind].quarantined)
            for c in todo
        ]
        warehouse.catalog.stage_ingest(load_ids, counts, moves)
    except BaseException:
        warehouse.sql.release()
        _roll_back(warehouse, load_ids, staging)
        warehouse.catalog.finish_ingest(ingest, "aborted")
        raise
    _apply_moves(warehouse, moves)
    warehouse.files.delete(staging)
    warehouse.catalog.finish_ingest(ingest, "committed")
    warehouse.refresh()


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
