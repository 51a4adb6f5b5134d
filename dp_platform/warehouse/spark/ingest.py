"""Loading event files into the Spark warehouse: the same checks, keys, tie order and quarantine
as the DuckDB ingest (../ingest.py), all or nothing.

Two halves, split where the work stops being a function of the file alone:

1. *File and row checks* read only the file: the DuckDB ingest's own reader and
   ``ingest_check_<kind>.sql`` run on the driver in an embedded, empty DuckDB and write the
   checked rows (with their reason, row number and UTC microseconds) to a staged Parquet file.
   One reader and one set of rules for both engines, so a file's rows are read, numbered and
   judged identically (malformed CSV records, unparsable times, future times…).
2. *Everything that needs the warehouse* runs as Spark SQL (``ingest_*.sql`` here): duplicates
   against loaded ids, surrogate keys, the tie order of impressions, inserts, quarantine.

All or nothing across tables: each write is a Delta commit of one table (rows tagged with
their load id appended; the impression days the file touches replaced in one commit), and the
ingest is data once its rows in ``loads`` commit, last (records.py), with every event table's
version. A failed or crashed ingest is undone by restoring each event table to the versions
the last committed ingest recorded (``RESTORE TABLE … TO VERSION AS OF``): at once on a
failure, on the next open after a crash — see :func:`recover`.

Messages and reports name files, columns, reasons and counts — never ids or values.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlparse

import duckdb
import pandas as pd

from dp_platform.errors import ConfigError
from dp_platform.warehouse.ingest import (
    TIE_ROOM,
    DimensionLists,
    IngestError,
    IngestReport,
    KindReport,
    WarehouseWriteError,
    check_rows,
    drop_temporaries,
    ingest_moment,
    reading_file,
    rows_read,
    stage_file,
    stored_values,
    write_cause,
)
from dp_platform.warehouse.ingest_sources import Source, inspect, shown
from dp_platform.warehouse.runner import SqlRunner
from dp_platform.warehouse.spark.records import (
    EVENT_TABLES,
    LoadRecord,
    WarehouseRecords,
    table_version,
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


@dataclass(frozen=True)
class _Staged:
    checked: str
    malformed: str
    rows: int
    dimensions: str | None = None
    """A file with dimensions: the passing rows' (source_row, dimension, value)."""


def _local_directory(uri: str) -> Path:
    """The staging directory as a local path (the driver's DuckDB writes it)."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        raise ConfigError(
            f"warehouse.spark.path {uri}: ingest stages checked files from the driver, so the "
            "tables' root must be a local or mounted path"
        )
    return Path(parsed.path)


def _check_file(
    runner: SqlRunner,
    source: Source,
    now: datetime,
    directory: Path,
    dimensions: DimensionLists,
) -> _Staged:
    """Row checks of one file in the embedded DuckDB (the DuckDB ingest's own functions, the
    catalogue's dimension lists included); staged as Parquet: every row with its reason (NULL:
    passed), ids and values only for the rows that passed, the malformed records, and the
    passing rows' dimension values (long: one row per dimension)."""
    con, kind = runner.con, source.kind
    with reading_file(source):
        stage_file(con, source)
    with reading_file(source, "could not be loaded"):
        check_rows(runner, source, now, dimensions)
    interaction = "t.interaction" if kind == "impressions" else "CAST(NULL AS VARCHAR)"
    value = "t.value" if kind == "conversions" else "CAST(NULL AS DOUBLE)"
    passed = "r.reason IS NULL"
    directory.mkdir(parents=True, exist_ok=True)
    checked, malformed = directory / "checked.parquet", directory / "malformed.parquet"
    con.execute(
        "COPY (SELECT t.source_row, "
        + ", ".join(
            f"CASE WHEN {passed} THEN {column} END AS {name}"
            for column, name in (
                ("t.id", "id"),
                ("t.user_id", "user_id"),
                ("t.publisher_id", "publisher_id"),
                ("t.advertiser_id", "advertiser_id"),
                ("epoch_us(t.ts)", "ts_us"),
                (interaction, "interaction"),
                (value, "value"),
            )
        )
        + ", r.reason FROM typed AS t LEFT JOIN rejected AS r ON r.source_row = t.source_row) "
        f"TO '{_quoted(checked)}' (FORMAT parquet)"
    )
    con.execute(
        "COPY (SELECT CAST(source_row AS BIGINT) AS source_row, reason FROM malformed) "
        f"TO '{_quoted(malformed)}' (FORMAT parquet)"
    )
    staged_dimensions = None
    if dimensions:
        staged_dimensions = directory / "dimensions.parquet"
        long = " UNION ALL ".join(
            f"SELECT s.source_row, '{name}' AS dimension, s.\"dim_{name}\" AS value "
            "FROM source AS s ANTI JOIN rejected AS r ON r.source_row = s.source_row"
            for name in dimensions  # names are identifiers (config.check_dimension_name)
        )
        con.execute(f"COPY ({long}) TO '{_quoted(staged_dimensions)}' (FORMAT parquet)")
    rows = rows_read(runner)
    drop_temporaries(con)
    return _Staged(
        str(checked),
        str(malformed),
        rows,
        None if staged_dimensions is None else str(staged_dimensions),
    )


def _quoted(path: Path) -> str:
    """A path inside a SQL string literal."""
    return str(path).replace("'", "''")


_DIMENSION_INSERTS = {
    "conversions": "ingest_insert_dimensions",
    "impressions": "ingest_insert_impression_dimensions",
}
"""Per event file: the SQL that stores its accepted events' dimension rows."""


def _insert_dimensions(
    warehouse: SparkTables, kind: str, staged: str, dimensions: DimensionLists, load_id: int
) -> None:
    """The load's accepted events' dimension values as small integers (DuckDB's
    ``_insert_dimensions``): each listed value gets a key in ``dimension_values`` once (keys
    never change), each event one row per dimension in ``conversion_dimensions`` (by
    conversion_key) or ``impression_dimensions`` (by load and row: impressions have no other
    fixed key). The lists (public) arrive as the view ``listed_dimension_values``."""
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
    warehouse.spark.read.parquet(staged).createOrReplaceTempView("checked_dimensions")
    warehouse.sql.run("ingest_dimension_values", load_id=load_id)
    warehouse.sql.run(_DIMENSION_INSERTS[kind], load_id=load_id)
    for view in ("listed_dimension_values", "checked_dimensions"):  # the staged file goes
        warehouse.spark.catalog.dropTempView(view)


def _load(
    warehouse: SparkTables,
    source: Source,
    staged: _Staged,
    load_id: int,
    dimensions: DimensionLists,
) -> KindReport:
    """Spark half of one file: its appends and, for impressions, the touched days replaced in
    one commit (dynamic partition overwrite); returns its report."""
    spark, sql, kind = warehouse.spark, warehouse.sql, source.kind
    spark.read.parquet(staged.checked).createOrReplaceTempView("checked_raw")
    spark.read.parquet(staged.malformed).createOrReplaceTempView("malformed")
    spark.sql(f"SELECT user_key, {_ID[kind]} AS id FROM {kind}").createOrReplaceTempView(
        "loaded_ids"
    )
    sql.run("ingest_duplicates")
    sql.run("ingest_keys", load_id=load_id)
    sql.run(f"ingest_insert_{kind}", load_id=load_id, tie_room=TIE_ROOM, max_tie=TIE_ROOM)
    if staged.dimensions is not None:
        _insert_dimensions(warehouse, kind, staged.dimensions, dimensions, load_id)
    if kind == "impressions":
        sql.write(spark.table("rewritten_impressions"), "impressions", replace_partitions=True)
    reasons = sql.run("ingest_quarantine", load_id=load_id, kind=kind, source_file=str(source.path))
    report = KindReport(source_file=str(source.path), rows=staged.rows)
    report.reasons = {reason: int(n) for reason, n in reasons}
    report.quarantined = sum(report.reasons.values())
    report.accepted = report.rows - report.quarantined
    sql.release()
    return report


def _restore(warehouse: SparkTables, versions: dict[str, int]) -> None:
    """Each event table back at ``versions`` (a commit per table that moved since): what an
    ingest that never committed its loads wrote is gone, and nothing read it."""
    for table in EVENT_TABLES:
        if table_version(warehouse.spark, table) > versions[table]:
            warehouse.sql.query(f"RESTORE TABLE {table} TO VERSION AS OF {int(versions[table])}")


def recover(warehouse: SparkTables) -> None:
    """Undo an ingest a crash interrupted (run on every open): the event tables back at the
    versions the last committed ingest recorded."""
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
    staging = f"{warehouse.root}/_staging/{uuid.uuid4().hex}"
    checks = _local_directory(staging) / "checks"  # the driver's checked files
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET enable_progress_bar = false")
        con.execute(f"SET temp_directory = '{_quoted(checks / 'duckdb_tmp')}'")
        runner = SqlRunner(con)
        runner.run("schema")  # empty tables: the checks' views refer to them
        sources = [
            inspect(con, kind, path, tuple(own[kind]))
            for kind, path in (("impressions", impressions), ("conversions", conversions))
        ]
        reports = {s.kind: KindReport(source_file=str(s.path)) for s in sources}
        todo = [s for s in sources if not warehouse.records.loaded(s.kind, s.sha256)]
        for source in sources:
            reports[source.kind].already_loaded = source not in todo
        if todo:
            with _writing(warehouse):
                _load_all(warehouse, runner, todo, moment, staging, reports, own)
    finally:
        con.close()
        shutil.rmtree(checks, ignore_errors=True)
        with suppress(OSError):
            checks.parent.rmdir()  # nothing else was staged (refused or already loaded)
    return IngestReport(impressions=reports["impressions"], conversions=reports["conversions"])


def _load_all(
    warehouse: SparkTables,
    runner: SqlRunner,
    todo: list[Source],
    moment: datetime,
    staging: str,
    reports: dict[str, KindReport],
    own: dict[str, DimensionLists],
) -> None:
    """Check every file, then load them and commit their loads (see module doc); ``own``:
    each kind's catalogue dimensions."""
    checks = _local_directory(staging) / "checks"
    staged = [
        _check_file(runner, s, moment, checks / f"checked_{s.kind}", own[s.kind]) for s in todo
    ]
    before = warehouse.records.event_versions()
    first = warehouse.records.next_load_id()
    load_ids = list(range(first, first + len(todo)))
    try:
        for source, files, load_id in zip(todo, staged, load_ids, strict=True):
            reports[source.kind] = _load(warehouse, source, files, load_id, own[source.kind])
        loads: list[LoadRecord] = [
            (
                load_id,
                source.kind,
                str(source.path),
                source.sha256,
                reports[source.kind].rows,
                reports[source.kind].accepted,
                reports[source.kind].quarantined,
                list(own[source.kind]),
            )
            for source, load_id in zip(todo, load_ids, strict=True)
        ]
        warehouse.records.commit_loads(loads)
    except BaseException:
        warehouse.sql.release()
        _restore(warehouse, before)
        raise


def _engine_error(error: BaseException) -> bool:
    """An error raised by Spark (through Py4J) or by the embedded DuckDB."""
    module = type(error).__module__
    return isinstance(error, duckdb.Error) or module.startswith(("pyspark", "py4j"))


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
