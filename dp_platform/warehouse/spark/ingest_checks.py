"""The Spark ingest's file and row checks as Spark jobs: the DuckDB ingest's rules, reasons and
row numbers (../ingest_sources.py, ../ingest.py, ../ingest_check_<kind>.sql), computed by Spark
over the input file — a path or any URI Spark reads (``file:``, ``s3a:``) — so no event is read
on the driver and the tables' root may be remote too.

Per file, in order (``ingest.py`` here drives it):

1. :func:`inspect_file` — the file-level refusals, each one line naming the file and the rule,
   never a value. A local path gets DuckDB's own checks (``check_file``: it exists, is a regular
   file, one byte can be read — so "Permission denied" reads as on DuckDB); a URI is asked of
   Spark (ingest_probes: its ``binaryFile`` listing — found, one file, its length). Column
   names: a CSV file's header row is the one thing the driver reads (a local file: ``first_line``,
   chunks of 64 KiB until its line end, the rest of that chunk never parsed; a URI: its first
   line through Spark's ``text`` reader, at most 1 MiB + 2 bytes of it sent back) — names, not
   events, and the header's own refusals (empty, not UTF-8, blank, longer than 1 MiB, not CSV)
   need its bytes; a Parquet file's types come from the schema Spark reads from its footer
   (ingest_types): they decide the refusals (``check_columns``) under DuckDB's type names, and
   a probe tells nanosecond times from integers. Only Spark's public API is used (no Py4J, no
   Spark context): the platform also runs on Spark Connect.
2. :func:`read_and_check` — one Spark read of the whole file into the checks, checkpointed once
   (``checked_<kind>``): every record with its row number, its reason (NULL: passed; the DuckDB
   checks' rules in their order, ``ingest_typed.sql`` and ``ingest_check_<kind>.sql``) and, for
   the rows that passed, ids, UTC microseconds, interaction, value and dimension values.
   CSV: Spark's CSV reader on the header's names, every field text, ``multiLine`` (a quoted
   field may hold a line break, as DuckDB reads it; the file is then one partition, so the read
   order numbers the records: source_row = position + 1, checked against the count). A record
   is malformed as DuckDB's reader rejects it: too many or too few fields, invalid UTF-8 (Spark
   decodes it to U+FFFD), or longer than DuckDB's 2 000 000 bytes. Broken quoting refuses the
   file: a quoted field never closed (an odd count of quote characters over the file's lines —
   one more, parallel pass — and a line whose last field opens a quote) or text after a closing
   quote (Spark's parser raises); the refusal names the line, found by an ordered pass over the
   lines only then. Parquet: the file's own row numbers (``_metadata.row_index`` + 1), as
   DuckDB's ``file_row_number``. A failed task is logged with its exception's text, which may
   quote the record: the platform's log4j2 configuration (log4j2.properties, passed to every
   JVM by session.py) keeps those loggers off.
3. :meth:`CheckedFile.register` names what ingest.py's ``_load`` reads: ``checked_raw``,
   ``malformed`` and ``checked_dimensions``; :meth:`CheckedFile.release` frees the checkpoint.
   Each file has its own runner, so the warehouse runner's ``release`` after one file's load
   leaves the other's checkpoint in place.

*Already loaded.* DuckDB keys a file by the SHA-256 of its bytes, read on the driver. Here the key
is a digest of the checkpointed records, one aggregate over the checkpoint (the file is not read
again): two 64-bit xxHash values per record — of its row number, every field read and which
fields are NULL, salted apart — summed over the file (an order-free sum of position-bound
hashes: partitions may come in any order), then SHA-256 of the sums with the file's kind,
format, column names and row count. xxHash, not SHA-256 per record: on the 5·10⁶-row benchmark
file SHA-256 of each record took 27 s, the pair 2 s. The 128 bits tell apart files that differ by
accident; they are not a cryptographic commitment — a file made to collide with a loaded one
would be reported ``already_loaded`` and skipped (nothing wrong is loaded). Path, size and
modification time (``_metadata``) were the other candidate: free, but a copy under another name
— a hostile case — would load again, every row a ``duplicate_loaded``. The digest follows the
rows as read, not the bytes: the same rows re-encoded (gzip, CRLF line ends, quoting, Parquet
compression, Parquet columns the ingest ignores) count as already loaded here and as a new file
on DuckDB. A file already loaded is still read and checked once (its key needs the read).

Where Spark and DuckDB differ and this module follows DuckDB on purpose: times are parsed by
DuckDB's grammar (``ingest_typed.sql``), not Spark's CAST; numbers by DuckDB's (underscores
allowed, Java's ``1d`` or hexadecimal refused); ``İ`` lower-cases to ``i`` as in DuckDB;
trimming is DuckDB's (Unicode space separators only).

Remaining divergences (none occurs in the test corpus; tests/test_spark_ingest_checks.py):

* CSV quoting: spaces around a quoted field (``a, "b" ,c``) are kept with their quotes by
  Spark, stripped with them by DuckDB. A quote inside an unquoted field (``u"1``, text to both)
  and a quoted field never closed in the same file cancel out in the quote count: Spark reads
  that file to its end instead of refusing it; a quoted line break followed by an escaped quote
  on the next line can likewise make a file Spark refuses and DuckDB loads. The line a quoting
  refusal names counts physical lines, DuckDB's counts records (they differ after a quoted line
  break).
* CSV records: one within a few bytes of 2 000 000 may fall on the other side of the limit
  (Spark counts fields and delimiters, not quotes); one with more fields than Spark's
  ``maxColumns`` (twice the header's, at least 20 480) refuses the file as unreadable; a field
  that holds U+FFFD as valid UTF-8 is malformed here.
* Times: zone names are IANA's and ``SystemV/*`` less those Spark refuses (case-insensitive;
  ingest_probes.zone_names), DuckDB's are ICU's — a name only one of them knows parses on that
  side only (e.g. ``Factory``, ``ROC``, ``US/Pacific-New``, IANA's newest zones on an older
  JVM: DuckDB only), and a wall-clock time in a zone's daylight-saving gap or
  overlap may resolve differently; blanks inside a time follow DuckDB's common cases only (a tab
  directly after the seconds is accepted here, refused by DuckDB); the years DuckDB can hold are
  taken as −290 307 .. 294 247 (its exact lower limit was not probed).
* Parquet: a DECIMAL value beyond 2⁵³ units may convert to DOUBLE one ulp apart (Spark rounds
  correctly, DuckDB divides); nanosecond times are cut to microseconds toward zero.
* Parquet types: as Spark reads them (ingest_types lists where DuckDB names them otherwise: a
  UINT64 id is refused here; a column Spark cannot read at all, UUID or FLOAT16, refuses the
  file even when the ingest ignores it).
* A URI (not a local path): a name Spark skips (``_x.csv``, ``.x.csv``) is refused as "no file
  Spark reads" (Spark would read no row of it); ingest_probes lists the header's edge cases.
* A refusal for an unreadable file names the JVM's exception where DuckDB names its own.

Messages name files, columns, rules, line numbers and engine error types — never a value.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from dp_platform.warehouse.ingest import (
    TS_WINDOW,
    DimensionLists,
    IngestError,
    catch_all,
    dimension_reasons,
    stored_values,
)
from dp_platform.warehouse.ingest_sources import (
    OPTIONAL_COLUMNS,
    REQUIRED,
    Format,
    Kind,
    check_columns,
    check_file,
    csv_columns,
    csv_header,
    file_format,
    header_names,
    shown,
)
from dp_platform.warehouse.spark.ingest_probes import (
    java_name,
    remote_header,
    remote_size,
    zone_names,
)
from dp_platform.warehouse.spark.ingest_quoting import quoting_line, unclosed_quote_line
from dp_platform.warehouse.spark.ingest_types import (
    NANOS_AS_LONG,
    parquet_columns,
    session_conf,
    spark_type,
)
from dp_platform.warehouse.spark.runner import SparkSqlRunner

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CheckedFile", "SparkSource", "inspect_file", "read_and_check"]

MAX_LINE_BYTES = 2_000_000
"""DuckDB's ``max_line_size``: a longer CSV record is malformed (measured: 2 000 000 bytes load,
2 000 001 do not)."""

CORRUPT = "__corrupt_record"
"""Spark's column for a record whose field count is wrong (not a name a header can give: the
ingest renames every column it does not read to ``ignored_column_<n>``)."""


@dataclass(frozen=True)
class SparkSource:
    """One event file after its file-level checks; ``sha256`` is empty until
    :func:`read_and_check` returns the file keyed (``CheckedFile.source``)."""

    kind: Kind
    path: str
    """As the operator gave it (messages, the report, the catalog)."""
    uri: str
    """What Spark reads (glob characters of a local name escaped)."""
    fmt: Format
    columns: dict[str, str]
    """Column name → DuckDB type name, in file order (CSV: every column VARCHAR)."""
    nanos: frozenset[str] = frozenset()
    """Parquet columns of nanosecond times (read as integers, cut to microseconds)."""
    dimensions: tuple[str, ...] = ()
    """The catalogue's dimension columns of this file (read with the event columns)."""
    sha256: str = ""


def _where(kind: Kind, path: str) -> str:
    return f"{kind} file {shown(path)}"


def _local(path: str | Path) -> Path | None:
    """The local file a path or ``file:`` URI names; None for another scheme."""
    if isinstance(path, Path):
        return path
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return Path(parsed.path)
    if len(parsed.scheme) <= 1:  # no scheme (or a drive letter)
        return Path(path)
    return None


def _spark_path(path: Path) -> str:
    """A local path as Spark reads it: absolute, Hadoop's glob characters escaped."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", str(path.absolute()))


def inspect_file(
    spark: SparkSession, kind: Kind, path: str | Path, dimensions: tuple[str, ...] = ()
) -> SparkSource:
    """File-level checks (see module doc); raises IngestError / FileNotFoundError."""
    local = _local(path)
    if local is not None:
        shown_path, size = str(local), check_file(kind, local)
        fmt, uri = file_format(kind, local), _spark_path(local)
    else:
        shown_path = uri = str(path)
        size = remote_size(spark, _where(kind, uri), uri)
        fmt = file_format(kind, Path(PurePosixPath(urlparse(uri).path).name))
    where = _where(kind, shown_path)
    nanos: frozenset[str] = frozenset()
    if fmt == "csv":
        if local is not None:
            names = csv_header(kind, local)
        else:
            names = header_names(where, remote_header(spark, where, uri))
        columns = csv_columns(kind, shown_path, names, dimensions)
    elif size == 0:
        raise IngestError(f"{where}: empty file, not Parquet")
    else:
        read = (*REQUIRED[kind], *OPTIONAL_COLUMNS[kind], *dimensions)
        columns, nanos = parquet_columns(spark, where, uri, read)
    check_columns(kind, shown_path, columns, dimensions)
    return SparkSource(kind, shown_path, uri, fmt, columns, nanos, tuple(dimensions))


def _wanted(source: SparkSource) -> list[str]:
    """The Parquet columns the ingest reads (others, of any type, are never read)."""
    read = (*REQUIRED[source.kind], *OPTIONAL_COLUMNS[source.kind], *source.dimensions)
    return [name for name in source.columns if name in read]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _csv_frame(spark: SparkSession, source: SparkSource) -> DataFrame:
    from pyspark.sql import functions as F

    names = list(source.columns)
    schema = ", ".join(f"{_quoted(n)} STRING" for n in [*names, CORRUPT])
    frame = (
        spark.read.schema(schema)
        .options(
            header="true",
            multiLine="true",
            mode="PERMISSIVE",
            columnNameOfCorruptRecord=CORRUPT,
            sep=",",
            quote='"',
            escape='"',
            encoding="UTF-8",
            unescapedQuoteHandling="RAISE_ERROR",
            maxColumns=str(max(20_480, 2 * len(names))),
            maxCharsPerColumn="-1",
        )
        .csv(source.uri)
    )
    fields = [F.col(_quoted(n)) for n in names]
    size = sum((F.coalesce(F.octet_length(c), F.lit(0)) for c in fields), F.lit(len(names) - 1))
    replaced = F.instr(F.concat_ws("", *fields, F.col(CORRUPT)), "\ufffd") > 0
    malformed = F.col(CORRUPT).isNotNull() | replaced | (size > MAX_LINE_BYTES)
    numbered = frame.select(
        (F.monotonically_increasing_id() + 1).alias("source_row"), malformed.alias("malformed"), "*"
    )
    return _hashed(numbered, [*names, CORRUPT])


def _parquet_frame(spark: SparkSession, source: SparkSource) -> DataFrame:
    from pyspark.sql import functions as F

    wanted = _wanted(source)
    schema = ", ".join(
        f"{_quoted(n)} {'BIGINT' if n in source.nanos else spark_type(source.columns[n])}"
        for n in wanted
    )
    frame = (
        spark.read.schema(schema)
        .options(datetimeRebaseMode="CORRECTED", int96RebaseMode="CORRECTED")
        .parquet(source.uri)
    )
    numbered = frame.select(
        (F.col("_metadata.row_index") + 1).alias("source_row"),
        F.lit(False).alias("malformed"),
        *[F.col(_quoted(n)) for n in wanted],
    )
    return _hashed(numbered, wanted)


def _hashed(frame: DataFrame, columns: list[str]) -> DataFrame:
    """The records with two 64-bit hashes each of (row number, every field read, which fields
    are NULL), salted apart: the content digest's terms (module doc)."""
    from pyspark.sql import functions as F

    terms = [F.col("source_row")]
    for name in columns:
        terms += [F.col(_quoted(name)), F.col(_quoted(name)).isNull()]
    return frame.select(
        "*",
        F.xxhash64(F.lit("digest-a"), *terms).alias("digest_a"),
        F.xxhash64(*reversed(terms), F.lit("digest-b")).alias("digest_b"),
    )


def _digest(runner: SparkSqlRunner, source: SparkSource) -> tuple[str, int]:
    """The content digest (module doc) and the number of records: one aggregate over the
    checked file's checkpoint."""
    row = runner.query(
        "SELECT count(*), max(source_row), sum(CAST(digest_a AS DECIMAL(38, 0))), "
        f"sum(CAST(digest_b AS DECIMAL(38, 0))) FROM checked_{source.kind}"
    )[0]
    rows = int(row[0])
    if source.fmt == "csv" and rows and int(row[1]) != rows:
        raise RuntimeError("the CSV file was not read as one partition")  # multiLine's promise
    text = "|".join(
        [source.kind, source.fmt, ",".join(source.columns), str(rows), str(row[2]), str(row[3])]
    )
    return "spark-rows-v1:" + hashlib.sha256(text.encode()).hexdigest(), rows


def read_and_check(
    spark: SparkSession, source: SparkSource, now: datetime, dimensions: DimensionLists
) -> CheckedFile:
    """Read the file once and check its rows (module doc, steps 2 and 3): the checked rows
    checkpointed, with the source keyed by its digest; broken quoting or an unreadable file
    refused."""
    where = _where(source.kind, source.path)
    nanos = {NANOS_AS_LONG: "true"} if source.nanos else {}
    runner = SparkSqlRunner(spark, {})
    try:
        if source.fmt == "csv":
            line = unclosed_quote_line(spark, source.uri)
            if line is not None:
                _refuse_quoting(where, line)
        with session_conf(spark, nanos):
            if source.fmt == "csv":
                frame = _csv_frame(spark, source)
            else:
                frame = _parquet_frame(spark, source)
            _run_checks(runner, frame, source, now, dimensions)
            digest, rows = _digest(runner, source)
    except IngestError:
        runner.release()
        raise
    except Exception as error:
        runner.release()
        if source.fmt == "csv" and "TextParsingException" in str(error):
            _refuse_quoting(where, quoting_line(spark, source.uri))
        raise IngestError(
            f"{where}: could not be read completely ({java_name(error)}); nothing was loaded"
        ) from None
    return CheckedFile(replace(source, sha256=digest), runner, rows, bool(dimensions))


def _refuse_quoting(where: str, line: int) -> None:
    raise IngestError(
        f"{where}: line {line}: a quoted field is not closed (or text follows its closing "
        "quote); nothing was loaded"
    )


_TRIM = (
    "CASE WHEN {x} = '' THEN NULL "
    "WHEN startswith({x}, ' ') OR endswith({x}, ' ') OR octet_length({x}) <> char_length({x}) "
    "THEN nullif(regexp_replace({x}, r'^\\p{{Zs}}+|\\p{{Zs}}+\\z', ''), '') ELSE {x} END"
)
"""../ingest_text.sql in Spark SQL: trimmed of Unicode space separators, empty → NULL; a pure
ASCII field without a space at either end is returned as it is (most fields)."""


def _text(expression: str) -> str:
    return _TRIM.format(x=expression)


def _sql_text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _dimension_items(dimensions: DimensionLists) -> list[str]:
    """Each dimension's stored text (an unlisted value → its catch-all) as one array of
    (dimension, value), and the first dimension's reason (DuckDB's ``_dimension_items``)."""
    if not dimensions:
        return [
            "CAST(array() AS ARRAY<STRUCT<dimension: STRING, value: STRING>>) AS dimension_values",
            "CAST(NULL AS STRING) AS dimension_reason",
        ]
    values, arms = [], []
    for name, dimension in dimensions.items():
        text = _text(f"CAST({_quoted(name)} AS STRING)")
        missing, unknown = dimension_reasons(name)
        listed = ", ".join(_sql_text(v) for v in stored_values(dimension))
        bucket = catch_all(dimension)
        arms.append(f"WHEN {text} IS NULL THEN '{missing}'")
        if bucket is None:
            stored = text
            arms.append(f"WHEN {text} NOT IN ({listed}) THEN '{unknown}'")
        else:
            stored = f"CASE WHEN {text} IN ({listed}) THEN {text} ELSE {_sql_text(bucket)} END"
        values.append(f"named_struct('dimension', '{name}', 'value', {stored})")
    return [
        f"array({', '.join(values)}) AS dimension_values",
        f"CASE {' '.join(arms)} END AS dimension_reason",
    ]


def _ts_items(source: SparkSource) -> list[str]:
    """The time as text to parse (ingest_typed.sql) or, typed in Parquet, in microseconds."""
    if "ts" not in source.columns:
        return ["CAST(NULL AS STRING) AS ts_text", "CAST(NULL AS BIGINT) AS ts_typed_us"]
    kind = source.columns["ts"]
    if kind == "VARCHAR":
        return [f"{_text('ts')} AS ts_text", "CAST(NULL AS BIGINT) AS ts_typed_us"]
    if "ts" in source.nanos:
        typed = "ts div 1000"
    elif kind == "TIMESTAMP WITH TIME ZONE":
        typed = "unix_micros(ts)"
    else:  # DATE, TIMESTAMP (no zone: UTC, the session's zone, as DuckDB's)
        typed = "unix_micros(CAST(ts AS TIMESTAMP))"
    return ["CAST(NULL AS STRING) AS ts_text", f"{typed} AS ts_typed_us"]


def _projection(source: SparkSource, dimensions: DimensionLists) -> str:
    """The select list of view ``source`` (what ingest_typed.sql reads)."""
    kind, columns = source.kind, source.columns
    id_column = "impression_id" if kind == "impressions" else "conversion_id"

    def text(name: str) -> str:
        if name not in columns:
            return "CAST(NULL AS STRING)"
        value = _quoted(name)
        return _text(value if columns[name] == "VARCHAR" else f"CAST({value} AS STRING)")

    ts = _ts_items(source)
    items = [
        "source_row",
        "malformed",
        "digest_a",
        "digest_b",
        f"{text(id_column)} AS id",
        f"{text('user_id')} AS user_id",
        f"{text('publisher_id') if kind == 'impressions' else 'CAST(NULL AS STRING)'}"
        " AS publisher_id",
        f"{text('advertiser_id')} AS advertiser_id",
        *ts,
        f"{text('interaction')} AS interaction",
    ]
    value_type = columns.get("value")
    if value_type == "VARCHAR":
        items += [f"{text('value')} AS value_text", "CAST(NULL AS DOUBLE) AS value_typed"]
    elif value_type is not None:
        items += ["CAST(NULL AS STRING) AS value_text", "CAST(value AS DOUBLE) AS value_typed"]
    else:
        items += ["CAST(NULL AS STRING) AS value_text", "CAST(NULL AS DOUBLE) AS value_typed"]
    items += _dimension_items(dimensions)
    return ", ".join(items)


@dataclass
class CheckedFile:
    """A file's checked rows, checkpointed by its own runner (the warehouse runner's
    ``release`` after one file's load leaves the other file's checks in place), and the file
    keyed by their digest."""

    source: SparkSource
    runner: SparkSqlRunner
    rows: int
    dimensions: bool
    views: list[str] = field(default_factory=list)

    @property
    def kind(self) -> Kind:
        return self.source.kind

    def register(self) -> None:
        """The views ``_load`` reads: ``checked_raw``, ``malformed`` and, with dimensions,
        ``checked_dimensions`` (source_row, dimension, value of the passing rows)."""
        spark, table = self.runner.spark, f"checked_{self.kind}"
        spark.sql(
            "SELECT source_row, id, user_id, publisher_id, advertiser_id, ts_us, interaction, "
            f"value, reason FROM {table} WHERE NOT malformed"
        ).createOrReplaceTempView("checked_raw")
        spark.sql(
            f"SELECT source_row, 'malformed_row' AS reason FROM {table} WHERE malformed"
        ).createOrReplaceTempView("malformed")
        spark.sql(
            "SELECT source_row, d.dimension, d.value "
            f"FROM {table} LATERAL VIEW explode(dimension_values) AS d WHERE reason IS NULL "
            "AND NOT malformed"
        ).createOrReplaceTempView("checked_dimensions")

    def release(self) -> None:
        self.runner.release()


def _zones(spark: SparkSession) -> None:
    """View ``ingest_zones``: the zone names Spark accepts (ingest_probes.zone_names) by
    lower-case name (DuckDB's names are case-insensitive)."""
    by_lower: dict[str, str] = {}
    for zone in zone_names(spark):
        by_lower.setdefault(zone.lower(), zone)
    spark.createDataFrame(
        sorted(by_lower.items()), schema="lower_name STRING, zone STRING"
    ).createOrReplaceTempView("ingest_zones")


def _micros(moment: datetime) -> int:
    return round(moment.timestamp() * 1_000_000)


def _run_checks(
    runner: SparkSqlRunner,
    frame: DataFrame,
    source: SparkSource,
    now: datetime,
    dimensions: DimensionLists,
) -> None:
    """ingest_typed.sql and ingest_check_<kind>.sql over the file's records: the checkpoint
    (``checked_<kind>``) is where the file is read."""
    spark = runner.spark
    frame.createOrReplaceTempView("ingest_parsed")
    try:
        spark.sql(
            f"SELECT {_projection(source, dimensions)} FROM ingest_parsed"
        ).createOrReplaceTempView("source")
        _zones(spark)
        runner.run("ingest_typed")
        runner.run(
            f"ingest_check_{source.kind}",
            now_us=_micros(now),
            ts_min_us=_micros(TS_WINDOW[0]),
            ts_max_us=_micros(TS_WINDOW[1]),
        )
    finally:
        for view in ("ingest_parsed", "source", "ts_parts", "ts_fields", "ts_local", "typed"):
            spark.catalog.dropTempView(view)
