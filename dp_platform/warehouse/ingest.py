"""Loading event files into the warehouse: file checks, row checks, quarantine, all or nothing.

A *file-level* problem (missing file, unknown format, unreadable file, missing column) loads
nothing from either file and raises :class:`IngestError` naming the file and the problem.
*Row-level* problems send the row to the ``quarantine`` table with a reason code and its data
row number; every row read is either accepted or quarantined, and the report counts both per
reason. A file whose content (SHA-256) was loaded before is skipped, so re-running an ingest
adds nothing. Messages and reports name files, columns, reasons and counts — never ids or
values, which are personal data.

A failed write (disk full) is :class:`WarehouseWriteError`, one line naming the warehouse and
the operating system's reason; the transaction is rolled back, so nothing was loaded.

File-level checks are in :mod:`.ingest_sources`; the row checks are SQL (``ingest_*.sql``);
this module stages each file and drives the steps inside one transaction. The Spark ingest runs
the same rules as Spark SQL (spark/ingest_checks.py), checked against :func:`stage_file` and
:func:`check_rows` file by file (tests/test_spark_ingest_checks.py).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from dp_platform.config_dimensions import DimensionConfig
from dp_platform.warehouse.ingest_sources import (
    CONVERSION_COLUMNS,
    IMPRESSION_COLUMNS,
    OPTIONAL_COLUMNS,
    REQUIRED,
    IngestError,
    Source,
    inspect,
    reader,
    shown,
)
from dp_platform.warehouse.runner import SqlRunner

__all__ = [
    "CONVERSION_COLUMNS",
    "IMPRESSION_COLUMNS",
    "REASONS",
    "TS_WINDOW",
    "IngestError",
    "IngestReport",
    "KindReport",
    "WarehouseWriteError",
    "check_rows",
    "drop_temporaries",
    "ingest_files",
    "ingest_moment",
    "reading_file",
    "rows_read",
    "stage_file",
    "write_cause",
]

REASONS = (
    "malformed_row",
    "missing_impression_id",
    "missing_conversion_id",
    "missing_user_id",
    "missing_publisher_id",
    "missing_advertiser_id",
    "missing_ts",
    "missing_interaction",
    "unparsable_ts",
    "ts_out_of_range",
    "unknown_interaction",
    "unparsable_value",
    "negative_value",
    "future_ts",
    "missing_<dimension>",
    "unknown_<dimension>_value",
    "duplicate_loaded",
    "duplicate_in_load",
    "too_many_at_instant",
)
"""Every reason a row can be quarantined for (documented in docs/data.md); ``<dimension>`` is
the name of a catalogue dimension (:func:`dimension_reasons`)."""

DimensionLists = Mapping[str, DimensionConfig | Sequence[str]]
"""A catalogue's dimensions of one event file: name → its definition (an unlisted value is
stored as its catch-all, or quarantined when it has none) or a bare public list (exactly
these values: an unlisted one is quarantined)."""


def dimension_reasons(name: str) -> tuple[str, str]:
    """The quarantine reasons of dimension ``name``: missing, and a value not in its list
    (only for a dimension without a catch-all)."""
    return f"missing_{name}", f"unknown_{name}_value"


def stored_values(dimension: DimensionConfig | Sequence[str]) -> list[str]:
    """Every value an accepted event of the dimension is stored with: its list, then its
    catch-all (the values that get a key in ``dimension_values``)."""
    if isinstance(dimension, DimensionConfig):
        return list(dimension.cell_values)
    return list(dimension)


def catch_all(dimension: DimensionConfig | Sequence[str]) -> str | None:
    """The value an unlisted one is stored as; None: it is quarantined."""
    return dimension.catch_all if isinstance(dimension, DimensionConfig) else None


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


TS_WINDOW = (datetime(1970, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC))
"""Accepted event times [from, to): inside it ``epoch_us(ts) * TIE_ROOM`` fits in a BIGINT
(it would overflow before ≈ 1685 and after ≈ 2255); rows outside are ``ts_out_of_range``."""

TIE_ROOM = 1024
"""Impressions of one user and advertiser that may share one microsecond (see schema.sql)."""


@dataclass
class KindReport:
    """What happened to one file."""

    source_file: str
    rows: int = 0
    accepted: int = 0
    quarantined: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    already_loaded: bool = False

    def to_json(self) -> dict:
        return {
            "file": self.source_file,
            "rows": self.rows,
            "accepted": self.accepted,
            "quarantined": self.quarantined,
            "reasons": dict(sorted(self.reasons.items())),
            "already_loaded": self.already_loaded,
        }


@dataclass
class IngestReport:
    """Per file: rows read = accepted + quarantined, with counts per reason."""

    impressions: KindReport
    conversions: KindReport

    def to_json(self) -> dict:
        return {
            "impressions": self.impressions.to_json(),
            "conversions": self.conversions.to_json(),
        }


def _dimension_items(dimensions: DimensionLists) -> list[str]:
    """Each dimension's trimmed text as ``dim_<name>`` — an unlisted value replaced by the
    dimension's catch-all — and ``dimension_reason``: the first dimension that is empty
    (``missing_<name>``) or, without a catch-all, not in its public list."""
    if not dimensions:
        return ["CAST(NULL AS VARCHAR) AS dimension_reason"]
    items, arms = [], []
    for name, dimension in dimensions.items():
        text = f'ingest_text(CAST("{name}" AS VARCHAR))'
        missing, unknown = dimension_reasons(name)
        listed = ", ".join(_sql_text(v) for v in stored_values(dimension))
        bucket = catch_all(dimension)
        arms.append(f"WHEN {text} IS NULL THEN '{missing}'")
        if bucket is None:
            items.append(f'{text} AS "dim_{name}"')
            arms.append(f"WHEN {text} NOT IN ({listed}) THEN '{unknown}'")
        else:
            items.append(
                f"CASE WHEN {text} IS NULL OR {text} IN ({listed}) THEN {text} "
                f'ELSE {_sql_text(bucket)} END AS "dim_{name}"'
            )
    items.append(f"CASE {' '.join(arms)} END AS dimension_reason")
    return items


def _projection(source: Source, dimensions: DimensionLists | None = None) -> str:
    """Select list of the `source` view: text trimmed (empty → NULL, macro in
    ingest_text.sql), other types kept; then the catalogue's dimensions of this file."""
    items = []
    for name in (*REQUIRED[source.kind], *OPTIONAL_COLUMNS[source.kind]):
        quoted = '"' + name.replace('"', '""') + '"'
        if name not in source.columns:
            items.append(f"NULL AS {name}")
        elif source.columns[name] == "VARCHAR":
            items.append(f"ingest_text({quoted}) AS {name}")
        elif name in {"ts", "value"}:
            items.append(f"{quoted} AS {name}")
        else:
            items.append(f"ingest_text(CAST({quoted} AS VARCHAR)) AS {name}")
    items += _dimension_items(dimensions or {})
    return ", ".join(items)


def stage_file(con: duckdb.DuckDBPyConnection, source: Source) -> None:
    """Expose the file as temp view ``staged_<kind>`` (with ``source_row``) and its malformed
    CSV records as temp table ``malformed_<kind>``; nothing persistent is written.

    Parquet is read in place (its row numbers are the file's own). A CSV file is copied into a
    temp table first, outside the load's transaction on purpose: row ids of a committed temp
    table follow the file's order (DuckDB preserves insertion order), those of uncommitted rows
    do not. CSV row numbers are the read order shifted past the malformed records (exact unless
    a quoted field spans lines)."""
    staged, malformed = f"staged_{source.kind}", f"malformed_{source.kind}"
    raw = f"staged_raw_{source.kind}"
    con.execute("DROP TABLE IF EXISTS ingest_reject_errors")
    con.execute("DROP TABLE IF EXISTS ingest_reject_scans")
    if source.fmt == "parquet":
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW {staged} AS "
            f"SELECT *, file_row_number + 1 AS source_row FROM {reader(source)}"
        )
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {malformed} AS "
            "SELECT CAST(NULL AS BIGINT) AS source_row, 'malformed_row' AS reason WHERE false"
        )
        return
    con.execute(f"CREATE OR REPLACE TEMP TABLE {raw} AS SELECT * FROM {reader(source)}")
    _refuse_broken_quoting(con, source)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {malformed} AS "
        "SELECT DISTINCT CAST(line - 1 AS BIGINT) AS source_row, 'malformed_row' AS reason "
        "FROM ingest_reject_errors"
    )
    bad = [r[0] for r in con.execute(f"SELECT source_row FROM {malformed} ORDER BY 1").fetchall()]
    # the j-th malformed record (1-based) has bad[j] - j good records before it
    before = [row - j for j, row in enumerate(bad, start=1)]
    if before:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {raw}_numbered AS "
            "SELECT *, k + len(list_filter($before, lambda b: b < k)) AS source_row "
            f"FROM (SELECT *, rowid + 1 AS k FROM {raw})",
            {"before": before},
        )
        con.execute(f"CREATE OR REPLACE TEMP VIEW {staged} AS SELECT * FROM {raw}_numbered")
    else:
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW {staged} AS SELECT *, rowid + 1 AS source_row FROM {raw}"
        )


def _refuse_broken_quoting(con: duckdb.DuckDBPyConnection, source: Source) -> None:
    """A quoted field that is never closed (or has text after its closing quote) leaves the
    records after it in doubt: the whole file is refused, naming the line it starts on."""
    first = con.execute(
        "SELECT min(line) FROM ingest_reject_errors WHERE error_type = 'UNQUOTED VALUE'"
    ).fetchall()[0][0]
    if first is not None:
        raise IngestError(
            f"{source.kind} file {shown(source.path)}: line {first}: a quoted field is not "
            "closed (or text follows its closing quote); nothing was loaded"
        )


def _already_loaded(runner: SqlRunner, source: Source) -> bool:
    seen = runner.query(
        "SELECT count(*) FROM loads WHERE kind = $kind AND sha256 = $sha",
        kind=source.kind,
        sha=source.sha256,
    )
    return bool(seen[0][0])


def _loaded_before(runner: SqlRunner, source: Source) -> bool:
    """Does the warehouse hold events of this kind from an earlier load?"""
    return bool(
        runner.query("SELECT count(*) FROM loads WHERE kind = $kind", kind=source.kind)[0][0]
    )


def check_rows(
    runner: SqlRunner, source: Source, now: datetime, dimensions: DimensionLists | None = None
) -> None:
    """The row checks of one file staged by :func:`stage_file` (the Spark ingest's twin:
    spark/ingest_check_<kind>.sql): views ``source`` (trimmed text),
    ``malformed`` and ``typed``; tables ``scanned`` (ids of the passing rows) and
    ``rejected`` (failing rows and their reason)."""
    runner.run("ingest_text")
    runner.con.execute(
        f"CREATE OR REPLACE TEMP VIEW source AS "
        f"SELECT source_row, {_projection(source, dimensions)} FROM staged_{source.kind}"
    )
    runner.con.execute(
        f"CREATE OR REPLACE TEMP VIEW malformed AS SELECT * FROM malformed_{source.kind}"
    )
    ts_min, ts_max = TS_WINDOW
    runner.run(f"ingest_check_{source.kind}", now=now, ts_min=ts_min, ts_max=ts_max)


def rows_read(runner: SqlRunner) -> int:
    """Rows of the checked file: records read plus malformed records (after check_rows)."""
    return int(
        runner.query("SELECT count(*) FROM source")[0][0]
        + runner.query("SELECT count(*) FROM malformed")[0][0]
    )


_DIMENSION_ROWS = {
    "conversions": ("conversion_dimensions", "e.conversion_key"),
    "impressions": ("impression_dimensions", "e.load_id, e.source_row"),
}
"""Per event file: the table its dimension values go to, and the event's key columns there."""


def _insert_dimensions(
    runner: SqlRunner, source: Source, load_id: int, dimensions: DimensionLists
) -> None:
    """The load's accepted events' dimension values as small integers: each listed value gets
    a key in ``dimension_values`` once (keys never change), and each event one row per
    dimension in ``conversion_dimensions`` (by conversion_key) or ``impression_dimensions``
    (by load and row: impressions have no other fixed key)."""
    table, key = _DIMENSION_ROWS[source.kind]
    for name, dimension in dimensions.items():
        runner.run("ingest_dimension_values", dimension=name, listed=stored_values(dimension))
        runner.con.execute(
            f"INSERT INTO {table} "
            f"SELECT {key}, $dimension, d.value_key "
            f"FROM {source.kind} AS e "
            "JOIN source AS s ON s.source_row = e.source_row "
            f'JOIN dimension_values AS d ON d.dimension = $dimension AND d.value = s."dim_{name}" '
            "WHERE e.load_id = $load_id",
            {"dimension": name, "load_id": load_id},
        )


def _load_one(runner: SqlRunner, source: Source, now: datetime, own: DimensionLists) -> KindReport:
    """Check, key and insert one staged file (``own``: the dimensions of its kind); the caller
    holds the transaction."""
    report = KindReport(source_file=str(source.path))
    if _already_loaded(runner, source):
        report.already_loaded = True
        return report
    check_rows(runner, source, now, own)
    load_id = runner.query("SELECT nextval('load_ids')")[0][0]
    runner.run("ingest_keys")
    runner.run(f"ingest_insert_{source.kind}", load_id=load_id, tie_room=TIE_ROOM)
    runner.run("ingest_duplicate_candidates", load_id=load_id)
    if _loaded_before(runner, source):
        runner.run("ingest_duplicate_candidates_earlier", load_id=load_id)
    runner.run("ingest_duplicates", load_id=load_id, kind=source.kind)
    if source.kind == "impressions":
        runner.run("ingest_ties", load_id=load_id, tie_room=TIE_ROOM, max_tie=TIE_ROOM)
    _insert_dimensions(runner, source, load_id, own)
    if own:  # the load's record of its dimension columns (dp_platform/dimension_coverage.py)
        runner.query(
            "INSERT INTO load_dimensions SELECT $load_id, unnest($names)",
            load_id=load_id,
            names=list(own),
        )
    reasons = runner.run(
        "ingest_quarantine", load_id=load_id, kind=source.kind, source_file=str(source.path)
    )
    report.reasons = {reason: int(n) for reason, n in reasons}
    report.quarantined = sum(report.reasons.values())
    report.rows = rows_read(runner)
    report.accepted = report.rows - report.quarantined
    runner.query(
        "INSERT INTO loads VALUES ($load_id, $kind, $file, $sha, $rows, $accepted, "
        "$quarantined, $at)",
        load_id=load_id,
        kind=source.kind,
        file=str(source.path),
        sha=source.sha256,
        rows=report.rows,
        accepted=report.accepted,
        quarantined=report.quarantined,
        at=datetime.now(UTC).replace(tzinfo=None),
    )
    return report


def ingest_files(
    runner: SqlRunner,
    impressions: str | Path,
    conversions: str | Path,
    *,
    now: datetime | None = None,
    dimensions: DimensionLists | None = None,
    impression_dimensions: DimensionLists | None = None,
) -> IngestReport:
    """Check both files, then load both in one transaction (all or nothing). ``dimensions``
    and ``impression_dimensions``: the catalogue's dimensions of each file (columns required,
    values checked and stored)."""
    moment = ingest_moment(now)
    own: dict[str, DimensionLists] = {
        "impressions": dict(impression_dimensions or {}),
        "conversions": dict(dimensions or {}),
    }
    # DuckDB's progress bar would print into the command's output (stdout is the report)
    runner.con.execute("SET enable_progress_bar = false")
    sources = [
        inspect(runner.con, kind, path, tuple(own[kind]))
        for kind, path in (("impressions", impressions), ("conversions", conversions))
    ]
    try:
        for source in sources:
            if not _already_loaded(runner, source):
                with reading_file(source):
                    stage_file(runner.con, source)
        reports = []
        with _writing(runner), _bulk_load(runner.con), runner.transaction():
            for source in sources:
                with reading_file(source, "could not be loaded"):
                    reports.append(_load_one(runner, source, moment, own[source.kind]))
    finally:
        drop_temporaries(runner.con)
    return IngestReport(impressions=reports[0], conversions=reports[1])


BULK_SETTINGS = {
    "preserve_insertion_order": "false",
    "disabled_compression_methods": "fsst,dict_fsst",
}
"""DuckDB settings while a load is written, restored after it. Row order: every loaded row
carries its file row number (``source_row``) and keys never depend on the order rows are
written in, so DuckDB may insert in parallel without keeping it. Compression: FSST on event
ids (unique strings) costs about a third of the insert and saves little; integers, times and
repeated strings are compressed as before (dictionary, bit-packing)."""


@contextmanager
def _bulk_load(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The load's writes with :data:`BULK_SETTINGS`; the connection's own values come back."""
    names = list(BULK_SETTINGS)
    before = dict(
        con.execute(
            "SELECT name, value FROM duckdb_settings() WHERE list_contains($names, name)",
            {"names": names},
        ).fetchall()
    )
    for name, value in BULK_SETTINGS.items():
        con.execute(f"SET {name} = '{value}'")
    try:
        yield
    finally:
        for name in names:
            con.execute(f"SET {name} = '{before[name]}'")


def ingest_moment(now: datetime | None) -> datetime:
    """The ingest's 'now' (default: the clock; naive means UTC), inside :data:`TS_WINDOW`."""
    moment = now if now is not None else datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if not TS_WINDOW[0] <= moment < TS_WINDOW[1]:
        raise IngestError(f"'now' must lie in the accepted time window {_window_text()}")
    return moment


def _window_text() -> str:
    return f"{TS_WINDOW[0]:%Y-%m-%d} .. {TS_WINDOW[1]:%Y-%m-%d} UTC"


class WarehouseWriteError(IngestError):
    """The warehouse could not be written (disk full, file size limit, read-only disk)."""


_WRITE_CAUSES = tuple(
    os.strerror(code) for code in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO)
)


def write_cause(error: BaseException) -> str | None:
    """The operating system's reason, when an engine's error (or one it caused) is a failed
    write; the engine's own text is never shown, only the matching reason."""
    seen: BaseException | None = error
    while seen is not None:
        text = str(seen)
        for cause in _WRITE_CAUSES:
            if cause in text:
                return cause
        seen = seen.__context__
    return None


@contextmanager
def _writing(runner: SqlRunner) -> Iterator[None]:
    """A failed write anywhere in the load becomes one line naming the warehouse and why.
    The warehouse's path is read first: after a failed write the connection may be unusable."""
    database = runner.query("SELECT path FROM duckdb_databases() WHERE NOT internal")
    where = shown(database[0][0]) if database and database[0][0] else "(in memory)"
    try:
        yield
    except duckdb.Error as error:
        cause = write_cause(error)
        if cause is None:
            raise
        raise WarehouseWriteError(
            f"warehouse {where}: could not write ({cause}); nothing was loaded"
        ) from None


@contextmanager
def reading_file(source: Source, failure: str = "could not be read completely") -> Iterator[None]:
    """A file DuckDB cannot read to the end (truncated, corrupt) or load is named, never
    quoted: DuckDB's message may hold a value from the file, only its kind is shown."""
    try:
        yield
    except duckdb.Error as error:
        if write_cause(error) is not None:
            raise
        raise IngestError(
            f"{source.kind} file {shown(source.path)}: {failure} ({type(error).__name__}); "
            "nothing was loaded"
        ) from None


def drop_temporaries(con: duckdb.DuckDBPyConnection) -> None:
    """Free the staged copies (they can be large) whatever happened."""
    views = ["source", "malformed", "typed", "events", "staged_impressions", "staged_conversions"]
    for view in views:
        con.execute(f"DROP VIEW IF EXISTS {view}")
    tables = [
        f"{prefix}_{kind}{suffix}"
        for kind in ("impressions", "conversions")
        for prefix, suffix in (("staged_raw", ""), ("staged_raw", "_numbered"), ("malformed", ""))
    ]
    tables += ["rejected", "scanned", "duplicate_candidates", "duplicates", "overflow"]
    tables += ["tie_candidates", "tie_groups", "tie_ranks"]
    tables += ["ingest_reject_errors", "ingest_reject_scans"]
    for table in tables:
        con.execute(f"DROP TABLE IF EXISTS {table}")
    con.execute("DROP MACRO IF EXISTS ingest_text")
