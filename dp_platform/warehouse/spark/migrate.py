"""A root an earlier release created, opened by this one: schema.sql's ``CREATE TABLE IF NOT
EXISTS … LOCATION`` refuses a Delta table whose columns or partitioning differ from the
statement's, so the tables this release changed are registered as they are first, the columns
it added appended (``ALTER TABLE … ADD COLUMNS``: a metadata commit, no data rewritten; old
rows read NULL there), and schema.sql then finds them registered. A table keeps the
partitioning it was created with (Delta cannot change it in place).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dp_platform.warehouse.spark.runner import SparkSqlRunner

__all__ = ["is_earlier_schema", "register_earlier"]

CHANGED: dict[str, tuple[str, ...]] = {
    "plus_user_spend": ("run STRING",),
    "plus_user_values": ("run STRING",),
    "plus_remainders": ("run STRING",),
    "plus_spend_days": ("run STRING",),
    "partitions": (),  # partitioned by campaign since; an earlier table stays unpartitioned
}
"""Each table this release changed, and the columns it appended."""

_REFUSALS = ("DELTA_CREATE_TABLE_SCHEME_MISMATCH", "DELTA_CREATE_TABLE_WITH_DIFFERENT_PARTITIONING")


def is_earlier_schema(error: BaseException) -> bool:
    """schema.sql met a table an earlier release created (its columns or partitioning)."""
    return any(refusal in str(error) for refusal in _REFUSALS)


def register_earlier(spark: SparkSession, sql: SparkSqlRunner, root: str) -> None:
    """Register each changed table that exists under ``root`` as it is, and append the
    columns it lacks."""
    for table, columns in CHANGED.items():
        location = f"{root}/{table}"
        if not _is_delta(spark, location):
            continue
        sql.query(f"CREATE TABLE IF NOT EXISTS {table} USING delta LOCATION '{location}'")
        present = set(spark.table(table).columns)
        missing = [column for column in columns if column.split()[0] not in present]
        if missing:
            sql.query(f"ALTER TABLE {table} ADD COLUMNS ({', '.join(missing)})")


def _is_delta(spark: SparkSession, location: str) -> bool:
    """A Delta table is at ``location`` (reading its schema reads its log; none: an error)."""
    try:
        spark.sql(f"SELECT * FROM delta.`{location}` LIMIT 0").schema  # noqa: B018
    except Exception as error:
        if "DELTA_PATH_DOES_NOT_EXIST" in str(error) or "DELTA_MISSING_DELTA_TABLE" in str(error):
            return False
        raise
    return True
