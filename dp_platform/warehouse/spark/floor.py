"""Spark's floor on the machine it runs on: the least work any Spark ingest and attribution of
a pair of event files must do, timed with the platform's own session settings
(``dp-platform bench --engine spark --floor``; docs/scale.md §1).

Whatever the engine's design, a Spark ingest reads each file once and writes its rows into a
Delta table once, and a last-touch attribution sorts every user's events once. The floor does
exactly that and nothing more — no checks, keys, tie order, quarantine, records or campaign
scope — so a target for the engine below it (issue 29's "within 3× of DuckDB") is a target for
Spark itself on this machine, not for the engine's code.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from dp_platform.warehouse.runner import statements
from dp_platform.warehouse.spark.runner import load_spark_sql

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["FLOOR_STEPS", "spark_floor"]

FLOOR_STEPS = ("write_impressions", "write_conversions", "attribution")


def _event_table(spark: SparkSession, path: str, table: str, root: str) -> None:
    """One read of the file, one Delta commit of its rows, partitioned by UTC day."""
    frame = spark.read.parquet(path).selectExpr("*", "to_date(ts) AS day")
    frame.write.format("delta").partitionBy("day").option("path", f"{root}/{table}").saveAsTable(
        table
    )


def spark_floor(
    spark: SparkSession, impressions: str, conversions: str, root: str, lookback_days: int
) -> dict[str, float]:
    """Seconds of each floor step (FLOOR_STEPS) on Parquet event files, tables under ``root``
    (empty) in the session's current database (its own: the tables are scratch)."""
    seconds: dict[str, float] = {}

    def timed(step: str, write: Callable[[], object]) -> None:
        began = time.perf_counter()
        write()
        seconds[step] = round(time.perf_counter() - began, 3)

    timed("write_impressions", lambda: _event_table(spark, impressions, "floor_i", root))
    timed("write_conversions", lambda: _event_table(spark, conversions, "floor_c", root))
    spark.table("floor_i").createOrReplaceTempView("floor_impression_file")
    spark.table("floor_c").createOrReplaceTempView("floor_conversion_file")
    (attribution,) = statements(load_spark_sql("floor_lta"))
    timed(
        "attribution",
        lambda: (
            spark.sql(attribution, args={"lookback_days": lookback_days})
            .write.format("delta")
            .partitionBy("day")
            .option("path", f"{root}/floor_attributed")
            .saveAsTable("floor_attributed")
        ),
    )
    return seconds
