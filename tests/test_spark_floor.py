"""Spark's floor (warehouse/spark/floor.py, ``dp-platform bench --floor``) is a floor of the
same work: its bare last touch credits each conversion the publisher the engine credits, on
the bench's own generated files and campaign, so its seconds bound what the engine's can be."""

from __future__ import annotations

from collections import Counter

from dp_platform.warehouse.bench import BenchSpec, generate
from dp_platform.warehouse.spark.floor import FLOOR_STEPS, spark_floor


def test_the_floor_credits_what_the_engine_credits(spark, tmp_path) -> None:
    from dp_platform.warehouse.spark.store import SparkWarehouse

    spec = BenchSpec(conversions=400, impressions=3000, users=60, publishers=7, days=4)
    files = generate(spec, str(tmp_path / "events"))
    camp = spec.campaign()
    warehouse = SparkWarehouse(spark, tmp_path / "tables")
    warehouse.ingest(files["impressions"], files["conversions"], now=spec.now)
    warehouse.attribute_days(camp, camp.start, camp.end)
    engine = Counter(
        (day, publisher)
        for day, publisher in warehouse.sql.query(
            "SELECT a.day, p.publisher_id FROM attributed_conversions AS a "
            "JOIN publishers AS p USING (publisher_key) WHERE a.campaign = :c",
            c=camp.name,
        )
    )
    spark.sql("CREATE DATABASE IF NOT EXISTS floor_test")
    spark.catalog.setCurrentDatabase("floor_test")
    seconds = spark_floor(
        spark,
        files["impressions"],
        files["conversions"],
        str(tmp_path / "floor"),
        spec.lookback_days,
    )
    assert set(seconds) == set(FLOOR_STEPS) and all(s > 0 for s in seconds.values())
    floor = Counter(
        (row["day"], row["publisher_id"])
        for row in spark.sql(
            "SELECT day, publisher_id FROM floor_attributed WHERE day BETWEEN :a AND :b",
            args={"a": camp.start, "b": camp.end},
        ).collect()
    )
    assert sum(engine.values()) > 100  # most of the 400 conversions are credited
    assert floor == engine
