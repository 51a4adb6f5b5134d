"""Two runs of one campaign day on one Spark warehouse at once, with no lock between them (each
its own session, as two drivers are): what the derived writes' own commits guarantee
(docs/scale.md §5). The other run is played, whole, at the one moment that matters — between
this run's read and its commit — which is where a lock used to keep it out:

* private last touch: a conversion the other run stored meanwhile is not stored again (its
  draw here is dropped, never released), so its epsilon is spent once;
* AdsBPC+: of two runs that filtered one day, the first to commit counts: the second
  commits nothing, returns the first's vector, and every user is charged once — by the run
  whose vector is released, even when the two read different attributions;
* the ``partitions`` record holds one row a day however many runs record it;
* a root an earlier release made (without the ``run`` columns, unpartitioned records) opens,
  and its committed AdsBPC+ days still count.

That a statement reading its own table conflicts with another writer's concurrent commit is
tests/test_spark_isolation.py's ("insert_unless_present", "merge").
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np

from dp_platform.privacy.discrete import SeededIntegerNoise
from tests.conftest_data import campaign
from tests.test_spark_recovery import NOW
from tests.test_spark_recovery import _events as events

DAY = date(2026, 3, 2)


def _pair(spark, tmp_path):
    """This run's warehouse and the other run's: one root, two sessions (their own views,
    caches and current database; one catalogue and one Delta log, as two drivers share)."""
    from dp_platform.warehouse.spark.store import SparkWarehouse

    root = tmp_path / "tables"
    mine = SparkWarehouse(spark, root)
    mine.ingest(*events(tmp_path), now=NOW)
    return mine, SparkWarehouse(spark.newSession(), root)


def _stored_choices(warehouse, name: str) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for key, publisher in warehouse.sql.query(
        "SELECT conversion_key, publisher_key FROM private_touch_choices WHERE campaign = :c",
        c=name,
    ):
        found.setdefault(int(key), []).append(int(publisher))
    return found


def test_a_conversion_another_run_drew_meanwhile_is_not_drawn_again(spark, tmp_path, monkeypatch):
    mine, other = _pair(spark, tmp_path)
    camp = campaign(
        rule="private_last_touch", lookback_days=5, start=DAY, days=2, name="race_at_once"
    )
    real_run = mine.sql.run
    others: list[int] = []

    def other_run_first(name, **params):
        if name == "attribute_private_select" and not others:
            others.append(other.attribute_days(camp, DAY, DAY, noise=SeededIntegerNoise(7))["rows"])
        return real_run(name, **params)

    monkeypatch.setattr(mine.sql, "run", other_run_first)
    mine.attribute_days(camp, DAY, DAY, noise=SeededIntegerNoise(8))
    monkeypatch.undo()
    assert others and others[0] > 0  # the other run drew and stored the day's conversions
    choices = _stored_choices(mine, camp.name)
    assert choices and all(len(publishers) == 1 for publishers in choices.values())
    attributed = mine.day_frame("attributed", camp, [DAY])
    assert len(attributed) == len(choices)  # one attributed row per conversion, as stored
    keys = ["conversion_id", "publisher_id"]
    theirs = other.day_frame("attributed", camp, [DAY]).sort_values(keys, ignore_index=True)
    assert attributed.sort_values(keys, ignore_index=True).equals(theirs)


def test_of_two_runs_filtering_one_day_the_first_to_commit_counts(spark, tmp_path, monkeypatch):
    mine, other = _pair(spark, tmp_path)
    camp = campaign(rule="lta", lookback_days=5, start=DAY, days=2, name="plus_at_once")
    first_touch = campaign(rule="fta", lookback_days=5, start=DAY, days=2, name="plus_at_once")
    mine.attribute_days(camp, DAY, DAY)
    real_commit = mine.records.commit_spend_day
    theirs: list[np.ndarray] = []

    def other_run_first(*args, **kwargs):
        # the other run attributes the day afresh (first touch: other publishers) and filters
        # it while this run, its spends and vector written, is about to commit
        other.attribute_days(first_touch, DAY, DAY)
        theirs.append(other.plus_clipped_vector(camp, DAY, 2.0, 0.5, 4.0))
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(mine.records, "commit_spend_day", other_run_first)
    released = mine.plus_clipped_vector(camp, DAY, 2.0, 0.5, 4.0)
    monkeypatch.undo()
    np.testing.assert_array_equal(released, theirs[0])  # the committed run's vector
    vectors: dict[str, list[float]] = {}
    for run, value in mine.sql.query(
        "SELECT run, value FROM plus_day_vectors WHERE campaign = :c ORDER BY run, position",
        c=camp.name,
    ):
        vectors.setdefault(run, []).append(value)
    assert len(vectors) == 2  # both runs wrote their own vector ...
    (committed,) = mine.sql.query(
        "SELECT run FROM plus_spend_days WHERE campaign = :c AND day = :d", c=camp.name, d=DAY
    )
    lost = next(v for run, v in vectors.items() if run != committed[0])
    assert lost != vectors[committed[0]]  # ... from different attributions
    np.testing.assert_array_equal(mine._stored_vector(camp, DAY), released)
    counted = mine.sql.query(
        "SELECT s.user_key, count(*), max(s.spend) FROM plus_user_spend AS s "
        "JOIN plus_spend_days AS d ON d.campaign = s.campaign AND d.day = s.day "
        "AND d.run <=> s.run WHERE s.campaign = :c GROUP BY s.user_key",
        c=camp.name,
    )
    assert counted and all(rows == 1 for _, rows, _ in counted)  # each user charged once
    summary = mine.plus_spend_summary(camp)
    assert summary["days"] == 1 and summary["users"] == len(counted)
    # run again (either session): the stored day, nothing filtered or charged again
    np.testing.assert_array_equal(mine.plus_clipped_vector(camp, DAY, 2.0, 0.5, 4.0), released)
    assert mine.sql.query("SELECT count(DISTINCT run) FROM plus_user_spend")[0][0] == 2


def test_a_day_two_runs_record_at_once_is_one_record(spark, tmp_path, monkeypatch) -> None:
    """Both runs forget the day before either records it (the other run, whole, between this
    one's rewrite and its record): one row, not two."""
    from dp_platform.warehouse.store_core import ATTRIBUTED

    mine, other = _pair(spark, tmp_path)
    camp = campaign(rule="lta", lookback_days=5, start=DAY, days=2, name="recorded_twice")
    real_record = mine.records.record

    def other_run_first(*args, **kwargs):
        other.attribute_days(camp, DAY, DAY)
        return real_record(*args, **kwargs)

    monkeypatch.setattr(mine.records, "record", other_run_first)
    mine.attribute_days(camp, DAY, DAY)
    monkeypatch.undo()
    rows = mine.sql.query(
        "SELECT version FROM partitions WHERE asset = :a AND campaign = :c AND day = :d",
        a=ATTRIBUTED,
        c=camp.name,
        d=DAY,
    )
    assert len(rows) == 1
    assert mine.records.version(ATTRIBUTED, camp.name, DAY)[0] == rows[0][0]


def test_a_root_an_earlier_release_made_opens_and_its_filter_days_count(spark, tmp_path):
    """The AdsBPC+ tables without ``run`` and the record tables unpartitioned, as the release
    before this one created them: the open appends the column (no data rewritten), a day
    committed then still counts, and a new day is filtered after it."""
    from dp_platform.warehouse.spark.store import SparkWarehouse

    root = (tmp_path / "tables").absolute()
    earlier = {
        "plus_user_spend": "user_key INT, cost DOUBLE, spend DOUBLE, campaign STRING, day DATE",
        "plus_user_values": (
            "user_key INT, position BIGINT, value DOUBLE, campaign STRING, day DATE"
        ),
        "plus_remainders": "cap DOUBLE, value DOUBLE, campaign STRING, day DATE",
    }
    session = spark.newSession()
    for table, columns in earlier.items():
        session.sql(
            f"CREATE TABLE old_{table} ({columns}) USING delta PARTITIONED BY (campaign, day) "
            f"LOCATION '{root}/{table}'"
        )
    session.sql(
        f"CREATE TABLE old_plus_spend_days (campaign STRING, day DATE, bound DOUBLE, "
        f"sigma DOUBLE, cap DOUBLE, created_at STRING) USING delta "
        f"LOCATION '{root}/plus_spend_days'"
    )
    session.sql(
        f"CREATE TABLE old_partitions (asset STRING, campaign STRING, day DATE, version BIGINT, "
        f"input_version BIGINT, rows BIGINT, materialized_at STRING) USING delta "
        f"LOCATION '{root}/partitions'"
    )
    session.sql("INSERT INTO old_plus_user_spend VALUES (0, 1.5, 1.5, 'old', DATE'2026-03-02')")
    session.sql(
        "INSERT INTO old_plus_spend_days VALUES ('old', DATE'2026-03-02', 2.0, 0.5, 4.0, 'x')"
    )

    warehouse = SparkWarehouse(spark, root)
    assert "run" in spark.table("plus_user_spend").columns
    camp = campaign(rule="lta", lookback_days=5, start=DAY, days=2, name="old")
    assert warehouse.plus_spend_summary(camp) == {"days": 1, "users": 1, "max_spend": 1.5}
    assert warehouse.records.spend_day("old", DAY).run is None
    warehouse.ingest(*events(tmp_path), now=NOW)
    second = DAY + timedelta(days=1)
    warehouse.attribute_days(camp, second, second)
    assert warehouse.plus_clipped_vector(camp, second, 2.0, 0.5, 4.0).sum() > 0
    assert warehouse.plus_spend_summary(camp)["days"] == 2
    for table in ("partitions", "plus_spend_days"):  # an earlier table keeps its layout
        detail = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]
        assert list(detail["partitionColumns"]) == []


def test_an_attribution_records_the_loads_it_read_not_one_committed_meanwhile(
    spark, tmp_path, monkeypatch
) -> None:
    """Another process commits a load while this one attributes (played here by a ``loads``
    row this process's views were not made with): the record names the last load the
    attribution read, so the day shows as built from the older loads (stale once rebuilt
    elsewhere), never as built from the newer one."""
    from dp_platform.warehouse.store_core import ATTRIBUTED

    mine, _ = _pair(spark, tmp_path)
    camp = campaign(rule="lta", lookback_days=5, start=DAY, days=2, name="read_loads")
    read = mine.records.last_load()
    real_record = mine.records.record

    def a_load_committed_elsewhere(*args, **kwargs):
        mine.sql.query(
            "INSERT INTO loads SELECT load_id + 100, kind, source_file, sha256, rows_in, "
            "accepted, quarantined, loaded_at, dimensions, versions FROM loads "
            "WHERE load_id = :id",
            id=read,
        )
        return real_record(*args, **kwargs)

    monkeypatch.setattr(mine.records, "record", a_load_committed_elsewhere)
    mine.attribute_days(camp, DAY, DAY)
    monkeypatch.undo()
    assert mine.records.last_load() == read + 100
    assert mine.records.version(ATTRIBUTED, camp.name, DAY)[1] == read


def test_a_process_holding_the_warehouse_open_keeps_no_other_out(spark, tmp_path) -> None:
    """No lock: while another process has the home's Spark warehouse open (as a step of a run
    does), this one opens it as a step does, ingests and attributes — it does not wait for
    the other to close it (with the per-home lock it would have waited until then)."""
    import subprocess
    import sys
    import threading

    from dp_platform.home import Home
    from dp_platform.settings import WarehouseConfig
    from dp_platform.warehouse.spark.store import open_at_home
    from tests.spark_fixtures import TEST_SETTINGS

    home, go = tmp_path / "home", tmp_path / "go"
    holder = subprocess.Popen(
        [sys.executable, "-m", "tests.spark_holder_job", str(home), str(go)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        camp = campaign(rule="lta", lookback_days=5, start=DAY, days=2, name="beside")
        done: list[dict] = []

        def step() -> None:
            settings = WarehouseConfig(engine="spark", spark=TEST_SETTINGS)
            with open_at_home(settings, Home.at(home), read_only=False) as warehouse:
                warehouse.ingest(*events(tmp_path), now=NOW)
                done.append(warehouse.attribute_days(camp, DAY, DAY))

        stepping = threading.Thread(target=step)
        stepping.start()
        stepping.join(timeout=300)
        assert done and done[0]["rows"] > 0  # finished while the other still held it open
        assert holder.poll() is None
    finally:
        go.touch()
        holder.wait(timeout=120)
    assert holder.returncode == 0


def test_a_first_open_that_lost_the_create_of_a_table_opens_on_the_tables_made(
    spark, tmp_path, monkeypatch
) -> None:
    """Two first opens of a new root create one table at once, and Delta refuses the loser's
    create (``ProtocolChangedException``: both wrote version 0): the loser runs schema.sql once
    more, every ``CREATE … IF NOT EXISTS`` finds the winner's table, and it opens on the same
    warehouse. Refused again, it stops with one line. (The race is played: the winner's open
    runs first, whole, and the loser's first schema.sql raises Delta's error as Py4J gives it.)"""
    from dp_platform.warehouse.spark import store as spark_store
    from dp_platform.warehouse.spark.runner import SparkSqlRunner
    from dp_platform.warehouse.spark.store import SparkWarehouse
    from dp_platform.warehouse.store_core import WarehouseError

    root = tmp_path / "tables"
    winner = SparkWarehouse(spark.newSession(), root)
    java_error = type("Py4JJavaError", (Exception,), {"__module__": "py4j.protocol"})
    refusal = java_error(
        "An error occurred while calling o90.sql.\n: io.delta.exceptions."
        "ProtocolChangedException: [DELTA_PROTOCOL_CHANGED] ProtocolChangedException: The "
        "protocol version of the Delta table has been changed by a concurrent update."
    )
    real_run = SparkSqlRunner.run
    refusals = {"left": 1}

    def lost_the_create(runner, name, **params):
        if name == "schema" and refusals["left"]:
            refusals["left"] -= 1
            raise refusal
        return real_run(runner, name, **params)

    monkeypatch.setattr(SparkSqlRunner, "run", lost_the_create)
    # this JVM's catalogue holds the winner's tables already (one catalogue per process):
    # the loser runs schema.sql as a first open in another process would
    monkeypatch.setattr(spark_store, "schema_tables", lambda: frozenset({"not_registered"}))
    loser = SparkWarehouse(spark.newSession(), root)
    assert refusals["left"] == 0 and loser.identity == winner.identity
    refusals["left"] = 2
    try:
        SparkWarehouse(spark.newSession(), root)
    except WarehouseError as error:
        assert str(error) == (
            f"warehouse {winner.root}: another run wrote the same tables at the same moment; "
            "nothing of this step was kept; run it again"
        )
    else:
        raise AssertionError("a second refusal was not one line")
