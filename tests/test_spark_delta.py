"""The Spark engine on Delta Lake: what the tables give and the engine relies on.

* its identity lives in the tables (``meta``), kept across opens and copies;
* a derived partition's record names the Delta version that wrote it, and that version reads
  back as written after a rewrite (time travel: which table versions a release read);
* an earlier release's Parquet root is refused in one line;
* a relative root is the working directory's, for the tables and their lookups alike;
* the session setting that makes Delta bind SQL parameters is still needed (Delta's issue
  7640): the test fails once a Delta release binds them by itself, so the setting can go.
"""

from __future__ import annotations

import re
import shutil
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from dp_platform.warehouse.store_core import ATTRIBUTED, WarehouseError
from tests.conftest_data import Conv, Imp, campaign, write_events

NOW = datetime(2026, 4, 1, tzinfo=UTC)
T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _open(spark, root):
    from dp_platform.warehouse.spark.store import SparkWarehouse

    return SparkWarehouse(spark, root)


def _files(directory: Path, hours: int):
    imps = [
        Imp(f"i{k}", f"u{k % 3}", f"p{k % 2}", "acme", T0 + timedelta(hours=k), "view")
        for k in range(hours)
    ]
    convs = [Conv(f"c{k}", f"u{k % 3}", "acme", T0 + timedelta(hours=k + 20)) for k in range(6)]
    return write_events(directory, imps, convs)


def test_the_warehouse_identity_is_kept_in_its_tables(spark, tmp_path) -> None:
    identity = _open(spark, tmp_path / "one").identity
    assert re.fullmatch(r"[0-9a-f-]{36}", identity)
    assert _open(spark, tmp_path / "one").identity == identity  # reopened: the same
    assert _open(spark, tmp_path / "other").identity != identity  # another root: its own
    shutil.copytree(tmp_path / "one", tmp_path / "moved")
    assert _open(spark, tmp_path / "moved").identity == identity  # a copied root keeps it


def test_a_relative_root_is_taken_from_the_working_directory(spark, tmp_path, monkeypatch) -> None:
    """Spark resolves a relative LOCATION against its warehouse directory, a relative query
    path against the working directory: the root is made absolute first (a bench run with a
    relative --workdir found no ``loads`` in its second process)."""
    from dp_platform.warehouse.spark.store import qualified_root

    monkeypatch.chdir(tmp_path)
    warehouse = _open(spark, "relative/tables")
    assert warehouse.root == str(tmp_path / "relative" / "tables")
    location = spark.sql("DESCRIBE DETAIL loads").collect()[0]["location"]
    assert location.removeprefix("file:") == str(tmp_path / "relative" / "tables" / "loads")
    assert qualified_root("s3a://lake/warehouse/") == "s3a://lake/warehouse"  # a URI as given
    assert qualified_root("file:/data/t") == "file:/data/t"


def test_a_partition_records_the_version_that_wrote_it_and_it_reads_back(spark, tmp_path) -> None:
    """The record of an attributed day names its Delta version; after more events and a
    rewrite of the day, that version still reads the rows the first run wrote."""
    warehouse = _open(spark, tmp_path / "tables")
    warehouse.ingest(*_files(tmp_path / "a", 8), now=NOW)
    camp = campaign(rule="lta", lookback_days=5, start=date(2026, 3, 2), days=2, name="tt")
    day = date(2026, 3, 2)
    warehouse.attribute_days(camp, day, day)
    version, loaded = warehouse.records.version(ATTRIBUTED, camp.name, day)
    query = f"SELECT count(*) FROM {ATTRIBUTED} VERSION AS OF {version} WHERE day = :d"
    first = warehouse.sql.query(query, d=day)[0][0]
    assert first > 0 and loaded == 2  # the two loads of the first ingest
    more = write_events(
        tmp_path / "b",
        [Imp("j1", "u9", "p1", "acme", T0 + timedelta(hours=22), "view")],
        [Conv("d1", "u9", "acme", T0 + timedelta(hours=23))],
    )
    warehouse.ingest(*more, now=NOW)
    warehouse.attribute_days(camp, day, day)
    rewritten, loaded_now = warehouse.records.version(ATTRIBUTED, camp.name, day)
    assert rewritten > version and loaded_now == 4
    assert warehouse.sql.query(query, d=day)[0][0] == first
    now = f"SELECT count(*) FROM {ATTRIBUTED} VERSION AS OF {rewritten} WHERE day = :d"
    assert warehouse.sql.query(now, d=day)[0][0] == first + 1


def test_a_parquet_root_of_an_earlier_release_is_refused_in_one_line(spark, tmp_path) -> None:
    root = tmp_path / "old"
    spark.range(3).write.parquet(str(root / "users"))
    with pytest.raises(WarehouseError) as refused:
        _open(spark, root)
    message = str(refused.value)
    assert "not Delta Lake tables" in message and "\n" not in message


def test_delta_still_needs_parameters_substituted_as_constants(spark, tmp_path) -> None:
    """Delta 4.4's SQL parser drops named parameter markers (delta-io/delta issue 7640) unless
    Spark substitutes them as constants, which the session sets (session.PRIVATE_CONF)."""
    from pyspark.errors import AnalysisException

    key = "spark.sql.legacy.parameterSubstitution.constantsOnly"
    assert spark.conf.get(key) == "true"
    spark.sql(f"CREATE TABLE delta.`{tmp_path / 't'}` (x INT) USING delta")
    insert = f"INSERT INTO delta.`{tmp_path / 't'}` SELECT :x"
    spark.sql(insert, args={"x": 1})
    spark.conf.set(key, "false")
    try:
        with pytest.raises(AnalysisException, match="UNBOUND_SQL_PARAMETER"):
            spark.sql(insert, args={"x": 2})
    finally:
        spark.conf.set(key, "true")
    assert spark.sql(f"SELECT sum(x) FROM delta.`{tmp_path / 't'}`").collect()[0][0] == 1
