"""Each release shows what it read, on its day's partition of ``noisy_daily_release``
(``read_*``: assets/metadata.lineage_metadata): the records of the clip it was drawn from when it
is drawn; on every re-run the values of its first materialisation, even after the day was
rebuilt from a newer load; never a row count. DuckDB here; Spark's are checked in
tests/test_spark_platform.py and, engine-level, tests/test_warehouse_partitions.py."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import dagster as dg
import pytest

from assets.definitions import build_definitions
from assets.metadata import LINEAGE_KEYS
from assets.partitions import daily_job_name
from assets.runner import run_campaigns
from dp_platform.home import Home
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.store_core import CLIPPED
from tests.conftest_data import Conv, Imp, write_events
from tests.platform_fixtures import START, catalogue, make_home

TODAY = date(2026, 11, 22)  # every campaign day is complete
DAYS = 3
KEY = dg.AssetKey(["spring", "noisy_daily_release"])


@pytest.fixture
def home(tmp_path) -> Home:
    return make_home(
        tmp_path / "home",
        seed=4,
        users=300,
        days=DAYS,
        config=catalogue(days=DAYS, quantile_days=2),
    )


def _shown(instance: dg.DagsterInstance, day: date, *, first: bool) -> dict[str, object]:
    """The first (or latest) materialisation's metadata of ``day``'s release partition."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=KEY, asset_partitions=[day.isoformat()]),
        limit=1,
        ascending=first,
    ).records
    assert records, f"{day}: no release materialised"
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def _clip_record(home: Home, day: date) -> tuple[int, int]:
    """(version, input_version) of the day's clipped partition, as the warehouse records it."""
    with Warehouse(home.warehouse, read_only=True) as warehouse:
        rows = warehouse.sql.query(
            "SELECT version, input_version FROM partitions WHERE asset = $asset "
            "AND campaign = 'spring' AND day = $day",
            asset=CLIPPED,
            day=day,
        )
    assert len(rows) == 1
    return int(rows[0][0]), int(rows[0][1])


def _last_load(home: Home) -> int:
    with Warehouse(home.warehouse, read_only=True) as warehouse:
        return int(warehouse.sql.query("SELECT max(load_id) FROM loads")[0][0])


def _load_late_conversion(home: Home, day: date) -> None:
    """A newer load with one more converting user on ``day`` (a new load id)."""
    at = datetime.combine(day, datetime.min.time()).replace(hour=6)
    files = write_events(
        home.root / "late",
        [Imp("late-i1", "late-u1", "pub_0", "acme", at)],
        [Conv("late-c1", "late-u1", "acme", at + timedelta(hours=1))],
    )
    with Warehouse(home.warehouse) as warehouse:
        warehouse.ingest(*files)


def test_a_release_shows_what_it_read_when_drawn_and_again_after_a_rebuild(home) -> None:
    instance = dg.DagsterInstance.ephemeral()
    job = build_definitions(home.root / "campaigns.yaml", home.root).resolve_job_def(
        daily_job_name("spring")
    )
    day = START
    assert job.execute_in_process(instance=instance, partition_key=day.isoformat()).success
    drawn = _shown(instance, day, first=True)
    version, load = _clip_record(home, day)
    assert drawn["drawn_now"] is True
    assert load == _last_load(home)
    assert {k: drawn[k] for k in LINEAGE_KEYS if k in drawn} == {
        "read_load": str(load),
        "read_clipped_version": str(version),
    }  # DuckDB keeps no table versions: no read_versions

    _load_late_conversion(home, day)
    assert job.execute_in_process(instance=instance, partition_key=day.isoformat()).success
    rebuilt_version, rebuilt_load = _clip_record(home, day)
    # the day was rebuilt from the newer load: its records moved on …
    assert rebuilt_load == _last_load(home) > load and rebuilt_version > version
    again = _shown(instance, day, first=False)
    assert again["drawn_now"] is False
    # … and the stored release still shows what its draw read
    assert {k: again[k] for k in LINEAGE_KEYS if k in again} == {
        "read_load": str(load),
        "read_clipped_version": str(version),
    }


def test_what_a_release_read_is_commit_ids_never_a_row_count(home) -> None:
    """Every day of a run shows exactly the lineage keys, each a load id or a partition
    version, and none equals a true count the warehouse keeps (a day's attributed rows, its
    users, a load's rows; above 30 here, so a count shown would not pass for an id)."""
    instance = dg.DagsterInstance.ephemeral()
    runs = run_campaigns(home.root / "campaigns.yaml", home.root, instance=instance, today=TODAY)
    assert [len(r.days) for r in runs] == [DAYS]
    with Warehouse(home.warehouse, read_only=True) as warehouse:
        counts = {
            int(n)
            for (n,) in warehouse.sql.query(
                f"SELECT rows FROM partitions WHERE asset <> '{CLIPPED}' UNION ALL "
                "SELECT rows_in FROM loads UNION ALL SELECT accepted FROM loads"
            )
        }
    counts.discard(0)
    assert counts and min(counts) > 30  # true counts, distinguishable from the ids
    for offset in range(DAYS):
        day = START + timedelta(days=offset)
        shown = _shown(instance, day, first=True)
        lineage = {k: v for k, v in shown.items() if k.startswith("read")}
        assert set(lineage) == {"read_load", "read_clipped_version"}, sorted(lineage)
        version, load = _clip_record(home, day)
        assert lineage == {"read_load": str(load), "read_clipped_version": str(version)}
        assert not {int(value) for value in lineage.values()} & counts
