"""pytest-benchmark of opening an ingested Spark warehouse (`make bench`); one quick run
otherwise. Every Dagster step opens the warehouse, and each open looks for a cut ingest: the
event tables' last commits are read only while an ingest is in doubt (records.ingest_in_doubt;
docs/scale.md §5), so an open here is a few queries, not ten ``DESCRIBE HISTORY``."""

from __future__ import annotations

from datetime import date

from dp_platform.events import generate_campaign, write_events
from tests.conftest_data import FAR_FUTURE


def test_benchmark_reopen_an_ingested_spark_warehouse(benchmark, spark, tmp_path):
    from dp_platform.warehouse.spark.store import SparkWarehouse

    events = generate_campaign(
        seed=1,
        users=40,
        publishers=4,
        impressions=300,
        conversions=40,
        days=2,
        start=date(2026, 3, 1),
    )
    files = write_events(events, tmp_path / "events")
    root = tmp_path / "tables"
    SparkWarehouse(spark, root).ingest(files.impressions, files.conversions, now=FAR_FUTURE)

    def reopen() -> SparkWarehouse:
        warehouse = SparkWarehouse(spark, root)
        warehouse.close()
        return warehouse

    assert not benchmark(reopen).records.ingest_in_doubt()
