"""A day's statistics are read only from contributions built on the loads its current
attribution read: none yet, or attribution re-run after a new load, is refused by name; a re-run
over the same loads (two overlapping runs) leaves them current. On both engines (one rule,
``warehouse.store_core.require_current``, over each engine's own partition records)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.base import WarehouseEngine
from dp_platform.warehouse.store_core import CLIPPED, WarehouseError
from tests.conftest_data import campaign

if TYPE_CHECKING:
    from dp_platform.warehouse.spark.store import SparkWarehouse

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


def _last_load(wh: Warehouse | SparkWarehouse) -> int:
    return int(wh.sql.query("SELECT max(load_id) FROM loads")[0][0])


def _event_table_versions(wh: Warehouse | SparkWarehouse) -> dict[str, int]:
    """Each event table's Delta version now, from its own history (Spark); DuckDB has none."""
    if isinstance(wh, Warehouse):
        return {}
    from dp_platform.warehouse.spark.records import EVENT_TABLES, table_version

    return {table: table_version(wh.spark, table) for table in EVENT_TABLES}


def _clipped_as_of(wh: SparkWarehouse, version: int) -> list[float]:
    """The day's clipped values as Delta version ``version`` of the table holds them."""
    rows = wh.sql.query(
        f"SELECT value FROM {CLIPPED} VERSION AS OF {int(version)} WHERE day = :d "
        "ORDER BY position",
        d=DAY,
    )
    return [float(value) for (value,) in rows]


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_a_clip_records_what_a_release_drawn_from_it_reads(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``release_inputs`` names the clip a release is drawn from: the last load its attribution
    was built from, the version that wrote the day's clipped vector and (Spark) the event
    tables' versions that load left; a clip after a newer load names the new ones, and on
    Spark the version named first still reads the first vector back."""
    camp = campaign(start=DAY)
    with _warehouse(engine, request, tmp_path / "warehouse") as wh:
        wh.ingest(*_files(tmp_path), now=datetime(2026, 4, 1, tzinfo=UTC))
        wh.attribute_day(camp, DAY)
        assert wh.release_inputs(camp, DAY) is None  # no clip yet: nothing to name
        first_vector = wh.clipped_vector(camp, DAY, 2.0).tolist()
        first = wh.release_inputs(camp, DAY)
        assert first is not None and first.load == _last_load(wh)
        assert first.tables == _event_table_versions(wh)
        late = tmp_path / "late"
        late.mkdir()
        wh.ingest(*_files(late, "late"), now=datetime(2026, 4, 1, tzinfo=UTC))
        assert wh.release_inputs(camp, DAY) == first  # a load alone changes no clip
        wh.attribute_day(camp, DAY)
        second_vector = wh.clipped_vector(camp, DAY, 2.0).tolist()
        second = wh.release_inputs(camp, DAY)
        assert second is not None and second.load == _last_load(wh) > first.load
        assert second.clipped_version > first.clipped_version
        assert second.tables == _event_table_versions(wh)
        assert (first_vector, second_vector) == ([1.0, 1.0], [2.0, 2.0])
        if engine == "spark":  # the versions named read back what each clip wrote, and only it
            assert second.tables["conversions"] > first.tables["conversions"]
            assert _clipped_as_of(wh, first.clipped_version) == first_vector
            assert _clipped_as_of(wh, second.clipped_version) == second_vector
            assert _clipped_as_of(wh, first.clipped_version - 1) == []
