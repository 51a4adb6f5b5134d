"""Broken CSV quoting, found by Spark over the file's lines: DuckDB's reader refuses a file with
a quoted field that is never closed or has text after its closing quote (``UNQUOTED VALUE``,
``ingest._refuse_broken_quoting``), naming the line it starts on.

Spark's CSV reader raises for text after a closing quote (``unescapedQuoteHandling`` =
``RAISE_ERROR``) but reads a quote that is never closed to the end of the file as one field, so
the ingest counts the file's quote characters first (one aggregate over its lines, in
parallel): an odd count leaves a field open. Only when the file is refused are its lines
numbered (one ordered pass) to name the line; a quoted line break before it makes that line a
physical line where DuckDB counts records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["quoting_line", "unclosed_quote_line"]

_FIELD = r"""(?:\s*"(?:[^"]|"")*"\s*|[^,"][^,]*|)"""
_GOOD_LINE = rf"^{_FIELD}(?:,{_FIELD})*\z"
"""A line of whole fields: quoted (blanks around it allowed, as DuckDB strips them), unquoted
(a quote inside allowed, as DuckDB reads it) or empty."""


_OPENS = r"""(?:^|,)\s*"(?:[^"]|"")*\z"""
"""A line whose last field opens a quote it does not close (an odd count alone is not enough:
DuckDB reads a quote inside an unquoted field, ``u"1``, as text)."""


def _lines(spark: SparkSession, uri: str) -> DataFrame:
    """The file's lines (header included: line 1) with their quote count."""
    return spark.read.text(uri).selectExpr(
        "value", "length(value) - length(replace(value, '\"', '')) AS quotes"
    )


def unclosed_quote_line(spark: SparkSession, uri: str) -> int | None:
    """The line where a never-closed quoted field starts, or None: an even quote count, or
    an odd one without a line that opens a field it never closes (quotes inside unquoted
    fields, which DuckDB reads as text)."""
    total = _lines(spark, uri).selectExpr("sum(quotes)").first()[0] or 0
    if total % 2 == 0:
        return None
    _numbered(spark, uri).createOrReplaceTempView("ingest_quoting_lines")
    try:
        return spark.sql(
            "SELECT max(line) FROM ingest_quoting_lines WHERE before % 2 = 0 "
            "AND (before + quotes) % 2 = 1 AND value RLIKE :opens",
            args={"opens": _OPENS},
        ).first()[0]
    finally:
        spark.catalog.dropTempView("ingest_quoting_lines")


def quoting_line(spark: SparkSession, uri: str) -> int:
    """The first line (outside any quoted field) whose fields are not whole (text after a
    closing quote); the first line that opens a quoted field if none is found."""
    _numbered(spark, uri).createOrReplaceTempView("ingest_quoting_lines")
    try:
        found = spark.sql(
            "SELECT min(CASE WHEN NOT value RLIKE :good THEN line END), "
            "min(CASE WHEN quotes % 2 = 1 THEN line END) "
            "FROM ingest_quoting_lines WHERE before % 2 = 0",
            args={"good": _GOOD_LINE},
        ).first()
    finally:
        spark.catalog.dropTempView("ingest_quoting_lines")
    return int(found[0] or found[1] or 1)


def _numbered(spark: SparkSession, uri: str) -> DataFrame:
    """Lines numbered from 1 with the quotes before each (a window over the whole file: the
    refusal's path only)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.orderBy("position")
    lines = _lines(spark, uri).withColumn("position", F.monotonically_increasing_id())
    return lines.select(
        "value",
        "quotes",
        F.row_number().over(order).alias("line"),
        F.coalesce(
            F.sum("quotes").over(order.rowsBetween(Window.unboundedPreceding, -1)), F.lit(0)
        ).alias("before"),
    )
