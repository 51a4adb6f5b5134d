"""A Parquet event file's column types under DuckDB's names, read from its footer through
Parquet's Hadoop reader (any URI Spark reads), so the Spark ingest refuses the same types with the
same messages as DuckDB's (``ingest_sources.check_types``) and reads each column as the type
Spark gives it.

The footer is the file's schema, not its events: Spark reads it on the driver too, to plan the
read. Spark's own schema is not used because it cannot read nanosecond times (DuckDB can: the
ingest reads them as integers, ``spark.sql.legacy.parquet.nanosAsLong``), nor tell them from
integers once read so.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from dp_platform.warehouse.ingest_sources import IngestError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["parquet_columns", "spark_type"]

_INTEGERS = {8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT"}
_PLAIN = {
    "BOOLEAN": "BOOLEAN",
    "INT32": "INTEGER",
    "INT64": "BIGINT",
    "INT96": "TIMESTAMP WITH TIME ZONE",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "BINARY": "BLOB",
    "FIXED_LEN_BYTE_ARRAY": "BLOB",
}

_SPARK = {
    "VARCHAR": "STRING",
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "UTINYINT": "SMALLINT",
    "USMALLINT": "INT",
    "UINTEGER": "BIGINT",
    "UBIGINT": "DECIMAL(20,0)",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DATE": "DATE",
    "TIMESTAMP": "TIMESTAMP_NTZ",
    "TIMESTAMP WITH TIME ZONE": "TIMESTAMP",
}
"""An accepted DuckDB type → the Spark type its Parquet column is read as."""


def spark_type(duckdb_type: str) -> str:
    """The Spark SQL type to read a column of an accepted DuckDB type as."""
    if duckdb_type.startswith("DECIMAL"):
        return duckdb_type
    return _SPARK[duckdb_type]


def _primitive(field: Any) -> str:  # a py4j Parquet type
    physical = field.asPrimitiveType().getPrimitiveTypeName().name()
    annotation = field.getLogicalTypeAnnotation()
    logical = "" if annotation is None else str(annotation.toString())
    if logical.startswith(("STRING", "ENUM", "JSON")):
        return "VARCHAR"
    if logical.startswith("DECIMAL"):
        return logical.replace(" ", "")
    integer = re.fullmatch(r"INTEGER\((\d+),(true|false)\)", logical)
    if integer:
        name = _INTEGERS[int(integer.group(1))]
        return name if integer.group(2) == "true" else "U" + name
    timestamp = re.fullmatch(r"TIMESTAMP\((\w+),(true|false)\)", logical)
    if timestamp:
        unit, utc = timestamp.groups()
        if unit == "NANOS":
            return "TIMESTAMPTZ_NS" if utc == "true" else "TIMESTAMP_NS"
        return "TIMESTAMP WITH TIME ZONE" if utc == "true" else "TIMESTAMP"
    for name in ("DATE", "TIME", "UUID", "INTERVAL"):
        if logical.startswith(name):
            return name
    if logical.startswith("FLOAT16"):
        return "FLOAT"
    return _PLAIN.get(physical, physical)


def _type(field: Any) -> str:
    if field.isPrimitive():
        return _primitive(field)
    annotation = field.getLogicalTypeAnnotation()
    logical = "" if annotation is None else str(annotation.toString())
    group = field.asGroupType()
    if logical.startswith("LIST") and group.getFieldCount() == 1:
        inner = group.getType(0)
        element = inner
        if not inner.isPrimitive() and inner.asGroupType().getFieldCount() == 1:
            element = inner.asGroupType().getType(0)
        return f"{_type(element)}[]"
    if logical.startswith("MAP"):
        return "MAP(...)"
    return "STRUCT(...)"


def parquet_columns(spark: SparkSession, where: str, uri: str) -> tuple[dict[str, str], frozenset]:
    """Column name → DuckDB type name, and the nanosecond time columns, of the file's footer;
    a footer that cannot be read refuses the file as DuckDB does."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    try:
        path = jvm.org.apache.hadoop.fs.Path(uri)
        source = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(path, conf)
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(source)
        try:
            schema = reader.getFooter().getFileMetaData().getSchema()
        finally:
            reader.close()
        columns = {str(f.getName()): _type(f) for f in schema.getFields()}
    except Exception as error:
        name = re.search(r"\b(?:[a-z]\w*\.)+([A-Z]\w*(?:Exception|Error))\b", str(error))
        cause = name.group(1) if name else type(error).__name__
        raise IngestError(f"{where}: not a readable Parquet file ({cause})") from None
    nanos = frozenset(n for n, t in columns.items() if t.endswith("_NS"))
    return columns, nanos
