"""The platform on Spark: a campaign through Dagster with releases identical to DuckDB's, each
showing the table versions it read, a session that keeps private counts out of Spark's UI and
event log, and engines chosen by the catalogue alone (a DuckDB catalogue never loads PySpark)."""

from __future__ import annotations

import subprocess
import sys
from datetime import date, timedelta

import dagster as dg
import numpy as np
import pytest
import yaml

from assets.runner import run_campaigns
from dp_platform.config_loader import load_catalogue, parse_catalogue
from dp_platform.errors import ConfigError
from dp_platform.ledger import Ledger
from dp_platform.warehouse.store_core import CLIPPED
from tests.platform_fixtures import START, RoutedNoise, catalogue, make_home
from tests.process_runs import assert_complete_and_charged_once

TODAY = date(2026, 11, 22)
# Every Spark day is several Spark jobs: the shortest campaign with both of AdsBPC's bound
# phases (2 quantile days, then the sparse-vector tests).
CAMPAIGN_DAYS, QUANTILE_DAYS = 4, 2


def _releases(home) -> tuple[list, object]:
    with Ledger.at_home(home.root) as ledger:
        return ledger.releases("spring"), ledger.campaign_budget("spring")


@pytest.fixture(scope="module")
def homes(spark, tmp_path_factory):
    """The same generated events ingested into a DuckDB home and a Spark home."""
    root = tmp_path_factory.mktemp("engines")
    return {
        engine: make_home(
            root / engine,
            seed=9,
            users=200,
            days=CAMPAIGN_DAYS,
            config=catalogue(days=CAMPAIGN_DAYS, engine=engine, quantile_days=QUANTILE_DAYS),
        )
        for engine in ("duckdb", "spark")
    }


def _shows_what_each_release_read(spark, home, instance: dg.DagsterInstance) -> None:
    """Each Spark release shows its day's clip record (``read_*``): the load it was built from,
    the Delta version of clipped_daily_vectors that wrote the day — the commit that replaced
    that day, and it reads the day's vector back — and the event tables' versions ``loads``
    recorded for the load (each table's current one: nothing was loaded since)."""
    from dp_platform.warehouse.spark.records import EVENT_TABLES, table_version
    from dp_platform.warehouse.spark.store import SparkWarehouse, tables_root

    settings = load_catalogue(home.root / "campaigns.yaml").warehouse
    warehouse = SparkWarehouse(spark, tables_root(settings, home))
    sql = warehouse.sql.query
    load = sql("SELECT max(load_id) FROM loads")[0][0]
    tables = {table: table_version(spark, table) for table in EVENT_TABLES}
    history = {
        row["version"]: str(row["operationParameters"])
        for row in spark.sql(f"DESCRIBE HISTORY {CLIPPED}").collect()
    }
    key = dg.AssetKey(["spring", "noisy_daily_release"])
    for offset in range(CAMPAIGN_DAYS):
        day = START + timedelta(days=offset)
        (record,) = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[day.isoformat()]), limit=2
        ).records
        shown = {k: v.value for k, v in record.asset_materialization.metadata.items()}
        version, built_from = warehouse.records.version(CLIPPED, "spring", day)
        assert built_from == load
        assert (shown["read_load"], shown["read_clipped_version"]) == (str(load), str(version))
        assert shown["read_versions"] == tables
        where = f"WHERE campaign = 'spring' AND day = DATE'{day}' ORDER BY position"
        then = sql(f"SELECT position, value FROM {CLIPPED} VERSION AS OF {version} {where}")
        assert then and then == sql(f"SELECT position, value FROM {CLIPPED} {where}")
        assert day.isoformat() in history[version], history[version]
    warehouse.close()


def test_a_campaign_through_dagster_releases_the_same_on_both_engines(spark, homes):
    instances = {}
    for engine, home in homes.items():
        instances[engine] = dg.DagsterInstance.ephemeral()
        runs = run_campaigns(
            home.root / "campaigns.yaml",
            home.root,
            noise=RoutedNoise(11, 12),
            instance=instances[engine],
            today=TODAY,
        )
        assert [len(r.days) for r in runs] == [CAMPAIGN_DAYS]
    (duck, duck_budget), (on_spark, spark_budget) = (_releases(h) for h in homes.values())
    assert [r.day for r in duck] == [r.day for r in on_spark] == list(range(1, CAMPAIGN_DAYS + 1))
    for left, right in zip(duck, on_spark, strict=True):
        assert left.bound == right.bound  # chosen from identical histograms
        assert left.sigma == right.sigma
        assert left.charges == right.charges
        np.testing.assert_allclose(left.values, right.values, rtol=0, atol=1e-9)
    assert duck_budget.spent == spark_budget.spent == duck_budget.planned
    # both bound phases ran, each draw charged once: the quantile days' charges, then the SVT's
    assert_complete_and_charged_once(homes["spark"], CAMPAIGN_DAYS, QUANTILE_DAYS)
    _shows_what_each_release_read(spark, homes["spark"], instances["spark"])


def test_spark_releases_are_write_once(homes):
    home = homes["spark"]
    before, spent = _releases(home)
    assert before, "the campaign ran first (test above)"
    again = run_campaigns(
        home.root / "campaigns.yaml",
        home.root,
        noise=RoutedNoise(99, 98),  # different noise: a re-draw would show
        instance=dg.DagsterInstance.ephemeral(),
        today=TODAY,
    )
    assert [r.days for r in again] == [[]]  # nothing due
    after, spent_after = _releases(home)
    assert after == before  # frozen dataclasses: every field, values included
    assert spent_after.spent == spent.spent


def test_platform_session_shows_no_ui_event_log_or_listener(spark, homes):
    from dp_platform.warehouse.spark.session import PRIVATE_CONF, check_private

    conf = spark.sparkContext.getConf()
    assert spark.sparkContext.uiWebUrl is None  # no web UI is serving
    for key in ("spark.ui.enabled", "spark.eventLog.enabled", "spark.ui.showConsoleProgress"):
        assert conf.get(key) == "false", key
    assert conf.get("spark.sql.ui.retainedExecutions") == "0"
    assert not conf.get("spark.extraListeners", "").strip()
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    check_private(spark)
    assert all(conf.get(key) == value for key, value in PRIVATE_CONF.items() if value)
    assert not list(homes["spark"].root.rglob("*eventlog*"))  # nothing written by the run


def test_catalogue_cannot_turn_the_spark_ui_or_event_log_back_on():
    document = catalogue(engine="spark")
    for key in ("spark.ui.enabled", "spark.eventLog.enabled", "spark.extraListeners"):
        document["warehouse"]["spark"]["conf"] = {key: "true"}
        with pytest.raises(ConfigError, match=rf"warehouse\.spark\.conf: {key} is fixed"):
            parse_catalogue(document)


def test_a_duckdb_catalogue_never_imports_pyspark(tmp_path):
    """The Dagster resource of a DuckDB catalogue opens DuckDB only: no PySpark, no JVM."""
    home = make_home(tmp_path / "home", users=100, days=8)
    script = (
        "import sys\n"
        "from assets.resources import WarehouseResource\n"
        "from dp_platform.config_loader import load_catalogue\n"
        f"path = {str(home.root / 'campaigns.yaml')!r}\n"
        f"resource = WarehouseResource(home={str(home.root)!r}, catalogue=path)\n"
        "with resource.open() as warehouse:\n"
        "    campaign = load_catalogue(path).campaigns[0]\n"
        "    assert warehouse.campaign_publishers(campaign)\n"
        "    print(warehouse.engine, 'pyspark' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["duckdb", "False"]
    spark_doc = yaml.safe_load((home.root / "campaigns.yaml").read_text())
    assert spark_doc["warehouse"] == {"engine": "duckdb"}
