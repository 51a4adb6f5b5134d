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

All or nothing without transactions: rows are tagged with their load id, the impression days
the file touches are rewritten from a staged copy, and the catalog (catalog.py) records the
ingest ``started`` → ``staged`` (counts and directory moves) → ``committed``. A crash before
``staged`` is rolled back on the next open (the load's partitions dropped), one after it rolled
forward (the moves redone) — see :func:`recover`.

Messages and reports name files, columns, reasons and counts — never ids or values.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import duckdb

from dp_platform.config import ConfigError
from dp_platform.warehouse.ingest import (
    TIE_ROOM,
    IngestError,
    IngestReport,
    KindReport,
    _drop_temporaries,
    _inspect,
    _projection,
    _Source,
    _stage,
)
from dp_platform.warehouse.runner import SqlRunner

if TYPE_CHECKING:
    from dp_platform.warehouse.spark.store import SparkWarehouse

__all__ = ["APPEND_TABLES", "ingest_files", "recover"]

APPEND_TABLES = ("users", "publishers", "advertisers", "advertiser_publishers", "quarantine")
"""Tables partitioned by load_id (conversions too, under its day partitions)."""

_ID = {"impressions": "impression_id", "conversions": "conversion_id"}


@dataclass(frozen=True)
class _Staged:
    checked: str
    malformed: str
    rows: int


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
    con: duckdb.DuckDBPyConnection, source: _Source, now: datetime, directory: Path
) -> _Staged:
    """Row checks of one file in the embedded DuckDB; staged as Parquet (see module doc)."""
    try:
        _stage(con, source)
    except duckdb.Error as error:
        raise IngestError(
            f"{source.kind} file {source.path}: could not be read completely "
            f"({type(error).__name__})"
        ) from None
    kind = source.kind
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW source AS "
        f"SELECT source_row, {_projection(source)} FROM staged_{kind}"
    )
    con.execute(f"CREATE OR REPLACE TEMP VIEW malformed AS SELECT * FROM malformed_{kind}")
    SqlRunner(con).run(f"ingest_check_{kind}", now=now)
    interaction = "interaction" if kind == "impressions" else "CAST(NULL AS VARCHAR)"
    value = "value" if kind == "conversions" else "CAST(NULL AS DOUBLE)"
    directory.mkdir(parents=True, exist_ok=True)
    checked, malformed = directory / "checked.parquet", directory / "malformed.parquet"
    con.execute(
        "COPY (SELECT source_row, id, user_id, publisher_id, advertiser_id, "
        f"epoch_us(ts) AS ts_us, {interaction} AS interaction, {value} AS value, reason "
        f"FROM checked) TO '{checked}' (FORMAT parquet)"
    )
    con.execute(
        "COPY (SELECT CAST(source_row AS BIGINT) AS source_row, reason FROM malformed) "
        f"TO '{malformed}' (FORMAT parquet)"
    )
    rows = con.execute("SELECT (SELECT count(*) FROM source) + (SELECT count(*) FROM malformed)")
    count = int(rows.fetchone()[0])
    _drop_temporaries(con)
    return _Staged(str(checked), str(malformed), count)


def _load(
    warehouse: SparkWarehouse, source: _Source, staged: _Staged, load_id: int, staging: str
) -> tuple[KindReport, list[tuple[str, str]]]:
    """Spark half of one file; returns its report and the impression-day moves still to do."""
    spark, sql, kind = warehouse.spark, warehouse.sql, source.kind
    spark.read.parquet(staged.checked).createOrReplaceTempView("checked_raw")
    spark.read.parquet(staged.malformed).createOrReplaceTempView("malformed")
    spark.sql(f"SELECT {_ID[kind]} AS id FROM {kind}").createOrReplaceTempView("loaded_ids")
    sql.run("ingest_duplicates")
    sql.run("ingest_keys", load_id=load_id)
    sql.run(f"ingest_insert_{kind}", load_id=load_id, tie_room=TIE_ROOM, max_tie=TIE_ROOM)
    moves: list[tuple[str, str]] = []
    if kind == "impressions":
        days = [row[0] for row in sql.query("SELECT DISTINCT day FROM new_impressions")]
        target = f"{staging}/rewritten_impressions"
        spark.table("rewritten_impressions").write.partitionBy("day").parquet(target)
        moves = [
            (f"{target}/day={day.isoformat()}", f"{warehouse.root}/impressions/day={day}")
            for day in sorted(days)
        ]
    reasons = sql.run("ingest_quarantine", load_id=load_id, kind=kind, source_file=str(source.path))
    report = KindReport(source_file=str(source.path), rows=staged.rows)
    report.reasons = {reason: int(n) for reason, n in reasons}
    report.quarantined = sum(report.reasons.values())
    report.accepted = report.rows - report.quarantined
    sql.release()
    return report, moves


def _apply_moves(warehouse: SparkWarehouse, moves: list[tuple[str, str]]) -> None:
    """Swap each rewritten impression day in (idempotent: a redo after a crash is safe)."""
    for staged, target in moves:
        if warehouse.files.exists(staged):
            warehouse.files.delete(target)
            warehouse.files.move(staged, target)


def _roll_back(warehouse: SparkWarehouse, load_ids: list[int], staging: str | None) -> None:
    """Drop every partition a load wrote (it never committed, so nothing read them)."""
    for load_id in load_ids:
        for table in APPEND_TABLES:
            warehouse.files.delete(f"{warehouse.root}/{table}/load_id={load_id}")
        for path in warehouse.files.glob(f"{warehouse.root}/conversions/day=*/load_id={load_id}"):
            warehouse.files.delete(path)
    if staging:
        warehouse.files.delete(staging)
    warehouse.refresh()


def recover(warehouse: SparkWarehouse) -> None:
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
    warehouse: SparkWarehouse,
    impressions: str | Path,
    conversions: str | Path,
    *,
    now: datetime | None = None,
) -> IngestReport:
    """Check both files, then load both (all or nothing); the DuckDB ingest's report."""
    moment = now if now is not None else datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    staging = f"{warehouse.root}/_staging/{uuid.uuid4().hex}"
    local = _local_directory(staging)
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'")
        SqlRunner(con).run("schema")  # empty tables: the checks' views refer to them
        sources = [
            _inspect(con, "impressions", impressions),
            _inspect(con, "conversions", conversions),
        ]
        reports = {s.kind: KindReport(source_file=str(s.path)) for s in sources}
        todo = [s for s in sources if not warehouse.catalog.loaded(s.kind, s.sha256)]
        for source in sources:
            reports[source.kind].already_loaded = source not in todo
        if todo:
            try:
                staged = [_check_file(con, s, moment, local / f"checked_{s.kind}") for s in todo]
            except BaseException:
                shutil.rmtree(local, ignore_errors=True)  # nothing was recorded yet
                raise
            load_ids = warehouse.catalog.begin_ingest(
                [(s.kind, str(s.path), s.sha256) for s in todo], staging
            )
            ingest = warehouse.catalog.ingest_of(load_ids[0])
            moves: list[tuple[str, str]] = []
            try:
                for source, files, load_id in zip(todo, staged, load_ids, strict=True):
                    report, more = _load(warehouse, source, files, load_id, staging)
                    reports[source.kind] = report
                    moves += more
                counts = [
                    (reports[s.kind].rows, reports[s.kind].accepted, reports[s.kind].quarantined)
                    for s in todo
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
    finally:
        con.close()
    return IngestReport(impressions=reports["impressions"], conversions=reports["conversions"])
