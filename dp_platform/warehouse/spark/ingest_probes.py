"""What the Spark ingest asks Spark about a file before it reads its events, through the public
DataFrame API only (no Spark context, no Py4J: the platform also runs on Spark Connect, where
neither exists).

* :func:`remote_size` — a URI's file-level checks: Spark's ``binaryFile`` source lists what the
  URI names (``inputFiles``: the planned files, nothing read) and gives the file's length (a job
  whose ``content`` column is pruned, so no byte of the file is read). Not found is Spark's
  ``PATH_NOT_FOUND``; a directory lists other files than itself.
* :func:`remote_header` — a CSV file's first line through Spark's ``text`` source (Hadoop's line
  reader and codecs: ``.gz`` decompressed, any of LF, CRLF or CR ends it, a UTF-8 BOM dropped),
  ``limit(1)``, as raw bytes (``CAST(value AS BINARY)``: Spark keeps the bytes of a line that is
  not UTF-8), at most 1 MiB + 2 of them sent to the driver. The header rules
  (``ingest_sources.header_names``) then run on those bytes as for a local file.
* :func:`zone_names` — the time-zone names Spark's ``to_utc_timestamp`` accepts: IANA's list
  (Python's ``zoneinfo``) and the ``SystemV/*`` names DuckDB and Java also know, less those
  Spark refuses (asked of Spark itself, once per session).

Divergences from the driver-side reads they replace (URIs only: a local path still gets DuckDB's
own checks, ``ingest_sources.check_file`` and ``csv_header``):

* A name Spark skips (starting with ``_`` or ``.``) and an empty directory are one refusal
  ("no file Spark reads"): Spark lists neither, and would read no row of such a file.
* The header line is read whole by the executor (Hadoop's line reader has no early stop), then
  cut to 1 MiB + 2 bytes; a first line over 2 GiB is refused as unreadable rather than as a long
  header row.
* Time zones: a name in the newest IANA release that the JVM's older zone data lacks (e.g.
  ``America/Coyhaique`` on Java 17) and ``Factory``, ``ROC``, ``US/Pacific-New`` (DuckDB knows
  them, Java not) are unparsable here; ``GMT+0`` and ``GMT-0`` now parse, as on DuckDB.
"""

from __future__ import annotations

import posixpath
import re
import zoneinfo
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from dp_platform.warehouse.ingest_sources import MAX_HEADER_BYTES, IngestError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["condition", "java_name", "remote_header", "remote_size", "zone_names"]

SYSTEM_V = tuple(
    f"SystemV/{name}"
    for name in (
        *("AST4", "AST4ADT", "CST6", "CST6CDT", "EST5", "EST5EDT", "HST10"),
        *("MST7", "MST7MDT", "PST8", "PST8PDT", "YST9", "YST9YDT"),
    )
)
"""Zone names Java and DuckDB (ICU) know and IANA's list no longer has."""

_NOT_ZONES = frozenset({"Factory", "localtime"})
"""Entries of the zone database that name no place (DuckDB reads ``Factory`` as UTC)."""

_zones_of: dict[int, list[str]] = {}


def java_name(error: BaseException) -> str:
    """The JVM exception's class name behind a PySpark error (else the Python one)."""
    text = str(error)
    found = re.search(r"\b(?:[a-z]\w*\.)+([A-Z]\w*(?:Exception|Error))\b", text)
    return found.group(1) if found else type(error).__name__


def condition(error: BaseException) -> str | None:
    """Spark's error class (``PATH_NOT_FOUND``) of a PySpark error, classic or Connect."""
    get = getattr(error, "getCondition", None) or getattr(error, "getErrorClass", None)
    try:
        return get() if get is not None else None
    except Exception:  # a wrapped JVM error without a class
        return None


def _path_of(uri: str) -> str:
    return posixpath.normpath(unquote(urlparse(uri).path) or "/")


def remote_size(spark: SparkSession, where: str, uri: str) -> int:
    """The size of the one file ``uri`` names; FileNotFoundError / IngestError otherwise."""
    try:
        listing = spark.read.format("binaryFile").load(uri)
        files = listing.inputFiles()
    except Exception as error:
        if condition(error) == "PATH_NOT_FOUND":
            raise FileNotFoundError(f"{where}: not found") from None
        raise IngestError(f"{where}: cannot be opened ({java_name(error)})") from None
    if not files:
        raise IngestError(
            f"{where}: no file Spark reads (an empty directory, or a name starting with "
            "'_' or '.', which Spark skips)"
        )
    if len(files) > 1 or _path_of(files[0]) != _path_of(uri):
        raise IngestError(f"{where}: is a directory, not a file")
    try:
        rows = listing.select("length").collect()
    except Exception as error:
        raise IngestError(f"{where}: cannot be opened ({java_name(error)})") from None
    return int(rows[0]["length"]) if rows else 0  # Spark plans no task for an empty file


def remote_header(spark: SparkSession, where: str, uri: str) -> bytes:
    """The file's first line as raw bytes, with a line end if it has one at all (b"" for an
    empty file), as ``ingest_sources.first_line`` gives it for a local file."""
    from pyspark.sql import functions as F

    first = F.substring(F.col("value").cast("binary"), 1, MAX_HEADER_BYTES + 2)
    try:
        rows = spark.read.text(uri).limit(1).select(first.alias("line")).collect()
    except Exception as error:
        if uri.lower().endswith(".gz"):
            raise IngestError(f"{where}: not a readable gzip file") from None
        raise IngestError(f"{where}: cannot be read ({java_name(error)})") from None
    return bytes(rows[0]["line"]) + b"\n" if rows else b""


def zone_names(spark: SparkSession) -> list[str]:
    """The zone names Spark's ``to_utc_timestamp`` accepts: the candidates (module doc) less
    each one Spark refuses (``INVALID_TIMEZONE`` names it; a handful per JVM)."""
    key = id(spark)
    if key not in _zones_of:
        from pyspark.sql import functions as F

        names = sorted((zoneinfo.available_timezones() - _NOT_ZONES) | set(SYSTEM_V))
        moment = F.lit("2000-01-01 00:00:00").cast("timestamp")
        while True:
            frame = spark.createDataFrame([(n,) for n in names], schema="zone STRING")
            try:
                frame.select(F.count(F.to_utc_timestamp(moment, F.col("zone")))).collect()
                break
            except Exception as error:
                refused = re.search(r"The timezone: (\S+) is invalid", str(error))
                if refused is None or refused.group(1) not in names:
                    raise
                names.remove(refused.group(1))
        _zones_of[key] = names
    return _zones_of[key]
