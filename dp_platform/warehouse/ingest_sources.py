"""Event files before anything is loaded: is each one a readable file of a known format with
the required columns of accepted types, and how DuckDB reads it.

Every refusal is an :class:`IngestError` (or ``FileNotFoundError``) with one line naming the
file and the problem: paths are shown with control characters escaped, and no value from the
file is ever quoted (ids are personal data). CSV headers are parsed here, not sniffed by DuckDB,
so a long or oddly quoted data row is a quarantined row rather than a refused file.
"""

from __future__ import annotations

import csv
import errno
import gzip
import hashlib
import os
import re
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

import duckdb

from dp_platform.errors import ConfigError
from dp_platform.events.files import CONVERSION_COLUMNS as _WRITTEN_CONVERSIONS
from dp_platform.events.files import IMPRESSION_COLUMNS

__all__ = [
    "CONVERSION_COLUMNS",
    "IMPRESSION_COLUMNS",
    "OPTIONAL_COLUMNS",
    "REQUIRED",
    "IngestError",
    "Kind",
    "Source",
    "check_columns",
    "check_file",
    "csv_columns",
    "csv_header",
    "file_format",
    "first_line",
    "header_names",
    "inspect",
    "reader",
    "shown",
]

Kind = Literal["impressions", "conversions"]
Format = Literal["csv", "parquet"]

# The event-file format is the one dp_platform.events writes; ``value`` may be left out.
OPTIONAL_COLUMNS: dict[Kind, tuple[str, ...]] = {"impressions": (), "conversions": ("value",)}
CONVERSION_COLUMNS = tuple(
    c for c in _WRITTEN_CONVERSIONS if c not in OPTIONAL_COLUMNS["conversions"]
)
REQUIRED: dict[Kind, tuple[str, ...]] = {
    "impressions": IMPRESSION_COLUMNS,
    "conversions": CONVERSION_COLUMNS,
}

MAX_HEADER_BYTES = 1 << 20
"""A header row longer than this is refused (no real event file has one)."""

_INTEGER = r"(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?)"
_ACCEPTED_TYPES: dict[str, tuple[str, re.Pattern[str]]] = {
    "id": ("text or integer", re.compile(rf"VARCHAR|{_INTEGER}")),
    "ts": ("text, date or timestamp", re.compile(r"VARCHAR|DATE|TIMESTAMP.*")),
    "interaction": ("text", re.compile(r"VARCHAR")),
    "value": ("text or number", re.compile(rf"VARCHAR|{_INTEGER}|FLOAT|DOUBLE|DECIMAL\(.*\)")),
}


class IngestError(ConfigError):
    """A file cannot be loaded at all; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Source:
    kind: Kind
    path: Path
    fmt: Format
    columns: dict[str, str]  # column name -> DuckDB type, in file order
    sha256: str


def shown(path: str | Path) -> str:
    """The path on one printable line: control characters (a newline in a file name) escaped."""
    text = str(path)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _where(kind: Kind, path: str | Path) -> str:
    return f"{kind} file {shown(path)}"


def _cause(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "a symbolic link loop"
    if error.errno is not None:
        return os.strerror(error.errno)
    return type(error).__name__


def file_format(kind: Kind, path: Path) -> Format:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in {".parquet", ".pq"}:
        return "parquet"
    if suffixes[-1:] == [".csv"] or suffixes[-2:] == [".csv", ".gz"]:
        return "csv"
    raise IngestError(f"{_where(kind, path)}: unknown format (expected .csv, .csv.gz or .parquet)")


def check_file(kind: Kind, path: Path) -> int:
    """A regular file this process can read; returns its size in bytes."""
    where = _where(kind, path)
    try:
        info = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise FileNotFoundError(f"{where}: not found (a symbolic link to nothing)") from None
        raise FileNotFoundError(f"{where}: not found") from None
    except NotADirectoryError:
        raise FileNotFoundError(f"{where}: not found (part of the path is a file)") from None
    except OSError as error:
        raise IngestError(f"{where}: cannot be opened ({_cause(error)})") from None
    if stat.S_ISDIR(info.st_mode):
        raise IngestError(f"{where}: is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise IngestError(f"{where}: not a regular file (a pipe, socket or device)")
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except OSError as error:
        raise IngestError(f"{where}: cannot be read ({_cause(error)})") from None
    return info.st_size


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


HEADER_CHUNK = 1 << 16
"""Bytes read at a time while looking for the header row's end: only the header row (and the
rest of its last chunk, never parsed) is read before the engine reads the file."""


def first_line(handle: BinaryIO, limit: int = MAX_HEADER_BYTES) -> bytes:
    """The file's start up to its first line end, read a chunk at a time (at most ``limit`` + 2
    bytes: enough to tell a header row longer than ``limit``)."""
    start = b""
    while len(start) <= limit + 1:
        chunk = handle.read(HEADER_CHUNK)
        if not chunk:
            break
        start += chunk
        if b"\n" in chunk or b"\r" in chunk:
            break
    return start[: limit + 2]


def csv_header(kind: Kind, path: Path) -> list[str]:
    """The header row's column names (BOM dropped, names trimmed)."""
    where = _where(kind, path)
    compressed = path.suffix.lower() == ".gz"
    try:
        with gzip.open(path, "rb") if compressed else path.open("rb") as handle:
            start = first_line(handle)
    except (gzip.BadGzipFile, EOFError, zlib.error):
        raise IngestError(f"{where}: not a readable gzip file") from None
    except OSError as error:
        raise IngestError(f"{where}: cannot be read ({_cause(error)})") from None
    return header_names(where, start)


def header_names(where: str, start: bytes) -> list[str]:
    """The column names of a CSV header row, given the file's first bytes (:func:`first_line`);
    ``where`` names the file in a refusal."""
    if not start:
        raise IngestError(f"{where}: empty file, no header row")
    line = re.split(rb"\r\n|\n|\r", start, maxsplit=1)[0]  # any line ending, CR-only too
    if len(line) > MAX_HEADER_BYTES:
        raise IngestError(f"{where}: line 1 (the header row) is longer than 1 MiB")
    try:
        text = line.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise IngestError(f"{where}: line 1 (the header row) is not UTF-8 text") from None
    if not text.strip():
        raise IngestError(f"{where}: line 1 is blank, a header row was expected")
    try:
        names = next(csv.reader([text], strict=True))
    except csv.Error:
        raise IngestError(f"{where}: line 1 (the header row) is not valid CSV") from None
    return [name.strip() for name in names]


def csv_columns(
    kind: Kind, path: str | Path, names: list[str], dimensions: tuple[str, ...] = ()
) -> dict[str, str]:
    """Names DuckDB reads the columns under: required names must be unique; other columns
    (ignored) get placeholder names when blank or repeated."""
    wanted = (*REQUIRED[kind], *OPTIONAL_COLUMNS[kind], *dimensions)
    repeated = sorted({n for n in names if n in wanted and names.count(n) > 1})
    if repeated:
        raise IngestError(
            f"{_where(kind, path)}: column(s) {', '.join(repeated)} appear more than once "
            "in the header row"
        )
    columns: dict[str, str] = {}
    for position, name in enumerate(names, start=1):
        if name not in wanted:
            name = f"ignored_column_{position}"
        columns[name] = "VARCHAR"
    return columns


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def reader(source: Source) -> str:
    """The DuckDB table function reading the file (CSV: every field as text, malformed
    records to the temp tables ``ingest_reject_errors`` / ``ingest_reject_scans``)."""
    path = _sql_text(str(source.path))
    if source.fmt == "parquet":
        return f"read_parquet({path}, file_row_number = true)"
    columns = ", ".join(f"{_sql_text(name)}: 'VARCHAR'" for name in source.columns)
    return (
        f"read_csv({path}, header = true, auto_detect = false, columns = {{{columns}}}, "
        "delim = ',', quote = '\"', escape = '\"', store_rejects = true, "
        "rejects_table = 'ingest_reject_errors', rejects_scan = 'ingest_reject_scans')"
    )


def _parquet_columns(con: duckdb.DuckDBPyConnection, kind: Kind, path: Path) -> dict[str, str]:
    probe = Source(kind, path, "parquet", {}, "")
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {reader(probe)}").fetchall()
    except duckdb.Error as error:
        raise IngestError(
            f"{_where(kind, path)}: not a readable Parquet file ({type(error).__name__})"
        ) from None
    return {str(row[0]): str(row[1]) for row in described if row[0] != "file_row_number"}


def check_types(
    kind: Kind, path: str | Path, columns: dict[str, str], dimensions: tuple[str, ...] = ()
) -> None:
    """Parquet columns must have a type a valid value can have (CSV fields are all text)."""
    for name in (*REQUIRED[kind], *OPTIONAL_COLUMNS[kind], *dimensions):
        if name not in columns:
            continue
        group = name if name in _ACCEPTED_TYPES else "id"
        expected, pattern = _ACCEPTED_TYPES[group]
        if not pattern.fullmatch(columns[name]):
            given = re.split(r"[(\[<]", columns[name], maxsplit=1)[0] or "?"
            raise IngestError(
                f"{_where(kind, path)}: column {name} has type {given} (expected {expected})"
            )


def check_columns(
    kind: Kind, path: str | Path, columns: dict[str, str], dimensions: tuple[str, ...] = ()
) -> None:
    """The required columns, the catalogue's dimension columns and their types (``columns``:
    name → DuckDB type name, as DuckDB or the Spark ingest reads the file)."""
    missing = [c for c in REQUIRED[kind] if c not in columns]
    if missing:
        raise IngestError(
            f"{_where(kind, path)}: missing column(s) {', '.join(missing)} "
            f"(required: {', '.join(REQUIRED[kind])})"
        )
    absent = [c for c in dimensions if c not in columns]
    if absent:
        raise IngestError(
            f"{_where(kind, path)}: missing column(s) {', '.join(absent)} (declared under the "
            "catalogue's dimensions)"
        )
    check_types(kind, path, columns, dimensions)


def inspect(
    con: duckdb.DuckDBPyConnection,
    kind: Kind,
    path: str | Path,
    dimensions: tuple[str, ...] = (),
) -> Source:
    """File-level checks; nothing is written. Raises IngestError / FileNotFoundError.

    ``dimensions``: the catalogue's breakdown columns of this kind, required when declared (a
    file without them would load events that no broken-down campaign can place)."""
    path = Path(path)
    size = check_file(kind, path)
    fmt = file_format(kind, path)
    if fmt == "csv":
        columns = csv_columns(kind, path, csv_header(kind, path), dimensions)
    elif size == 0:
        raise IngestError(f"{_where(kind, path)}: empty file, not Parquet")
    else:
        columns = _parquet_columns(con, kind, path)
    check_columns(kind, path, columns, dimensions)
    return Source(kind, path, fmt, columns, _sha256(path))
