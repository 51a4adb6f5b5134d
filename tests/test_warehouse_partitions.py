"""A day's statistics are read only from contributions built on the loads its current
attribution read: none yet, or attribution re-run after a new load, is refused by name; a re-run
over the same loads (two overlapping runs) leaves them current. On both engines (one rule,
``warehouse.store_core.require_current``, over each engine's own partition records)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.base import WarehouseEngine
from dp_platform.warehouse.store_core import WarehouseError
from tests.conftest_data import campaign

DAY = date(2026, 3, 1)


def _files(directory: Path, prefix: str = "") -> tuple[Path, Path]:
    at = pa.array([datetime(2026, 3, 1, 9), datetime(2026, 3, 1, 12)], pa.timestamp("us"))
    impressions = pa.table(
        {
            "impression_id": [f"{prefix}i1", f"{prefix}i2"],
            "user_id": ["u1", "u2"],
            "publisher_id": ["p1", "p2"],
            "advertiser_id": ["acme", "acme"],
            "ts": at,
            "interaction": ["view", "click"],
        }
    )
    conversions = pa.table(
        {
            "conversion_id": [f"{prefix}c1", f"{prefix}c2"],
            "user_id": ["u1", "u2"],
            "advertiser_id": ["acme", "acme"],
            "ts": pa.array([datetime(2026, 3, 1, 15)] * 2, pa.timestamp("us")),
        }
    )
    pq.write_table(impressions, directory / "i.parquet")
    pq.write_table(conversions, directory / "c.parquet")
    return directory / "i.parquet", directory / "c.parquet"


def _warehouse(engine: str, request: pytest.FixtureRequest, root: Path) -> WarehouseEngine:
    if engine == "duckdb":
        return Warehouse(":memory:")
    from dp_platform.warehouse.spark.store import SparkWarehouse

    spark = request.getfixturevalue("spark")  # tests/worker_groups.py: on the Spark worker
    return SparkWarehouse(spark, root / "tables")


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_statistics_need_contributions_of_the_current_attribution(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    camp = campaign(start=DAY)
    with _warehouse(engine, request, tmp_path / "warehouse") as wh:
        wh.ingest(*_files(tmp_path), now=datetime(2026, 4, 1, tzinfo=UTC))
        wh.attribute_day(camp, DAY)
        with pytest.raises(WarehouseError, match=r"user_day_contributions .* is not materialised"):
            wh.day_histogram(camp, DAY)
        wh.contributions_day(camp, DAY)
        assert wh.day_histogram(camp, DAY).tolist() == [0, 2]
        wh.attribute_day(camp, DAY)  # re-run over the same loads: the same rows, still current
        assert wh.capped_histogram(camp, DAY, cap=3).tolist() == [0, 2, 0, 0]
        late = tmp_path / "late"
        late.mkdir()
        wh.ingest(*_files(late, "late"), now=datetime(2026, 4, 1, tzinfo=UTC))
        wh.attribute_day(camp, DAY)  # re-run after a load: what was built before it is stale
        with pytest.raises(WarehouseError, match=r"is stale .*materialise it again"):
            wh.capped_histogram(camp, DAY, cap=3)
        wh.contributions_day(camp, DAY)
        assert wh.capped_histogram(camp, DAY, cap=3).tolist() == [0, 0, 2, 0]  # two each now
