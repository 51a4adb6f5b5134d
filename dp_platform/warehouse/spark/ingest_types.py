"""A Parquet event file's column types under DuckDB's names, from the schema Spark reads
(``spark.read.parquet(uri).schema``, any URI Spark reads; public API only, as on Spark Connect),
so the Spark ingest refuses the same types with the same messages as DuckDB's
(``ingest_sources.check_types``) and reads each column as the type Spark gives it.

Nanosecond times: Spark refuses an INT64 ``TIMESTAMP(NANOS)`` column unless
``spark.sql.legacy.parquet.nanosAsLong`` reads it as a plain BIGINT, which an integer column
also is. So the schema is read without the flag first (almost every file: no nanosecond column,
one schema read); when that fails on a nanosecond type, it is read with the flag, and each BIGINT
column the ingest reads is asked whether it holds nanoseconds (:func:`_nanos_zone`: one
one-row read each, whose error names the column's Parquet type). DuckDB reads them; the ingest
too, as integers cut to microseconds (ingest_checks).

Divergences from DuckDB's footer types (the accepted-type check, ``check_types``):

* Unsigned integers are named by the signed type Spark reads them as (UINT8 → SMALLINT, UINT16 →
  INTEGER, UINT32 → BIGINT: accepted alike, a refusal names the Spark type); UINT64 is
  DECIMAL(20,0) to Spark, so a UINT64 id column is refused here ("has type DECIMAL") and loaded
  by DuckDB.
* A column of a Parquet type Spark cannot read (measured: UUID and FLOAT16; INTERVAL likewise)
  refuses the whole file here, even when the ingest ignores that column: Spark reads no schema
  of the file. DuckDB loads such a file (the column ignored) or refuses it by the column's type
  (UUID; a FLOAT16 value it accepts as FLOAT). The refusal names the Parquet type.
* A nanosecond column inside a struct or list is not told from integers (such columns are
  refused by type either way).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from dp_platform.warehouse.ingest_sources import IngestError
from dp_platform.warehouse.spark.ingest_probes import java_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType

__all__ = ["NANOS_AS_LONG", "duckdb_type", "parquet_columns", "session_conf", "spark_type"]

_SPARK = {
    "VARCHAR": "STRING",
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DATE": "DATE",
    "TIMESTAMP": "TIMESTAMP_NTZ",
    "TIMESTAMP WITH TIME ZONE": "TIMESTAMP",
}
"""An accepted DuckDB type → the Spark type its Parquet column is read as."""


def spark_type(name: str) -> str:
    """The Spark SQL type to read a column of an accepted DuckDB type as."""
    if name.startswith("DECIMAL"):
        return name
    return _SPARK[name]


NANOS_AS_LONG = "spark.sql.legacy.parquet.nanosAsLong"
_TIME_TYPE = "spark.sql.timeType.enabled"
_VECTORIZED = "spark.sql.parquet.enableVectorizedReader"


@contextmanager
def session_conf(spark: SparkSession, values: dict[str, str]) -> Iterator[None]:
    """Session settings for the duration of one read (the earlier values restored)."""
    before = {key: spark.conf.get(key, None) for key in values}
    try:
        for key, value in values.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def duckdb_type(data_type: DataType) -> str:
    """DuckDB's name for the type of a Parquet column Spark reads as ``data_type``."""
    from pyspark.sql import types as T

    simple = (
        (T.StringType, "VARCHAR"),
        (T.BinaryType, "BLOB"),
        (T.BooleanType, "BOOLEAN"),
        (T.ByteType, "TINYINT"),
        (T.ShortType, "SMALLINT"),
        (T.IntegerType, "INTEGER"),
        (T.LongType, "BIGINT"),
        (T.FloatType, "FLOAT"),
        (T.DoubleType, "DOUBLE"),
        (T.DateType, "DATE"),
        (T.TimestampNTZType, "TIMESTAMP"),
        (T.TimestampType, "TIMESTAMP WITH TIME ZONE"),
    )
    for spark_class, name in simple:
        if isinstance(data_type, spark_class):
            return name
    if isinstance(data_type, T.DecimalType):
        return f"DECIMAL({data_type.precision},{data_type.scale})"
    if isinstance(data_type, T.ArrayType):
        return f"{duckdb_type(data_type.elementType)}[]"
    if isinstance(data_type, T.MapType):
        return "MAP(...)"
    if isinstance(data_type, T.StructType):
        return "STRUCT(...)"
    return data_type.typeName().upper()  # TIME, VARIANT, ...


def _nanos_error(error: BaseException) -> bool:
    return "TIMESTAMP(NANOS," in str(error)


def _nanos_zone(spark: SparkSession, uri: str, name: str) -> bool | None:
    """Whether an INT64 column holds nanosecond times (True: UTC-adjusted, False: local), None
    for an integer column: read as a timestamp by Parquet's record reader without
    ``nanosAsLong``, a nanosecond column fails on its Parquet type, which the error names
    (``INT64 (TIMESTAMP(NANOS,true))``); an integer column fails without it, or not at all (no
    row to convert)."""
    from pyspark.sql import functions as F

    column = "`" + name.replace("`", "``") + "`"
    try:
        with session_conf(spark, {NANOS_AS_LONG: "false", _VECTORIZED: "false"}):
            frame = spark.read.schema(f"{column} TIMESTAMP").parquet(uri)
            frame.select(F.col(column).isNull()).limit(1).collect()
    except Exception as error:
        found = re.search(r"TIMESTAMP\(NANOS,(true|false)\)", str(error))
        if found:
            return found.group(1) == "true"
    return None


def parquet_columns(
    spark: SparkSession, where: str, uri: str, checked: Collection[str] = ()
) -> tuple[dict[str, str], frozenset[str]]:
    """Column name → DuckDB type name, and the nanosecond time columns among ``checked`` (the
    columns the ingest reads); a file Spark cannot read the schema of is refused as DuckDB
    refuses an unreadable footer."""
    from pyspark.sql import types as T

    zones: dict[str, bool] = {}
    try:
        with session_conf(spark, {NANOS_AS_LONG: "false", _TIME_TYPE: "true"}):
            try:
                schema = spark.read.parquet(uri).schema
            except Exception as error:
                if not _nanos_error(error):
                    raise
                with session_conf(spark, {NANOS_AS_LONG: "true"}):
                    schema = spark.read.parquet(uri).schema
                for item in schema.fields:
                    if item.name in checked and isinstance(item.dataType, T.LongType):
                        utc = _nanos_zone(spark, uri, item.name)
                        if utc is not None:
                            zones[item.name] = utc
    except Exception as error:
        illegal = re.search(r"Illegal Parquet type: ([^.]+)\.", str(error))
        if illegal:
            raise IngestError(
                f"{where}: has a column of Parquet type {illegal.group(1)}, which Spark cannot read"
            ) from None
        raise IngestError(f"{where}: not a readable Parquet file ({java_name(error)})") from None
    columns = {
        item.name: (
            ("TIMESTAMPTZ_NS" if zones[item.name] else "TIMESTAMP_NS")
            if item.name in zones
            else duckdb_type(item.dataType)
        )
        for item in schema.fields
    }
    return columns, frozenset(zones)
