"""Loading event files into the warehouse: file checks, row checks, quarantine, all or nothing.

A *file-level* problem (missing file, unknown format, unreadable file, missing column) loads
nothing from either file and raises :class:`IngestError` naming the file and the problem.
*Row-level* problems send the row to the ``quarantine`` table with a reason code and its data
row number; every row read is either accepted or quarantined, and the report counts both per
reason. A file whose content (SHA-256) was loaded before is skipped, so re-running an ingest
adds nothing. Messages and reports name files, columns, reasons and counts — never ids or
values, which are personal data.

The checks themselves are SQL (``ingest_*.sql``); this module only decides how to read each
file and drives the steps inside one transaction.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import duckdb

from dp_platform.config import ConfigError
from dp_platform.events.files import CONVERSION_COLUMNS as _WRITTEN_CONVERSIONS
from dp_platform.events.files import IMPRESSION_COLUMNS
from dp_platform.warehouse.runner import SqlRunner

__all__ = [
    "CONVERSION_COLUMNS",
    "IMPRESSION_COLUMNS",
    "REASONS",
    "IngestError",
    "IngestReport",
    "KindReport",
    "ingest_files",
]

Kind = Literal["impressions", "conversions"]

# The event-file format is the one dp_platform.events writes; ``value`` may be left out.
OPTIONAL_COLUMNS: dict[Kind, tuple[str, ...]] = {"impressions": (), "conversions": ("value",)}
CONVERSION_COLUMNS = tuple(
    c for c in _WRITTEN_CONVERSIONS if c not in OPTIONAL_COLUMNS["conversions"]
)
REQUIRED: dict[Kind, tuple[str, ...]] = {
    "impressions": IMPRESSION_COLUMNS,
    "conversions": CONVERSION_COLUMNS,
}
_ID_COLUMN: dict[Kind, str] = {"impressions": "impression_id", "conversions": "conversion_id"}

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
    "unknown_interaction",
    "unparsable_value",
    "negative_value",
    "future_ts",
    "duplicate_loaded",
    "duplicate_in_load",
    "too_many_at_instant",
)
"""Every reason a row can be quarantined for (documented in docs/data.md)."""

TIE_ROOM = 1024
"""Impressions of one user and advertiser that may share one microsecond (see schema.sql)."""


class IngestError(ConfigError):
    """A file cannot be loaded at all; the message names the file and what is wrong."""


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


@dataclass(frozen=True)
class _Source:
    kind: Kind
    path: Path
    fmt: Literal["csv", "parquet"]
    columns: dict[str, str]  # column name -> DuckDB type
    sha256: str


def _format(kind: Kind, path: Path) -> Literal["csv", "parquet"]:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in {".parquet", ".pq"}:
        return "parquet"
    if suffixes[-1:] == [".csv"] or suffixes[-2:] == [".csv", ".gz"]:
        return "csv"
    raise IngestError(f"{kind} file {path}: unknown format (expected .csv, .csv.gz or .parquet)")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _csv_header(kind: Kind, path: Path) -> None:
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rt", newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle), None)
    except (OSError, UnicodeDecodeError, csv.Error):
        raise IngestError(f"{kind} file {path}: unreadable as CSV (UTF-8 text expected)") from None
    if not header:
        raise IngestError(f"{kind} file {path}: empty file, no header row")


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _reader(source: _Source) -> str:
    path = _sql_text(str(source.path))
    if source.fmt == "parquet":
        return f"read_parquet({path}, file_row_number = true)"
    return (
        f"read_csv({path}, header = true, all_varchar = true, delim = ',', quote = '\"', "
        "escape = '\"', store_rejects = true, rejects_table = 'ingest_reject_errors', "
        "rejects_scan = 'ingest_reject_scans')"
    )


def _inspect(con: duckdb.DuckDBPyConnection, kind: Kind, path: str | Path) -> _Source:
    """File-level checks; nothing is written. Raises IngestError / FileNotFoundError."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{kind} file {path}: not found")
    fmt = _format(kind, path)
    if fmt == "csv":
        _csv_header(kind, path)  # a clear message for empty or non-text files
    probe = _Source(kind, path, fmt, {}, "")
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {_reader(probe)}").fetchall()
    except duckdb.Error as error:
        what = "Parquet file" if fmt == "parquet" else "CSV file with a header row"
        raise IngestError(
            f"{kind} file {path}: not a readable {what} ({type(error).__name__})"
        ) from None
    columns = {row[0]: row[1] for row in described if row[0] != "file_row_number"}
    missing = [c for c in REQUIRED[kind] if c not in columns]
    if missing:
        raise IngestError(
            f"{kind} file {path}: missing column(s) {', '.join(missing)} "
            f"(required: {', '.join(REQUIRED[kind])})"
        )
    return _Source(kind, path, fmt, columns, _sha256(path))


def _projection(source: _Source) -> str:
    """Select list of the `source` view: text trimmed (empty → NULL), other types kept."""
    items = []
    for name in (*REQUIRED[source.kind], *OPTIONAL_COLUMNS[source.kind]):
        quoted = '"' + name.replace('"', '""') + '"'
        if name not in source.columns:
            items.append(f"NULL AS {name}")
        elif source.columns[name] == "VARCHAR":
            items.append(f"nullif(trim({quoted}), '') AS {name}")
        elif name in {"ts", "value"}:
            items.append(f"{quoted} AS {name}")
        else:
            items.append(f"nullif(trim(CAST({quoted} AS VARCHAR)), '') AS {name}")
    return ", ".join(items)


def _stage(con: duckdb.DuckDBPyConnection, source: _Source) -> None:
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
            f"SELECT *, file_row_number + 1 AS source_row FROM {_reader(source)}"
        )
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {malformed} AS "
            "SELECT CAST(NULL AS BIGINT) AS source_row, 'malformed_row' AS reason WHERE false"
        )
        return
    con.execute(f"CREATE OR REPLACE TEMP TABLE {raw} AS SELECT * FROM {_reader(source)}")
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


def _already_loaded(runner: SqlRunner, source: _Source) -> bool:
    seen = runner.query(
        "SELECT count(*) FROM loads WHERE kind = $kind AND sha256 = $sha",
        kind=source.kind,
        sha=source.sha256,
    )
    return bool(seen[0][0])


def _load_one(runner: SqlRunner, source: _Source, now: datetime) -> KindReport:
    """Check, key and insert one staged file; the caller holds the transaction."""
    con = runner.con
    report = KindReport(source_file=str(source.path))
    if _already_loaded(runner, source):
        report.already_loaded = True
        return report
    columns = _projection(source)
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW source AS "
        f"SELECT source_row, {columns} FROM staged_{source.kind}"
    )
    con.execute(f"CREATE OR REPLACE TEMP VIEW malformed AS SELECT * FROM malformed_{source.kind}")
    load_id = runner.query("SELECT nextval('load_ids')")[0][0]
    runner.run(f"ingest_check_{source.kind}", now=now)
    runner.run("ingest_duplicates")
    runner.run("ingest_keys")
    runner.run(f"ingest_insert_{source.kind}", load_id=load_id, tie_room=TIE_ROOM, max_tie=TIE_ROOM)
    reasons = runner.run(
        "ingest_quarantine", load_id=load_id, kind=source.kind, source_file=str(source.path)
    )
    report.reasons = {reason: int(n) for reason, n in reasons}
    report.quarantined = sum(report.reasons.values())
    report.rows = (
        runner.query("SELECT count(*) FROM source")[0][0]
        + runner.query("SELECT count(*) FROM malformed")[0][0]
    )
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
) -> IngestReport:
    """Check both files, then load both in one transaction (all or nothing)."""
    moment = now if now is not None else datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    sources: Sequence[_Source] = [
        _inspect(runner.con, "impressions", impressions),
        _inspect(runner.con, "conversions", conversions),
    ]
    try:
        for source in sources:
            if not _already_loaded(runner, source):
                try:
                    _stage(runner.con, source)
                except duckdb.Error as error:
                    raise IngestError(
                        f"{source.kind} file {source.path}: could not be read completely "
                        f"({type(error).__name__})"
                    ) from None
        with runner.transaction():
            reports = [_load_one(runner, source, moment) for source in sources]
    finally:
        _drop_temporaries(runner.con)
    return IngestReport(impressions=reports[0], conversions=reports[1])


def _drop_temporaries(con: duckdb.DuckDBPyConnection) -> None:
    """Free the staged copies (they can be large) whatever happened."""
    views = ["source", "malformed", "loaded_ids", "staged_impressions", "staged_conversions"]
    for view in views:
        con.execute(f"DROP VIEW IF EXISTS {view}")
    tables = [
        f"{prefix}_{kind}{suffix}"
        for kind in ("impressions", "conversions")
        for prefix, suffix in (("staged_raw", ""), ("staged_raw", "_numbered"), ("malformed", ""))
    ]
    tables += ["checked", "duplicates", "tie_groups", "tie_ranks", "overflow"]
    tables += ["ingest_reject_errors", "ingest_reject_scans"]
    for table in tables:
        con.execute(f"DROP TABLE IF EXISTS {table}")
