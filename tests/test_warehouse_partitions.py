"""A day's statistics are read only from contributions built on its current attribution: none
yet, or attribution re-run since, is refused by name. Shown on DuckDB; the Spark warehouse
calls the same rule (``warehouse.store_core.require_current``) on its own partition records."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.store_core import WarehouseError
from tests.conftest_data import campaign

DAY = date(2026, 3, 1)


def _files(directory: Path) -> tuple[Path, Path]:
    at = pa.array([datetime(2026, 3, 1, 9), datetime(2026, 3, 1, 12)], pa.timestamp("us"))
    impressions = pa.table(
        {
            "impression_id": ["i1", "i2"],
            "user_id": ["u1", "u2"],
            "publisher_id": ["p1", "p2"],
            "advertiser_id": ["acme", "acme"],
            "ts": at,
            "interaction": ["view", "click"],
        }
    )
    conversions = pa.table(
        {
            "conversion_id": ["c1", "c2"],
            "user_id": ["u1", "u2"],
            "advertiser_id": ["acme", "acme"],
            "ts": pa.array([datetime(2026, 3, 1, 15)] * 2, pa.timestamp("us")),
        }
    )
    pq.write_table(impressions, directory / "i.parquet")
    pq.write_table(conversions, directory / "c.parquet")
    return directory / "i.parquet", directory / "c.parquet"


def test_statistics_need_contributions_of_the_current_attribution(tmp_path: Path) -> None:
    camp = campaign(start=DAY)
    with Warehouse(":memory:") as wh:
        wh.ingest(*_files(tmp_path), now=datetime(2026, 4, 1, tzinfo=UTC))
        wh.attribute_day(camp, DAY)
        with pytest.raises(WarehouseError, match=r"user_day_contributions .* is not materialised"):
            wh.day_histogram(camp, DAY)
        wh.contributions_day(camp, DAY)
        assert wh.day_histogram(camp, DAY).tolist() == [0, 2]
        wh.attribute_day(camp, DAY)  # re-run: what was built on the old attribution is stale
        with pytest.raises(WarehouseError, match=r"is stale .*materialise it again"):
            wh.capped_histogram(camp, DAY, cap=3)
        wh.contributions_day(camp, DAY)
        assert wh.capped_histogram(camp, DAY, cap=3).tolist() == [0, 2, 0, 0]
